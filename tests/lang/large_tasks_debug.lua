-- large_tasks_debug.lua -- a bounds error in one part of a task compiled as
-- several functions (src/jit/llvm/cg_split.c), or in one piece of a block
-- cut into functions called in place, stops the task as it stops an uncut
-- one: the error is raised naming the line, no statement after the failing
-- one runs in its iteration (the later parts do not run at all), and the
-- next call works. One thread, so "before" and "after" are well defined on
-- the CPU; on CUDA the iterations run in threads of their own (docs/cuda.md,
-- "Errors"), so the checks of other iterations are CPU-only.
local lt = require "lattice"
lt.init { debug = true, threads = 1 }
local one_thread = require("lattice.state").opts.arch == "cpu"

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

local N, M = 300, 64
local g = {}
for k = 1, N do g[k] = lt.field(lt.i32, M) end

local line = debug.getinfo(1, "l").currentline + 6
local k1 = lt.kernel(function(bad)
  for i = 0, M - 1 do
    for k in lt.static(1, 20) do g[k][i] = k end
    local j = i
    if i == bad then j = M + 5 end
    g[21][j] = 21
    for k in lt.static(22, N) do g[k][i] = k end
  end
end, { bad = lt.i32 })

k1(-1)
local bad = 0
for k = 1, N do
  for i = 0, M - 1 do
    if g[k][i] ~= k then bad = bad + 1 end
  end
end
check("no error: wrong cells", bad, 0)

for k = 1, N do g[k]:fill(0) end
check_error("bounds error in the first part", function() k1(10) end,
  ("large_tasks_debug.lua:%d): index 69 out of range for axis 0 of field"):format(line))
-- iteration 10 stopped at the failing store: nothing after it ran there
for k = 22, N do
  if g[k][10] ~= 0 then bad = bad + 1 end
end
check("statements after the error in its iteration: cells written", bad, 0)
check("cells before the error in its iteration", g[20][10], 20)
bad = 0
for k = 1, N do
  if g[k][11] ~= 0 then bad = bad + 1 end   -- the next iteration: the task had stopped
end
if one_thread then check("the iteration after the error: cells written", bad, 0) end
-- and the next call works
k1(-1)
check("next call works", g[N][M - 1], N)

-- the same in pieces of a block called in place (the row loop of an
-- ndrange): the error stops the task in the piece where it happens
local h = {}
for k = 1, N do h[k] = lt.field(lt.i32, { M, 4 }) end
local line2 = debug.getinfo(1, "l").currentline + 6
local k2 = lt.kernel(function(bad_i, bad_j)
  for i, j in lt.ndrange(M, 4) do
    for k in lt.static(1, 20) do h[k][i][j] = k end
    local jj = j
    if i == bad_i and j == bad_j then jj = 9 end
    h[21][i][jj] = 21
    for k in lt.static(22, N) do h[k][i][j] = k end
  end
end, { bad_i = lt.i32, bad_j = lt.i32 })
k2(-1, -1)
bad = 0
for k = 1, N do
  for i = 0, M - 1 do
    for j = 0, 3 do
      if h[k][i][j] ~= k then bad = bad + 1 end
    end
  end
end
check("pieces, no error: wrong cells", bad, 0)
for k = 1, N do h[k]:fill(0) end
check_error("bounds error in a piece", function() k2(10, 2) end,
  ("large_tasks_debug.lua:%d): index 9 out of range for axis 1 of field"):format(line2))
bad = 0
for k = 22, N do
  if h[k][10][2] ~= 0 then bad = bad + 1 end
end
check("pieces: statements after the error in its iteration: cells written", bad, 0)
check("pieces: cells before the error in its iteration", h[20][10][2], 20)
if one_thread then check("pieces: the iteration before the error", h[N][10][1], N) end
bad = 0
for k = 1, N do
  if h[k][10][3] ~= 0 then bad = bad + 1 end   -- the next iteration: the task had stopped
end
if one_thread then check("pieces: the iteration after the error: cells written", bad, 0) end
k2(-1, -1)
check("pieces: next call works", h[N][M - 1][3], N)

T.finish("large task (debug)")
