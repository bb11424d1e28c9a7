-- large_tasks.lua -- kernels whose tasks take more than 250 field addresses, which
-- the code generator compiles as several functions (src/jit/llvm/cg_split.c:
-- parts of at most 200 addresses, values used across a cut recomputed in
-- the later part). Every result is checked against plain Lua: values that
-- cross cuts (pure ones, a kernel argument, a loaded value, a parallel sum),
-- a struct-for over a dense and over a sparse layout, an if and an inner
-- loop with a break in the middle of the body, and a serial task with a
-- return at its end. tests/unit/test_jit_split.c checks where the cuts go.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

local N, M = 260, 64   -- fields, cells per field
local g = {}
for k = 1, N do g[k] = lt.field(lt.i32, M) end

-- pure values and an argument used by every part; a parallel sum
local a = lt.kernel(function(s)
  local total = 0
  for i = 0, M - 1 do
    local base = i * 3 + s
    for k in lt.static(1, N) do g[k][i] = base * k + i end
    total = total + base
  end
  return total
end, { s = lt.i32 }, lt.i32)

local total = a(7)
local want_total = 0
for i = 0, M - 1 do want_total = want_total + i * 3 + 7 end
check("parallel sum", total, want_total)
local bad = 0
for k = 1, N do
  for i = 0, M - 1 do
    if g[k][i] ~= (i * 3 + 7) * k + i then bad = bad + 1 end
  end
end
check("pure values across parts: wrong cells", bad, 0)

-- read-modify-write of every field; a loaded value used by the first
-- statements only; an if, and an inner loop with a break, in the middle
local b = lt.kernel(function()
  for i = 0, M - 1 do
    local v = g[1][i]
    g[2][i] = v + 1
    for k in lt.static(3, N // 2) do g[k][i] = g[k][i] - k end
    if i % 2 == 0 then
      for k in lt.static(N // 2 + 1, N // 2 + 40) do g[k][i] = g[k][i] * 2 end
    end
    local j = 0
    while true do
      j = j + 1
      if j >= 5 then break end
    end
    g[N // 2 + 41][i] = g[N // 2 + 41][i] + j
    for k in lt.static(N // 2 + 42, N) do g[k][i] = g[k][i] + k end
  end
end)

local before = {}
for k = 1, N do
  before[k] = {}
  for i = 0, M - 1 do before[k][i] = g[k][i] end
end
b()
bad = 0
for i = 0, M - 1 do
  local want = {}
  for k = 1, N do want[k] = before[k][i] end
  want[2] = want[1] + 1
  for k = 3, N // 2 do want[k] = want[k] - k end
  if i % 2 == 0 then
    for k = N // 2 + 1, N // 2 + 40 do want[k] = want[k] * 2 end
  end
  want[N // 2 + 41] = want[N // 2 + 41] + 5
  for k = N // 2 + 42, N do want[k] = want[k] + k end
  for k = 1, N do
    if g[k][i] ~= want[k] then bad = bad + 1 end
  end
end
check("read-modify-write across parts: wrong cells", bad, 0)

-- a serial task (no loop) writing every field, returning a value loaded at its end
local c = lt.kernel(function()
  for k in lt.static(1, N) do g[k][k % M] = -k end
  return g[1][1] + g[N][N % M]
end, {}, lt.i32)
check("serial task result", c(), -1 - N)
bad = 0
for k = 1, N do
  if g[k][k % M] ~= -k then bad = bad + 1 end
end
check("serial task: wrong cells", bad, 0)

-- struct-fors: N places under one dense level; NS places under pointer ->
-- dense, read and written (two addresses each: the write may activate)
local NS = 130
local d, sp = {}, {}
for k = 1, N do d[k] = lt.field(lt.i32) end
for k = 1, NS do sp[k] = lt.field(lt.i32) end
lt.root:dense(lt.i, M):place(table.unpack(d))
lt.root:pointer(lt.i, 8):dense(lt.i, 8):place(table.unpack(sp))
for i = 0, M - 1 do d[1][i] = i + 1 end
local sf = lt.kernel(function()
  for i in d[1] do
    local v = d[1][i]
    for k in lt.static(2, N) do d[k][i] = v * k end
  end
end)
local activate = lt.kernel(function()
  for i = 0, M - 1 do
    if i % 16 < 8 then sp[1][i] = i + 1 end   -- every other block of 8 cells
  end
end)
local sf_sparse = lt.kernel(function()
  for i in sp[1] do
    for k in lt.static(1, NS) do sp[k][i] = sp[k][i] * 2 + k end
  end
end)
sf()
activate()
sf_sparse()
bad = 0
for k = 2, N do
  for i = 0, M - 1 do
    if d[k][i] ~= (i + 1) * k then bad = bad + 1 end
  end
end
check("dense struct-for: wrong cells", bad, 0)
bad = 0
for k = 1, NS do
  for i = 0, M - 1 do
    local want = 0
    if i % 16 < 8 then want = k == 1 and (i + 1) * 2 + 1 or k end
    if sp[k][i] ~= want then bad = bad + 1 end
  end
end
check("sparse struct-for: wrong cells", bad, 0)

-- blocks that are too large inside a task are cut into pieces called in
-- place (cg_outline): the row loop of an ndrange, an if around the whole
-- body, a value loaded from a field the loop writes and used throughout,
-- a local updated in every piece, and a while loop whose break comes last
local h = {}
for k = 1, N do h[k] = lt.field(lt.i32, { M, 4 }) end
local rows = lt.kernel(function(s)
  for i, j in lt.ndrange(M, 4) do   -- 64 rows: a parallel loop over rows, a loop along j inside
    for k in lt.static(1, N) do h[k][i][j] = i * k + j + s end
  end
end, { s = lt.i32 })
rows(3)
bad = 0
for k = 1, N do
  for i = 0, M - 1 do
    for j = 0, 3 do
      if h[k][i][j] ~= i * k + j + 3 then bad = bad + 1 end
    end
  end
end
check("ndrange rows: wrong cells", bad, 0)

local wrapped = lt.kernel(function()
  for i = 0, M - 1 do
    if i % 3 ~= 1 then
      local v = g[1][i]   -- g[1] is written below: not recomputed, passed on
      for k in lt.static(1, N) do g[k][i] = g[k][i] + v + k end
    end
  end
end)
for k = 1, N do
  for i = 0, M - 1 do before[k][i] = g[k][i] end
end
wrapped()
bad = 0
for k = 1, N do
  for i = 0, M - 1 do
    local want = before[k][i]
    if i % 3 ~= 1 then want = want + before[1][i] + k end
    if g[k][i] ~= want then bad = bad + 1 end
  end
end
check("if around the body, loaded value across pieces: wrong cells", bad, 0)

-- a serial kernel: a local summed in every piece, a while loop left by a
-- break after its large body, and the result returned
local serial = lt.kernel(function(n)
  local acc = 0
  local r = 0
  while true do
    for k in lt.static(1, N) do
      g[k][r] = r + k
      acc = acc + g[k][r]
    end
    r = r + 1
    if r >= n then break end
  end
  return acc
end, { n = lt.i32 }, lt.i32)
local got = serial(3)
local want_acc = 0
for r = 0, 2 do
  for k = 1, N do want_acc = want_acc + r + k end
end
check("serial pieces: result", got, want_acc)
bad = 0
for k = 1, N do
  for r = 0, 2 do
    if g[k][r] ~= r + k then bad = bad + 1 end
  end
end
check("serial pieces: wrong cells", bad, 0)

T.finish("large task")
