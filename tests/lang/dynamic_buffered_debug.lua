-- Buffered appends (src/jit/llvm/cg_append.c) in debug mode, two threads
-- (one has no tables: its appends are plain): a list that fills up raises
-- the append error naming the append's line and keeps what an unbuffered
-- append keeps (as many values as it holds, each once); a task
-- stopped by an error elsewhere hands over the values it had gathered before
-- it returns, so the level counts what its lists hold and the next kernels
-- find their thread's table empty: each list then grows by exactly its
-- appends.
local lt = require "lattice"
lt.init { debug = true, threads = 2 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

local function level_active(f)
  for _, sn in ipairs(lt.stats().snodes) do
    if sn.id == f:parent().id then return sn.active end
  end
end

-- ---- a list that fills up -----------------------------------------------------------------
do
  local CAP = 37
  local l = lt.field(lt.i32)
  lt.root:pointer(lt.i, 2):dynamic(lt.j, CAP, { chunk = 8 }):place(l)
  local line = debug.getinfo(1, "l").currentline + 2
  local fill = lt.kernel(function(n)
    for p in lt.ndrange(n) do lt.append(l, 1, p) end
  end, { n = lt.i32 })
  fill(CAP)
  check("exactly full: length", lt.length(l, 1), CAP)
  check_error("one append too many", function() fill(1) end,
    ("dynamic_buffered_debug.lua:%d): lt.append: the list of field"):format(line))
  check("after the error: length", lt.length(l, 1), CAP)
  l:parent():deactivate_all()
  check_error("a fill past capacity", function() fill(100) end, "is full (capacity 37)")
  check("past capacity: length", lt.length(l, 1), CAP)
  local seen = {}
  for k = 0, CAP - 1 do
    local v = l[1][k]
    if v < 0 or v >= 100 or seen[v] then T.fail(("past capacity: element %d is %d"):format(k, v)) end
    seen[v] = true
  end
  check("past capacity: elements counted", level_active(l), CAP)
end

-- ---- an error in the task after appends ----------------------------------------------------
do
  local M = 64
  local a = lt.field(lt.i32)
  lt.root:pointer(lt.i, 4):dynamic(lt.j, 100000, { chunk = 16 }):place(a)
  local h = lt.field(lt.i32, M)
  local run = lt.kernel(function(bad)
    for i in lt.ndrange(M) do
      for j = 0, 3 do lt.append(a, j, i * 4 + j) end
      local at = i
      if i == bad then at = M + 3 end
      h[at] = i
    end
  end, { bad = lt.i32 })

  -- the lists: how often each value is in each, checked to be a value
  -- appended to that list, and the level's count of elements
  local function lists(what)
    local count, total = {}, 0
    for j = 0, 3 do
      count[j] = {}
      local n = lt.length(a, j)
      total = total + n
      for k = 0, n - 1 do
        local v = a[j][k]
        if v % 4 ~= j or v < 0 or v >= 4 * M then T.fail(("%s: list %d holds %d"):format(what, j, v)) end
        count[j][v] = (count[j][v] or 0) + 1
      end
    end
    check(what .. ": elements counted", level_active(a), total)
    return count
  end
  -- a call without an error adds each of its values once to its list
  local function added_once(what, before, after)
    for j = 0, 3 do
      for i = 0, M - 1 do
        local v = i * 4 + j
        local n = (after[j][v] or 0) - (before[j][v] or 0)
        if n ~= 1 then T.fail(("%s: list %d gained %d copies of %d"):format(what, j, n, v)) end
      end
    end
  end

  check_error("an error after appends", function() run(40) end, "index 67 out of range")
  local before = lists("after the error")
  for j = 0, 3 do
    for v, n in pairs(before[j]) do
      if n > 1 then T.fail(("after the error: list %d holds %d %d times"):format(j, v, n)) end
    end
  end
  run(-1)
  local after = lists("the next call")
  added_once("the next call", before, after)
  -- a kernel on another level, then this one again
  local b = lt.field(lt.f64)
  lt.root:pointer(lt.i, 3):dynamic(lt.j, 1000, { chunk = 4 }):place(b)
  lt.kernel(function()
    for p in lt.ndrange(600) do lt.append(b, p % 3, p * 0.5) end
  end)()
  for i = 0, 2 do
    check("another level: length of list " .. i, lt.length(b, i), 200)
    local sum = 0
    for k = 0, 199 do sum = sum + b[i][k] end
    check("another level: sum of list " .. i, sum, (i * 200 + 3 * 199 * 200 / 2) * 0.5)
  end
  run(-1)
  added_once("after the other level", after, lists("after the other level"))
end

T.finish("dynamic_buffered_debug")
