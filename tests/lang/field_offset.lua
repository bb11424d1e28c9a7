-- Field offsets (lt.field(dtype, shape, {offset = {...}}), place(x, {offset = ...})):
-- a field's indices run over the box [offset, offset + shape) in kernels,
-- struct-fors, the activation operations and Lua scope, as in Taichi's
-- test_offset.py. Every result is compared with a plain-Lua model keyed by
-- the user's indices; the messages name the box.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

local function key(...) return table.concat({ ... }, ",") end

-- ---- dense, negative offsets: Lua scope, kernels, struct-for ----------------------------
local x = lt.field(lt.f32, { 8, 6 }, { offset = { -4, -3 } })
check("shape unchanged", x.shape[1] .. "x" .. x.shape[2], "8x6")
check("x.offset", key(table.unpack(x.offset)), "-4,-3")
local o = x.offset
o[1] = 99
check("x.offset is a fresh table", x.offset[1], -4)
x[-4][-3] = 1.5
x[3][2] = 2.5
check("first element", x[-4][-3], 1.5)
check("last element", x[3][2], 2.5)
check("to_table counts from its first element", x:to_table()[1][1], 1.5)
check("to_table last", x:to_table()[8][6], 2.5)
check_error("Lua read above the box", function() return x[4][0] end,
  "index 4 out of range for axis 0 of field 'x' with box [-4, 4) x [-3, 3)")
check_error("Lua write below the box", function() x[0][-4] = 1 end,
  "index -4 out of range for axis 1 of field 'x' with box [-4, 4) x [-3, 3)")
check_error("raw index 0 of axis 1 is fine but 3 is not", function() return x[0][3] end, "index 3 out of range")

local seen = lt.field(lt.i32, { 8, 6 }, { offset = { -4, -3 } })
local visit = lt.kernel(function()
  for i, j in x do
    x[i][j] = i * 10 + j
    seen[i][j] = seen[i][j] + 1
  end
end)
visit()
local bad = 0
for i = -4, 3 do
  for j = -3, 2 do
    if x[i][j] ~= i * 10 + j or seen[i][j] ~= 1 then bad = bad + 1 end
  end
end
check("struct-for over a dense offset field gives shifted indices", bad, 0)

-- constant indices fold; reads from a kernel
local corner = lt.kernel(function() return x[-4][-3] + x[3][2] end)
check("constant indices", corner(), (-40 - 3) + (30 + 2))

-- ---- a stencil across the box (positive and negative offsets) -------------------------
local N = 12
local u = lt.field(lt.f64, { N, N }, { offset = { -6, 5 } })
local lap = lt.field(lt.f64, { N, N }, { offset = { -6, 5 } })
local model = {}
for i = -6, N - 7 do
  for j = 5, N + 4 do
    local v = math.sin(i * 0.7) + j * j * 0.01
    u[i][j] = v
    model[key(i, j)] = v
  end
end
local stencil = lt.kernel(function()
  for i, j in lt.ndrange({ -5, N - 7 }, { 6, N + 4 }) do
    lap[i][j] = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4 * u[i][j]
  end
end)
stencil()
local worst = 0
for i = -5, N - 8 do
  for j = 6, N + 3 do
    local want = model[key(i - 1, j)] + model[key(i + 1, j)] + model[key(i, j - 1)] + model[key(i, j + 1)]
      - 4 * model[key(i, j)]
    worst = math.max(worst, math.abs(lap[i][j] - want))
  end
end
check("stencil across the box", worst < 1e-12, true)
check("stencil leaves the rim", lap[-6][5], 0.0)

-- ---- x:fill, from_table / to_table round trip -------------------------------------------
local p = lt.field(lt.i32, { 3, 4 }, { offset = { 1, -2 } })
p:fill(7)
check("fill", p[3][1], 7)
p:from_table({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } })
check("from_table: t[1][1] is x[ox][oy]", p[1][-2], 1)
check("from_table: t[3][4] is x[ox + 2][oy + 3]", p[3][1], 12)
local t = p:to_table()
check("round trip", t[2][3], 7)
check("round trip through the field", p[2][0], 7)
check("active of a dense offset field", key(table.unpack(p:active()[1])), "1,-2")

-- ---- a field placed with an offset under levels: pointer -------------------------------
local y = lt.field(lt.i32)
lt.root:pointer(lt.ij, 4):dense(lt.ij, 4):place(y, { offset = { -8, 5 } })
check("place offset", key(table.unpack(y.offset)), "-8,5")
y[-8][5] = 1         -- block (0, 0)
y[7][20] = 1         -- block (3, 3)
lt.activate(y, 0, 9) -- block (2, 1)
check("is_active in Lua", lt.is_active(y, 1, 10), true)
check("is_active in Lua, an inactive block", lt.is_active(y, -4, 5), false)
check_error("lt.activate outside the box", function() lt.activate(y, 8, 5) end,
  "lt.activate: index 8 out of range for axis 0 of field 'y' with box [-8, 8) x [5, 21)")
local ymodel = {}
for bi = 0, 3 do
  for bj = 0, 3 do
    if (bi == 0 and bj == 0) or (bi == 3 and bj == 3) or (bi == 2 and bj == 1) then
      for di = 0, 3 do
        for dj = 0, 3 do ymodel[key(bi * 4 + di - 8, bj * 4 + dj + 5)] = true end
      end
    end
  end
end
local count = lt.field(lt.i32, {})
local mark = lt.kernel(function()
  for i, j in y do
    y[i][j] = i * 1000 + j
    lt.atomic_add(count.value, 1)
  end
end)
mark()
check("struct-for visits the active cells", count.value, 48)
local wrong = 0
for _, ij in ipairs(y:active()) do
  local i, j = ij[1], ij[2]
  if not ymodel[key(i, j)] or y[i][j] ~= i * 1000 + j then wrong = wrong + 1 end
end
check("x:active() gives shifted indices", #y:active(), 48)
check("struct-for indices match the model", wrong, 0)

-- activation operations in a kernel take the field's indices
local flags = lt.field(lt.i32, { 16, 16 }, { offset = { -8, 5 } })
local ops = lt.kernel(function()
  lt.activate(y, -8, 17)            -- block (0, 3)
  lt.deactivate(y, 7, 20)           -- block (3, 3)
  for i, j in flags do
    if lt.is_active(y, i, j) then flags[i][j] = 1 end
  end
end)
ops()
ymodel = {}
for _, b in ipairs { { 0, 0 }, { 2, 1 }, { 0, 3 } } do
  for di = 0, 3 do
    for dj = 0, 3 do ymodel[key(b[1] * 4 + di - 8, b[2] * 4 + dj + 5)] = true end
  end
end
wrong = 0
for i = -8, 7 do
  for j = 5, 20 do
    if (flags[i][j] == 1) ~= (ymodel[key(i, j)] == true) then wrong = wrong + 1 end
  end
end
check("lt.activate / deactivate / is_active in a kernel", wrong, 0)
check("deactivated block reads 0", y[7][20], 0)

-- lt.grouped: the index vector holds the shifted indices
local g = lt.field(lt.i32, { 4, 4 }, { offset = { 10, -10 } })
local grouped = lt.kernel(function()
  for I in lt.grouped(y) do
    if I[0] >= 10 and I[0] < 14 and I[1] >= -10 and I[1] < -6 then g[I] = 1 end
    y[I] = I[0] - I[1]
  end
end)
grouped()
check("lt.grouped over an offset field", y[-8][5], -13)
check("lt.grouped over an offset field, last block", y[3][12], -9)
local n = 0
for I in lt.grouped(y) do n = n + 1; if n == 1 then check("Lua-scope lt.grouped", key(I[0], I[1]), "-8,5") end end
check("Lua-scope lt.grouped count", n, 48)

-- ---- bitmasked, 1-D, positive offset ---------------------------------------------------
local b = lt.field(lt.f32)
lt.root:bitmasked(lt.i, 16):dense(lt.i, 4):place(b, { offset = 100 })
lt.activate(b, 105)
lt.activate(b, 163)
local bmark = lt.kernel(function() for i in b do b[i] = i end end)
bmark()
local act = b:active()
check("bitmasked active count", #act, 8)
check("bitmasked first active", act[1][1], 104)
check("bitmasked value", b[163], 163.0)
check("bitmasked inactive", b[100], 0.0)

-- ---- dynamic: the offset goes along the other axes -------------------------------------
local l = lt.field(lt.i32)
lt.root:dense(lt.i, 4):dynamic(lt.j, 16):place(l, { offset = { -2, 0 } })
local fill_lists = lt.kernel(function()
  for i in lt.ndrange({ -2, 2 }) do
    for k = 0, i + 2 do lt.append(l, i, k * 10 + i) end
  end
end)
fill_lists()
check("lt.length with the field's index", lt.length(l, -2), 1)
check("lt.length, last list", lt.length(l, 1), 4)
check("appended values", l[1][3], 31)
check("Lua-scope append", lt.append(l, -1, 5), 2)
check("Lua-scope append's element", l[-1][2], 5)
local dyn_bad = lt.field(lt.i32)
check_error("no offset along a dynamic's axis", function()
  lt.root:dense(lt.i, 4):dynamic(lt.j, 16):place(dyn_bad, { offset = { 0, 3 } })
end, "field 'dyn_bad' is in a dynamic level, which takes no offset along its axis (index 1)")

-- ---- a field made without a shape, with the offset ------------------------------------
local s = lt.field(lt.f32, nil, { offset = { -1, -1 } })
lt.root:dense(lt.ij, { 2, 2 }):dense(lt.ij, 3):place(s)
check("offset of a shape-less field", key(table.unpack(s.offset)), "-1,-1")
s[-1][4] = 3
check("its last element", s[-1][4], 3.0)
local plain = lt.field(lt.f32, { 2, 3 })
check("x.offset without an offset", key(table.unpack(plain.offset)), "0,0")

-- ---- vector fields ------------------------------------------------------------------------
local v = lt.field(lt.vec2, { 4, 4 }, { offset = { -2, -2 } })
check("vector field offset", key(table.unpack(v.offset)), "-2,-2")
local vk = lt.kernel(function()
  for i, j in v do v[i][j] = lt.vec2(i, j * 2) end
end)
vk()
check("vector element x", v[-2][1][1], -2.0)
check("vector element y", v[-2][1][2], 2.0)
check("vector component view", v.y[1][-2], -4.0)
check_error("vector Lua read outside", function() return v[2][0] end,
  "index 2 out of range for axis 0 of field 'v.x' with box [-2, 2) x [-2, 2)")
local vs = lt.field(lt.vec3)
lt.root:pointer(lt.i, 4):dense(lt.i, 4):place(vs, { offset = { -8 } })
vs[-8] = { 1, 2, 3 }
local vsum = lt.kernel(function()
  local acc = 0.0
  for i in vs do acc = acc + vs[i].z * (i + 9) end
  return acc
end)
check("vector under a pointer, struct-for", vsum(), 3.0)

-- ---- needs_grad: the gradient shares the offset; autodiff ------------------------------
local w = lt.field(lt.f64, 5, { offset = { -2 }, needs_grad = true })
local loss = lt.field(lt.f64, {}, { needs_grad = true })
check("gradient's offset", key(table.unpack(w.grad.offset)), "-2")
for i = -2, 2 do w[i] = i * 0.5 end
local square = lt.kernel(function()
  for i in w do lt.atomic_add(loss.value, w[i] * w[i] * i) end
end)
lt.tape(function() square() end):backward(loss)
local gbad = 0
for i = -2, 2 do
  if math.abs(w.grad[i] - 2 * (i * 0.5) * i) > 1e-12 then gbad = gbad + 1 end
end
check("gradients of an offset field", gbad, 0)
check("loss: the sum of 0.25 i^3 over [-2, 2]", loss.value, 0.0)

-- ---- huge offsets, 3-D, under a pointer (Taichi's test_struct_for_huge_offsets) ------------
local h = lt.field(lt.i32)
local hoff = { 4096 * 256 - 7, -1000000, 12 }
lt.root:pointer(lt.ijk, 4):dense(lt.ijk, 2):place(h, { offset = hoff })
local hfill = lt.kernel(function()
  for i, j, k in lt.ndrange({ hoff[1], hoff[1] + 8 }, { hoff[2], hoff[2] + 8 }, { hoff[3], hoff[3] + 8 }) do
    if (i + j + k) % 3 == 0 then h[i][j][k] = i + j + k end
  end
end)
hfill()
local hsum = lt.field(lt.i64, {})
local hsum_k = lt.kernel(function()
  for i, j, k in h do lt.atomic_add(hsum.value, h[i][j][k]) end
end)
hsum_k()
local hwant = 0
for i = hoff[1], hoff[1] + 7 do
  for j = hoff[2], hoff[2] + 7 do
    for k = hoff[3], hoff[3] + 7 do
      if (i + j + k) % 3 == 0 then hwant = hwant + i + j + k end
    end
  end
end
check("huge offsets: struct-for sum", hsum.value, hwant)

-- ---- matrix and struct fields ----------------------------------------------------------
local m = lt.field(lt.mat2, { 3 }, { offset = { -1 } })
local mk = lt.kernel(function()
  for i in m do m[i] = lt.mat2({ { i, 0 }, { 0, i * 2 } }) end
end)
mk()
check("matrix field element", m[-1][2][2], -2.0)
check("matrix field last", m[1][1][1], 1.0)
check("matrix field offset", m.offset[1], -1)
local P = lt.struct { pos = lt.vec2, mass = lt.f32 }
local sp = lt.field(P, { 4 }, { offset = { 10 } })
local spk = lt.kernel(function()
  for i in sp do sp[i].mass = i end
end)
spk()
check("struct field member", sp[13].mass, 13.0)
check("struct member view's offset", sp.mass.offset[1], 10)

-- ---- forward mode: the dual shares the offset --------------------------------------------
local fx = lt.field(lt.f64, 4, { offset = { -2 }, needs_dual = true })
local fy = lt.field(lt.f64, 4, { offset = { -2 }, needs_dual = true })
for i = -2, 1 do fx[i] = i; fx.dual[i] = 1 end
local fsq = lt.kernel(function()
  for i in fx do fy[i] = fx[i] * fx[i] end
end)
fsq:fwd()
check("dual's offset", fx.dual.offset[1], -2)
check("tangent of x^2 at -2", fy.dual[-2], -4.0)
check("tangent of x^2 at 1", fy.dual[1], 2.0)

-- ---- bad offset specifications ----------------------------------------------------------
check_error("wrong length", function() lt.field(lt.f32, { 4, 4 }, { offset = { 1 } }) end,
  "lt.field: the offset {1} has 1 integer but the shape (4, 4) has 2; give one per index")
check_error("wrong length names the field", function()
  lt.field(lt.f32, { 4, 4 }, { name = "rho", offset = { 1, 2, 3 } })
end, "the offset of field 'rho' {1, 2, 3} has 3 integers")
check_error("non-integer", function() lt.field(lt.f32, 4, { offset = { 0.5 } }) end,
  "lt.field: offset 0 must be an integer (got 0.5)")
check_error("not a table", function() lt.field(lt.f32, 4, { offset = "x" }) end,
  "lt.field: the offset must be a table of integers, one per index")
check_error("not a list", function() lt.field(lt.f32, 4, { offset = { i = 1 } }) end,
  "must be a list of integers, one per index (it has the key i)")
check_error("too large", function() lt.field(lt.f32, 4, { offset = { 1 << 40 } }) end, "is out of range")
local q = lt.field(lt.f32)
check_error("wrong length at place", function() lt.root:dense(lt.ij, 4):place(q, { offset = { 1 } }) end,
  "place: the offset of field 'q' {1} has 1 integer but the field has 2 indices; give one per index")
local q2 = lt.field(lt.f32, nil, { offset = { 1, 1 } })
check_error("two different offsets", function() lt.root:dense(lt.ij, 4):place(q2, { offset = { 2, 2 } }) end,
  "place: field 'q2' already has the offset {1, 1} (given {2, 2})")
check_error("unknown place option", function() lt.root:dense(lt.i, 4):place(lt.field(lt.f32), { offest = 1 }) end,
  "place: unknown option 'offest' (offset)")
check_error("x.offset is read-only", function() x.offset = { 0, 0 } end, "x.offset of field 'x' is read-only")
check_error("ndarrays take no offset", function() lt.ndarray(lt.f32, { 4 }, { offset = { 1 } }) end,
  "lt.ndarray: an ndarray takes no offset")

-- ---- debug mode: kernel bounds checks report the box ----------------------------------
lt.init { debug = true }
local d = lt.field(lt.f32, { 128, 128 }, { offset = { -64, -64 } })
local line = debug.getinfo(1, "l").currentline + 1
local poke = lt.kernel(function(i, j) d[i][j] = 1 end, { i = lt.i32, j = lt.i32 })
poke(-64, 63)
check("debug mode, in the box", d[-64][63], 1.0)
check_error("debug mode, above the box", function() poke(70, 0) end,
  ("field_offset.lua:%d): index 70 out of range for axis 0 of field 'd' with box [-64, 64) x [-64, 64)"):format(line))
check_error("debug mode, below the box", function() poke(0, -65) end,
  "index -65 out of range for axis 1 of field 'd' with box [-64, 64) x [-64, 64)")
check_error("Lua scope, debug mode", function() return d[64][0] end,
  "index 64 out of range for axis 0 of field 'd' with box [-64, 64) x [-64, 64)")

-- ---- the "Fields and layouts" examples of docs/language.md -------------------------------
local snippets = require("docs").snippets("language.md", "\n## Fields and layouts\n(.-)\n## ", "Fields and layouts")
for n, s in ipairs(snippets) do
  lt.init {}
  local ok, err = pcall(s.run)
  if not ok then T.fail("example " .. n .. " of 'Fields and layouts': " .. tostring(err)) end
end
check("the section's examples ran", #snippets >= 3, true)

T.finish("field offset")
print("field_offset: ok")
