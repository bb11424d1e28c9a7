-- Fields: dense shortcuts, chained layouts (nested, several fields, column-major),
-- Lua-scope access, fill, to_table, shape/dtype/name, 0-D fields. Kernels and
-- Lua-scope access compute addresses independently (codegen vs ir_snode_offset),
-- so writing on one side and reading on the other checks both.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

-- shortcut fields, shape and dtype, 0-based indices
local a = lt.field(lt.f32, { 5, 3 })
local b = lt.field(lt.i32, 7, "bee")
check("shape rank", #a.shape, 2)
check("shape[1]", a.shape[1], 5)
check("shape[2]", a.shape[2], 3)
check("dtype", a.dtype, lt.f32)
check("given name", b.name, "bee")
check("derived name", a.name, "a")
check("zero-filled", a[4][2], 0.0)
a[4][2] = 1.25
check("write/read", a[4][2], 1.25)
check("float field gives floats", math.type(a[4][2]), "float")
b[6] = 42
check("int field gives integers", math.type(b[6]), "integer")
b[0] = 2.0                               -- integral floats convert
check("integral float to int field", b[0], 2)
b[1] = 4294967297                        -- wraps to the width
check("int write wraps", b[1], 1)

-- bounds and kinds are checked in Lua scope
check_error("index too large", function() return a[5][0] end, "index 5 out of range for axis 0 of field 'a' with shape (5, 3)")
check_error("negative index", function() return b[-1] end, "index -1 out of range for axis 0 of field 'bee'")
check_error("write out of range", function() a[0][3] = 1 end, "index 3 out of range for axis 1")
check_error("non-number write", function() b[0] = "x" end, "cannot write a string to field 'bee'")
check_error("fractional float to int field", function() b[0] = 1.5 end, "cannot write the float 1.5 to the integer field")
check_error("too few indices on write", function() a[1] = 2 end, "field 'a' has 2 indices, got 1")

-- fill and to_table (1-based nested tables: t[i+1][j+1] == x[i][j])
a:fill(0.5)
a[2][1] = 7
local t = a:to_table()
check("to_table rows", #t, 5)
check("to_table cols", #t[1], 3)
check("to_table value", t[3][2], 7.0)
check("to_table filled", t[5][3], 0.5)

-- nested dense levels: 4x4 blocks of 8x8 cells = 32x32
local x = lt.field(lt.i32)
lt.root:dense(lt.ij, { 4, 4 }):dense(lt.ij, { 8, 8 }):place(x)
check("nested shape", x.shape[1] .. "x" .. x.shape[2], "32x32")
-- several fields in one dense, and a column-major layout
local u, v = lt.field(lt.f64), lt.field(lt.i16)
lt.root:dense(lt.ij, { 6, 9 }):place(u, v)
local cm = lt.field(lt.i32)
lt.root:dense(lt.ji, { 10, 4 }):place(cm)
check("column-major shape", cm.shape[1] .. "x" .. cm.shape[2], "4x10")

local paint = lt.kernel(function()
  for i, j in lt.ndrange(32, 32) do x[i][j] = i * 1000 + j end
  for i, j in lt.ndrange(6, 9) do
    u[i][j] = i + j * 0.5
    v[i][j] = i * 10 - j
  end
  for i, j in lt.ndrange(4, 10) do cm[i][j] = i * 100 + j end
end)
paint()
local good = true
for i = 0, 31 do for j = 0, 31 do if x[i][j] ~= i * 1000 + j then good = false end end end
check("nested dense: kernel writes, Lua reads", good, true)
good = true
for i = 0, 5 do for j = 0, 8 do
  if u[i][j] ~= i + j * 0.5 or v[i][j] ~= i * 10 - j then good = false end
end end
check("two fields in one dense", good, true)
good = true
for i = 0, 3 do for j = 0, 9 do if cm[i][j] ~= i * 100 + j then good = false end end end
check("column-major", good, true)

-- Lua writes, kernel reads
for i = 0, 31 do for j = 0, 31 do x[i][j] = (i * 7 + j * 3) % 11 end end
local total = lt.field(lt.i64, {})
local sum = lt.kernel(function()
  for i, j in lt.ndrange(32, 32) do lt.atomic_add(total.value, x[i][j]) end
end)
sum()
local want = 0
for i = 0, 31 do for j = 0, 31 do want = want + (i * 7 + j * 3) % 11 end end
check("kernel reads Lua writes", total.value, want)

-- 0-D fields: x.value in both scopes
local s = lt.field(lt.f32, {})
s.value = 2.5
local double = lt.kernel(function() s.value = s.value * 2 end)
double()
check("0-D field", s.value, 5.0)
check_error("0-D indexed", function() return s[0] end, "has no indices (0-D)")

-- up to 8 indices
local big = lt.field(lt.u8, { 2, 2, 2, 2, 2, 2, 2, 2 })
big[1][0][1][0][1][0][1][1] = 200
check("8-D field", big[1][0][1][0][1][0][1][1], 200)
check("8-D field other cell", big[1][0][1][0][1][0][1][0], 0)

-- renaming a field renames it in messages
big.name = "cube"
check_error("renamed field in messages", function() return big[2][0][0][0][0][0][0][0] end, "field 'cube'")

-- lt.ndrange and lt.static also iterate in Lua scope
local visits = {}
for i, j in lt.ndrange({ 1, 3 }, 2) do visits[#visits + 1] = i .. ":" .. j end
check("Lua-scope ndrange", table.concat(visits, " "), "1:0 1:1 2:0 2:1")
local st = {}
for i in lt.static(5, 1, -2) do st[#st + 1] = i end
check("Lua-scope static", table.concat(st, " "), "5 3 1")

-- rules of tree building
check_error("shape <= 0", function() lt.field(lt.f32, { 3, 0 }) end, "every extent must be > 0")
check_error("too many indices", function() lt.field(lt.f32, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }) end,
  "at most 8 indices")
local p = lt.field(lt.f32)
check_error("unplaced field", function() return p[0] end, "is not placed")
lt.root:dense(lt.i, 3):place(p)
check_error("placed twice", function() lt.root:dense(lt.i, 3):place(p) end, "field 'p' is placed twice")

-- re-init resets the program: old fields are gone
lt.init {}
check_error("field after re-init", function() return a[0][0] end, "lt.init has reset")

T.finish("field")
print("fields: ok")
