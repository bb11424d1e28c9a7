-- autodiff_trees.lua -- gradients of fields in tree types (lt.tree{needs_grad =
-- {...}}, docs/autodiff.md): placed beside their fields by default or where
-- the layout names NAME.grad; reverse mode through a struct-for over a
-- sparse (pointer) tree instance against central finite differences in f64;
-- two instances keep their gradients apart; and the errors, by message.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"

local N = 16
local Grid = lt.tree {
  fields = { rho = lt.f64, vel = lt.dvec2, tag = lt.i32 },
  needs_grad = { "rho", "vel" },
  lt.pointer(lt.i, 4) { lt.dense(lt.i, 4) { "rho", "vel", "tag" } },
  lt.dense(lt.i, N) { "vel.grad" },                -- placed by the user: a dense array of its own
}
local Loss = lt.field(lt.f64, {}, { needs_grad = true, name = "Loss" })

local fill = lt.kernel(function(G)
  for i in lt.ndrange(N) do
    if i < 5 or (i >= 8 and i < 11) then             -- block 3 (cells 12..15) stays inactive
      G.rho[i] = 0.3 + 0.05 * i
      G.vel[i] = lt.dvec2(1 + 0.1 * i, 0.5 - 0.02 * i)
      G.tag[i] = i
    end
  end
end, { G = Grid })
local loss = lt.kernel(function(G)
  for i in G.rho do                                 -- active cells only
    local v = G.vel[i]
    lt.atomic_add(Loss.value, lt.sin(G.rho[i]) * v.x * v.x + G.rho[i] * v.y)
  end
end, { G = Grid })

local function run(g)
  Loss.value = 0
  loss(g)
  return Loss.value
end

local a, b = Grid:instantiate(), Grid:instantiate()
fill(a)
fill(b)
lt.clear_grads(Loss)
Loss.value = 0
lt.tape(function() loss(a) end):backward(Loss)
local worst, n = 0, 0
local h = 1e-6
for i = 0, N - 1 do
  if i < 5 or (i >= 8 and i < 11) then
    local function fd(set, get)
      local v0 = get()
      set(v0 + h)
      local up = run(a)
      set(v0 - h)
      local down = run(a)
      set(v0)
      return (up - down) / (2 * h)
    end
    local checks = {
      { a.rho.grad[i], fd(function(v) a.rho[i] = v end, function() return a.rho[i] end) },
      { a.vel.grad[i][1], fd(function(v) local p = a.vel[i]; a.vel[i] = { v, p[2] } end, function() return a.vel[i][1] end) },
      { a.vel.grad[i][2], fd(function(v) local p = a.vel[i]; a.vel[i] = { p[1], v } end, function() return a.vel[i][2] end) },
    }
    for _, c in ipairs(checks) do
      worst = math.max(worst, math.abs(c[1] - c[2]) / math.max(1, math.abs(c[2])))
      n = n + 1
    end
  end
end
T.check(("tree gradients: %d against finite differences, worst %.1e"):format(n, worst), worst <= 1e-6, true)
-- the other instance's gradients were not touched, and an inactive cell got none
local untouched = 0
for i = 0, N - 1 do untouched = untouched + math.abs(b.rho.grad[i]) + math.abs(b.vel.grad[i][1]) end
T.check("instance b's gradients", untouched, 0)
T.check("an inactive block's gradient", a.rho.grad[13], 0)
T.check("the inactive block stays inactive", lt.is_active(a.rho, 13), false)
-- a kernel reads the gradient through the instance as a field
local sum = lt.kernel(function(G)
  local s = lt.f64(0)
  for i in G.rho do s = s + G.rho.grad[i] end
  return s
end, { G = Grid })
local want = 0
for i = 0, N - 1 do want = want + a.rho.grad[i] end
T.check("g.rho.grad in a kernel", math.abs(sum(a) - want) < 1e-12, true)

-- errors, naming the field
T.check_error("needs_grad of an undeclared field", function()
  lt.tree { fields = { rho = lt.f32 }, needs_grad = { "p" }, lt.dense(lt.i, 4) { "rho" } }
end, "needs_grad names 'p', which is not in fields")
T.check_error("needs_grad of an integer field", function()
  lt.tree { fields = { n = lt.i32 }, needs_grad = { "n" }, lt.dense(lt.i, 4) { "n" } }
end, "field 'n' cannot have a gradient: it holds i32")
T.check_error("a gradient placed without needs_grad", function()
  lt.tree { fields = { rho = lt.f32 }, lt.dense(lt.i, 4) { "rho", "rho.grad" } }
end, "'rho.grad' is placed, but 'rho' has no gradient")
T.check_error("a gradient placed twice", function()
  lt.tree { fields = { rho = lt.f32 }, needs_grad = { "rho" }, lt.dense(lt.i, 4) { "rho", "rho.grad" },
    lt.dense(lt.i, 4) { "rho.grad" } }
end, "'rho.grad' is placed twice")
T.check_error("x.grad of a tree field without one", function() return a.tag.grad end, "has no gradient")

T.finish("autodiff_trees")
