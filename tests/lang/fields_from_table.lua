-- x:from_table(t): the inverse of x:to_table() for scalar, vector, matrix and
-- struct fields, from 1-based and 0-based tables, writing (and activating)
-- cells of sparse fields; bad tables are errors naming the entry.
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

-- a seeded table of n x m numbers, 1-based; integers when int
local function grid(n, m, seed, int)
  local s, t = seed, {}
  for i = 1, n do
    t[i] = {}
    for j = 1, m do
      s = (s * 1103515245 + 12345) % 2147483648
      t[i][j] = int and (s % 1000 - 500) or (s % 10000) / 64
    end
  end
  return t
end

-- scalar fields, 1-based and 0-based tables; every element read back singly
local f = lt.field(lt.f32, { 5, 7 })
local t1 = grid(5, 7, 1)
f:from_table(t1)
for i = 0, 4 do for j = 0, 6 do C.check(("f[%d][%d]"):format(i, j), f[i][j], t1[i + 1][j + 1]) end end
local t0 = {}
for i = 0, 4 do t0[i] = {} for j = 0, 6 do t0[i][j] = -i * 10 - j end end
f:from_table(t0)
for i = 0, 4 do for j = 0, 6 do C.check(("0-based f[%d][%d]"):format(i, j), f[i][j], -i * 10 - j) end end
local n = lt.field(lt.i16, 9)
local ti = grid(1, 9, 5, true)[1]
n:from_table(ti)
C.check("round trip i16", table.concat(n:to_table(), ","), table.concat(ti, ","))

-- composite fields: vectors (0-based element list), matrices, structs
local v = lt.field(lt.vec3, 6)
local vt = {}
for p = 0, 5 do vt[p] = { p, p * 0.5, -p } end
v:from_table(vt)
for p = 0, 5 do
  local e = v[p]
  for c = 1, 3 do C.check(("vec3 %d [%d]"):format(p, c), e[c], vt[p][c]) end
end
local m = lt.field(lt.mat2, { 2, 3 })
local mt = {}
for i = 1, 2 do
  mt[i] = {}
  for j = 1, 3 do local a = i * 10 + j; mt[i][j] = { { a, a + 0.25 }, { a + 0.5, a + 0.75 } } end
end
m:from_table(mt)
local back = m:to_table()
for i = 1, 2 do for j = 1, 3 do for r = 1, 2 do for c = 1, 2 do
  C.check(("mat2 [%d][%d] (%d,%d)"):format(i, j, r, c), back[i][j][r][c], mt[i][j][r][c])
end end end end
local Body = lt.struct { pos = lt.vec2, mass = lt.f32, id = lt.i32 }
local b = lt.field(Body, 3)
b:from_table({ { pos = { 1, 2 }, mass = 3, id = 4 }, { pos = { 5, 6 }, mass = 7, id = 8 },
               { pos = { 9, 10 }, mass = 11, id = 12 } })
C.check("struct pos", b[2].pos[2], 10.0)
C.check("struct mass", b[1].mass, 7.0)
C.check("struct id", b[0].id, 4)

-- sparse: writes activate the cells they reach, like x[i] = v
local s = lt.field(lt.f32)
lt.root:pointer(lt.i, 4):dense(lt.i, 4):place(s)
local st = {}
for i = 1, 16 do st[i] = (i > 8) and i or 0 end
s:from_table(st)
C.check("sparse: every block written is active", #s:active(), 16)
for i = 0, 15 do C.check("sparse value " .. i, s[i], st[i + 1]) end

-- errors name the entry, in the table's own numbering
C.check_error("missing row", function() f:from_table(grid(4, 7, 2)) end, "t[5] is missing (the field has shape (5, 7))")
C.check_error("missing entry", function() f:from_table({ [0] = {}, {}, {}, {}, {} }) end,
  "t[0][1] is missing (the field has shape (5, 7))")   -- an empty row counts from 1
local bad = grid(5, 7, 3)
bad[3][4] = "x"
C.check_error("not a number", function() f:from_table(bad) end, "t[3][4] is the string \"x\", not a number")
C.check_error("integer field", function() n:from_table({ 1, 2, 3.5, 4, 5, 6, 7, 8, 9 }) end,
  "t[3] is 3.5, not an integer; the field holds i16")
C.check_error("vector element", function() v:from_table({ 1, 2, 3, 4, 5, 6 }) end,
  "x:from_table of field 'v': t[1]: cannot assign a scalar to the element (vec3)")
local short = { { 1, 2 } }
for p = 2, 6 do short[p] = { 1, 2, 3 } end
C.check_error("short vector", function() v:from_table(short) end, "t[1]: cannot assign 2 components to the element (vec3, 3 components)")
C.check_error("not a table", function() f:from_table(3) end, "expects a table, got a number")
C.check_error("in a kernel", function()
  lt.kernel(function() f:from_table({}) end)()
end, "x:from_table inside a kernel")

C.finish("fields_from_table")
