-- autodiff_ndarray.lua -- reverse mode through ndarrays (lt.ndarray(dtype,
-- shape, {needs_grad = true}), docs/autodiff.md): gradients of 1-D and 2-D
-- arrays read and written by kernels, mixed with fields, on a tape of
-- several calls, each against central finite differences in f64; arrays
-- without gradients as inputs; and what is refused, by its message.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"

local N = 6
local G = { needs_grad = true }
local a = lt.ndarray(lt.f64, { N }, G)
local m = lt.ndarray(lt.f64, { 3, 2 }, G)
local b = lt.ndarray(lt.f64, { N }, G)
local c = lt.ndarray(lt.f64, { N })                 -- no gradient: an input only
local y = lt.field(lt.f64, N, { needs_grad = true, name = "y" })
local L = lt.field(lt.f64, {}, { needs_grad = true, name = "L" })
local A1, A2 = lt.ndarray_type(lt.f64, 1), lt.ndarray_type(lt.f64, 2)

-- b[i] = f(a, m, c); y[i] = b[i] * a[i]; L = sum y^2
local first = lt.kernel(function(a, m, c, b)
  for i in lt.ndrange(a.shape[1]) do
    local t = m[i % 3][i % 2]
    if a[i] > 0.5 then t = t * a[i] end
    b[i] = lt.sin(a[i]) * t + c[i] * a[(i + 1) % a.shape[1]]
  end
end, { a = A1, m = A2, c = A1, b = A1 })
local second = lt.kernel(function(a, b)
  for i in lt.ndrange(b.shape[1]) do y[i] = b[i] * a[i] + lt.exp(-b[i]) end
end, { a = A1, b = A1 })
local loss = lt.kernel(function()
  for i in lt.ndrange(N) do lt.atomic_add(L.value, y[i] * y[i]) end
end)

local function init()
  for i = 0, N - 1 do a[i] = 0.2 + 0.13 * i; c[i] = 0.7 - 0.1 * i end
  for i = 0, 2 do for j = 0, 1 do m[i][j] = 0.4 + 0.3 * i - 0.2 * j end end
end
local function run()
  first(a, m, c, b)
  second(a, b)
  L.value = 0
  loss()
  return L.value
end

init()
L.value = 0
lt.clear_grads(y, L)
a.grad:fill(0); m.grad:fill(0); b.grad:fill(0)
lt.tape(function() first(a, m, c, b); second(a, b); loss() end):backward(L)
local h, worst, n = 1e-6, 0, 0
local function fd(get, set)
  local v = get()
  set(v + h)
  local up = run()
  set(v - h)
  local down = run()
  set(v)
  return (up - down) / (2 * h)
end
for i = 0, N - 1 do
  local want = fd(function() return a[i] end, function(v) a[i] = v end)
  worst = math.max(worst, math.abs(a.grad[i] - want) / math.max(1, math.abs(want)))
  n = n + 1
end
for i = 0, 2 do
  for j = 0, 1 do
    local want = fd(function() return m[i][j] end, function(v) m[i][j] = v end)
    worst = math.max(worst, math.abs(m.grad[i][j] - want) / math.max(1, math.abs(want)))
    n = n + 1
  end
end
T.check(("ndarray gradients: %d against finite differences, worst %.1e"):format(n, worst), worst <= 1e-6, true)
T.check("an intermediate array's gradient is its adjoint (b.grad[2] ~= 0)", b.grad[2] ~= 0, true)

-- k:grad alone, with an argument gradient too: d/ds sum_i s a_i^2 b_i
local scale = lt.kernel(function(s, a, b)
  for i in lt.ndrange(a.shape[1]) do b[i] = s * a[i] * a[i] end
end, { s = lt.f64, a = A1, b = A1 })
a.grad:fill(0)
b.grad:fill(1)
local g = scale:grad(1.5, a, b)
local ds, ok = 0, true
for i = 0, N - 1 do
  ds = ds + a[i] * a[i]
  ok = ok and math.abs(a.grad[i] - 2 * 1.5 * a[i]) < 1e-12
end
T.check("k:grad: a.grad = 2 s a", ok, true)
T.check("k:grad: d/ds", math.abs(g.s - ds) < 1e-12, true)

-- refusals
T.check_error("a written array without a gradient", function() scale:grad(1.5, a, c) end,
  "ndarray 'b' is written with values that have gradients, but the launch gives no gradient array for it")
T.check_error("one array for two arguments", function() scale:grad(1.5, a, a) end,
  "arguments 'a' and 'b' are the same ndarray")
T.check_error("a later call overwriting an array an earlier one read", function()
  lt.tape(function() second(a, b); first(a, m, c, b) end):backward(L)
end, "writes an ndarray where call 1 (kernel second) read it")
T.check_error("a Lua write inside a tape", function() lt.tape(function() a[0] = 1 end) end,
  "a write of an ndarray inside lt.tape")
T.check_error("fill inside a tape", function() lt.tape(function() a:fill(1) end) end, "a:fill inside lt.tape")
T.check_error("needs_grad of an integer ndarray", function() lt.ndarray(lt.i32, { 4 }, { needs_grad = true }) end,
  "holds f32 or f64, not i32")
T.check_error("a.grad without one", function() return c.grad end, "this ndarray has no gradient")
T.check_error("an unknown option", function() lt.ndarray(lt.f64, { 4 }, { needs_grad = true, pinned = true }) end,
  "unknown option 'pinned'")
local inplace = lt.kernel(function(a) for i in lt.ndrange(a.shape[1]) do a[i] = a[i] * 2 end end, { a = A1 })
T.check_error("an array read and written by one kernel", function() inplace:grad(a) end,
  "writes ndarray 'a', which it reads at line")

T.finish("autodiff_ndarray")
