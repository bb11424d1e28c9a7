-- Index arithmetic that simplify_index rewrites (constant offsets, floored
-- division and modulo made unsigned, shifts or masks where ranges allow),
-- on ndrange loops with odd sizes, negative begins, 2-D and 3-D, struct-fors
-- and serial loops over negative ranges. References are plain Lua, whose
-- // and % are floored like the kernels'.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

-- a 5-point stencil over the interior of a 37 x 23 grid (the linear index is
-- split by // 21 and % 21)
local NI, NJ = 37, 23
local u, lap = lt.field(lt.i32, { NI, NJ }), lt.field(lt.i32, { NI, NJ })
local function uv(i, j) return (i * 7 + j * 13) % 17 - 8 end
for i = 0, NI - 1 do for j = 0, NJ - 1 do u[i][j] = uv(i, j) end end
lt.kernel(function()
  for i, j in lt.ndrange({ 1, NI - 1 }, { 1, NJ - 1 }) do
    lap[i][j] = u[i + 1][j] + u[i - 1][j] + u[i][j + 1] + u[i][j - 1] - 4 * u[i][j]
  end
end)()
local ok = true
for i = 1, NI - 2 do
  for j = 1, NJ - 2 do
    local want = uv(i + 1, j) + uv(i - 1, j) + uv(i, j + 1) + uv(i, j - 1) - 4 * uv(i, j)
    if lap[i][j] ~= want then ok = false end
  end
end
check("stencil over the interior of 37 x 23", ok, true)

-- negative begins: i and j take negative values, so i // 4, i % 4, j // 3
-- must stay floored (signed)
local out = lt.field(lt.i32, { 12, 12 })
lt.kernel(function()
  for i, j in lt.ndrange({ -5, 6 }, { -4, 7 }) do
    out[i + 5][j + 4] = (i // 4) * 1000 + (i % 4) * 100 + (j // 3) * 10 + j % 3 + ((i + 2) + 3) - 1
  end
end)()
ok = true
for i = -5, 5 do
  for j = -4, 6 do
    local want = (i // 4) * 1000 + (i % 4) * 100 + (j // 3) * 10 + j % 3 + ((i + 2) + 3) - 1
    if out[i + 5][j + 4] ~= want then ok = false end
  end
end
check("floored // and % of negative ndrange indices", ok, true)

-- powers of two: the split of an ndrange(16, 8) becomes a shift and a mask;
-- the kernel also divides its indices by 4 and 2 and takes them modulo 4
local p2 = lt.field(lt.i32, { 16, 8 })
lt.kernel(function()
  for i, j in lt.ndrange(16, 8) do
    p2[i][j] = (i // 4) * 100 + (i % 4) * 10 + j // 2 + ((j * 4) // 4) * 1000 + ((j * 4) % 4)
  end
end)()
ok = true
for i = 0, 15 do
  for j = 0, 7 do
    if p2[i][j] ~= (i // 4) * 100 + (i % 4) * 10 + j // 2 + j * 1000 then ok = false end
  end
end
check("power-of-two splits", ok, true)

-- 3-D with offsets on every axis
local cube = lt.field(lt.i32, { 7, 6, 5 })
lt.kernel(function()
  for i, j, k in lt.ndrange({ 1, 6 }, { 2, 6 }, { 1, 4 }) do
    cube[i - 1][j - 2 + 1][k + 1] = i * 10000 + j * 100 + k
  end
end)()
ok = true
for i = 1, 5 do
  for j = 2, 5 do
    for k = 1, 3 do
      if cube[i - 1][j - 1][k + 1] ~= i * 10000 + j * 100 + k then ok = false end
    end
  end
end
check("3-D ndrange with offsets", ok, true)

-- an ndrange whose end is an argument: the index is still known >= 0, and
-- one whose begin is a negative argument: it is not
local lin = lt.field(lt.i32, { 64 })
local by_arg = lt.kernel(function(n, b)
  for i in lt.ndrange(n) do lin[i] = (i // 7) * 10 + i % 7 end
  for i in lt.ndrange({ b, 0 }) do lin[i + 60] = (i // 4) * 10 + i % 4 end
end)
by_arg(37, -20)
ok = true
for i = 0, 36 do if lin[i] ~= (i // 7) * 10 + i % 7 then ok = false end end
for i = -20, -1 do if lin[i + 60] ~= (i // 4) * 10 + i % 4 then ok = false end end
check("ndrange bounded by arguments", ok, true)

-- a struct-for over a dense field: indices are never negative
local s = lt.field(lt.i32, { 9, 10 })
lt.kernel(function()
  for i, j in s do s[i][j] = (i // 3) * 100 + (j % 4) * 10 + (j // 8) + (i + 1) % 9 end
end)()
ok = true
for i = 0, 8 do
  for j = 0, 9 do
    if s[i][j] ~= (i // 3) * 100 + (j % 4) * 10 + (j // 8) + (i + 1) % 9 then ok = false end
  end
end
check("struct-for index arithmetic", ok, true)

-- a serial loop over a range with negative values, and one whose range
-- stays below the divisor (k % 8 is k there)
local function serial(n)
  local acc = 0
  while true do
    for k = -7, n do acc = acc + (k // 4) * 3 + k % 4 + (k // 8) end
    for k = 0, 7 do acc = acc + (k % 8) * 5 + k // 8 end
    break
  end
  return acc
end
local ks = lt.kernel(serial)
for _, n in ipairs { -8, -3, 0, 9, 30 } do check("serial(" .. n .. ")", ks(n), serial(n)) end

-- Random index expressions: trees of +, -, * by constants, floored // and %
-- by positive and negative constants, and sums of subtrees, over the two
-- indices of ndranges with random (also negative) begins. eval is plain Lua
-- whose branches test Lua values only, so the same function computes the
-- reference on numbers and traces the kernel on symbolic indices.
local seed = 20261123
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end
local function tree(depth)
  local r = rnd(depth > 0 and 9 or 3)
  if r == 0 then return { op = "i" } end
  if r == 1 then return { op = "j" } end
  if r == 2 then return { op = "c", c = rnd(21) - 10 } end
  local ops = { "+", "-", "*", "//", "%", "sum" }
  local op = ops[rnd(#ops) + 1]
  local c = rnd(17) - 8
  if op == "*" then c = rnd(7) - 3 end
  if (op == "//" or op == "%") and c == 0 then c = 5 end
  if rnd(3) == 0 and (op == "//" or op == "%") then c = 1 << rnd(4) end
  return { op = op, a = tree(depth - 1), b = op == "sum" and tree(depth - 1) or nil, c = c }
end
local function eval(t, i, j)
  if t.op == "i" then return i end
  if t.op == "j" then return j end
  if t.op == "c" then return t.c end
  local a = eval(t.a, i, j)
  if t.op == "+" then return a + t.c end
  if t.op == "-" then return a - t.c end
  if t.op == "*" then return a * t.c end
  if t.op == "//" then return a // t.c end
  if t.op == "%" then return a % t.c end
  return a + eval(t.b, i, j)
end
local rand_out = lt.field(lt.i32, { 4, 20, 20 })
local bad = 0
for trial = 1, 30 do
  local bi, bj = rnd(11) - 5, rnd(11) - 5
  local ni, nj = 1 + rnd(19), 1 + rnd(19)
  local ts = { tree(4), tree(4), tree(4), tree(4) }
  lt.kernel(function()
    for i, j in lt.ndrange({ bi, bi + ni }, { bj, bj + nj }) do
      for e, t in ipairs(ts) do rand_out[e - 1][i - bi][j - bj] = eval(t, i, j) end
    end
  end)()
  for e = 1, 4 do
    for i = bi, bi + ni - 1 do
      for j = bj, bj + nj - 1 do
        if rand_out[e - 1][i - bi][j - bj] ~= eval(ts[e], i, j) and bad < 5 then
          bad = bad + 1
          T.fail(("random index expression (trial %d, expr %d) at i=%d j=%d: got %d, want %d"):format(
            trial, e, i, j, rand_out[e - 1][i - bi][j - bj], eval(ts[e], i, j)))
        end
      end
    end
  end
end

T.finish("passes_index")
print("passes_index: ok")
