-- autodiff_stack.lua -- the adjoint stack (docs/autodiff.md): a local that an
-- inner loop or a while loop carries is pushed once per iteration by the
-- adjoint's forward pass and popped by its reverse loop. With
-- lt.init{ad_stack_size = 8}, a loop of 8 iterations differentiates (checked
-- against central finite differences) and one of 9 fails its launch with a
-- message naming the kernel, the loop's line and the option; the program
-- stays usable.
local lt = require "lattice"
lt.init { ad_stack_size = 8 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"

local N = 4
local x = lt.field(lt.f64, N, { needs_grad = true, name = "x" })
local y = lt.field(lt.f64, N, { needs_grad = true, name = "y" })
local loop_line = debug.getinfo(1, "l").currentline + 4
local k = lt.kernel(function(n)
  for i in lt.ndrange(N) do
    local t = x[i]
    for j = 1, n do t = lt.sin(t) * 1.1 + 0.01 * j end
    y[i] = t * t
  end
end, { n = lt.i32 })

local function loss(n)
  k(n)
  local s = 0
  for i = 0, N - 1 do s = s + y[i] end
  return s
end
for i = 0, N - 1 do x[i] = 0.2 + 0.15 * i end
loss(8)
x.grad:fill(0)
y.grad:fill(1)
k:grad(8)
local worst = 0
for i = 0, N - 1 do
  local v = x[i]
  x[i] = v + 1e-6
  local up = loss(8)
  x[i] = v - 1e-6
  local down = loss(8)
  x[i] = v
  local fd = (up - down) / 2e-6
  worst = math.max(worst, math.abs(x.grad[i] - fd) / math.max(1, math.abs(fd)))
end
T.check(("8 iterations on a stack of 8: worst %.1e against finite differences"):format(worst), worst <= 1e-6, true)
T.check_error("9 iterations on a stack of 8", function() k:grad(9) end,
  ("the adjoint stack of the loop at line %d holds 8 values of each local the loop carries, and the loop ran "
    .. "more iterations; raise lt.init{ad_stack_size = ...}"):format(loop_line))
-- the program goes on: the 8-iteration adjoint runs again
x.grad:fill(0)
k:grad(8)
T.check("usable after the failed launch", x.grad[1] ~= 0, true)

-- adjoints go through the offline kernel cache like any kernel (docs/cache.md):
-- a second program finds the first one's adjoint there
local dir = os.tmpname()
os.remove(dir)
local function adjoint_program()
  lt.init { cache = dir, ad_stack_size = 8 }
  local a = lt.field(lt.f64, N, { needs_grad = true })
  local b = lt.field(lt.f64, N, { needs_grad = true })
  local kk = lt.kernel(function()
    for i in lt.ndrange(N) do
      local t = a[i]
      while t < 3 do t = t * 1.7 + 0.2 end
      b[i] = t
    end
  end)
  for i = 0, N - 1 do a[i] = 0.5 + 0.1 * i end
  kk()
  b.grad:fill(1)
  kk:grad()
  return lt.stats(), a.grad[2]
end
local first, g1 = adjoint_program()
local second, g2 = adjoint_program()
T.check("the first program compiles its kernel and adjoint", first.cache_misses, 2)
T.check("the second finds both in the cache", second.cache_hits, 2)
T.check("the cached adjoint gives the same gradient", g2, g1)
os.execute("rm -rf '" .. dir .. "'")
T.finish("autodiff_stack")
