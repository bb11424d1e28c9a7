-- Kernels whose results depend on mem2reg and licm being exactly right:
-- locals carried around loops, stored in one branch or in nested branches,
-- stores before a break or a return; and loops that read a field they write.
-- Each scalar kernel is also a plain Lua function: Lua's result is the reference.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

-- (The kernel's outermost `for` runs in parallel, so these functions loop
-- with `while` at their top level and nest their `for` loops inside.)

-- the load of m at the top of each iteration sees the previous iteration's
-- store, made in one branch only
local function cond_store(n)
  local m, acc, k = -1, 0, 0
  while k < n do
    acc = acc + m
    if k % 3 == 1 then m = k end
    k = k + 1
  end
  return m * 1000 + acc
end

-- a is stored two ifs deep and read at the top of a later iteration of a
-- serial for loop
local function nested_store(n)
  local a, b = 1, 0
  while true do
    for k = 1, n do
      b = b + a
      if k % 2 == 0 then
        if k % 4 == 0 then a = a * 2 else a = a + 1 end
      end
    end
    break
  end
  return b
end

-- the value after the loop depends on whether the break was taken
local function break_after_store(n)
  local x, k = 0, 0
  while k < 100 do
    k = k + 1
    x = k * 2
    if x > n then break end
    x = x + 1
  end
  return x
end

-- a local declared in the body starts over on every iteration
local function fresh_local(n)
  local s, k = 0, 0
  while k < n do
    k = k + 1
    local t = 0
    if k % 2 == 0 then t = k end
    t = t + 1
    s = s + t
  end
  return s
end

-- a return from inside a loop, after stores to locals
local function ret_in_loop(n)
  local acc, last = 0, 0
  while last < n do
    last = last + 1
    acc = acc + last
    if acc > 50 then return acc * 10 + last end
  end
  return acc * 100 + last
end

-- a while loop whose exit test reads locals stored at the end of the body
-- and in a branch
local function while_carried(n)
  local i, s, step = 0, 0, 1
  while i < n and s < 1000 do
    s = s + step * i
    if s % 7 == 3 then step = step + 1 end
    i = i + step
  end
  return s * 100 + i
end

-- after an `if` that stores a value defined before it in one branch, the
-- local is that value or the old one, depending on the branch taken
local function branch_merge(n)
  local m, x = 0, n + 1
  if n % 2 == 0 then m = x end
  local r = m * 10
  if n % 3 == 0 then m = n else x = 7 end
  return r + m * 100 + x
end

-- a local stored once and read many times, and one stored again later
local function stored_once(n)
  local c = n * 3
  local d = c + 1
  local s = 0
  while true do
    for k = 0, 9 do s = s + c * k + d end
    d = s
    for _ = 0, 2 do s = s + d end
    break
  end
  return s
end

for _, case in ipairs {
  { "cond_store", cond_store, { 0, 1, 2, 5, 11 } },
  { "nested_store", nested_store, { 0, 1, 4, 9, 17 } },
  { "break_after_store", break_after_store, { 0, 3, 10, 57, 500 } },
  { "fresh_local", fresh_local, { 0, 1, 6, 13 } },
  { "ret_in_loop", ret_in_loop, { 0, 3, 9, 10, 40 } },
  { "while_carried", while_carried, { 0, 1, 5, 30, 200 } },
  { "branch_merge", branch_merge, { 0, 1, 2, 3, 9, -4 } },
  { "stored_once", stored_once, { 0, 1, -4, 7 } },
} do
  local name, fn, inputs = case[1], case[2], case[3]
  local k = lt.kernel(fn)
  for _, v in ipairs(inputs) do check(name .. "(" .. v .. ")", k(v), fn(v)) end
end

-- In a parallel loop, every cell runs the same loop-carried code (the
-- reference is the same loop in Lua).
local R, C = 24, 9
local out = lt.field(lt.i32, { R })
local per_cell = lt.kernel(function()
  for i in lt.ndrange(R) do
    local m, acc, x = -1, 0, 0
    for k = 0, i - 1 do
      acc = acc + m
      if k % 3 == 1 then m = k end
      x = k * 2
      if x > i then break end
      x = x + 1
    end
    out[i] = m * 1000 + acc + x
  end
end)
per_cell()
local ok = true
for i = 0, R - 1 do
  local m, acc, x = -1, 0, 0
  for k = 0, i - 1 do
    acc = acc + m
    if k % 3 == 1 then m = k end
    x = k * 2
    if x > i then break end
    x = x + 1
  end
  if out[i] ~= m * 1000 + acc + x then ok = false end
end
check("loop-carried locals in every cell of a parallel loop", ok, true)

-- if-branches merged into selects (mpm88's grid_op pattern): a division that
-- only runs when m > 0, then clamps that overwrite the value in some cells;
-- masses are powers of two so f32 and Lua's doubles agree exactly
local G = 40
local gv, gm = lt.field(lt.f32, { G }), lt.field(lt.f32, { G })
local function grid_ref(i, v, m)
  if m > 0 then v = v / m end
  v = v - 0.5
  if i < 3 and v < 0 then v = 0 end
  if i > G - 4 and v > 0 then v = 0 end
  return v
end
for i = 0, G - 1 do
  gv[i] = (i * 7) % 11 - 5
  gm[i] = ({ 0, 1, 2, 4, 0.5 })[i % 5 + 1]
end
lt.kernel(function()
  for i in lt.ndrange(G) do
    local v = gv[i]
    local m = gm[i]
    if m > 0 then v = v / m end
    v = v - 0.5
    if i < 3 and v < 0 then v = 0 end
    if i > G - 4 and v > 0 then v = 0 end
    gv[i] = v
  end
end)()
local gsame = true
for i = 0, G - 1 do
  local want = grid_ref(i, (i * 7) % 11 - 5, ({ 0, 1, 2, 4, 0.5 })[i % 5 + 1])
  if gv[i] ~= want then gsame = false; T.fail(("grid_op-like cell %d: got %s, want %s"):format(i, gv[i], want)) end
end
check("branches merged into selects", gsame, true)

-- licm: a serial loop that reads a[i][0] while writing a[i][k], k = 0 first:
-- the read must see the write of the first iteration, so it cannot move out;
-- c[i] is never written in the loop and may.
local a = lt.field(lt.i32, { R, C })
local b = lt.field(lt.i32, { R, C })
local c = lt.field(lt.i32, { R })
local rows = lt.kernel(function()
  for i in lt.ndrange(R) do
    for k = 0, C - 1 do
      a[i][k] = a[i][0] + 1
      b[i][k] = c[i] * 2 + k
    end
  end
end)
local ref_a, ref_b = {}, {}
for i = 0, R - 1 do
  c[i] = i * 3 - 5
  ref_a[i], ref_b[i] = {}, {}
  for k = 0, C - 1 do a[i][k] = i + k; ref_a[i][k] = i + k end
  for k = 0, C - 1 do
    ref_a[i][k] = ref_a[i][0] + 1
    ref_b[i][k] = c[i] * 2 + k
  end
end
rows()
local same = true
for i = 0, R - 1 do
  for k = 0, C - 1 do
    if a[i][k] ~= ref_a[i][k] or b[i][k] ~= ref_b[i][k] then same = false end
  end
end
check("a loop reading a cell it writes, and an invariant load", same, true)

-- a serial loop (lt.serial: a plain top-level loop would be parallel and
-- its iterations would race on p[k - 1]): prefix sums read the previous cell
local N = 50
local p = lt.field(lt.i32, { N })
local prefix = lt.kernel(function()
  for k in lt.serial(1, N - 1) do p[k] = p[k] + p[k - 1] end
end)
local want = {}
for k = 0, N - 1 do p[k] = k % 7 - 2; want[k] = k % 7 - 2 end
for k = 1, N - 1 do want[k] = want[k] + want[k - 1] end
prefix()
local psame = true
for k = 0, N - 1 do if p[k] ~= want[k] then psame = false end end
check("prefix sums in a serial kernel", psame, true)

-- a kernel-level local stored once before the parallel loop, and a sum
-- updated by every iteration (reduce must still see `s = s + v`)
local vals = lt.field(lt.i32, { 1000 })
for i = 0, 999 do vals[i] = (i * 37) % 101 end
local sum_scaled = lt.kernel(function(f)
  local scale = f * 2
  local s = 0
  for i in lt.ndrange(1000) do
    vals[i] = vals[i] * scale
    s = s + vals[i]
  end
  return s + scale
end)
local ref = 0
for i = 0, 999 do ref = ref + (i * 37) % 101 * 6 end
check("kernel-level local and a parallel sum", sum_scaled(3), ref + 6)

T.finish("passes_locals")
print("passes_locals: ok")
