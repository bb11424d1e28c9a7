-- autodiff.lua -- reverse mode (src/ir/passes/autodiff.c, docs/autodiff.md):
-- every differentiable builtin and the control-flow shapes the pass takes,
-- each gradient against central finite differences in f64,
-- |g - fd| <= 1e-6 * max(1, |fd|), at points away from kinks; the tape;
-- and what is refused, by its message.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check_error = T.check_error

local N = 6
local x = lt.field(lt.f64, N, { needs_grad = true, name = "x" })
local w = lt.field(lt.f64, N, { needs_grad = true, name = "w" })
local y = lt.field(lt.f64, N, { needs_grad = true, name = "y" })
local L = lt.field(lt.f64, {}, { needs_grad = true, name = "L" })

-- L = sum_i y[i]^2 (a second kernel: the tape runs both adjoints)
local loss = lt.kernel(function()
  for i in lt.ndrange(N) do lt.atomic_add(L.value, y[i] * y[i]) end
end)

-- x, w: points away from kinks (positive, below 1 for asin/acos)
local function set_inputs()
  for i = 0, N - 1 do
    x[i] = 0.15 + 0.11 * i
    w[i] = 0.9 - 0.07 * i
  end
end

-- runs f(...) then the loss; returns L
local function forward(f, ...)
  y:fill(0)
  f(...)
  L.value = 0
  loss()
  return L.value
end

local checked = 0
-- Compares the tape's gradients of x and w with central differences.
local function grad_check(name, f, ...)
  local args = table.pack(...)
  set_inputs()
  y:fill(0)
  L.value = 0
  lt.clear_grads(x, w, y, L)
  local tape = lt.tape(function() f(table.unpack(args, 1, args.n)); loss() end)
  tape:backward(L)
  local h = 1e-6
  for _, fld in ipairs { x, w } do
    for i = 0, N - 1 do
      local g = fld.grad[i]
      local v0 = fld[i]
      fld[i] = v0 + h
      local up = forward(f, table.unpack(args, 1, args.n))
      fld[i] = v0 - h
      local down = forward(f, table.unpack(args, 1, args.n))
      fld[i] = v0
      local fd = (up - down) / (2 * h)
      if math.abs(g - fd) > 1e-6 * math.max(1, math.abs(fd)) then
        T.fail(("%s: d/d%s[%d]: reverse mode %.12g, finite differences %.12g"):format(name, fld.name, i, g, fd))
      end
      checked = checked + 1
    end
  end
end

-- one kernel per builtin: y[i] = op(x[i], w[i])
local unary = {
  neg = function(a) return -a end, abs = function(a) return lt.abs(a - 0.4) end,
  sqrt = lt.sqrt, sin = lt.sin, cos = lt.cos, tan = lt.tan, asin = lt.asin, acos = lt.acos,
  atan = lt.atan, exp = lt.exp, log = lt.log,
}
for name, op in pairs(unary) do
  local k = lt.kernel(function() for i in lt.ndrange(N) do y[i] = op(x[i]) * w[i] end end)
  grad_check(name, k)
end
local binary = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
  pow = function(a, b) return a ^ b end, pow_const = function(a, _) return a ^ 3.5 end,
  min = lt.min, max = lt.max, atan2 = lt.atan2,
  mod = function(a, b) return (a * 3) % b end,
  floor = function(a, b) return lt.floor(a * 5) * b + a end,   -- floor: zero derivative
  floordiv = function(a, b) return (a * 7) // b + b end,
}
for name, op in pairs(binary) do
  local k = lt.kernel(function() for i in lt.ndrange(N) do y[i] = op(x[i], w[i]) end end)
  grad_check(name, k)
end

-- a condition that picks a value (a select), casts through f32, an lt.func,
-- a kernel argument
local pick = lt.kernel(function(c)
  for i in lt.ndrange(N) do
    local t, v = x[i] * c, w[i]
    if t > 0.5 then t = t * v else t = t + v * v end
    y[i] = t
  end
end, { c = lt.f64 })
grad_check("if picking a value", pick, 1.7)

local f32 = lt.kernel(function() for i in lt.ndrange(N) do y[i] = lt.f64(lt.f32(x[i]) * 2) + w[i] end end)
set_inputs()
lt.clear_grads(x, w, y, L)
lt.tape(function() f32(); loss() end):backward(L)
-- through f32 the derivative is exact (the factor 2) but the value rounds: compare with 2 * 2 y
for i = 0, N - 1 do
  local want = 2 * 2 * y[i]
  if math.abs(x.grad[i] - want) > 1e-6 * math.abs(want) then
    T.fail(("cast through f32: d/dx[%d] = %.12g, want %.12g"):format(i, x.grad[i], want))
  end
end

local sq = lt.func(function(a, b) return a * a + lt.sin(b) end)
local with_func = lt.kernel(function() for i in lt.ndrange(N) do y[i] = sq(x[i], w[i]) end end)
grad_check("lt.func", with_func)

-- a top-level value read by every iteration: its adjoint is a reduction
local top = lt.kernel(function()
  local s = x[0] * x[1]
  for i in lt.ndrange(N) do y[i] = s * w[i] + x[i] end
end)
grad_check("top-level value used in a parallel loop", top)

-- two loops: the second reads what the first wrote
local z = lt.field(lt.f64, N, { needs_grad = true, name = "z" })
local two = lt.kernel(function()
  for i in lt.ndrange(N) do z[i] = x[i] * w[i] end
  for i in lt.ndrange(N) do y[i] = lt.exp(z[i]) + z[(i + 1) % N] end
end)
grad_check("two loops, the second reading the first's output", two)

-- lt.atomic_add and atomic_sub into a field, several iterations into one element
local acc = lt.kernel(function()
  for i in lt.ndrange(N) do
    lt.atomic_add(y[i % 2], x[i] * w[i])
    lt.atomic_sub(y[2 + i % 3], x[i] * x[i])
  end
end)
grad_check("atomic adds and subtractions", acc)

-- a struct-for over a sparse field: gradients of active cells only
local P = 16
local sp = lt.field(lt.f64, nil, { needs_grad = true, name = "sp" })
local out = lt.field(lt.f64, nil, { needs_grad = true, name = "out" })
lt.root:pointer(lt.i, P // 4):dense(lt.i, 4):place(sp, out)
local S = lt.field(lt.f64, {}, { needs_grad = true, name = "S" })
local cells = { 1, 2, 9, 10, 11 }
for _, i in ipairs(cells) do sp[i] = 0.2 * i end
-- sp[i + 1] of the last cell of an active block (3, 11) reads one of an inactive block (4, 12): zero, no
-- gradient, and it stays inactive
local sq_cells = lt.kernel(function() for i in sp do out[i] = sp[i] * sp[i] * sp[i] + sp[(i + 1) % P] end end)
local sum_out = lt.kernel(function() for i in out do lt.atomic_add(S.value, out[i]) end end)
lt.clear_grads(sp, out, S)
lt.tape(function() sq_cells(); sum_out() end):backward(S)
for i = 0, P - 1 do
  local active = lt.is_active(sp, i)
  local from_next = active and lt.is_active(sp, (i - 1) % P) and 1 or 0   -- read by the cell before it
  local want = active and 3 * sp[i] ^ 2 + from_next or 0
  if math.abs(sp.grad[i] - want) > 1e-9 then
    T.fail(("sparse struct-for: d/dsp[%d] = %.12g, want %.12g"):format(i, sp.grad[i], want))
  end
end
T.check("sparse: the gradient's cells are the primal's", lt.is_active(sp, 5), false)
T.check("sparse: reading an inactive cell does not activate it", lt.is_active(sp, 12) or lt.is_active(sp, 4),
  false)

-- a kernel result as the loss: sum y^2 returned (a reduction in the loop, an f32 local and f64 terms), the
-- tape seeding the last call's result; k:grad() of it alone seeds 1 too
do
  local ret_loss = lt.kernel(function()
    local s = 0.0
    for i in lt.ndrange(N) do s = s + y[i] * y[i] - 0.5 * y[i] end
    return s
  end)
  local ret_f64 = lt.kernel(function()
    local s = lt.f64(0)
    for i in lt.ndrange(N) do s = s + y[i] * y[i] - 0.5 * y[i] end
    return s
  end)
  local sq = lt.kernel(function() for i in lt.ndrange(N) do y[i] = lt.exp(x[i]) * w[i] end end)
  for _, lk in ipairs { ret_loss, ret_f64 } do
    set_inputs()
    lt.clear_grads(x, w, y)
    local tape = lt.tape(function() sq(); lk() end)
    tape:backward()
    for i = 0, N - 1 do
      local yi = math.exp(x[i]) * w[i]
      local want = (2 * yi - 0.5) * yi                -- d/dx of (y^2 - y/2), y = e^x w
      local tol = lk == ret_loss and 1e-5 or 1e-12     -- the f32 sum rounds
      if math.abs(x.grad[i] - want) > tol * math.max(1, math.abs(want)) then
        T.fail(("returned loss: d/dx[%d] = %.12g, want %.12g"):format(i, x.grad[i], want))
      end
    end
  end
  lt.clear_grads(y)
  ret_f64:grad()
  T.check("k:grad() of a kernel with a result seeds 1", math.abs(y.grad[2] - (2 * y[2] - 0.5)) < 1e-12, true)
end

-- kernel-level locals in serial code: t = 2 x0; t = t * x1 + t; y[0] = t (a local stored twice)
do
  local serial = lt.kernel(function()
    local t = x[0] * 2
    t = t * x[1] + t
    y[0] = t
  end)
  set_inputs()
  lt.clear_grads(x, w, y)
  y.grad[0] = 1
  serial:grad()
  local x0, x1 = x[0], x[1]
  T.check("serial locals: d/dx0", math.abs(x.grad[0] - 2 * (x1 + 1)) < 1e-12, true)
  T.check("serial locals: d/dx1", math.abs(x.grad[1] - 2 * x0) < 1e-12, true)
end

-- vector fields: each component has its gradient, p.grad is the vector of them;
-- v = 2 (p.x p.y, sin p.x), loss = sum |v|^2, by hand: d/dp.x = 4 v1 p.y + 4 v2 cos p.x, d/dp.y = 4 v1 p.x
do
  local M = 5
  local p = lt.field(lt.vec(2, lt.f64), M, { needs_grad = true })
  local v = lt.field(lt.vec(2, lt.f64), M, { needs_grad = true })
  local VL = lt.field(lt.f64, {}, { needs_grad = true })
  local kv = lt.kernel(function()
    for i in lt.ndrange(M) do
      local a = p[i]
      v[i] = lt.vec(2, lt.f64)(a.x * a.y, lt.sin(a.x)) * 2.0
    end
  end)
  local lv = lt.kernel(function() for i in lt.ndrange(M) do lt.atomic_add(VL.value, v[i]:dot(v[i])) end end)
  for i = 0, M - 1 do p[i] = { 0.1 * i + 0.2, 0.3 - 0.05 * i } end
  lt.tape(function() kv(); lv() end):backward(VL)
  for i = 0, M - 1 do
    local x, y = p[i][1], p[i][2]
    local v1, v2 = 2 * x * y, 2 * math.sin(x)
    local g = p.grad[i]
    local gx, gy = 4 * v1 * y + 4 * v2 * math.cos(x), 4 * v1 * x
    if math.abs(g[1] - gx) > 1e-12 * math.max(1, math.abs(gx)) or math.abs(g[2] - gy) > 1e-12 * math.max(1, math.abs(gy)) then
      T.fail(("vector field: d/dp[%d] = (%.15g, %.15g), want (%.15g, %.15g)"):format(i, g[1], g[2], gx, gy))
    end
  end
end

-- ---- `if` with field reads, field writes and locals in its branches ---------------
do
  -- x in 0.15 .. 0.70, w in 0.55 .. 0.90: conditions away from their edges
  local reads = lt.kernel(function()
    for i in lt.ndrange(N) do
      local t = x[i]
      if t > 0.42 then t = t * w[i] + lt.sin(x[i]) end   -- reads fields in the branch, changes t
      y[i] = t * t
    end
  end)
  grad_check("if reading fields and changing a local", reads)
  local writes = lt.kernel(function()
    for i in lt.ndrange(N) do
      if x[i] < 0.5 then y[i] = x[i] * w[i] else y[i] = lt.exp(x[i]) - w[i] end
    end
  end)
  grad_check("if writing a field in both branches", writes)
  local nested = lt.kernel(function()
    for i in lt.ndrange(N) do
      local t, n = w[i], 0
      if x[i] > 0.3 then
        t = t * x[i]
        n = n + 2
        if w[i] > 0.7 then t = t + lt.cos(w[i] * t); n = n + 1 else t = t / w[i] end
      else
        t = t - x[i] * x[i]
      end
      y[i] = t * n + t
    end
  end)
  grad_check("nested ifs, an integer local", nested)
  local two = lt.kernel(function()   -- the second if reads t as the first left it (a merge)
    for i in lt.ndrange(N) do
      local t = w[i]
      if x[i] > 0.4 then t = x[i] * w[i] end
      if w[i] < 0.8 then t = t * t + x[i] else t = lt.sqrt(t) end
      y[i] = t
    end
  end)
  grad_check("two ifs in a row on one local", two)
  local acc = lt.kernel(function()
    for i in lt.ndrange(N) do
      if w[i] > 0.6 then lt.atomic_add(y[i % 2], x[i] * w[i]) end
    end
  end)
  grad_check("atomic add under an if", acc)
  local serial = lt.kernel(function(c)
    local t = c
    if c > 0.5 then t = x[1] * x[2] else t = w[0] end   -- a top-level if: serial code
    for i in lt.ndrange(N) do y[i] = t * x[i] end
  end, { c = lt.f64 })
  grad_check("a top-level if", serial, 0.75)
  grad_check("a top-level if, the other branch", serial, 0.25)
  local shared = lt.kernel(function()
    for i in lt.ndrange(N) do
      if x[i] > 0.3 then y[0] = x[i] end
    end
  end)
  check_error("an element several iterations write", function() shared:grad() end,
    "several iterations of the loop at line")
  local reads_then_writes = lt.kernel(function()
    for i in lt.ndrange(N) do
      if w[i] > 0.7 then y[i] = x[i] else x[i] = w[i] end
    end
  end)
  check_error("a field read in one branch and written in the other", function() reads_then_writes:grad() end,
    "writes field 'x', which it reads at line")
end

-- ---- found by tests/lang/autodiff_random.lua ----------------------------------------
do
  local terms = lt.kernel(function()       -- terms whose top operation is + or -, or another local's value
    local s = lt.f64(0)
    for i in lt.ndrange(N) do
      local c = lt.f64(0)
      for j = 0, 1 do c = c + (w[i] + 1.0) end
      s = s + (x[i] + 2.0) - (w[i] - 0.5) + c
    end
    return s
  end)
  set_inputs()
  lt.clear_grads(x, w)
  terms:grad()
  T.check("a sum's terms with + and - at their top: d/dx", x.grad[1], 1.0)
  T.check("a sum's terms with + and - at their top: d/dw (-1 + 2)", w.grad[1], 1.0)
  local toplocal = lt.kernel(function(a)
    local t = a
    if a > 1.0 then t = x[1] * a end       -- a top-level if assigns t ...
    for i in lt.ndrange(N) do
      local u = t
      if w[i] > 0.6 then u = lt.sin(t) end -- ... an if in the loop reads it
      y[i] = u * x[i]
    end
  end, { a = lt.f64 })
  grad_check("an if in a loop reading a local a top-level if assigned", toplocal, 1.5)
  local sumread = lt.kernel(function()     -- a sum read after its update: carried, not a pure sum
    for i in lt.ndrange(N) do
      local h, c = lt.f64(0.5), lt.f64(0)
      for j = 0, 1 do c = c + x[i] * w[j]; h = h * 0.5 + c end
      y[i] = h
    end
  end)
  grad_check("a local summed in an inner loop and read after its update", sumread)
end

-- ---- inner loops ------------------------------------------------------------------
do
  local stencil = lt.kernel(function()      -- atomics in a 3-iteration inner loop (P2G's shape)
    for i in lt.ndrange(N) do
      for j = 0, 2 do lt.atomic_add(y[(i + j) % N], x[i] * w[(i + j) % N] * (j + 1)) end
    end
  end)
  grad_check("an inner loop of atomic adds", stencil)
  local dot = lt.kernel(function(n)          -- a data-dependent trip count, a sum carried by the inner loop
    for i in lt.ndrange(N) do
      local acc, t = lt.f64(0), x[i]
      for j = 0, n + i % 3 - 1 do
        local u = w[j % N] * t
        if u > 0.3 then u = lt.sin(u) end
        acc = acc + u * x[j % N]
      end
      y[i] = acc * acc + t
    end
  end, { n = lt.i32 })
  grad_check("an inner loop summing into a local", dot, 4)
  local nested = lt.kernel(function()       -- two levels of inner loops, a local read after them
    for i in lt.ndrange(N) do
      local s, t = lt.f64(0), w[i]
      if x[i] > 0.4 then t = t * x[i] end
      for j = 0, 2 do
        for k = 0, 1 do s = s + t * x[(i + j + k) % N] end
        s = s - 0.5 * w[j]
      end
      t = t * 3
      y[i] = s * t
    end
  end)
  grad_check("nested inner loops", nested)
  local carried = lt.kernel(function(n)     -- a product carried by an inner loop: the adjoint stack
    for i in lt.ndrange(N) do
      local t = x[i]
      for j = 0, n + i % 2 do t = lt.sin(t * w[j % N]) + x[(i + j) % N] end
      y[i] = t * t
    end
  end, { n = lt.i32 })
  grad_check("a local carried by an inner loop (run-time trip count)", carried, 3)
  local whiles = lt.kernel(function()      -- a while loop with a data-dependent trip count
    for i in lt.ndrange(N) do
      local t, u = x[i], w[i]
      while t < 2 do
        t = t * (1.2 + w[i]) + 0.1
        u = u * 0.9 + t * 0.05
      end
      y[i] = t * u
    end
  end)
  grad_check("a while loop carrying two locals", whiles)
  local nested_carry = lt.kernel(function()
    for i in lt.ndrange(N) do
      local t = x[i]
      for j = 0, 2 do
        local u = w[j]
        for q = 0, 1 do u = u * t + 0.1 * q end   -- carried by the inner loop, t by the outer
        t = t + u * 0.3
      end
      y[i] = t
    end
  end)
  grad_check("nested inner loops, each carrying a local", nested_carry)
  local repeats = lt.kernel(function()
    for i in lt.ndrange(N) do
      local t = x[i]
      repeat t = t * 2 until t > 2
      y[i] = t
    end
  end)
  check_error("repeat ... until", function() repeats:grad() end, "a while loop whose condition is not tested first")
  local breaks = lt.kernel(function()
    for i in lt.ndrange(N) do
      local t = x[i]
      for j = 0, 5 do
        if t > 1 then break end
        t = t * 2
      end
      y[i] = t
    end
  end)
  check_error("break in an inner loop", function() breaks:grad() end, "break (other than a while loop's own test)")
  local lastwins = lt.kernel(function()
    for i in lt.ndrange(N) do for j = 0, 2 do y[i] = x[i] * j end end
  end)
  check_error("an element written by every iteration of an inner loop", function() lastwins:grad() end,
    "several iterations of the loop at line")
end

-- ---- gradients by kernel arguments ----------------------------------------------
do
  local ka = lt.kernel(function(a, b, v, m)
    local t = a * b                          -- top-level arithmetic on arguments
    for i in lt.ndrange(N) do
      y[i] = t * x[i] * x[i] + lt.sin(b) * w[i] + v.x * lt.exp(v.y * x[i]) + m
    end
  end, { a = lt.f64, b = lt.f64, v = lt.dvec2, m = lt.f32 })
  local function value(a, b, vx, vy, m)
    set_inputs()
    return forward(ka, a, b, lt.dvec2(vx, vy), m)
  end
  local a0, b0, vx0, vy0, m0 = 1.3, 0.4, 0.7, -0.6, 0.25
  set_inputs()
  y:fill(0)
  L.value = 0
  lt.clear_grads(x, w, y, L)
  local grads = lt.tape(function() ka(a0, b0, lt.dvec2(vx0, vy0), m0); loss() end):backward(L)
  local g = grads[1]
  T.check("the loss kernel has no float arguments", next(grads[2]), nil)
  local function fd(i)
    -- m is f32: a step f32 holds exactly (the loss is quadratic in m, so central differences are exact)
    local h = i == 5 and 2 ^ -10 or 1e-6
    local p = { a0, b0, vx0, vy0, m0 }
    p[i] = p[i] + h
    local up = value(table.unpack(p))
    p[i] = p[i] - 2 * h
    return (up - value(table.unpack(p))) / (2 * h)
  end
  local want = { fd(1), fd(2), fd(3), fd(4), fd(5) }
  local got = { g.a, g.b, g.v and g.v.x, g.v and g.v.y, g.m }
  for i = 1, 5 do
    local ok = got[i] and math.abs(got[i] - want[i]) <= 1e-6 * math.max(1, math.abs(want[i]))
    T.check(("argument gradient %d: %s vs finite differences %.12g"):format(i, tostring(got[i]), want[i]), ok, true)
    checked = checked + 1
  end
  -- k:grad returns them too, with the result as the loss
  local kr = lt.kernel(function(s)
    local r = 0.0
    for i in lt.ndrange(N) do r = r + s * s * x[i] end
    return r
  end, { s = lt.f64 })
  set_inputs()
  lt.clear_grads(x)
  local sum = 0
  for i = 0, N - 1 do sum = sum + x[i] end
  local gk = kr:grad(1.5)
  T.check("k:grad's argument gradient (2 s sum x)", math.abs(gk.s - 3 * sum) < 1e-12, true)
  T.check("k:grad's field gradient (s^2)", math.abs(x.grad[2] - 2.25) < 1e-12, true)
end

-- ---- what is refused ------------------------------------------------------------

local rw = lt.kernel(function() for i in lt.ndrange(N) do x[i] = x[i] * 2 end end)
check_error("read then written", function() rw:grad() end,
  "writes field 'x', which it reads at line")
local twice = lt.kernel(function() for i in lt.ndrange(N) do y[i] = x[i]; y[i] = w[i] end end)
check_error("written twice", function() twice:grad() end, "writes field 'y' a second time")
local acc_read = lt.kernel(function()
  for i in lt.ndrange(N) do lt.atomic_add(y[0], x[i]) end
  for i in lt.ndrange(N) do z[i] = y[0] * 2 end
end)
check_error("read after accumulating", function() acc_read:grad() end, "reads field 'y' after adding to it")
local sq_sum = lt.kernel(function()
  local s = 0.0
  for i in lt.ndrange(N) do s = s + y[i] end
  return s * s
end)
check_error("a summed local used other than returned", function() sq_sum:grad() end,
  "a kernel-level local summed in a loop and then used other than by `return s`")
local plain = lt.field(lt.f64, N)
local lost = lt.kernel(function() for i in lt.ndrange(N) do plain[i] = x[i] * 2 end end)
check_error("an active value into a field without a gradient", function() lost:grad() end,
  "into field 'plain', which has none: the gradient through it would be lost")
local rnd = lt.kernel(function() for i in lt.ndrange(N) do y[i] = x[i] * lt.random(lt.f64) end end)
check_error("lt.random", function() rnd:grad() end, "lt.random")
local amax = lt.kernel(function() for i in lt.ndrange(N) do lt.atomic_max(y[0], x[i]) end end)
check_error("atomic_max", function() amax:grad() end, "atomic_max on field 'y' has no gradient rule")
check_error("x.grad of a field without one", function() return lt.field(lt.f32, 4).grad end,
  "has no gradient: make it with lt.field(dtype, shape, {needs_grad = true})")
check_error("needs_grad of an integer field", function() lt.field(lt.i32, 4, { needs_grad = true }) end,
  "holds f32 or f64, not i32")
check_error("needs_grad of a struct field", function()
  lt.field(lt.struct { pos = lt.vec2, mass = lt.f32 }, 4, { needs_grad = true })
end, "gradients of struct fields are not supported yet")
check_error("needs_grad of an integer vector field", function()
  lt.field(lt.vec(2, lt.i32), 4, { needs_grad = true })
end, "holds f32 or f64 components, not i32")
check_error("a Lua write inside a tape", function() lt.tape(function() x[0] = 1 end) end,
  "inside lt.tape: the tape records kernel calls only")
check_error("lt.activate inside a tape", function() lt.tape(function() lt.activate(sp, 3) end) end,
  "inside lt.tape")
local overwrite = lt.kernel(function() for i in lt.ndrange(N) do x[i] = w[i] end end)
local reads_x = lt.kernel(function() for i in lt.ndrange(N) do y[i] = x[i] end end)
check_error("the tape's rule", function() lt.tape(function() reads_x(); overwrite() end):backward() end,
  "call 2 (kernel overwrite, line")

-- ---- state per step: x[s + 1][i] from x[s][i], element by element ---------------
do
  local S = 5
  local xs = lt.field(lt.f64, { S, N }, { needs_grad = true, name = "xs" })
  local c = lt.field(lt.f64, N, { needs_grad = true, name = "c" })
  local J = lt.field(lt.f64, {}, { needs_grad = true, name = "J" })
  local step = lt.kernel(function(s)
    for i in lt.ndrange(N) do
      local l = xs[s][(i + N - 1) % N]      -- a neighbour of the step before: another element
      xs[s + 1][i] = xs[s][i] + 0.1 * lt.sin(l) * c[i]
    end
  end)
  local final = lt.kernel(function(s) for i in lt.ndrange(N) do lt.atomic_add(J.value, xs[s][i] * xs[s][i]) end end)
  local function steps()
    for s = 0, S - 2 do step(s) end
    final(S - 1)
  end
  local function run()
    J.value = 0
    steps()
    return J.value
  end
  local function init()
    for i = 0, N - 1 do xs[0][i] = 0.3 + 0.2 * i; c[i] = 1.5 - 0.1 * i end
  end
  init()
  lt.clear_grads(xs, c, J)
  J.value = 0
  local tape = lt.tape(steps)
  tape:backward(J)
  local h, worst = 1e-6, 0
  for _, p in ipairs { { xs, function(i) return 0, i end }, { c, function(i) return i end } } do
    local f, at = p[1], p[2]
    for i = 0, N - 1 do
      local g = f == xs and xs.grad[0][i] or c.grad[i]
      local function set(d)
        init()
        if f == xs then xs[0][i] = xs[0][i] + d else c[i] = c[i] + d end
        return run()
      end
      local fd = (set(h) - set(-h)) / (2 * h)
      worst = math.max(worst, math.abs(g - fd) / math.max(1, math.abs(fd)))
      checked = checked + 1
    end
  end
  T.check("state per step: |g - fd| <= 1e-6 max(1, |fd|) (worst " .. worst .. ")", worst <= 1e-6, true)
  local same = lt.kernel(function(s) for i in lt.ndrange(N) do xs[s][i] = xs[s][i] * 2 end end)
  check_error("one step's elements read and written", function() same:grad(1) end,
    "writes field 'xs', which it reads at line")
  local shifted = lt.kernel(function(s) for i in lt.ndrange(N - 1) do xs[s][i] = xs[s][i + 1] end end)
  check_error("neighbours in one step read and written", function() shifted:grad(1) end,
    "writes field 'xs', which it reads at line")
  check_error("a step run twice", function() lt.tape(function() step(0); step(0) end):backward() end,
    "call 2 (kernel step, line")
  check_error("a step's input overwritten later", function() lt.tape(function() step(1); step(0) end):backward() end,
    "where call 1 (kernel step) read it at line")
  -- steps of another field's elements are still apart: no error
  lt.tape(function() step(0); step(1) end):backward()
end

-- docs/autodiff.md's example runs, and its gradient is the derivative by hand:
-- loss = sum (sin x * a + x^2)^2, d/dx_3 = 2 y_3 (a cos x_3 + 2 x_3)
do
  local printed
  local env = setmetatable({ print = function(v) printed = v end }, { __index = _G })
  require("docs").snippets("autodiff.md", nil, nil, env)[1].run()
  local x3, a = 3 / 64, 0.5
  local y3 = math.sin(x3) * a + x3 * x3
  local want = 2 * y3 * (a * math.cos(x3) + 2 * x3)
  T.check("docs/autodiff.md's example", math.abs(printed - want) < 1e-12, true)
end

print(("autodiff: %d gradients checked against finite differences"):format(checked))
T.finish("autodiff")
