-- Atomics from parallel loops: sums equal the serial Lua sums, min/max equal
-- the Lua extremes, and the returned old values hand out unique slots.
local lt = require "lattice"
lt.init { threads = 4 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

local N = 100000
local data = lt.field(lt.i32, N)
local seed = 12345
local ref_sum, ref_min, ref_max = 0, math.huge, -math.huge
for i = 0, N - 1 do
  seed = (seed * 1103515245 + 12345) % 2147483648
  local v = seed % 2001 - 1000
  data[i] = v
  ref_sum = ref_sum + v
  ref_min, ref_max = math.min(ref_min, v), math.max(ref_max, v)
end

local total = lt.field(lt.i64, {})
local neg = lt.field(lt.i32, {})
local lo = lt.field(lt.i32, {})
local hi = lt.field(lt.i32, {})
local fsum = lt.field(lt.f64, {})
local reduce = lt.kernel(function()
  for i = 0, N - 1 do
    local v = data[i]
    lt.atomic_add(total.value, v)
    lt.atomic_sub(neg.value, v)
    lt.atomic_min(lo.value, v)
    lt.atomic_max(hi.value, v)
    lt.atomic_add(fsum.value, 0.5)
  end
end)
lo.value, hi.value = 1 << 30, -(1 << 30)
reduce()
check("atomic_add sum", total.value, ref_sum)
check("atomic_sub", neg.value, -ref_sum)
check("atomic_min", lo.value, ref_min)
check("atomic_max", hi.value, ref_max)
check("float atomic_add", fsum.value, N * 0.5)

-- the old value: every iteration gets a distinct slot
local counter = lt.field(lt.i32, {})
local slots = lt.field(lt.i32, N)
local claim = lt.kernel(function()
  for i = 0, N - 1 do
    local old = lt.atomic_add(counter.value, 1)
    slots[old] = i + 1
  end
end)
claim()
check("counter", counter.value, N)
local seen, ok = {}, true
for i = 0, N - 1 do
  local v = slots[i]
  if v < 1 or v > N or seen[v] then ok = false end
  seen[v] = true
end
check("old values are unique slots", ok, true)

-- 2-D histogram with atomics on field elements
local hist = lt.field(lt.i32, { 4, 5 })
local histo = lt.kernel(function()
  for i = 0, N - 1 do
    local v = data[i] + 1000
    lt.atomic_add(hist[v % 4][v % 5], 1)
  end
end)
histo()
local ref = {}
for i = 0, N - 1 do
  local v = data[i] + 1000
  local key = (v % 4) * 5 + v % 5
  ref[key] = (ref[key] or 0) + 1
end
for a = 0, 3 do for b = 0, 4 do check("hist " .. a .. "," .. b, hist[a][b], ref[a * 5 + b] or 0) end end

T.finish("atomic")
print("atomics: ok")
