-- Activation operations through fields and SNode handles, fill/to_table on
-- sparse fields, lt.grouped, x[I] indexing, dense fields in the same calls,
-- and debug mode's error for appending to a full list in a kernel.
local lt = require "lattice"
lt.init { debug = true }

local x, y = lt.field(lt.f32), lt.field(lt.i32)
local blocks = lt.root:bitmasked(lt.ij, 4)
local cells = blocks:dense(lt.ij, 4)
cells:place(x, y)
local d = lt.field(lt.i32, { 4, 4 })            -- dense: every cell active

-- handles take the level's indices (any index inside its cell)
lt.activate(blocks, 5, 9)
assert(lt.is_active(x, 4, 8) and lt.is_active(x, 7, 11) and not lt.is_active(x, 8, 8))
assert(lt.is_active(blocks, 6, 10) and lt.is_active(cells, 6, 10))
assert(x[5][9] == 0.0 and y[5][9] == 0)
-- fill writes the active cells only
x:fill(2.5)
assert(x[7][11] == 2.5 and x[0][0] == 0.0 and not lt.is_active(x, 0, 0))
-- x[I] with an index table, reads and writes
x[{ 1, 2 }] = 4
assert(x[1][2] == 4.0 and x[{ 1, 2 }] == 4.0 and lt.is_active(x, 0, 0))
-- to_table: inactive cells read 0
local t = x:to_table()
assert(t[2][3] == 4.0 and t[6][10] == 2.5 and t[16][16] == 0.0)
-- the active cells, in Lua scope
local n = 0
for I in lt.grouped(x) do
  n = n + 1
  assert(lt.is_active(x, I[0], I[1]))
end
assert(n == 32, "active cells " .. n)
-- dense fields: always active; deactivating is an error
assert(lt.is_active(d, 3, 3) == true)
lt.activate(d, 1, 1)
local ok, msg = pcall(lt.deactivate, d, 1, 1)
assert(not ok and msg:find("no sparse level"), msg)
ok, msg = pcall(lt.activate, x, 1)
assert(not ok and msg:find("takes 2 indices"), msg)
ok, msg = pcall(lt.activate, x, 16, 0)
assert(not ok and msg:find("out of range"), msg)
ok, msg = pcall(lt.append, x, 0, 1)
assert(not ok and msg:find("not in a dynamic level"), msg)

-- kernels: grouped loops over sparse and dense fields, x[I], lt.is_active
local sum = lt.field(lt.f64, {})
local kx = lt.kernel(function()
  for I in lt.grouped(x) do
    lt.atomic_add(sum.value, x[I] + y[I[0]][I[1]])
    y[I] = I[0] * 100 + I[1]
  end
end)
kx()
assert(sum.value == 4 + 2.5 * 16, "sum " .. sum.value)
assert(y[7][11] == 711 and y[0][3] == 3 and y[8][8] == 0)
local kd = lt.kernel(function()
  for I in lt.grouped(d) do d[I] = I[0] + I[1] end
  for i, j in d do if lt.is_active(d, i, j) then d[i][j] = d[i][j] * 2 end end
end)
kd()
assert(d[3][2] == 10, "d[3][2] = " .. d[3][2])
local kdeact = lt.kernel(function() lt.deactivate(blocks, 0, 0); cells:deactivate_all() end)
kdeact()          -- the dense level under the bitmasked one has no sparse level below: no-op
assert(not lt.is_active(x, 0, 0) and lt.is_active(x, 4, 8) and x[1][2] == 0.0)
blocks:deactivate_all()
assert(not lt.is_active(x, 4, 8) and x[7][11] == 0.0)

-- dynamic lists in debug mode: appending beyond the capacity is an error
local l = lt.field(lt.f32)
lt.root:dense(lt.i, 2):dynamic(lt.j, 3):place(l)
local push = lt.kernel(function(i, v) lt.append(l, i, v) end)
for k = 1, 3 do push(1, k) end
assert(lt.length(l, 1) == 3 and l[1][2] == 3.0 and lt.length(l, 0) == 0)
ok, msg = pcall(push, 1, 4)
assert(not ok and msg:find("sparse_ops.lua:72)", 1, true) and msg:find("list of field 'l' is full", 1, true)
  and msg:find("capacity 3", 1, true), msg)
assert(lt.length(l, 1) == 3, "the program stays usable")
lt.deactivate(l, 1)
assert(lt.length(l, 1) == 0 and l[1][0] == 0.0)
print("sparse_ops: ok")
