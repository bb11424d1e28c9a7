-- lt.ndrange with bounds known only at run time: a reversed range on any axis
-- is empty, on every path (plain, lt.grouped, nested in another loop), and no
-- cell outside the ranges is written; more than 2^31 - 1 index tuples and
-- bounds beyond 32 bits are errors, never a truncated loop. The reference is
-- plain Lua's nested numeric for over the same ranges.
local lt = require "lattice"
lt.init { threads = 2 }
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local S = 8
local x = lt.field(lt.i32, { S, S, S })
local hits = lt.field(lt.i32, 1)
local plain = lt.kernel(function(a, b, c, d, e, f)
  for i, j, k in lt.ndrange({ a, b }, { c, d }, { e, f }) do x[i][j][k] = x[i][j][k] + 1; lt.atomic_add(hits[0], 1) end
end)
local grouped = lt.kernel(function(a, b, c, d, e, f)
  for I in lt.grouped(lt.ndrange({ a, b }, { c, d }, { e, f })) do x[I] = x[I] + 1; lt.atomic_add(hits[0], 1) end
end)
local nested = lt.kernel(function(a, b, c, d, e, f)
  for _ = 0, 0 do
    for i, j, k in lt.ndrange({ a, b }, { c, d }, { e, f }) do x[i][j][k] = x[i][j][k] + 1; hits[0] = hits[0] + 1 end
  end
end)

local function expect(a, b, c, d, e, f)
  local want, n = {}, 0
  for i = a, b - 1 do for j = c, d - 1 do for k = e, f - 1 do want[(i * S + j) * S + k] = 1; n = n + 1 end end end
  return want, n
end

local cases = {
  { 3, 0, 3, 0, 0, 2 }, { 3, 0, 0, 3, 3, 0 }, { 5, 1, 6, 2, 7, 3 }, { 0, 3, 3, 0, 0, 3 },
  { 1, 4, 2, 5, 0, 8 }, { 2, 2, 0, 8, 0, 8 }, { 0, 8, 0, 8, 0, 8 }, { 7, 8, 0, 1, 6, 8 },
}
for name, k in pairs { plain = plain, grouped = grouped, nested = nested } do
  for _, c in ipairs(cases) do
    x:fill(0)
    hits[0] = 0
    k(table.unpack(c))
    local want, n = expect(table.unpack(c))
    local what = name .. " " .. table.concat(c, ",")
    C.check(what .. ": iterations", hits[0], n)
    local bad = 0
    for i = 0, S - 1 do for j = 0, S - 1 do for q = 0, S - 1 do
      if x[i][j][q] ~= (want[(i * S + j) * S + q] or 0) then bad = bad + 1 end
    end end end
    C.check(what .. ": cells written wrongly", bad, 0)
  end
end

-- too many index tuples, or bounds that do not fit in an i32
local many = lt.kernel(function(n) for i, j in lt.ndrange(n, n) do hits[0] = 1 end end)
C.check_error("run-time extents of 50000 x 50000", function() many(50000) end,
  "has more than 2147483647 (2^31 - 1) index tuples")
C.check_error("run-time extents of -50000 x -50000 run nothing", function() many(-50000); error("ran") end, "ran")
C.check_error("constant extents", lt.kernel(function() for i, j in lt.ndrange(50000, 50000) do hits[0] = 1 end end),
  "ndrange_bounds.lua:57: this lt.ndrange has 2500000000 index tuples")
C.check_error("constant beyond 32 bits", lt.kernel(function() for i in lt.ndrange(2 ^ 32) do hits[0] = 1 end end),
  "must fit in 32 bits (got 4294967296)")
C.check_error("an i64 bound", function()
  lt.kernel(function(n) for i in lt.ndrange(n) do hits[0] = 1 end end, { n = lt.i64 })(5)
end, "is an i64 value: its indices are i32")

C.finish("ndrange_bounds")
