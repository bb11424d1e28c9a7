-- Composite fields and layouts: the same kernel over vector, matrix and struct
-- fields laid out AoS (the whole field placed in one cell), SoA (component
-- views placed separately), in an lt.tree and under a sparse level must give
-- the same results; Lua-scope round trips; component views as scalar fields.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 16
local Particle = lt.struct { pos = lt.vec2, vel = lt.vec2, mass = lt.f32, C = lt.mat2 }

-- builds the fields with one of the layouts
local function make(layout)
  local x, F = lt.field(lt.vec3), lt.field(lt.mat2)
  local p = lt.field(Particle)
  if layout == "aos" then
    lt.root:dense(lt.i, N):place(x, F, p)
  elseif layout == "soa" then
    for c = 0, 2 do lt.root:dense(lt.i, N):place(x:component(c)) end
    lt.root:dense(lt.i, N):place(F:component(0, 0), F:component(1, 1))
    lt.root:dense(lt.i, N):place(F:component(0, 1), F:component(1, 0))
    lt.root:dense(lt.i, N):place(p.pos.x, p.vel.x)
    lt.root:dense(lt.i, N):place(p.pos.y, p.vel.y, p.mass)
    lt.root:dense(lt.i, N):place(p.C)
  elseif layout == "sparse" then
    lt.root:pointer(lt.i, 4):dense(lt.i, 4):place(x, F, p)
  end
  return x, F, p
end

local function run(layout)
  local x, F, p = make(layout)
  for i = 0, N - 1 do
    x[i] = { i, 2 * i, 3 * i }
    F[i] = { { 1, i }, { -i, 2 } }
    p[i] = { pos = { i, 0.5 }, vel = { 1, -1 }, mass = 1 + i, C = { { 0, 1 }, { 1, 0 } } }
  end
  local step = lt.kernel(function(dt)
    for i in x do                                 -- struct-for over a vector field
      local q = p[i]
      q.pos = q.pos + dt * q.vel
      q.vel.y = q.vel.y - dt * 9.8
      q.C = q.C:mul(F[i])
      p[i] = q
      x[i] = x[i] + lt.vec3(q.mass, 0, 0)
      F[i][0][1] = F[i][1][0] + x[i].z          -- element writes through field views
      p[i].mass = p[i].mass * 2                  -- member write through the element
    end
  end, { dt = lt.f32 })
  step(0.5)
  return { x = x:to_table(), F = F:to_table(), p = p:to_table() }
end

local function same(a, b, path)
  if type(a) ~= type(b) then C.fail(path .. ": " .. type(a) .. " against " .. type(b)); return end
  if type(a) == "table" then
    for k, v in pairs(a) do same(v, b[k], path .. "." .. tostring(k)) end
    for k in pairs(b) do if a[k] == nil then C.fail(path .. ": missing " .. tostring(k)) end end
  elseif a ~= b then
    C.fail(path .. ": " .. tostring(a) .. " ~= " .. tostring(b))
  end
end

local aos = run("aos")
-- the reference, computed in Lua
for i = 0, N - 1 do
  local r = aos.p[i + 1]
  local f = function(v) return (string.unpack("f", string.pack("f", v))) end
  C.check("pos.x " .. i, r.pos[1], i + 0.5)
  C.check("pos.y " .. i, r.pos[2], 0.0)
  C.check("vel.y " .. i, r.vel[2], f(-1 - f(0.5 * 9.8)))
  C.check("mass " .. i, r.mass, 2.0 * (1 + i))
  -- C = {{0,1},{1,0}} * {{1,i},{-i,2}} = {{-i,2},{1,i}}
  same(r.C, { { -i, 2 }, { 1, i } }, "C " .. i)
  same(aos.x[i + 1], { i + 1 + i, 2 * i, 3 * i }, "x " .. i)
  same(aos.F[i + 1], { { 1, -i + 3 * i }, { -i, 2 } }, "F " .. i)
end
same(run("soa"), aos, "soa")
same(run("sparse"), aos, "sparse")

-- sparse operations on a vector field act on its cells
local sx = lt.field(lt.vec2)
lt.root:pointer(lt.i, 4):dense(lt.i, 4):place(sx)
sx[5] = { 1, 2 }
C.check("is_active on a vector field", lt.is_active(sx, 5), true)
C.check("inactive block", lt.is_active(sx, 12), false)
local cnt = lt.field(lt.i32, {})
lt.kernel(function() for i in sx do lt.atomic_add(cnt.value, 1); sx[i] = sx[i] + 1 end end)()
C.check("struct-for over a sparse vector field", cnt.value, 4)
same(sx[5], { 2, 3 }, "sparse vector update")
same(sx[6], { 1, 1 }, "sparse vector update (2)")
C.check_error("append", function() lt.append(sx, 1, { 1, 2 }) end, "is not in a dynamic level")

-- tree types with vector and struct fields
local Grid = lt.tree { fields = { rho = lt.f32, vel = lt.vec2, cell = lt.struct { n = lt.i32, g = lt.vec3 } },
  lt.dense(lt.ij, 4) { "rho", "vel", "cell" } }
local g = Grid:instantiate()
local fill = lt.kernel(function(gr, s)
  for i, j in gr.vel do
    gr.vel[i][j] = lt.vec2(i, j) * s
    gr.cell[i][j] = { n = i * j, g = lt.vec3(s) }
    gr.rho[i][j] = gr.vel[i][j]:norm_sqr()
  end
end, { gr = Grid, s = lt.f32 })
fill(g, 2)
same(g.vel[3][1], { 6, 2 }, "tree vel")
same(g.cell[2][3], { n = 6, g = { 2, 2, 2 } }, "tree struct")
C.check("tree rho", g.rho[3][1], 40.0)
C.check("tree member view", g.cell.g.y[1][1], 2.0)

-- component views are scalar fields
local v = lt.field(lt.vec2, 8)
v:fill({ 1, 2 })
C.check("component view read", v.y[3], 2.0)
v.x[3] = 5
same(v[3], { 5, 2 }, "component view write")
C.check("view name", v:component(1).name, "v.y")   -- component names are IR identifiers: v.x, v.y, m.01
local sum = lt.field(lt.f32, {})
lt.kernel(function() for i in v.x do lt.atomic_add(sum.value, v.y[i]) end end)()
C.check("loop over a component view", sum.value, 16.0)

-- SoA mistakes: a component left unplaced, components of different shapes
local half = lt.field(lt.vec2)
lt.root:dense(lt.i, 4):place(half.x)
C.check_error("unplaced component", function() return half[0] end, "component 1 of field 'half' is not placed")
local odd = lt.field(lt.vec2)
lt.root:dense(lt.i, 4):place(odd.x)
lt.root:dense(lt.i, 5):place(odd.y)
C.check_error("components of different shapes", function() return odd[0] end, "placed with different shapes")
C.check_error("placed twice", function() lt.root:dense(lt.i, 4):place(odd) end, "is placed twice")

-- atomics on vector field elements: one atomic per component
local total = lt.field(lt.vec3, {})
lt.kernel(function()
  for i in lt.ndrange(100) do lt.atomic_add(total.value, lt.vec3(1, i, -2)) end
end)()
same(total.value, { 100, 4950, -200 }, "vector atomic_add")
total.value = { 1, 2, 3 }
same(total.value, { 1, 2, 3 }, "0-D vector field write")

-- grouped loops give an index vector, in kernels and in Lua scope
local d = lt.field(lt.ivec2, { 3, 4 })
lt.kernel(function()
  for I in lt.grouped(d) do d[I] = I * 10 + I.yx end
end)()
same(d[2][3], { 23, 32 }, "grouped index vector")
local e = lt.field(lt.i32, { 3, 4 })
lt.kernel(function()
  for I in lt.grouped(lt.ndrange({ 1, 3 }, 4)) do e[I] = I[0] * 10 + I[1] end
end)()
C.check("grouped ndrange", e[2][3], 23)
C.check("grouped ndrange skips row 0", e[0][3], 0)
local n = 0
for I in lt.grouped(lt.ndrange(2, 3)) do n = n + I.x * 3 + I.y + 1 end
C.check("grouped ndrange in Lua scope", n, 21)

C.finish("composite_layout")
