-- Tree types (lt.tree): several instances of one type, kernels compiled once
-- per type and run on the instance passed, Lua-scope access per instance,
-- a second type, chained-builder trees declared after kernels ran, and errors
-- for misuse. Every value is compared with a plain Lua table.
local lt = require "lattice"
lt.init {}

local Grid = lt.tree {
  fields = { rho = lt.f32, mass = lt.i32 },
  lt.pointer(lt.ij, 8) { lt.dense(lt.ij, 4) { "rho", "mass" } },
}
local Line = lt.tree { fields = { v = lt.i64 }, lt.bitmasked(lt.i, 64) { "v" } }

local a, b, c = Grid:instantiate(), Grid:instantiate(), Grid:instantiate()
local line = Line:instantiate()

local seed = lt.kernel(function(g, k)
  for i, j in lt.ndrange(32, 32) do
    if (i * 7 + j * 3 + k) % 11 == 0 then g.rho[i][j] = i + k; g.mass[i][j] = j end
  end
end, { g = Grid, k = lt.i32 })
local total = lt.field(lt.f64, {})
local count = lt.field(lt.i32, {})
local reduce = lt.kernel(function(g, l)
  for i, j in g.rho do
    lt.atomic_add(total.value, g.rho[i][j] * g.mass[i][j])
    lt.atomic_add(count.value, 1)
  end
  for i in l.v do l.v[i] = l.v[i] + 1 end
end, { g = Grid, l = Line })

local model = {}
for n, inst in ipairs { a, b, c } do
  seed(inst, n)
  local m = { sum = 0, blocks = {} }
  for i = 0, 31 do for j = 0, 31 do
    if (i * 7 + j * 3 + n) % 11 == 0 then
      m.sum = m.sum + (i + n) * j
      m.blocks[(i // 4) .. "," .. (j // 4)] = true
    end
  end end
  m.cells = 0
  for _ in pairs(m.blocks) do m.cells = m.cells + 16 end
  model[n] = m
end
assert(#seed:signatures() == 1, "one compilation for all instances of Grid")

line.v[5] = 10
for n, inst in ipairs { a, b, c } do
  total.value, count.value = 0, 0
  reduce(inst, line)
  assert(total.value == model[n].sum, ("instance %d: sum %s, want %s"):format(n, total.value, model[n].sum))
  assert(count.value == model[n].cells, ("instance %d: %d cells, want %d"):format(n, count.value, model[n].cells))
end
assert(line.v[5] == 13 and line.v[6] == 0, "line.v[5] = " .. line.v[5])
assert(#reduce:signatures() == 1)

-- Lua scope, per instance
for n, inst in ipairs { a, b, c } do
  for i = 0, 31 do for j = 0, 31 do
    local want = ((i * 7 + j * 3 + n) % 11 == 0) and (i + n) or 0
    assert(inst.rho[i][j] == want, ("instance %d rho[%d][%d] = %s, want %s"):format(n, i, j, inst.rho[i][j], want))
    assert(lt.is_active(inst.rho, i, j) == (model[n].blocks[(i // 4) .. "," .. (j // 4)] == true))
  end end
end
b.rho:deactivate_all()
assert(b.rho[1][1] == 0 and not lt.is_active(b.rho, 0, 0))
assert(a.rho[0][7] == 1.0, "a untouched by b's deactivate_all: " .. a.rho[0][7])

-- a new chained-builder tree after kernels ran
local late = lt.field(lt.i32)
lt.root:bitmasked(lt.i, 16):place(late)
local bump = lt.kernel(function() for i in lt.ndrange(16) do if i % 3 == 0 then late[i] = i end end end)
bump()
local n = 0
for _ in pairs(late:active()) do n = n + 1 end
assert(n == 6, "6 active cells in late, got " .. n)

-- misuse
local ok, msg = pcall(function() return Grid.rho end)
assert(not ok)
ok, msg = pcall(seed, line, 1)
assert(not ok and msg:find("must be an instance of its tree type"), msg)
local captured = lt.kernel(function() a.rho[0][0] = 1 end)
ok, msg = pcall(captured)
assert(not ok and msg:find("pass the instance as an argument"), msg)
ok, msg = pcall(function() return a.nope end)
assert(not ok and msg:find("no field 'nope'"), msg)
c:destroy()
ok, msg = pcall(seed, c, 1)
assert(not ok and msg:find("destroyed"), msg)
print("sparse_trees: ok")
