-- races.lua -- fields and ndarrays shared by the iterations of a parallel
-- loop (src/ir/passes/races.c, docs/language.md "Fields and ndarrays in
-- parallel loops"): what is refused names the field and the lines; what is
-- accepted computes what a plain-Lua model computes.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

local N = 50
local p = lt.field(lt.i32, { N })
local x, y = lt.field(lt.f32, { N }), lt.field(lt.f32, { N })
local a = lt.field(lt.i32, { N, 8 })

local function line_of(offset) return debug.getinfo(2, "l").currentline + offset end

-- refused: reads the element the previous iteration writes
local l1 = line_of(2)
local prefix = lt.kernel(function()
  for k = 1, N - 1 do p[k] = p[k] + p[k - 1] end
end)
check_error("prefix sum in a parallel loop", prefix,
  ("races.lua:%d: field 'p' is written here and read at another index (line %d) in the same parallel loop"):format(l1, l1))

-- refused: every iteration updates one element
local l2 = line_of(2)
local sum = lt.kernel(function()
  for i in lt.ndrange(N) do x[0] = x[0] + y[i] end
end)
check_error("a sum into x[0]", sum, ("races.lua:%d: field 'x' is written and read in a parallel loop at an index that is not one element per iteration"):format(l2))

-- refused: two iterations per element
local halves = lt.kernel(function()
  for i in lt.ndrange(N) do x[i // 2] = x[i // 2] + 1 end
end)
check_error("x[i // 2]", halves, "field 'x' is written and read in a parallel loop at an index that is not one element per iteration")

-- refused: an ndrange over (i, j) whose iterations share a row
local l3 = line_of(2)
local rows = lt.kernel(function()
  for i, j in lt.ndrange(N, 8) do a[i][j] = a[i][0] * 2 end
end)
check_error("a[i][j] = a[i][0] over (i, j)", rows,
  ("races.lua:%d: field 'a' is written here and read at another index (line %d)"):format(l3, l3))

-- refused: a struct-for that writes one column from every cell of a row
local col = lt.kernel(function()
  for i, j in a do a[i][0] = a[i][j] + 1 end
end)
check_error("struct-for writing a[i][0]", col, "field 'a' is written here and read at another index")

-- refused: atomics on a field the loop also reads elsewhere
local l4 = line_of(2)
local mixed = lt.kernel(function()
  for i in lt.ndrange(N) do lt.atomic_add(x[0], 1.0); y[i] = x[0] end
end)
check_error("atomic update and a read", mixed, ("races.lua:%d: field 'x' is updated"):format(l4))

-- refused: an ndarray read at i - 1 and written at i
local nd = lt.ndarray(lt.f32, { N })
local ndk = lt.kernel(function(v)
  for i in lt.ndrange({ 1, N }) do v[i] = v[i] + v[i - 1] end
end, { v = lt.ndarray_type(lt.f32, 1) })
check_error("ndarray prefix", function() ndk(nd) end, "ndarray 'v' is written here and read at another index")

-- accepted, compared with plain Lua:
-- a row per iteration, any column inside it
local model = {}
for i = 0, N - 1 do
  model[i] = {}
  for c = 0, 7 do a[i][c] = i * 10 + c; model[i][c] = i * 10 + c end
  for c = 0, 7 do model[i][c] = model[i][0] + c + 1 end
end
lt.kernel(function()
  for i in lt.ndrange(N) do for c = 0, 7 do a[i][c] = a[i][0] + c + 1 end end
end)()
local bad = 0
for i = 0, N - 1 do for c = 0, 7 do if a[i][c] ~= model[i][c] then bad = bad + 1 end end end
check("a row per iteration: wrong cells", bad, 0)

-- one element per iteration, 2-D ndrange with offsets, struct-for, shifted index
lt.kernel(function() for i, j in lt.ndrange({ 1, N }, { 2, 8 }) do a[i][j] = a[i][j] * 2 end end)()
lt.kernel(function() for i, j in a do a[i][j] = a[i][j] + 1 end end)()
lt.kernel(function(n) for i in lt.ndrange(n) do p[i + 1] = p[i + 1] * 3 end end, { n = lt.i32 })(N - 1)
bad = 0
for i = 0, N - 1 do
  for c = 0, 7 do
    local v = model[i][c]
    if i >= 1 and c >= 2 then v = v * 2 end
    if a[i][c] ~= v + 1 then bad = bad + 1 end
  end
end
check("ndrange and struct-for in place: wrong cells", bad, 0)

-- atomics only, and a serial prefix sum: fine
for k = 0, N - 1 do p[k] = k % 5 end
lt.kernel(function() for i in lt.ndrange(N) do lt.atomic_add(x[i % 4], 1.0) end end)()
lt.kernel(function() for k in lt.serial(1, N - 1) do p[k] = p[k] + p[k - 1] end end)()
local want, acc = true, 0
for k = 0, N - 1 do acc = acc + k % 5; if p[k] ~= acc then want = false end end
check("lt.serial prefix sum", want, true)

-- an index the check cannot read is taken as one element per iteration
local perm = lt.field(lt.i32, { N })
for i = 0, N - 1 do perm[i] = (i * 7) % N; y[i] = i end
lt.kernel(function() for i in lt.ndrange(N) do y[perm[i]] = y[perm[i]] + 100 end end)()
bad = 0
for i = 0, N - 1 do if y[i] ~= i + 100 then bad = bad + 1 end end
check("permutation: wrong cells", bad, 0)

-- 2-D ndarrays over run-time extents: in place and row by row are fine ...
local A = lt.ndarray(lt.f32, { 6, 5 })
local amodel = {}
for i = 0, 5 do amodel[i] = {}; for j = 0, 4 do A[i][j] = i * 10 + j; amodel[i][j] = i * 10 + j end end
lt.kernel(function(a)
  for i, j in lt.ndrange(a.shape[1], a.shape[2]) do a[i][j] = a[i][j] * 2 end
end, { a = lt.ndarray_type(lt.f32, 2) })(A)
lt.kernel(function(a)
  for i in lt.ndrange(a.shape[1]) do for j = 1, a.shape[2] - 1 do a[i][j] = a[i][j - 1] + 1 end end
end, { a = lt.ndarray_type(lt.f32, 2) })(A)
bad = 0
for i = 0, 5 do
  for j = 0, 4 do amodel[i][j] = amodel[i][j] * 2 end
  for j = 1, 4 do amodel[i][j] = amodel[i][j - 1] + 1 end
  for j = 0, 4 do if A[i][j] ~= amodel[i][j] then bad = bad + 1 end end
end
check("2-D ndarray in place and by rows: wrong cells", bad, 0)
-- ... and an (i, j) loop reading another column of its row is refused, for
-- ndarrays and for fields, with run-time extents too
check_error("2-D ndarray, (i, j) reads column 0", function()
  lt.kernel(function(a)
    for i, j in lt.ndrange(a.shape[1], a.shape[2]) do a[i][j] = a[i][0] end
  end, { a = lt.ndarray_type(lt.f32, 2) })(A)
end, "ndarray 'a' is written here and read at another index")
check_error("field, (i, j) over run-time extents reads j - 1", function()
  lt.kernel(function(n) for i, j in lt.ndrange(n, 8) do a[i][j] = a[i][j - 1] end end, { n = lt.i32 })(4)
end, "field 'a' is written here and read at another index")
lt.kernel(function(n, m) for i, j in lt.ndrange(n, m) do a[i][j] = a[i][j] + 1 end end, { n = lt.i32, m = lt.i32 })(N, 8)
check("field in place over run-time extents", a[3][5], model[3][5] * (3 >= 1 and 5 >= 2 and 2 or 1) + 2)

-- state per step: x[s + 1][i] from neighbours x[s][i +- 1] in one parallel
-- loop is fine (an axis with the argument s plus different constants keeps
-- the elements apart, src/ir/affine.c); a neighbour in the written step, or
-- steps s and t that may be equal, are refused
do
  local S = 4
  local st = lt.field(lt.f64, { S, N })
  local step = lt.kernel(function(s)
    local t = s + 1                  -- top-level value: offload passes it through a global temporary
    for i in lt.ndrange({ 1, N - 1 }) do st[t][i] = st[s][i - 1] + st[s][i + 1] end
  end)
  local model = {}
  for s = 0, S - 1 do model[s] = {} for i = 0, N - 1 do model[s][i] = s == 0 and i * i or 0 end end
  for i = 0, N - 1 do st[0][i] = i * i end
  for s = 0, S - 2 do
    step(s)
    for i = 1, N - 2 do model[s + 1][i] = model[s][i - 1] + model[s][i + 1] end
  end
  bad = 0
  for s = 0, S - 1 do for i = 0, N - 1 do if st[s][i] ~= model[s][i] then bad = bad + 1 end end end
  check("state per step: wrong cells", bad, 0)
  check_error("state per step, a neighbour in the written step", function()
    lt.kernel(function(s)
      for i in lt.ndrange({ 1, N - 1 }) do st[s + 1][i] = st[s][i] + st[s + 1][i - 1] end
    end)(0)
  end, "field 'st' is written here and read at another index")
  check_error("steps s and t, which may be equal", function()
    lt.kernel(function(s, t) for i in lt.ndrange({ 1, N - 1 }) do st[t][i] = st[s][i - 1] end end)(0, 1)
  end, "field 'st' is written here and read at another index")
end

-- two ndarray arguments are different arrays to the check; a launch passing
-- one ndarray for both where that would race is refused, naming them
local lshift = line_of(2)
local shift = lt.kernel(function(src, dst)
  for i in lt.ndrange({ 1, src.shape[1] }) do dst[i] = src[i - 1] end
end, { src = lt.ndarray_type(lt.f32, 1), dst = lt.ndarray_type(lt.f32, 1) })
local P, Q = lt.ndarray(lt.f32, { 8 }), lt.ndarray(lt.f32, { 8 })
for i = 0, 7 do P[i] = i end
shift(P, Q)
check("shift into another array", Q[7], 6)
check_error("shift within one array", function() shift(P, P) end,
  ("arguments 'src' and 'dst' are the same ndarray, but its parallel loop (line %d)"):format(lshift))
check("nothing ran", P[7], 7)
local same = lt.kernel(function(src, dst)
  for i in lt.ndrange(src.shape[1]) do dst[i] = src[i] * 2 end
end, { src = lt.ndarray_type(lt.f32, 1), dst = lt.ndarray_type(lt.f32, 1) })
same(P, P)
check("in place through two arguments", P[7], 14)

T.finish("races")
