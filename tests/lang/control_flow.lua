-- Control flow in kernels. Each kernel body is also a plain Lua function, so
-- the reference is the same function run by Lua itself (values stay in i32 range).
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

local function branches(v)
  local r = 0
  if v > 10 and v < 20 then
    r = 1
  elseif v >= 20 or v < -5 then
    r = 2
  elseif not (v ~= 3) then
    r = 3
  else
    r = 4
  end
  if v == 7 then r = r + 100 end
  return r
end

local function loops(n)
  local s = 0
  for i = 1, n do s = s + i end                -- step 1: range_for, inclusive limit
  for i = n, 1, -2 do s = s + 3 * i end        -- negative step
  for i = 0, n, 3 do s = s + i * i end         -- step 3
  for i = 5, 1 do s = s + 1000 end             -- empty
  return s
end

local function nested(n)
  local s = 0
  for i = 0, n - 1 do
    for j = 0, i do
      if (i + j) % 3 == 0 then s = s + i * j else s = s - 1 end
    end
  end
  return s
end

local function with_break(n)
  local s, i = 0, 0
  while true do
    i = i + 1
    if i > n then break end
    if i % 5 == 0 then s = s + 100 end
    s = s + i
  end
  for rep = 1, 2 do                              -- the outermost loop runs in parallel: nest the search
    for j = 1, 100 do
      if j * j > n then break end
      s = s + j * rep
    end
  end
  return s
end

local function collatz(arg)                     -- early-exit while, loop-carried locals
  local steps, n = 0, arg                        -- arguments are read-only: copy into a local
  while n ~= 1 and steps < 1000 do
    if n % 2 == 0 then n = n // 2 else n = 3 * n + 1 end
    steps = steps + 1
  end
  return steps
end

local function repeat_until(n)
  local s, i = 0, 0
  repeat
    i = i + 1
    s = s + i * 2
  until s > n or i >= 50
  return s * 1000 + i
end

local function logic(a, b)
  local r = 0
  if (a > 0 and b > 0) or (a < 0 and b < 0) then r = r + 1 end
  if not (a == b) then r = r + 10 end
  if a > b == (b < a) then r = r + 100 end
  local m = (a > b) and a or b                   -- becomes a select
  return r + 1000 * m
end

local function swap(a, b)
  local x, y = a, b
  for _ in lt.serial(1, 3) do x, y = y, x + y end  -- multiple assignment, fibonacci-like (serial: each step reads the last)
  return x * 100 + y
end

local function flag_loop(n)                     -- a boolean local as loop condition
  local done, i, s = false, 0, 0
  while not done do
    i = i + 1
    s = s + i
    done = s >= n
  end
  return i
end

local function early(v)                         -- returns under kernel conditions
  if v > 100 then return 7 end
  local s = 0
  local i = 0
  while true do
    i = i + 1
    if i * i > v then return s * 1000 + i end    -- leaves the loop and the kernel
    s = s + i
  end
end

for _, case in ipairs {
  { "early", early, { { 0 }, { 5 }, { 50 }, { 100 }, { 101 } } },
  { "flag_loop", flag_loop, { { 1 }, { 10 }, { 100 } } },
  { "branches", branches, { { -10 }, { -5 }, { 0 }, { 3 }, { 7 }, { 10 }, { 15 }, { 19 }, { 20 }, { 99 } } },
  { "loops", loops, { { 0 }, { 1 }, { 2 }, { 7 }, { 10 }, { 31 } } },
  { "nested", nested, { { 0 }, { 1 }, { 5 }, { 12 } } },
  { "with_break", with_break, { { 0 }, { 3 }, { 9 }, { 30 } } },
  { "collatz", collatz, { { 1 }, { 6 }, { 27 }, { 97 } } },
  { "repeat_until", repeat_until, { { 0 }, { 10 }, { 100 }, { 5000 } } },
  { "logic", logic, { { 1, 2 }, { 2, 1 }, { -1, -3 }, { -1, 2 }, { 4, 4 }, { 0, 0 } } },
  { "swap", swap, { { 1, 1 }, { 2, 5 } } },
} do
  local name, fn, inputs = case[1], case[2], case[3]
  local k = lt.kernel(fn)
  for _, args in ipairs(inputs) do
    check(name .. "(" .. table.concat(args, ", ") .. ")", k(table.unpack(args)), fn(table.unpack(args)))
  end
end

-- a static if (Lua value) traces only the taken branch; a break in an unrolled loop stops it
local FLAG = true
local out = lt.field(lt.i32, 4)
local static = lt.kernel(function(v)
  if FLAG then out[0] = v else out[0] = -v end
  local s = 0
  for _, w in ipairs { 1, 2, 3, 4, 5 } do
    if w == 4 then break end
    s = s + w * v
  end
  out[1] = s
end)
static(5)
check("static if", out[0], 5)
check("unrolled loop with break", out[1], (1 + 2 + 3) * 5)

-- parallel loops writing every element
local grid = lt.field(lt.i32, { 13, 7 })
local fillk = lt.kernel(function(base)
  for i, j in lt.ndrange(13, 7) do grid[i][j] = base + i * 100 + j end
end)
fillk(3)
local ok = true
for i = 0, 12 do for j = 0, 6 do if grid[i][j] ~= 3 + i * 100 + j then ok = false end end end
check("ndrange covers every cell", ok, true)
local sub = lt.kernel(function()
  for i, j in lt.ndrange({ 2, 5 }, { 1, 3 }) do grid[i][j] = -1 end
end)
sub()
local count = 0
for i = 0, 12 do for j = 0, 6 do if grid[i][j] == -1 then count = count + 1 end end end
check("ndrange with begin/end pairs", count, 3 * 2)
check("ndrange begin/end corner", grid[2][1] + grid[4][2] + grid[5][1], -2 + 3 + 500 + 1)

-- a struct-for over a dense field visits every cell once
local cells = lt.field(lt.i32, { 3, 5 })
local visit = lt.kernel(function()
  for i, j in cells do cells[i][j] = cells[i][j] + i * 10 + j + 1 end
end)
visit()
local all = true
for i = 0, 2 do for j = 0, 4 do if cells[i][j] ~= i * 10 + j + 1 then all = false end end end
check("struct-for over a dense field", all, true)

T.finish("control-flow")
print("control_flow: ok")
