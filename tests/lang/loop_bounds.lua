-- Numeric for loops keep Lua's semantics at the ends of the integer range
-- (docs/language.md, "Loops"): the iteration count never overflows, i64 and
-- large constant bounds are not truncated, stepped loops end, and top-level
-- loops of every shape run in parallel (counts and sums use atomics, so the
-- results do not depend on the order). References: the same loops in Lua.
local lt = require "lattice"
lt.init { threads = 2 }
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local cnt = lt.field(lt.i64, 3)
local function ref(a, b, s)
  local n, sum = 0, 0
  for i = a, b, s do n = n + 1; sum = sum + i end
  return n, sum
end
local function reset() for q = 0, 2 do cnt[q] = 0 end end
local function check(what, a, b, s, n0)
  local n, sum = ref(a, b, s)
  C.check(what .. ": count", cnt[0], n * (n0 or 1))
  C.check(what .. ": sum", cnt[1], sum * (n0 or 1))
end

-- top level (parallel), bounds known at run time: i32 and i64
local top32 = {}
for _, s in ipairs { 1, 2, 3, 7, -1, -3 } do
  top32[s] = lt.kernel(function(a, b)
    for i = a, b, s do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], lt.i64(i)) end
  end, { a = lt.i32, b = lt.i32 })
end
local MAX, MIN = 2147483647, -2147483648
local cases = {
  { MAX - 7, MAX }, { MAX - 40, MAX }, { MIN, MIN + 9 }, { MAX, MIN }, { MIN, MAX - 2147483600 + MIN },
  { 5, 1 }, { 1, 5 }, { 0, 0 }, { MIN + 20, MIN }, { MAX, MAX - 30 }, { -3, 3 },
}
for s, k in pairs(top32) do
  for _, c in ipairs(cases) do
    local a, b = c[1], c[2]
    local n = (s > 0 and a <= b) and (b - a) // s + 1 or (s < 0 and a >= b) and (a - b) // -s + 1 or 0
    if n <= 100000 then                -- (exact: i32 bounds do not overflow Lua's integers)
      reset()
      k(a, b)
      check(("top i32 %d..%d step %d"):format(a, b, s), a, b, s)
    end
  end
end

-- constant bounds at the ends of the i32 range
local kc = lt.kernel(function() for i = 2147483640, 2147483647 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], lt.i64(i)) end end)
reset(); kc(); check("constant to INT_MAX", 2147483640, 2147483647, 1)
local kd = lt.kernel(function() for i = -2147483641, -2147483648, -1 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], lt.i64(i)) end end)
reset(); kd(); check("constant down to INT_MIN", -2147483641, -2147483648, -1)
local ks = lt.kernel(function() for i = 2147483600, 2147483647, 10 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], lt.i64(i)) end end)
reset(); ks(); check("constant stepped to INT_MAX", 2147483600, 2147483647, 10)

-- bounds beyond i32: i64 indices, not truncated
local big = 1 << 32
local kb = lt.kernel(function() for i = big - 3, big + 2 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], i) end end)
reset(); kb(); check("constant beyond i32", big - 3, big + 2, 1)
local top64 = lt.kernel(function(a, b)
  for i = a, b, 5 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], i) end
end, { a = lt.i64, b = lt.i64 })
local IMAX, IMIN = math.maxinteger, math.mininteger
for _, c in ipairs { { IMAX - 50, IMAX }, { IMIN, IMIN + 50 }, { big, big + 100 }, { 10, -10 }, { IMAX, IMIN } } do
  reset(); top64(c[1], c[2]); check(("top i64 %d..%d step 5"):format(c[1], c[2]), c[1], c[2], 5)
end
-- more iterations than a parallel loop can take: a clear error, never a truncated loop
C.check_error("i64 bounds with 2^32 + 3 iterations", function() top64(0, 5 * (big + 2)) end,
  "more than 2147483647 (2^31 - 1) iterations")
local huge = lt.kernel(function() for i = 0, 2 ^ 32 + 2 do lt.atomic_add(cnt[0], 1) end end)
C.check_error("constant 2^32 + 3 iterations", huge, "loop_bounds.lua:70: this parallel loop runs 4294967299 iterations")

-- serial loops (inside the parallel one, or lt.serial): the same counts, in order
local nested = lt.kernel(function(a, b, s)
  for r = 0, 1 do
    if s == 1 then for i = a, b do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], i) end
    elseif s == -2 then for i = a, b, -2 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], i) end
    else for i = a, b, 9 do lt.atomic_add(cnt[0], 1); lt.atomic_add(cnt[1], i) end end
  end
end, { a = lt.i64, b = lt.i64, s = lt.i32 })
for _, s in ipairs { 1, -2, 9 } do
  for _, c in ipairs { { IMAX - 20, IMAX }, { IMIN + 20, IMIN }, { IMIN, IMIN + 30 }, { 3, -3 }, { -3, 3 } } do
    reset(); nested(c[1], c[2], s); check(("nested i64 %d..%d step %d"):format(c[1], c[2], s), c[1], c[2], s, 2)
  end
end
local order = lt.field(lt.i64, 64)
local serial = lt.kernel(function(a, b)
  local n = 0
  for i in lt.serial(a, b, -3) do order[n] = i; n = n + 1 end
  return n
end, { a = lt.i32, b = lt.i32 })
local n = serial(MIN + 100, MIN)
local want = {}
for i = MIN + 100, MIN, -3 do want[#want + 1] = i end
C.check("lt.serial count", n, #want)
for q = 1, #want do C.check("lt.serial order " .. q, order[q - 1], want[q]) end

-- where loops run: the final IR (after the last pass) of each kernel
local function final_ir(k) return k:ir():match(".*# after [%w_]+\n(.*)$") end
local y = lt.field(lt.i32, 64)
local stepped = lt.kernel(function(n) for i = n, 0, -2 do y[i] = i end end)
local guarded = lt.kernel(function(n, cap)
  if n > cap then return end
  for i = 0, n - 1 do y[i] = 2 * i end
end)
local in_if = lt.kernel(function(n) if n > 3 then for i = 0, n - 1 do y[i] = 3 * i end end end)
local whiles = lt.kernel(function(n) local i = 0; while i < n do y[i] = 4 * i; i = i + 1 end end)
stepped(63)
for i = 0, 63 do C.check("stepped " .. i, y[i], i % 2 == 1 and i or 0) end
y:fill(0)
guarded(100, 64)
for i = 0, 63 do C.check("guard taken " .. i, y[i], 0) end
guarded(64, 64)
for i = 0, 63 do C.check("guard passed " .. i, y[i], 2 * i) end
in_if(64)
whiles(64)
for i = 0, 63 do C.check("while " .. i, y[i], 4 * i) end
C.check("a stepped top-level loop is parallel", (final_ir(stepped):find("task_range_for", 1, true)) ~= nil, true)
C.check("a loop after a guard clause is parallel", (final_ir(guarded):find("task_range_for", 1, true)) ~= nil, true)
C.check("the guard is not tested per iteration", (final_ir(guarded):match("task_range_for.-}"):find("if", 1, true)),
  nil)
C.check("a loop inside an if says it is serial",
  (final_ir(in_if):find("# serial: inside an if", 1, true)) ~= nil, true)
C.check("a while loop says it is serial",
  (final_ir(whiles):find("# serial: a while or repeat loop", 1, true)) ~= nil, true)

C.finish("loop_bounds")
