-- tostring() of Lattice's objects (their __tostring, also what print() and
-- the REPL show) and lattice.show's text of plain tables (the REPL's echo),
-- against the exact strings docs/language.md ("Printing values") promises;
-- then that section's example.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"
local show = require "lattice.show"
lt.init {}

-- fields: type, shape, name, offset; composite fields; before a place; a tree's
local x = lt.field(lt.f32, { 4, 5 }, "x")
C.check("field before its tree is laid out", tostring(x), "field f32 (4, 5) 'x'")
x[1][2] = 3
C.check("field", tostring(x), "field f32 (4, 5) 'x'")
C.check("vector field", tostring(lt.field(lt.vec2, 8, "v")), "field vec2 (8) 'v'")
C.check("matrix field", tostring(lt.field(lt.mat2, { 2, 3 }, "m")), "field mat2 (2, 3) 'm'")
C.check("offset", tostring(lt.field(lt.f32, { 8, 8 }, { name = "o", offset = { -4, -4 } })),
  "field f32 (8, 8) 'o' offset (-4, -4)")
C.check("vector field with an offset", tostring(lt.field(lt.vec3, 6, { name = "w", offset = -3 })),
  "field vec3 (6) 'w' offset (-3)")
local loose = lt.field(lt.i32)
C.check("not placed", tostring(loose), "field i32 (not placed)")
local d = lt.root:dense(lt.i, 4)
local dyn = d:dynamic(lt.j, 32)
dyn:place(loose)
C.check("placed under a dynamic", tostring(loose), "field i32 (4, 32)")
C.check("an unnamed field stays unnamed", tostring(lt.field(lt.f64, 3)), "field f64 (3)")
local g = lt.field(lt.f32, 4, { name = "s", needs_grad = true })
C.check("gradient field", tostring(g.grad), "field f32 (4) 's.grad'")

-- ndarrays
C.check("ndarray", tostring(lt.ndarray(lt.i32, { 3, 3 })), "ndarray i32 (3, 3)")
C.check("1-D ndarray", tostring(lt.ndarray(lt.f64, 7)), "ndarray f64 (7)")

-- kernels: arguments with annotations, signatures compiled
local fill = lt.kernel(function(a, n) x[0][0] = a * n end, { a = lt.f32 })
C.check("kernel before its first call", tostring(fill):match("^kernel <.-tostring%.lua:%d+>%(a: f32, n%) %(not compiled yet%)$")
  ~= nil, true)
fill(0.5, 4)
C.check("kernel", tostring(fill), "kernel fill(a: f32, n) compiled for (f32, i32)")
fill(0.5, 2.5)
C.check("two signatures", tostring(fill), "kernel fill(a: f32, n) compiled for (f32, f32), (f32, i32)")
local vk = lt.kernel(function(v) x[0][0] = v[1] end, { v = lt.vec2 })
vk(lt.vec2(1, 2))
C.check("vector argument", tostring(vk), "kernel vk(v: vec2) compiled for (vec2)")
C.check("messages still say 'kernel NAME'", select(2, pcall(function()
  lt.kernel(function(q) end):compile()
end)):find(": kernel [^(]-: argument 'q' has no type annotation") ~= nil, true)

-- levels
local p = lt.root:pointer(lt.ij, 16)
local pd = p:dense(lt.ij, 8)
local y = lt.field(lt.f32, nil, "y")
pd:place(y)
C.check("pointer level", tostring(p), ("level pointer [ij: 16, 16] #%d"):format(p.id))
C.check("dense level", tostring(pd), ("level dense [ij: 8, 8] #%d"):format(pd.id))
C.check("dynamic level", tostring(dyn), ("level dynamic [j: 32] #%d"):format(dyn.id))
C.check("one axis", tostring(d), ("level dense [i: 4] #%d"):format(d.id))
C.check("x:parent() (extents from the shapes)", tostring(y:parent()), ("level dense [ij: 8, 8] #%d"):format(pd.id))
C.check("its parent", tostring(y:parent():parent()), ("level pointer [ij: 16, 16] #%d"):format(p.id))
C.check("the root", tostring(lt.root):match("^level root #%d+$") ~= nil, true)

-- tree types and instances
local Grid = lt.tree {
  fields = { rho = lt.f32, vel = lt.vec2 },
  lt.pointer(lt.ij, 4) { lt.dense(lt.ij, 8) { "rho", "vel" } },
}
local serial = tostring(Grid):match("^tree type #(%d+) ")
C.check("tree type", tostring(Grid),
  ("tree type #%s {rho: f32, vel: vec2} pointer(ij, 4) {dense(ij, 8) {rho, vel}}"):format(serial))
local inst = Grid:instantiate()
C.check("instance", tostring(inst), ("instance of tree type #%s {rho: f32, vel: vec2}"):format(serial))
C.check("an instance's field", tostring(inst.rho), "field f32 (32, 32) 'rho'")
C.check("an instance's vector field", tostring(inst.vel), "field vec2 (32, 32) 'vel'")
inst:destroy()
C.check("destroyed instance", tostring(inst), ("instance of tree type #%s {rho: f32, vel: vec2} (destroyed)"):format(serial))
C.check("layout", tostring(lt.dense(lt.ij, 8) { "a", lt.bitmasked(lt.k, 2) { "b" } }),
  "lt.dense(ij, 8) {a, bitmasked(k, 2) {b}}")

-- the REPL's text of plain tables
C.check("shape", show.value(x.shape), "{4, 5}")
C.check("nested", show.value({ 1, { 2, 3 }, x = 4, ["a b"] = "s\n" }), '{1, {2, 3}, ["a b"] = "s\\n", x = 4}')
C.check("deep", show.value({ 1, { 2, { 3, { 4, { 5 } } } } }), "{1, {2, {3, {...}}}}")
local long = {}
for i = 1, 20 do long[i] = i end
C.check("long", show.value(long), "{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, ...}")
local cyc = { 1 }
cyc[2] = cyc
C.check("a table that holds itself", show.value(cyc), "{1, {...}}")
C.check("objects inside", show.value({ x, 2.5, true }), "{field f32 (4, 5) 'x', 2.5, true}")
C.check("functions", show.value({ f = print }), "{f = function}")
C.check("a string alone", show.value("two"), "two")
C.check("empty", show.value({}), "{}")
C.check("numbers", show.value(3), "3")

-- docs/language.md's "Printing values" example
local snippets = require("docs").snippets("language.md", "\n### Printing values\n(.-)\n## ", "Printing values")
for n, s in ipairs(snippets) do
  lt.init {}
  local ok, err = pcall(s.run)
  C.check("docs example " .. n .. " runs (" .. tostring(err) .. ")", ok, true)
end
C.check("docs examples", #snippets, 1)
C.finish("tostring")
