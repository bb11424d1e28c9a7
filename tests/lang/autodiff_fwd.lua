-- autodiff_fwd.lua -- forward mode (src/ir/passes/forward.c, docs/autodiff.md
-- "Forward mode"): k:fwd's tangents (a Jacobian-vector product J v) for every
-- differentiable builtin and the control-flow shapes, each against central
-- finite differences in f64 along the same direction v,
-- |t - fd| <= 1e-6 * max(1, |fd|), at points away from kinks; k:fwd's primal
-- values against k's; forward against reverse mode; what is refused, by its
-- message.
local lt = require "lattice"
lt.init { default_fp = lt.f64 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check_error = T.check_error

local N = 6
local x = lt.field(lt.f64, N, { needs_dual = true, name = "x" })
local w = lt.field(lt.f64, N, { needs_dual = true, name = "w" })
local y = lt.field(lt.f64, N, { needs_dual = true, name = "y" })

local all = {}
for i = 0, N - 1 do all[#all + 1] = i end

-- x, w: points away from kinks (positive, below 1 for asin/acos)
local function set_inputs()
  for i = 0, N - 1 do
    x[i] = 0.15 + 0.11 * i
    w[i] = 0.9 - 0.07 * i
  end
end

local worst, checked = 0, 0
local function close(what, t, fd)
  local e = math.abs(t - fd) / math.max(1, math.abs(fd))
  if e > worst then worst = e end
  checked = checked + 1
  if e > 1e-6 then T.fail(("%s: forward mode %.12g, finite differences %.12g"):format(what, t, fd)) end
end

-- Checks J v. spec.ins / spec.outs: lists of {field, indices} (scalar fields;
-- a vector field's components are such); the direction v of input n is
-- 0.3 - 0.11 a + 0.07 (n % 4) for the a-th input list. spec.fwd() runs the
-- tangent kernel (k:fwd..., returning its result and tangent, if any);
-- spec.primal(h) the primal kernel with the arguments moved by h times their
-- tangents; spec.reset() clears the outputs (default: fill them and their
-- duals with 0).
local function jvp(name, spec)
  local h = 1e-6
  local base, dir = {}, {}
  for a, inp in ipairs(spec.ins) do
    base[a], dir[a] = {}, {}
    for n, i in ipairs(inp[2]) do base[a][n], dir[a][n] = inp[1][i], 0.3 - 0.11 * a + 0.07 * (n % 4) end
  end
  local function set(t)
    for a, inp in ipairs(spec.ins) do
      for n, i in ipairs(inp[2]) do inp[1][i] = base[a][n] + t * dir[a][n] end
    end
  end
  local reset = spec.reset or function()
    for _, out in ipairs(spec.outs) do out[1]:fill(0); out[1].dual:fill(0) end
  end
  local function read(duals)
    local o = {}
    for _, out in ipairs(spec.outs) do
      for _, i in ipairs(out[2]) do o[#o + 1] = duals and out[1].dual[i] or out[1][i] end
    end
    return o
  end
  set(0)
  for a, inp in ipairs(spec.ins) do
    inp[1].dual:fill(0)
    for n, i in ipairs(inp[2]) do inp[1].dual[i] = dir[a][n] end
  end
  reset()
  local r, rt = spec.fwd()
  local val, tan = read(false), read(true)
  reset()
  local r0 = spec.primal(0)
  for n, v in ipairs(read(false)) do
    if v ~= val[n] then T.fail(("%s: k:fwd's primal value %d is %.17g, k's %.17g"):format(name, n, val[n], v)) end
  end
  if r ~= r0 then T.fail(("%s: k:fwd's result %s, k's %s"):format(name, tostring(r), tostring(r0))) end
  set(h); reset()
  local rup, up = spec.primal(h), nil
  up = read(false)
  set(-h); reset()
  local rdn, dn = spec.primal(-h), nil
  dn = read(false)
  set(0)
  for n = 1, #tan do close(("%s: output %d"):format(name, n), tan[n], (up[n] - dn[n]) / (2 * h)) end
  if rup ~= nil then close(name .. ": the result", rt, (rup - rdn) / (2 * h)) end
end

-- a kernel without arguments over x, w -> y
local function simple(name, k)
  set_inputs()
  jvp(name, { ins = { { x, all }, { w, all } }, outs = { { y, all } },
    fwd = function() return k:fwd() end, primal = function() return k() end })
end

-- ---- every builtin: y[i] = op(x[i]) * w[i], y[i] = op(x[i], w[i]) ------------------
local unary = {
  neg = function(a) return -a end, abs = function(a) return lt.abs(a - 0.4) end,
  sqrt = lt.sqrt, sin = lt.sin, cos = lt.cos, tan = lt.tan, asin = lt.asin, acos = lt.acos,
  atan = lt.atan, exp = lt.exp, log = lt.log, tanh = lt.tanh,
  floor = function(a) return lt.floor(a * 5) + a end, ceil = function(a) return lt.ceil(a * 5) - a end,
  round = function(a) return lt.round(a * 3) + a * a end, trunc = function(a) return lt.trunc(a * 5) + a end,
}
for name, op in pairs(unary) do
  simple(name, lt.kernel(function() for i in lt.ndrange(N) do y[i] = op(x[i]) * w[i] end end))
end
local binary = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
  pow = function(a, b) return a ^ b end, pow_const = function(a, _) return a ^ 3.5 end,
  pow_base = function(_, b) return 1.7 ^ b end,
  min = lt.min, max = lt.max, atan2 = lt.atan2,
  mod = function(a, b) return (a * 3) % b end,
  floordiv = function(a, b) return (a * 7) // b + b end,
}
for name, op in pairs(binary) do
  simple(name, lt.kernel(function() for i in lt.ndrange(N) do y[i] = op(x[i], w[i]) end end))
end

-- through f32 the derivative is exact (the factor 2) but values round: compare with 2 dx + dw
do
  local f32 = lt.kernel(function() for i in lt.ndrange(N) do y[i] = lt.f64(lt.f32(x[i]) * 2) + w[i] end end)
  set_inputs()
  for i = 0, N - 1 do x.dual[i], w.dual[i] = 0.5 + i, 1 - 0.25 * i end
  f32:fwd()
  for i = 0, N - 1 do
    local want = 2 * x.dual[i] + w.dual[i]
    if math.abs(y.dual[i] - want) > 1e-6 * math.max(1, math.abs(want)) then
      T.fail(("cast through f32: tangent %d = %.12g, want %.12g"):format(i, y.dual[i], want))
    end
  end
end

-- ---- control flow -------------------------------------------------------------------
set_inputs()
-- an `if` that picks a value, with a kernel argument given a tangent
local pick = lt.kernel(function(c)
  for i in lt.ndrange(N) do
    local t, v = x[i] * c, w[i]
    if t > 0.5 then t = t * v else t = t + v * v end
    y[i] = t
  end
end, { c = lt.f64 })
jvp("if picking a value, argument c", { ins = { { x, all }, { w, all } }, outs = { { y, all } },
  fwd = function() return pick:fwd_args({ c = 0.7 }, 1.7) end,
  primal = function(h) return pick(1.7 + h * 0.7) end })
jvp("if picking a value, no argument tangent", { ins = { { x, all }, { w, all } }, outs = { { y, all } },
  fwd = function() return pick:fwd(1.7) end, primal = function() return pick(1.7) end })

-- an `if` whose branches read fields, change a local and write fields
simple("if with field reads and writes in its branches", lt.kernel(function()
  for i in lt.ndrange(N) do
    local t = x[i]
    if t > 0.42 then
      t = t * w[i] + lt.sin(x[i])
      y[i] = t * t
    else
      y[i] = lt.exp(w[i]) - t
    end
  end
end))

-- nested local loops carrying locals
simple("nested local loops", lt.kernel(function()
  for i in lt.ndrange(N) do
    local s = 0.0
    for j = 0, 2 do
      local t = x[(i + j) % N]
      for m = 0, j do t = t * w[i] + 0.1 * m end
      s = s + lt.sin(t)
    end
    y[i] = s
  end
end))

-- while with a trip count that depends on the data, and break
simple("while with a data-dependent trip count and break", lt.kernel(function()
  for i in lt.ndrange(N) do
    local t, n = x[i], 0
    while t < 3 do
      t = t * (1.2 + w[i]) + 0.05
      n = n + 1
      if n >= 40 then break end
    end
    y[i] = t + n * x[i]
  end
end))

-- lt.func with an early return (inlined)
local f = lt.func(function(a, b)
  if a > 0.5 then return a * b + lt.cos(b) end
  return lt.exp(a) - b * b
end)
simple("lt.func with an early return", lt.kernel(function() for i in lt.ndrange(N) do y[i] = f(x[i], w[i]) end end))

-- serial code at the top level: a local stored twice, a value every iteration reads
simple("top-level locals and a value read by a parallel loop", lt.kernel(function()
  local t = x[0] * 2
  t = t * x[1] + t
  y[0] = t
  local s = x[2] * w[3]
  for i in lt.ndrange({ 1, N }) do y[i] = s * w[i] + x[i] end
end))

-- two loops, the second reading the first's output (its dual too)
do
  local z = lt.field(lt.f64, N, { needs_dual = true, name = "z" })
  local two = lt.kernel(function()
    for i in lt.ndrange(N) do z[i] = x[i] * w[i] end
    for i in lt.ndrange(N) do y[i] = lt.exp(z[i]) + z[(i + 1) % N] end
  end)
  simple("two loops, the second reading the first's output", two)
end

-- atomic adds and subtractions into shared elements
simple("atomic adds and subtractions", lt.kernel(function()
  for i in lt.ndrange(N) do
    lt.atomic_add(y[i % 2], x[i] * w[i])
    lt.atomic_sub(y[2 + i % 3], x[i] * x[i])
  end
end))

-- ---- a kernel result: a sum in a parallel loop, and one from serial code ---------------
do
  local sum = lt.kernel(function()
    local s = 0.0
    for i in lt.ndrange(N) do s = s + y[i] * y[i] - 0.5 * x[i] end
    return s
  end)
  jvp("a kernel result summed in a loop", { ins = { { x, all }, { y, all } }, outs = {},
    fwd = function() return sum:fwd() end, primal = function() return sum() end })
  local serial = lt.kernel(function(a)
    local t = x[0] * a
    if t > 0.1 then return lt.log(t) * w[1] end
    return t
  end, { a = lt.f64 })
  jvp("a kernel result from serial code", { ins = { { x, { 0 } }, { w, { 1 } } }, outs = {},
    fwd = function() return serial:fwd_args({ a = -0.4 }, 1.3) end,
    primal = function(h) return serial(1.3 - 0.4 * h) end })
  set_inputs()
  local r, t = serial:fwd(1.3)
  T.check("k:fwd returns two values", type(r) == "number" and type(t) == "number", true)
  local none = lt.kernel(function() for i in lt.ndrange(N) do y[i] = x[i] end end)
  T.check("k:fwd of a kernel without a result returns nothing", select("#", none:fwd()), 0)
end

-- ---- a struct-for over sparse fields --------------------------------------------------
for _, kind in ipairs { "pointer", "bitmasked" } do
  local P = 16
  local sp = lt.field(lt.f64, nil, { needs_dual = true, name = "sp" })
  local out = lt.field(lt.f64, nil, { needs_dual = true, name = "out" })
  local level = kind == "pointer" and lt.root:pointer(lt.i, P // 4):dense(lt.i, 4) or lt.root:bitmasked(lt.i, P)
  level:place(sp, out)
  local cells = { 1, 2, 9, 10, 11 }
  for _, i in ipairs(cells) do sp[i] = 0.2 * i end
  local cube = lt.kernel(function() for i in sp do out[i] = sp[i] * sp[i] * sp[i] + lt.sin(sp[(i + 1) % P]) end end)
  jvp("struct-for over a " .. kind .. " field", { ins = { { sp, cells } }, outs = { { out, cells } },
    reset = function() for _, i in ipairs(cells) do out[i] = 0; out.dual[i] = 0 end end,
    fwd = function() return cube:fwd() end, primal = function() return cube() end })
  T.check(kind .. ": k:fwd activates no cell", lt.is_active(sp, 5) or lt.is_active(sp, 12), false)
end

-- ---- vector fields, and vector arguments with tangents -------------------------------------
do
  local M = 5
  local V2 = lt.vec(2, lt.f64)
  local p = lt.field(V2, M, { needs_dual = true, name = "p" })
  local v = lt.field(V2, M, { needs_dual = true, name = "v" })
  local kv = lt.kernel(function(d)
    for i in lt.ndrange(M) do
      local a = p[i]
      v[i] = V2(a.x * a.y, lt.sin(a.x)) * 2.0 + d * a:dot(a)
    end
  end, { d = V2 })
  for i = 0, M - 1 do p[i] = { 0.1 * i + 0.2, 0.3 - 0.05 * i } end
  local idx = { 0, 1, 2, 3, 4 }
  jvp("vector fields, a vector argument", { ins = { { p.x, idx }, { p.y, idx } }, outs = { { v.x, idx }, { v.y, idx } },
    fwd = function() return kv:fwd_args({ d = { 1, -2 } }, { 0.5, 0.25 }) end,
    primal = function(h) return kv({ 0.5 + h, 0.25 - 2 * h }) end })
  T.check("p.dual is the vector field of the components' duals", p.dual.x == p.x.dual, true)
end

-- ---- f32 fields, an f32 sum returned: tangents against the derivatives by hand ------------
do
  local a32 = lt.field(lt.f32, N, { needs_dual = true, name = "a32" })
  local b32 = lt.field(lt.f32, N, { needs_dual = true, name = "b32" })
  local k32 = lt.kernel(function()
    local s = lt.f32(0)
    for i in lt.ndrange(N) do
      b32[i] = lt.sin(a32[i]) * 2
      s = s + a32[i] * a32[i]
    end
    return s
  end)
  local want = 0
  for i = 0, N - 1 do a32[i], a32.dual[i] = 0.1 * (i + 1), 1 - 0.1 * i end
  local _, t = k32:fwd()
  for i = 0, N - 1 do
    local d = 2 * math.cos(a32[i]) * a32.dual[i]
    want = want + 2 * a32[i] * a32.dual[i]
    if math.abs(b32.dual[i] - d) > 1e-6 then T.fail(("f32: tangent %d = %.9g, want %.9g"):format(i, b32.dual[i], d)) end
  end
  if math.abs(t - want) > 1e-5 then T.fail(("f32: the result's tangent %.9g, want %.9g"):format(t, want)) end
end

-- ---- lt.random: a draw has tangent zero ---------------------------------------------------
do
  local noisy = lt.kernel(function() for i in lt.ndrange(N) do y[i] = x[i] * (1 + lt.random(lt.f64)) end end)
  set_inputs()
  for i = 0, N - 1 do x.dual[i] = 1 + i end
  noisy:fwd()
  for i = 0, N - 1 do
    local want = y[i] / x[i] * x.dual[i]
    if math.abs(y.dual[i] - want) > 1e-12 * math.abs(want) then
      T.fail(("lt.random: tangent %d = %.15g, want %.15g"):format(i, y.dual[i], want))
    end
  end
end

-- ---- forward against reverse mode: J v == grad(L) . v for L = sum y^2 ----------------------
do
  local a = lt.field(lt.f64, N, { needs_grad = true, needs_dual = true, name = "a" })
  local b = lt.field(lt.f64, N, { needs_grad = true, needs_dual = true, name = "b" })
  local c = lt.field(lt.f64, N, { needs_grad = true, needs_dual = true, name = "c" })
  local L = lt.field(lt.f64, {}, { needs_grad = true, needs_dual = true, name = "L" })
  local step = lt.kernel(function(s)
    for i in lt.ndrange(N) do c[i] = lt.sin(a[i]) * b[i] * s + a[i] * a[i] / b[i] + lt.atan2(a[i], b[i]) end
  end, { s = lt.f64 })
  local loss = lt.kernel(function() for i in lt.ndrange(N) do lt.atomic_add(L.value, c[i] * c[i]) end end)
  for i = 0, N - 1 do a[i], b[i] = 0.2 + 0.1 * i, 1.1 - 0.05 * i end
  lt.clear_grads(a, b, c, L)
  local grads = lt.tape(function() step(0.8); loss() end):backward(L)
  local dot = 0.0
  for i = 0, N - 1 do
    a.dual[i], b.dual[i] = 0.3 - 0.04 * i, 0.1 * i - 0.2
    dot = dot + a.grad[i] * a.dual[i] + b.grad[i] * b.dual[i]
  end
  dot = dot + grads[1].s * 0.5                    -- the argument s, tangent 0.5
  L.value, L.dual.value = 0, 0
  c.dual:fill(0)
  step:fwd_args({ s = 0.5 }, 0.8)
  loss:fwd()
  close("forward vs reverse mode", L.dual.value, dot)
  if math.abs(L.dual.value - dot) > 1e-12 * math.max(1, math.abs(dot)) then
    T.fail(("forward vs reverse mode: J v = %.17g, grad . v = %.17g"):format(L.dual.value, dot))
  end
end

-- ---- what is refused ---------------------------------------------------------------------
check_error("needs_dual on an integer field", function() lt.field(lt.i32, 4, { needs_dual = true }) end,
  "a field with a dual (needs_dual, forward mode) holds f32 or f64, not i32")
check_error("needs_dual on a struct field", function()
  lt.field(lt.struct { m = lt.f32 }, 4, { needs_dual = true })
end, "duals of struct fields are not supported yet")
check_error("x.dual without needs_dual", function()
  local q = lt.field(lt.f64, 4, { name = "q" })
  return q.dual
end, "field 'q' has no dual: make it with lt.field(dtype, shape, {needs_dual = true})")
do
  local plain = lt.field(lt.f64, N, { name = "plain" })
  local lose = lt.kernel(function() for i in lt.ndrange(N) do plain[i] = x[i] * 2 end end)
  check_error("a tangent written into a field without a dual", function() lose:fwd() end,
    "into field 'plain', which has no dual; make it with {needs_dual = true}")
  local argk = lt.kernel(function(a) for i in lt.ndrange(N) do plain[i] = a * 2 end end, { a = lt.f64 })
  argk:fwd(1.0)                                   -- no tangent given to a: nothing is lost
  check_error("an argument's tangent written into a field without a dual",
    function() argk:fwd_args({ a = 1 }, 1.0) end, "into field 'plain', which has no dual")
  local floor_only = lt.kernel(function() for i in lt.ndrange(N) do plain[i] = lt.floor(x[i] * 4) end end)
  floor_only:fwd()                                -- a zero tangent: nothing is lost
  local amax = lt.kernel(function() for i in lt.ndrange(N) do lt.atomic_max(y[0], x[i]) end end)
  check_error("atomic_max on a field with a dual", function() amax:fwd() end,
    "lt.atomic_max on field 'y', which has a dual, has no forward mode")
  local amin = lt.kernel(function() for i in lt.ndrange(N) do lt.atomic_min(y[0], w[i]) end end)
  check_error("atomic_min on a field with a dual", function() amin:fwd() end, "lt.atomic_min on field 'y'")
  local maxred = lt.kernel(function()
    local s = 0.0
    for i in lt.ndrange(N) do s = lt.max(s, x[i]) end
    return s
  end)
  check_error("a max reduction over a parallel loop", function() maxred:fwd() end,
    "the local 's' is updated in a parallel loop other than by a sum")
  local old = lt.kernel(function() for i in lt.ndrange(N) do y[i] = lt.atomic_add(w[0], x[i]) end end)
  check_error("the old value of an atomic add", function() old:fwd() end,
    "uses the old value lt.atomic_add returns from field 'w', which has a dual")
  local nd = lt.ndarray(lt.f64, N)
  local to_nd = lt.kernel(function(o) for i in lt.ndrange(N) do o[i] = x[i] end end,
    { o = lt.ndarray_type(lt.f64, 1) })
  check_error("a tangent written into an ndarray", function() to_nd:fwd(nd) end, "into an ndarray")
end
do
  local k2 = lt.kernel(function(a, n) for i in lt.ndrange(N) do y[i] = x[i] * a + n end end,
    { a = lt.f64, n = lt.i32 })
  check_error("fwd_args: unknown name", function() k2:fwd_args({ b = 1 }, 1.0, 2) end,
    "has no argument named 'b'")
  check_error("fwd_args: an integer argument", function() k2:fwd_args({ n = 1 }, 1.0, 2) end,
    "argument 'n' is an integer (i32), which has no tangent")
  check_error("fwd_args: not a number", function() k2:fwd_args({ a = "x" }, 1.0, 2) end,
    "the tangent of 'a' must be a number")
  check_error("fwd_args: no table", function() k2:fwd_args(1.0, 2) end, "a table of argument tangents by name")
  check_error("k:fwd on a tape", function() lt.tape(function() k2:fwd(1.0, 2) end) end, "k:fwd inside lt.tape")
  check_error("k:ir{fwd} before k:fwd", function() lt.kernel(function() y[0] = 1 end):ir { fwd = true } end,
    "has no tangent version compiled yet")
  k2:fwd(1.0, 2)
  T.check("k:ir{fwd = true} shows the forward pass", k2:ir({ fwd = true, all = true }):find("# after forward", 1, true) ~= nil,
    true)
end

-- docs/autodiff.md's forward-mode example runs (it calls lt.init: last), and its tangents are the
-- derivatives by hand
do
  local printed = {}
  local env = setmetatable({ print = function(...) printed[#printed + 1] = { ... } end }, { __index = _G })
  require("docs").snippets("autodiff.md", "\n## Forward mode\n(.*)", "Forward mode", env)[1].run()
  local n, a = 64, 0.5
  local ds, da = 0, 0
  for i = 0, n - 1 do
    local xi = i / n
    ds, da = ds + math.cos(xi) * a + 2 * xi, da + math.sin(xi)
  end
  local x3 = 3 / n
  close("docs: y.dual[3]", printed[1][1], math.cos(x3) * a + 2 * x3)
  close("docs: the result's tangent", printed[1][2], ds)
  close("docs: d s / d a", printed[2][1], da)
end

print(("autodiff_fwd: %d tangents checked, worst |t - fd| / max(1, |fd|) = %.3g"):format(checked, worst))
T.finish("forward-mode")
