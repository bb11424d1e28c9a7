-- Atomics that demote_atomics turns into plain load/op/store (those of
-- serial tasks) must keep their meaning, old value included; those of
-- parallel loops must stay atomic (many threads hit one cell).
local lt = require "lattice"
lt.init { threads = 4 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

-- serial code: the old values chain through a while loop with a branch
local c = lt.field(lt.i32, { 4 })
local f = lt.field(lt.f32, { 2 })
local serial = lt.kernel(function(n)
  local olds, k = 0, 0
  while k < n do
    local old = lt.atomic_add(c[0], k)
    olds = olds + old
    if k % 3 == 0 then lt.atomic_sub(c[1], old) end
    lt.atomic_min(c[2], 50 - k * 7)
    lt.atomic_max(c[3], (k * 13) % 17)
    lt.atomic_add(f[0], 0.25)
    lt.atomic_max(f[1], k * 0.5)
    k = k + 1
  end
  return olds
end)
local function reference(n)
  local r = { [0] = 5, 6, 7, 8 }
  local rf = { [0] = 1.0, -1.0 }
  local olds = 0
  for k = 0, n - 1 do
    local old = r[0]
    r[0] = r[0] + k
    olds = olds + old
    if k % 3 == 0 then r[1] = r[1] - old end
    r[2] = math.min(r[2], 50 - k * 7)
    r[3] = math.max(r[3], (k * 13) % 17)
    rf[0] = rf[0] + 0.25
    rf[1] = math.max(rf[1], k * 0.5)
  end
  return olds, r, rf
end
for _, n in ipairs { 0, 1, 4, 11 } do
  for i = 0, 3 do c[i] = 5 + i end
  f[0], f[1] = 1.0, -1.0
  local got = serial(n)
  local olds, r, rf = reference(n)
  check("serial atomics: old values (n=" .. n .. ")", got, olds)
  for i = 0, 3 do check(("serial atomics: c[%d] (n=%d)"):format(i, n), c[i], r[i]) end
  check("serial atomics: f[0] (n=" .. n .. ")", f[0], rf[0])
  check("serial atomics: f[1] (n=" .. n .. ")", f[1], rf[1])
end

-- serial code before a parallel loop in one kernel, and atomics from a
-- serial loop inside the parallel one: those stay atomic
local N, B = 200000, 5
local hist = lt.field(lt.i32, { B })
local both = lt.kernel(function()
  lt.atomic_add(hist[0], 1000)
  for i in lt.ndrange(N) do
    for k = 0, 3 do lt.atomic_add(hist[(i + k) % B], 1) end
  end
end)
for i = 0, B - 1 do hist[i] = 0 end
both()
local want = {}
for i = 0, B - 1 do want[i] = 0 end
want[0] = 1000
for i = 0, N - 1 do for k = 0, 3 do want[(i + k) % B] = want[(i + k) % B] + 1 end end
local ok = true
for i = 0, B - 1 do if hist[i] ~= want[i] then ok = false end end
check("parallel histogram after serial atomics", ok, true)

-- a demoted atomic on a field under a pointer level activates the cell it
-- writes, and reads zero from an inactive one
local sp = lt.field(lt.i32)
lt.root:pointer(lt.i, 8):dense(lt.i, 4):place(sp)
local bump = lt.kernel(function(k, v)
  local old = lt.atomic_add(sp[k], v)
  return old
end)
check("sparse atomic: old value of an inactive cell", bump(13, 5), 0)
check("sparse atomic: its block became active", lt.is_active(sp, 13), true)
check("sparse atomic: second old value", bump(13, 2), 5)
check("sparse atomic: value", sp[13], 7)
check("sparse atomic: other blocks stay inactive", lt.is_active(sp, 20), false)

T.finish("passes_atomics")
print("passes_atomics: ok")
