-- autodiff_random.lua -- reverse mode (src/ir/passes/autodiff.c) and forward
-- mode (src/ir/passes/forward.c, docs/autodiff.md) on randomly generated
-- kernels: a seeded generator writes each case as Lua source (random
-- expression trees over field reads, neighbours, constants and
-- f64 kernel arguments, with every differentiable builtin and lt.func;
-- kernel-level locals changed in serial code, `if`s that pick values (at the
-- top level and in loops, nested, reading fields in their branches) and `if`s
-- that write outputs, inner loops summing terms, reductions returned as the
-- result, atomic adds and subtractions into shared elements, two loops with
-- serial code between them, struct-fors, vector fields and a vector argument,
-- kernels chained on a tape, one kernel called several times, state per step
-- x[s + 1][i] from x[s][...]; and the loops of the adjoint stack: inner loops
-- carrying locals from one iteration to the next by non-sum updates t = f(t,
-- ...), f a random expression squashed so that t stays bounded, with constant
-- trip counts, an i32 argument m's (also m + i % 2) and the enclosing inner
-- loop's variable, nested two deep (a local carried by the inner loop, or by
-- both), updates in `if`s, locals defined before the loops and in their
-- bodies, sums in them (also read by the updates: then carried), atomic adds
-- and the returned reduction in them, a while loop inside; `while` loops with
-- a data-dependent trip count (t grows from a positive value past a bound, a
-- constant or an expression, by t C + D, or by a random step with a counter
-- n < K in the test; or a sum the test reads), carrying a second local (also
-- through a for loop in the body), summing another, the trip count read
-- after), loads it, runs it, and compares every gradient
-- (fields with needs_grad, arguments by tape:backward(...)[call].name or
-- k:grad) with central finite differences in f64: |g - fd| <= 1e-6 max(1, |fd|).
--
-- Every case is also run in forward mode: the fields have needs_dual too; a
-- seeded direction v over the inputs (field elements, and the float and dvec2
-- arguments of each kernel's randomly chosen parameters with tangents) goes into
-- the input duals (the other duals 0) and k:fwd_args (a kernel without such
-- parameters runs by k:fwd); the calls run in order, the duals flowing from one
-- to the next through the fields, and the loss's tangent t (L.dual, or the
-- tangent k:fwd returns with the result) is compared with reverse mode's
-- grad . v, |t - g.v| <= 1e-8 max(1, |g.v|) (both exact; they differ by
-- rounding, ~1e-15), and with the central difference along v,
-- |t - fd| <= 1e-6 max(1, |fd|) (a kink within h along v: skipped, as below);
-- k:fwd's primal loss must match the kernels'. The generator stays within what
-- both modes take: every written field has a dual, reductions are sums (no
-- lt.max/lt.min reduction over a parallel loop), atomics are adds and
-- subtractions, and no atomic's old value is used.
--
-- Values stay in range by construction: each expression carries an interval
-- that holds its values, so log, sqrt, a non-integer power, division, asin,
-- tan and atan2 only see arguments where they are smooth and far from their
-- poles, and large values are squashed. Kinks (abs, min, max, `if`, %,
-- floor) are only probably far from the point: an element whose differences
-- at h and h/10 disagree is skipped and counted. So are the switching points of
-- a while loop's trip count, piecewise constant in the inputs. A carried local
-- t with values in [-B, B] is updated by sin(g), tanh(g), t cos(g), or A t +
-- K sin(g) / A t + K atan(g) with |A| B + K max|sin or atan| <= B; a while loop
-- ends by itself (t C + D with C >= 1.1 from t >= 0.2) or by its counter.
--
-- The generator found two bugs, both fixed (tests/lang/autodiff.lua keeps
-- their cases): a term of a sum whose top operation was + or - (or a read of
-- another local) got no gradient, and an `if` in a loop reading a
-- kernel-level local that a top-level `if` assigned made the adjoint write
-- that local back inside the parallel loop (refused by the race check).
--
-- It also found that a local summed in an inner or while loop and read later
-- in the same iteration, after its update (c = c + x[i]; h = h * 0.5 + c),
-- was taken for a pure sum, so the read got no gradient; fixed (the sum's
-- values must have no other use), and the generator puts the update before
-- or after the reads.
--
-- Reproduce: LT_AD_SEED=<seed> picks another seed, LT_AD_CASE=<n> runs case n
-- alone, LT_AD_CASES=<n> runs n cases, LT_AD_VERBOSE=1 prints every source.
-- The direction is seeded by the case too, so LT_AD_CASE=<n> reproduces a
-- forward-mode failure, whose message lists v. Compiling dominates the time
-- (three compilations per kernel: the kernel, its adjoint and its tangent
-- version); the ptx/, mockgpu/ and cuda/ variants, which compile and run much
-- slower, run fewer cases.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"

local SEED = tonumber(os.getenv("LT_AD_SEED") or "") or 20261126
local slow = os.getenv("LT_CHECK_PTX") ~= nil or os.getenv("LT_ARCH") == "cuda"
local CASES = tonumber(os.getenv("LT_AD_CASES") or "") or (slow and 12 or 130)
local ONLY = tonumber(os.getenv("LT_AD_CASE") or "")
local VERBOSE = os.getenv("LT_AD_VERBOSE") == "1"


-- ---- a small PRNG (an LCG on 64-bit integers; math.random is not used) ---------

local function rng(seed)
  local s = seed
  local R = {}
  function R.next()               -- [0, 1)
    s = s * 6364136223846793005 + 1442695040888963407
    return (s >> 11) / 9007199254740992.0
  end
  for _ = 1, 4 do R.next() end
  function R.int(lo, hi) return lo + math.floor(R.next() * (hi - lo + 1)) end
  function R.uniform(lo, hi) return lo + (hi - lo) * R.next() end
  function R.chance(p) return R.next() < p end
  function R.pick(t) return t[R.int(1, #t)] end
  function R.weighted(t)          -- { {weight, value}, ... }
    local sum = 0
    for _, e in ipairs(t) do sum = sum + e[1] end
    local r = R.next() * sum
    for _, e in ipairs(t) do
      r = r - e[1]
      if r < 0 then return e[2] end
    end
    return t[#t][2]
  end
  return R
end

-- ---- fields ----------------------------------------------------------------------

local N, S = 8, 4
local F = { N = N, S = S }
local function field(name, t, shape)
  F[name] = lt.field(t, shape, { needs_grad = true, needs_dual = true, name = name })
end
field("x", lt.f64, N)        -- inputs
field("w", lt.f64, N)
field("p", lt.dvec2, N)
field("u", lt.f64, N)        -- written by the first kernel of a chain, read by the next
field("z", lt.f64, N)        -- written by the first loop of a kernel, read by its second
field("y", lt.f64, N)        -- outputs
field("acc", lt.f64, 3)
field("q", lt.dvec2, N)
field("L", lt.f64, {})
field("xs", lt.f64, { S, N }) -- state per step
local x, w, p, u, z, y, acc, q, L, xs = F.x, F.w, F.p, F.u, F.z, F.y, F.acc, F.q, F.L, F.xs

-- the loss of the field outputs: L += sum of a weighted value and a square of
-- each (fields a case does not write hold zeros)
local loss_out = lt.kernel(function()
  for i in lt.ndrange(N) do
    local yi, qi = y[i], q[i]
    local c = lt.f64(i) * 0.1
    lt.atomic_add(L.value, (0.3 + c) * yi + 0.5 * yi * yi + 0.5 * qi:dot(qi) - (0.7 - c) * qi.y)
  end
  for j in lt.ndrange(3) do lt.atomic_add(L.value, acc[j] * (1.0 + 0.5 * lt.f64(j)) + 0.25 * acc[j] * acc[j]) end
end)
-- the loss of state step s: into L, or returned
local loss_xs = lt.kernel(function(s)
  for i in lt.ndrange(N) do lt.atomic_add(L.value, xs[s][i] * (0.5 + 0.1 * lt.f64(i)) + 0.5 * xs[s][i] * xs[s][i]) end
end)
local loss_xs_ret = lt.kernel(function(s)
  local r = lt.f64(0)
  for i in lt.ndrange(N) do r = r + xs[s][i] * xs[s][i] * (0.5 + 0.1 * lt.f64(i)) - 0.3 * xs[s][i] end
  return r
end)

-- whether lt.tanh exists and is differentiated (else the generator leaves it out)
local has_tanh = false
if lt.tanh then
  has_tanh = pcall(function()
    local k = lt.kernel(function() for i in lt.ndrange(N) do y[i] = lt.tanh(x[i]) end end)
    k:grad()
  end)
end

-- ---- expressions with intervals ----------------------------------------------------

-- a node: c = its Lua source, [lo, hi] holds its values, read = it reads a field
local function node(c, lo, hi, read, op)
  assert(lo <= hi and lo == lo and hi == hi, c)
  return { c = c, lo = lo, hi = hi, read = read, op = op }
end

local function num(v, digits)
  local s = string.format("%." .. (digits or 3) .. "f", v)
  local n = tonumber(s)
  if n == 0 then s, n = "0.0", 0.0 end
  return n < 0 and "(" .. s .. ")" or s, n
end

local function imul(a, b)
  local p1, p2, p3, p4 = a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi
  return math.min(p1, p2, p3, p4), math.max(p1, p2, p3, p4)
end
local function isq(a)
  if a.lo >= 0 then return a.lo * a.lo, a.hi * a.hi end
  if a.hi <= 0 then return a.hi * a.hi, a.lo * a.lo end
  return 0, math.max(a.lo * a.lo, a.hi * a.hi)
end
local function mag(a) return math.max(math.abs(a.lo), math.abs(a.hi)) end

-- A generator: R its PRNG; stats counts what it made (coverage).
local stats = {}
local function count(what) stats[what] = (stats[what] or 0) + 1 end

local Gen = {}
Gen.__index = Gen

local function new_gen(R)
  return setmetatable({ R = R, lines = {}, depth = 0, fresh_n = 0, picks = 0 }, Gen)
end

function Gen:emit(fmt, ...)
  self.lines[#self.lines + 1] = string.rep("  ", self.depth) .. fmt:format(...)
end

function Gen:fresh(prefix)
  self.fresh_n = self.fresh_n + 1
  return prefix .. self.fresh_n
end

-- keeps a node's values within [-6, 6]
function Gen:bound(n)
  local m = mag(n)
  if m <= 6 then return n end
  local r = self.R.next()
  if r < 0.5 then
    count("squash")
    return node("lt.atan(" .. n.c .. ")", math.atan(n.lo), math.atan(n.hi), n.read, "atan")
  elseif r < 0.75 then
    count("squash")
    return node("lt.sin(" .. n.c .. ")", -1, 1, n.read, "sin")
  end
  local s, sv = num(3 / m, 4)
  return node(("(%s * %s)"):format(n.c, s), n.lo * sv, n.hi * sv, n.read, "mul")
end

-- a positive-definite version of n (>= 0.2): n itself, or 1 + n^2
function Gen:positive(n)
  if n.lo >= 0.2 then return n end
  local lo, hi = isq(n)
  return node(("(1.0 + %s * %s)"):format(n.c, n.c), 1 + lo, 1 + hi, n.read)
end

function Gen:const()
  local s, v = num(self.R.uniform(-2, 2))
  return node(s, v, v, false)
end

-- a constant inside n's interval (a kink or a condition's threshold)
function Gen:inside(n)
  local v = n.lo + (n.hi - n.lo) * self.R.uniform(0.15, 0.85)
  local s, sv = num(v)
  return s, sv
end

function Gen:cond(ctx, d)
  local a = self:expr(ctx, d)
  local k = self:inside(a)
  local op = self.R.pick { ">", "<", ">=", "<=" }
  return ("%s %s %s"):format(a.c, op, k)
end

local OPS = {
  { 10, "add" }, { 8, "sub" }, { 10, "mul" }, { 5, "div" }, { 2, "neg" },
  { 3, "sin" }, { 3, "cos" }, { 3, "exp" }, { 3, "log" }, { 3, "sqrt" }, { 2, "atan" }, { 2, "atan2" },
  { 4, "pow" }, { 2, "abs" }, { 2, "min" }, { 2, "max" }, { 1, "tan" }, { 1, "asin" }, { 1, "acos" },
  { 2, "select" }, { 0.5, "mod" }, { 0.5, "floor" }, { 1, "func" },
}
if has_tanh then OPS[#OPS + 1] = { 2, "tanh" } end

local unary = {
  sin = function(_, a) return "lt.sin(" .. a.c .. ")", -1, 1 end,
  cos = function(_, a) return "lt.cos(" .. a.c .. ")", -1, 1 end,
  atan = function(_, a) return "lt.atan(" .. a.c .. ")", math.atan(a.lo), math.atan(a.hi) end,
  neg = function(_, a) return "(-" .. a.c .. ")", -a.hi, -a.lo end,
  exp = function(_, a)
    if a.lo >= -5 and a.hi <= 2.5 then return "lt.exp(" .. a.c .. ")", math.exp(a.lo), math.exp(a.hi) end
    return "lt.exp(lt.sin(" .. a.c .. "))", math.exp(-1), math.exp(1)
  end,
  log = function(g, a)
    local b = g:positive(a)
    return "lt.log(" .. b.c .. ")", math.log(b.lo), math.log(b.hi)
  end,
  sqrt = function(g, a)
    local b = g:positive(a)
    return "lt.sqrt(" .. b.c .. ")", math.sqrt(b.lo), math.sqrt(b.hi)
  end,
  tan = function(_, a)
    if a.lo >= -1.2 and a.hi <= 1.2 then return "lt.tan(" .. a.c .. ")", math.tan(a.lo), math.tan(a.hi) end
    return "lt.tan(0.9 * lt.sin(" .. a.c .. "))", -math.tan(0.9), math.tan(0.9)
  end,
  asin = function(_, a)
    if a.lo >= -0.9 and a.hi <= 0.9 then return "lt.asin(" .. a.c .. ")", math.asin(a.lo), math.asin(a.hi) end
    return "lt.asin(0.9 * lt.sin(" .. a.c .. "))", -math.asin(0.9), math.asin(0.9)
  end,
  acos = function(_, a)
    if a.lo >= -0.9 and a.hi <= 0.9 then return "lt.acos(" .. a.c .. ")", math.acos(a.hi), math.acos(a.lo) end
    return "lt.acos(0.9 * lt.cos(" .. a.c .. "))", math.acos(0.9), math.acos(-0.9)
  end,
  tanh = function(_, a)
    local function th(v) return (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1) end
    return "lt.tanh(" .. a.c .. ")", th(math.max(a.lo, -20)), th(math.min(a.hi, 20))
  end,
  floor = function(_, a)      -- piecewise constant: no gradient (a jump)
    return "lt.floor(" .. a.c .. " * 2.0)", math.floor(a.lo * 2), math.floor(a.hi * 2)
  end,
}

-- a random expression of depth at most d over ctx.atoms (ctx.noread: no field reads)
function Gen:expr(ctx, d)
  local R = self.R
  if d <= 0 or R.chance(0.2) then
    local atoms = ctx.atoms
    if ctx.noread then
      atoms = {}
      for _, a in ipairs(ctx.atoms) do if not a.read then atoms[#atoms + 1] = a end end
    end
    if #atoms == 0 or R.chance(0.12) then return self:const() end
    local a = R.pick(atoms)
    a.used = true
    self.picks = self.picks + 1
    return a
  end
  local op = R.weighted(OPS)
  count(op)
  local n
  if unary[op] then
    local a = self:expr(ctx, d - 1)
    local c, lo, hi = unary[op](self, a)
    n = node(c, lo, hi, a.read)
  elseif op == "add" or op == "sub" or op == "mul" then
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    local lo, hi
    if op == "add" then lo, hi = a.lo + b.lo, a.hi + b.hi
    elseif op == "sub" then lo, hi = a.lo - b.hi, a.hi - b.lo
    else lo, hi = imul(a, b) end
    n = node(("(%s %s %s)"):format(a.c, ({ add = "+", sub = "-", mul = "*" })[op], b.c), lo, hi, a.read or b.read)
  elseif op == "div" then
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    if not (b.lo >= 0.25 or b.hi <= -0.25) then b = self:positive(b) end
    local lo, hi = imul(a, { lo = math.min(1 / b.lo, 1 / b.hi), hi = math.max(1 / b.lo, 1 / b.hi) })
    n = node(("(%s / %s)"):format(a.c, b.c), lo, hi, a.read or b.read)
  elseif op == "pow" then
    local a = self:expr(ctx, d - 1)
    local e = R.pick { 2, 3, 2, 0.5, 1.5, -1, -0.5, 2.5 }
    local form = R.chance(0.5) and "(%s ^ %s)" or "lt.pow(%s, %s)"
    local lo, hi
    if math.type(e) == "integer" and e > 0 then   -- any base
      if e % 2 == 0 then lo, hi = isq(a); lo, hi = lo ^ (e // 2), hi ^ (e // 2) else lo, hi = a.lo ^ e, a.hi ^ e end
      n = node(form:format(a.c, e .. ".0"), lo, hi, a.read)
    else                      -- a positive base
      a = self:positive(a)
      lo, hi = a.lo ^ e, a.hi ^ e
      n = node(form:format(a.c, num(e, 1)), math.min(lo, hi), math.max(lo, hi), a.read)
    end
  elseif op == "abs" then
    local a = self:expr(ctx, d - 1)
    local k, kv = self:inside(a)
    n = node(("lt.abs(%s - %s)"):format(a.c, k), 0, math.max(math.abs(a.lo - kv), math.abs(a.hi - kv)), a.read)
  elseif op == "min" or op == "max" then
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    local f = op == "min" and math.min or math.max
    n = node(("lt.%s(%s, %s)"):format(op, a.c, b.c), f(a.lo, b.lo), f(a.hi, b.hi), a.read or b.read)
  elseif op == "atan2" then
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    if b.lo < 0.2 then
      b = node("(1.5 + lt.sin(" .. b.c .. "))", 0.5, 2.5, b.read)
    end
    if R.chance(0.5) then     -- atan2(a, b > 0) in (-pi/2, pi/2)
      n = node(("lt.atan2(%s, %s)"):format(a.c, b.c), -math.pi / 2, math.pi / 2, a.read or b.read)
    else                      -- atan2(b > 0, a) in (0, pi)
      n = node(("lt.atan2(%s, %s)"):format(b.c, a.c), 0, math.pi, a.read or b.read)
    end
  elseif op == "select" then
    local c = self:cond(ctx, d - 1)
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    n = node(("lt.select(%s, %s, %s)"):format(c, a.c, b.c), math.min(a.lo, b.lo), math.max(a.hi, b.hi),
      true)
  elseif op == "mod" then    -- a % b, b > 0: jumps where a / b crosses an integer
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    b = b.lo >= 0.5 and b or node("(1.5 + lt.sin(" .. b.c .. "))", 0.5, 2.5, b.read)
    n = node(("(%s %% %s)"):format(a.c, b.c), 0, b.hi, a.read or b.read)
  elseif op == "func" then   -- an lt.func (inlined): fn(a, b) = a * b + sin(a)
    local a, b = self:expr(ctx, d - 1), self:expr(ctx, d - 1)
    local lo, hi = imul(a, b)
    n = node(("fn(%s, %s)"):format(a.c, b.c), lo - 1, hi + 1, a.read or b.read)
  end
  n.op = n.op or op
  return self:bound(n)
end

-- an expression that uses the atoms no expression has used yet (locals, arguments)
function Gen:final(ctx, d)
  local n = self:expr(ctx, d)
  for _, a in ipairs(ctx.atoms) do
    if a.must and not a.used and not (ctx.noread and a.read) then
      a.used = true
      local s, sv = num(self.R.uniform(-1, 1))
      local lo, hi = imul(a, { lo = sv, hi = sv })
      n = self:bound(node(("(%s + %s * %s)"):format(n.c, s, a.c), n.lo + lo, n.hi + hi, n.read or a.read, "add"))
    end
  end
  return n
end

local function copy_ctx(ctx)
  local c = { atoms = {} }
  for k, v in pairs(ctx) do if k ~= "atoms" then c[k] = v end end
  for i, a in ipairs(ctx.atoms) do c.atoms[i] = a end
  return c
end

local function add_atom(ctx, name, lo, hi, read, must, op)
  local a = node(name, lo, hi, read, op)
  a.must = must
  ctx.atoms[#ctx.atoms + 1] = a
  return a
end

-- input ranges
local XR, WR, PXR, PYR = { 0.3, 1.2 }, { -0.9, 0.9 }, { 0.3, 1.2 }, { -0.8, 0.8 }
local AR, BR, VXR, VYR = { 0.5, 1.5 }, { -1.0, 1.0 }, { 0.3, 1.0 }, { -1.0, 1.0 }
local XSR = { -0.2, 1.7 }   -- a state: x0 in XR, then |step| <= 0.16 for S - 1 steps

-- `if`s that pick values: new locals (atoms of ctx) assigned in the branches,
-- either one operation on values computed before the `if`, or any expression
-- (reading fields too); conditions on values or reads
function Gen:gen_if(ctx, d)
  local R = self.R
  local form = R.weighted { { 4, "ifelse" }, { 2, "ifonly" }, { 2, "elseif" }, { 1, "two" }, { 1, "nested" } }
  count("if_" .. form)
  if R.chance(0.5) then   -- values the branches pick from, computed before the `if`
    for _ = 1, R.int(1, 2) do
      local n = self:expr(ctx, d)
      local v = self:fresh("b")
      self:emit("local %s = %s", v, n.c)
      add_atom(ctx, v, n.lo, n.hi, false, false, n.op)
    end
  end
  local br = copy_ctx(ctx)
  br.noread = true
  local function cond(simple)
    if simple then
      local a = self:expr(R.chance(0.5) and ctx or br, 0)
      return ("%s %s %s"):format(a.c, R.pick { ">", "<" }, (self:inside(a)))
    end
    local c = self:cond(R.chance(0.5) and ctx or br, d)
    local r = R.next()
    if r < 0.15 then return ("(%s) and (%s)"):format(c, self:cond(ctx, 1))
    elseif r < 0.3 then return ("(%s) or (%s)"):format(c, self:cond(br, 1))
    elseif r < 0.4 then return ("not (%s)"):format(c) end
    return c
  end
  -- a branch's value: one operation on values, or an expression
  local function branch()
    if R.chance(0.4) then
      count("if_branch_expr")
      return self:expr(R.chance(0.6) and ctx or br, d)
    end
    local a = self:expr(br, 0)
    local r = R.next()
    if r < 0.4 then return a end
    local b = self:expr(br, 0)
    if r < 0.6 then
      local lo, hi = imul(a, b)
      return node(("%s * %s"):format(a.c, b.c), lo, hi, false)
    elseif r < 0.75 then
      return node(("%s + %s"):format(a.c, b.c), a.lo + b.lo, a.hi + b.hi, false)
    elseif r < 0.85 then
      return node(("%s - %s"):format(a.c, b.c), a.lo - b.hi, a.hi - b.lo, false)
    end
    return node("-" .. a.c, -a.hi, -a.lo, false)
  end
  local t = self:fresh("t")
  local lo, hi
  local function join(n) lo, hi = math.min(lo or n.lo, n.lo), math.max(hi or n.hi, n.hi) end
  if form == "ifelse" then
    self:emit("local %s = lt.f64(0)", t)
    local a, b = branch(), branch()
    join(a); join(b)
    self:emit("if %s then %s = %s else %s = %s end", cond(), t, a.c, t, b.c)
  elseif form == "ifonly" then
    local b = branch()
    join(b)
    self:emit("local %s = lt.f64(%s)", t, b.c)
    local a = branch()
    join(a)
    self:emit("if %s then %s = %s end", cond(), t, a.c)
  elseif form == "elseif" then
    self:emit("local %s = lt.f64(0)", t)
    local a, b, c = branch(), branch(), branch()
    join(a); join(b); join(c)
    self:emit("if %s then", cond())
    self:emit("  %s = %s", t, a.c)
    self:emit("elseif %s then", cond(true))
    self:emit("  %s = %s", t, b.c)
    self:emit("else")
    self:emit("  %s = %s", t, c.c)
    self:emit("end")
  elseif form == "two" then
    local t2 = self:fresh("t")
    self:emit("local %s, %s = lt.f64(0), lt.f64(0)", t, t2)
    local a, b, c, e = branch(), branch(), branch(), branch()
    join(a); join(c)
    local lo1, hi1 = lo, hi
    lo, hi = nil, nil
    join(b); join(e)
    self:emit("if %s then", cond())
    self:emit("  %s = %s", t, a.c)
    self:emit("  %s = %s", t2, b.c)
    self:emit("else")
    self:emit("  %s = %s", t2, e.c)
    self:emit("  %s = %s", t, c.c)
    self:emit("end")
    add_atom(ctx, t2, lo, hi, false, true, "load")
    lo, hi = lo1, hi1
  else
    self:emit("local %s = lt.f64(0)", t)
    local a, b, c = branch(), branch(), branch()
    join(a); join(b); join(c)
    self:emit("if %s then", cond())
    self:emit("  if %s then %s = %s else %s = %s end", cond(true), t, a.c, t, b.c)
    self:emit("else")
    self:emit("  %s = %s", t, c.c)
    self:emit("end")
  end
  add_atom(ctx, t, lo, hi, false, true, "load")
end

-- an inner loop in a kernel's loop summing terms into a new local (an atom of ctx)
function Gen:inner_sum(ctx, d)
  local R = self.R
  count("inner_sum")
  local c = self:fresh("c")
  local j = self:fresh("j")
  local m = R.int(2, 4)
  local ictx = copy_ctx(ctx)
  local function reads(f, r)
    add_atom(ictx, ("%s[%s]"):format(f, j), r[1], r[2], true)
    add_atom(ictx, ("%s[(i + %s) %% N]"):format(f, j), r[1], r[2], true)
  end
  reads("x", XR)
  reads("w", WR)
  add_atom(ictx, ("lt.f64(%s)"):format(j), 0, m - 1, true)
  self:emit("local %s = lt.f64(0)", c)
  self:emit("for %s = 0, %d do", j, m - 1)
  local e = (self:expr(ictx, d))
  local form = R.pick { "%s = %s + %s", "%s = %s - %s", "%s = %s + %s" }
  if R.chance(0.25) then
    count("inner_sum_if")
    self:emit("  if %s then %s end", self:cond(ictx, 1), form:format(c, c, e.c))
  else
    self:emit("  " .. form, c, c, e.c)
  end
  self:emit("end")
  local lo, hi = math.min(0, e.lo * m, -e.hi * m), math.max(0, e.hi * m, -e.lo * m)
  if math.max(-lo, hi) <= 6 then
    add_atom(ctx, c, lo, hi, false, true, "load")
  else                        -- scaled into [-6, 6] (an expression: not in the branches of an `if`)
    local sc, sv = num(6 / math.max(-lo, hi), 3)
    add_atom(ctx, ("(%s * %s)"):format(c, sc), lo * sv, hi * sv, true, true)
  end
end

-- ---- loops that carry locals (the adjoint stack) ------------------------------------------

-- the run-time trip count argument m of a kernel (an i32, its values per call)
local MR = { 0, 3 }

-- the bounds of an inner loop: its source "a, b", the range of its variable and at
-- most how many iterations it runs; a constant trip count, the argument m (also plus
-- i % 2: per element), or the variable of the enclosing inner loop (outer)
function Gen:trip(outer)
  local R = self.R
  local forms = { { 3, "const" } }
  if self.int_param then forms[#forms + 1] = { 4, "arg" } end
  if outer then forms[#forms + 1] = { 3, "outer" } end
  local f = R.weighted(forms)
  count("trip_" .. f)
  if f == "const" then
    local k = R.int(1, 4)
    if R.chance(0.5) then return ("0, %d"):format(k - 1), 0, k - 1, k end
    return ("1, %d"):format(k), 1, k, k
  elseif f == "arg" then
    local m, r = self.int_param, R.next()
    if r < 0.4 then return ("0, %s - 1"):format(m), 0, MR[2] - 1, MR[2]
    elseif r < 0.7 then return ("1, %s"):format(m), 1, MR[2], MR[2] end
    return ("0, %s + i %% 2 - 1"):format(m), 0, MR[2], MR[2] + 1
  end
  return ("0, %s"):format(outer.name), 0, outer.hi, outer.hi + 1
end

-- a bounded atom for a local s with values in [-b, b]: s, or s scaled into [-6, 6]
-- (then an expression, so marked read: not in the branches of an `if`)
local function bounded_atom(ctx, s, b, must)
  if b <= 6 then return add_atom(ctx, s, -b, b, false, must, "load") end
  local sc, sv = num(6 / b, 4)
  return add_atom(ctx, ("(%s * %s)"):format(s, sc), -b * sv, b * sv, true, must)
end

-- a new local carried by a loop: its values stay within [-B, B], B >= 1
function Gen:carried_local(ctx, d)
  local init = self:expr(ctx, d)
  local t = self:fresh("h")
  self:emit("local %s = lt.f64(%s)", t, init.c)
  local B = math.max(mag(init), 1)
  return node(t, -B, B, false, "load")
end

-- the update a = f(a, ...) of a carried local a (its values in [a.lo, a.hi] =
-- [-B, B]) by a random expression g of the atoms of lctx, a among them, squashed so
-- that the update keeps a within [-B, B]: sin(g), tanh(g), a cos(g),
-- A a + K sin(g) and A a + K atan(g) with |A| + K <= 1 (K sin or atan scaled)
function Gen:carry_update(lctx, a, d)
  local R = self.R
  a.used = false
  local g = self:expr(lctx, d)
  if not a.used then
    local s, sv = num(R.uniform(0.4, 1.0) * (R.chance(0.5) and -1 or 1), 2)
    local lo, hi = imul(a, { lo = sv, hi = sv })
    g = self:bound(node(("(%s + %s * %s)"):format(g.c, s, a.c), g.lo + lo, g.hi + hi, g.read or a.read, "add"))
  end
  a.used = true
  local forms = { { 2, "sin" }, { 4, "mix" }, { 2, "mul" }, { 2, "atan" } }
  if has_tanh then forms[#forms + 1] = { 2, "tanh" } end
  local f = R.weighted(forms)
  count("carry_" .. f)
  local B = a.hi
  if f == "sin" or f == "tanh" then return ("%s = lt.%s(%s)"):format(a.c, f, g.c)
  elseif f == "mul" then return ("%s = %s * lt.cos(%s)"):format(a.c, a.c, g.c) end
  local As, Av = num(R.uniform(0.2, 0.8) * (R.chance(0.25) and -1 or 1), 2)
  local top = f == "mix" and 1 or math.pi / 2
  local Ks, Kv = num((1 - math.abs(Av)) * B / top * R.uniform(0.3, 0.95), 3)
  assert(math.abs(Av) * B + Kv * top <= B)
  return ("%s = %s * %s + %s * lt.%s(%s)"):format(a.c, As, a.c, Ks, f == "mix" and "sin" or "atan", g.c)
end

-- one level of carried inner loops: for j = ... do (a local of the body) (a nested
-- loop carrying a new local and/or one of cs) (the sum) (the updates of cs) end;
-- cs: the locals it carries, sum: a local summed in it (or a nested one; read
-- by the updates too, sometimes: then it is carried, not a sum), levels: 1 or 2,
-- outer: the enclosing inner loop's variable, before: at most how many times the
-- loop runs
function Gen:carry_loop(ctx, cs, sum, levels, outer, before, d)
  local R = self.R
  local ictx = copy_ctx(ctx)
  for _, a in ipairs(cs) do ictx.atoms[#ictx.atoms + 1] = a end
  local j = self:fresh("j")
  local range, jlo, jhi, trips = self:trip(outer)
  local total = before * trips
  add_atom(ictx, ("x[(i + %s) %% N]"):format(j), XR[1], XR[2], true)
  add_atom(ictx, ("w[%s %% N]"):format(j), WR[1], WR[2], true)
  add_atom(ictx, ("lt.f64(%s)"):format(j), jlo, jhi, true)
  self:emit("for %s = %s do", j, range)
  self.depth = self.depth + 1
  if R.chance(0.3) then            -- a local of the loop's body
    count("carried_body_local")
    local n = self:expr(ictx, d)
    local v = self:fresh("e")
    self:emit("local %s = %s", v, n.c)
    add_atom(ictx, v, n.lo, n.hi, n.read, false, n.op)
  end
  local updated = {}
  local nested_while = levels > 1 and R.chance(0.25)
  if nested_while then             -- a while loop inside (it carries its own locals)
    count("carried_while_inside")
    self:while_loop(ictx, 1)
  elseif levels > 1 then
    count("carried_nested")
    local inner = {}
    local fresh
    if R.chance(0.6) then          -- a local the nested loop carries, defined here
      fresh = self:carried_local(ictx, R.int(0, 1))
      inner[1] = fresh
    end
    if #inner == 0 or R.chance(0.4) then   -- a local both loops carry
      count("carried_both")
      local a = R.pick(cs)
      inner[#inner + 1] = a
      updated[a] = R.chance(0.5)   -- then updated at this level only sometimes
    end
    local isum = sum
    if sum and R.chance(0.4) then isum = nil end
    self:carry_loop(ictx, inner, isum, levels - 1, { name = j, lo = jlo, hi = jhi }, total, 1)
    if fresh then ictx.atoms[#ictx.atoms + 1] = fresh end
  end
  local sum_line
  if sum and not sum.placed then   -- c = c + e (or -)
    local e = self:expr(ictx, d)
    sum_line = R.pick { "%s = %s + %s", "%s = %s - %s", "%s = %s + %s" }:format(sum.name, sum.name, e.c)
    sum.placed, sum.b = true, total * mag(e)
    local read = R.chance(0.5)
    if read then                   -- the sum read by the updates: carried, not a sum
      count("carried_sum_read")
      bounded_atom(ictx, sum.name, sum.b, false)
    end
    -- the sum's update before the reads (they read the new value) or after them
    if not read or R.chance(0.5) then
      self:emit("%s", sum_line)
      sum_line = nil
    end
  end
  for _, a in ipairs(cs) do
    if updated[a] == nil or updated[a] then
      local line = self:carry_update(ictx, a, d)
      if R.chance(0.15) then         -- an update in an `if`
        count("carried_if")
        self:emit("if %s then %s end", self:cond(ictx, 1), line)
      else
        self:emit("%s", line)
      end
    end
  end
  -- the kernel's outputs added to in the loop: an atomic add, the returned reduction
  local outs = self.spec.outputs
  if (outs.acc or outs.L) and R.chance(0.3) then
    count("carried_atomic")
    local e = self:expr(ictx, d)
    if outs.acc and (not outs.L or R.chance(0.5)) then
      self:emit("lt.atomic_add(acc[(i + %s) %% 3], %s)", j, e.c)
    else
      self:emit("lt.atomic_add(L.value, %s)", e.c)
    end
  end
  if self.red and R.chance(0.3) then
    count("carried_ret_sum")
    self:emit("%s = %s + %s", self.red, self.red, self:expr(ictx, d).c)
  end
  if sum_line then self:emit("%s", sum_line) end
  self.depth = self.depth - 1
  self:emit("end")
end

-- inner loops (one, or two nested) in a kernel's loop carrying locals from one
-- iteration to the next (t = f(t, ...): the adjoint stack), with a local defined
-- before them and a sum in them; after them the locals are atoms of ctx
function Gen:carried(ctx, d)
  local R = self.R
  count("carried")
  if R.chance(0.4) then            -- a local defined before the loop, read in it
    count("carried_pre_local")
    local n = self:expr(ctx, R.int(1, 2))
    local v = self:fresh("r")
    self:emit("local %s = %s", v, n.c)
    add_atom(ctx, v, n.lo, n.hi, n.read, true, n.op)
  end
  local cs = { self:carried_local(ctx, R.int(0, 2)) }
  if R.chance(0.25) then cs[2] = self:carried_local(ctx, R.int(0, 2)) end
  local sum
  if R.chance(0.4) then
    count("carried_sum")
    sum = { name = self:fresh("c") }
    self:emit("local %s = lt.f64(0)", sum.name)
  end
  self:carry_loop(ctx, cs, sum, R.chance(0.5) and 2 or 1, nil, 1, d)
  for _, a in ipairs(cs) do add_atom(ctx, a.c, a.lo, a.hi, false, true, "load") end
  if sum then bounded_atom(ctx, sum.name, sum.b, true) end
end

-- a while loop with a data-dependent trip count: t from a positive value grows
-- until it passes a bound (a constant or an expression), by t = t C + D (C >= 1.1,
-- D >= 0: it ends by itself) or by a random step (then a counter n < K ends it
-- too); or a sum c that its test reads (c < B and n < K); the body may carry a
-- second local by a random update, sum another and define a local. The trip count is
-- piecewise constant: where it switches within h of the point, the differences
-- disagree and the element is skipped.
function Gen:while_loop(ctx, d)
  local R = self.R
  local form = R.weighted { { 4, "grow" }, { 2, "step" }, { 2, "sum_test" } }
  count("while_" .. form)
  local counter = form ~= "grow" or R.chance(0.5)
  if R.chance(0.3) then            -- a local defined before the loop, read in it
    count("carried_pre_local")
    local n = self:expr(ctx, R.int(1, 2))
    local v = self:fresh("r")
    self:emit("local %s = %s", v, n.c)
    add_atom(ctx, v, n.lo, n.hi, n.read, true, n.op)
  end
  -- the bound
  local Bs, Blo, Bhi
  if R.chance(0.6) then
    local v
    Bs, v = num(R.uniform(1.5, 3.0), 2)
    Blo, Bhi = v, v
  else
    count("while_bound_expr")
    local b = self:expr(ctx, 1)
    Bs, Blo, Bhi = ("(2.0 + 0.5 * lt.sin(%s))"):format(b.c), 1.5, 2.5
  end
  local K = R.int(3, 6)
  local t = self:fresh(form == "sum_test" and "c" or "h")
  local n = self:fresh("n")
  -- t's start
  local lo, hi
  if form == "sum_test" then
    self:emit("local %s = lt.f64(0)", t)
    lo, hi = 0, 0
  else
    local e0 = self:expr(ctx, R.int(0, 2))
    local r = R.next()
    local s
    if r < 0.4 then
      s, lo, hi = ("(0.6 + 0.4 * lt.sin(%s))"):format(e0.c), 0.2, 1.0
    elseif r < 0.7 then
      s, lo, hi = ("lt.exp(0.5 * lt.sin(%s))"):format(e0.c), math.exp(-0.5), math.exp(0.5)
    else
      local p = self:positive(e0)
      if p.hi <= 3 then s, lo, hi = p.c, p.lo, p.hi
      else s, lo, hi = ("(0.6 + 0.4 * lt.cos(%s))"):format(e0.c), 0.2, 1.0 end
    end
    self:emit("local %s = lt.f64(%s)", t, s)
  end
  local u = R.chance(0.35) and self:carried_local(ctx, R.int(0, 1)) or nil
  local sum
  if R.chance(0.35) then
    count("while_sum")
    sum = self:fresh("c")
    self:emit("local %s = lt.f64(0)", sum)
  end
  if counter then self:emit("local %s = 0", n) end
  local test = ("%s < %s"):format(t, Bs)
  if counter then
    test = R.chance(0.5) and ("%s and %s < %d"):format(test, n, K) or ("%s < %d and %s"):format(n, K, test)
  end
  self:emit("while %s do", test)
  self.depth = self.depth + 1
  -- the step of t, and the interval t keeps within the loop and after it
  local ictx = copy_ctx(ctx)
  local tmax, iters, step
  if form == "grow" then
    local Cs, Cmin, Cmax, Ds, Dmax
    if R.chance(0.5) then
      local v
      Cs, v = num(R.uniform(1.15, 1.6), 2)
      Cmin, Cmax = v, v
    else
      Cs, Cmin, Cmax = nil, 1.1, 1.4
    end
    if R.chance(0.5) then
      local v
      Ds, v = num(R.uniform(0.02, 0.3), 2)
      Dmax = v
    else
      Ds, Dmax = nil, 0.2
    end
    tmax = math.max(hi, Bhi * Cmax + Dmax)
    local tctx = copy_ctx(ctx)
    add_atom(tctx, t, lo, tmax, false, false, "load")
    tctx.atoms[#tctx.atoms + 1] = u
    add_atom(tctx, ("x[(i + %s) %% N]"):format(R.int(0, N - 1)), XR[1], XR[2], true)
    if not Cs then Cs = ("(1.25 + 0.15 * lt.sin(%s))"):format(self:expr(tctx, 1).c) end
    if not Ds then Ds = ("(0.1 + 0.1 * lt.cos(%s))"):format(self:expr(tctx, 1).c) end
    step = ("%s = %s * %s + %s"):format(t, t, Cs, Ds)
    iters = math.ceil(math.log(Bhi / lo) / math.log(Cmin)) + 1
  elseif form == "step" then
    local tctx = copy_ctx(ctx)
    local ta = add_atom(tctx, t, lo, math.max(hi, Bhi + 1), false, false, "load")
    tctx.atoms[#tctx.atoms + 1] = u
    ta.used = false
    local g = self:expr(tctx, d)
    if not ta.used then g = node(("(%s * %s)"):format(g.c, t), 0, 0, true) end
    local Ks, Kv = num(R.uniform(0.2, 0.5), 2)
    step = ("%s = %s + %s * (1.0 + lt.sin(%s))"):format(t, t, Ks, g.c)
    tmax = math.max(hi, Bhi + 2 * Kv)
  else
    local tctx = copy_ctx(ctx)
    add_atom(tctx, t, 0, Bhi, false, false, "load")
    tctx.atoms[#tctx.atoms + 1] = u
    local g = self:expr(tctx, d)
    step = ("%s = %s + (0.4 + 0.2 * lt.sin(%s))"):format(t, t, g.c)
    tmax = Bhi + 0.6
  end
  if counter then iters = K elseif not iters then iters = K end
  local tatom = node(t, lo, tmax, false, "load")
  ictx.atoms[#ictx.atoms + 1] = tatom
  if u then ictx.atoms[#ictx.atoms + 1] = u end
  add_atom(ictx, ("x[(i + %s) %% N]"):format(R.int(0, N - 1)), XR[1], XR[2], true)
  add_atom(ictx, ("w[(i + %s) %% N]"):format(R.int(0, N - 1)), WR[1], WR[2], true)
  if R.chance(0.3) then            -- a local of the loop's body
    count("while_body_local")
    local e = self:expr(ictx, d)
    local v = self:fresh("e")
    self:emit("local %s = %s", v, e.c)
    add_atom(ictx, v, e.lo, e.hi, e.read, false, e.op)
  end
  local lines = { step }
  if u then
    count("while_carry2")
    local l = self:carry_update(ictx, u, d)
    if R.chance(0.3) then          -- u carried by an inner for loop too
      count("while_inner_for")
      local jq = self:fresh("j")
      l = ("for %s = 0, %d do %s end"):format(jq, R.int(0, 2), l)
    end
    lines[#lines + 1] = l
  end
  if sum then
    local e = self:expr(ictx, d)
    lines[#lines + 1] = ("%s = %s + %s"):format(sum, sum, e.c)
    sum = { name = sum, b = iters * mag(e) }
  end
  -- in random order, the step first or last
  if R.chance(0.5) then table.insert(lines, table.remove(lines, 1)) end
  for _, l in ipairs(lines) do self:emit("%s", l) end
  if counter then self:emit("%s = %s + 1", n, n) end
  self.depth = self.depth - 1
  self:emit("end")
  add_atom(ctx, t, lo, tmax, false, true, "load")
  if u then add_atom(ctx, u.c, u.lo, u.hi, false, true, "load") end
  if sum then bounded_atom(ctx, sum.name, sum.b, true) end
  if counter and R.chance(0.3) then   -- the trip count: piecewise constant
    count("while_count_read")
    add_atom(ctx, ("lt.f64(%s)"):format(n), 0, K, true)
  end
end

-- ---- kernels -------------------------------------------------------------------------

-- spec: params (list of {name, kind = "f64" | "dvec2" | "int", range}), reads (set of
-- "x", "w", "p", "u"), outputs (set of "y", "acc", "L", "q", "u", "ret"), loops (1 | 2),
-- state (true: xs[s + 1][i] from xs[s]); returns the kernel's source text
function Gen:kernel(name, spec)
  local R = self.R
  self.lines, self.depth = {}, 0
  local names, types = {}, {}
  local top = { atoms = {} }
  self.int_param, self.spec, self.red = nil, spec, nil
  for _, prm in ipairs(spec.params) do
    names[#names + 1] = prm.name
    if prm.kind == "int" and prm.range then    -- m: the trip count of inner loops
      types[#types + 1] = prm.name .. " = lt.i32"
      self.int_param = prm.name
    elseif prm.kind == "f64" then
      types[#types + 1] = prm.name .. " = lt.f64"
      add_atom(top, prm.name, prm.range[1], prm.range[2], false, R.chance(0.8))
    elseif prm.kind == "dvec2" then
      types[#types + 1] = prm.name .. " = lt.dvec2"
      add_atom(top, prm.name .. ".x", VXR[1], VXR[2], false, true)
      add_atom(top, prm.name .. ".y", VYR[1], VYR[2], false, true)
    end
  end
  self:emit("local %s = lt.kernel(function(%s)", name, table.concat(names, ", "))
  self.depth = 1
  -- top-level reads: constant elements
  local function top_reads(ctx)
    if spec.state then
      for _ = 1, 2 do add_atom(ctx, ("xs[s][%d]"):format(R.int(0, N - 1)), XSR[1], XSR[2], true) end
      add_atom(ctx, ("w[%d]"):format(R.int(0, N - 1)), WR[1], WR[2], true)
      return
    end
    if spec.reads.x then add_atom(ctx, ("x[%d]"):format(R.int(0, N - 1)), XR[1], XR[2], true) end
    if spec.reads.w then add_atom(ctx, ("w[%d]"):format(R.int(0, N - 1)), WR[1], WR[2], true) end
    if spec.reads.p then
      add_atom(ctx, ("p[%d].x"):format(R.int(0, N - 1)), PXR[1], PXR[2], true)
      add_atom(ctx, ("p[%d].y"):format(R.int(0, N - 1)), PYR[1], PYR[2], true)
    end
    if spec.reads.u then add_atom(ctx, ("u[%d]"):format(R.int(0, N - 1)), -6, 6, true) end
  end
  local topr = copy_ctx(top)
  top_reads(topr)
  -- kernel-level locals, changed in serial code
  local ntop = R.weighted { { 4, 0 }, { 3, 1 }, { 2, 2 }, { 1, 3 } }
  local toplocals = {}
  for _ = 1, ntop do
    local n = self:expr(topr, R.int(1, 2))
    local t = self:fresh("k")
    self:emit("local %s = lt.f64(%s)", t, n.c)
    count("top_local")
    local a = add_atom(topr, t, n.lo, n.hi, false, true)
    add_atom(top, t, n.lo, n.hi, false, true)
    toplocals[#toplocals + 1] = a
    if R.chance(0.3) then       -- reassigned
      count("top_reassign")
      local m = self:expr(topr, 1)
      local lo, hi = imul(a, m)
      local nn = self:bound(node(("(%s * %s + %s)"):format(t, m.c, t), lo + a.lo, hi + a.hi, true))
      self:emit("%s = %s", t, nn.c)
      a.lo, a.hi = nn.lo, nn.hi
      top.atoms[#top.atoms].lo, top.atoms[#top.atoms].hi = nn.lo, nn.hi
    end
  end
  if ntop > 0 and R.chance(0.25) then
    count("top_if")
    local n0 = #topr.atoms
    self:gen_if(topr, 1)
    for j = n0 + 1, #topr.atoms do
      local a = topr.atoms[j]
      if a.must then
        top.atoms[#top.atoms + 1] = a
      end
    end
  end
  -- a reduction returned as the result
  local red
  if spec.outputs.ret then
    red = self:fresh("s")
    self.red = red
    if R.chance(0.3) then
      local n = self:expr(topr, 1)
      self:emit("local %s = lt.f64(%s)", red, n.c)
      count("ret_init")
    else
      self:emit("local %s = lt.f64(0)", red)
    end
  end
  -- the loops
  local zr
  for loop = 1, spec.loops do
    local last = loop == spec.loops
    local ctx = copy_ctx(top)
    if loop == 2 and R.chance(0.4) then   -- top-level code between the loops, reading the first's output
      count("between_loops")
      local mctx = copy_ctx(top)
      add_atom(mctx, ("z[%d]"):format(R.int(0, N - 1)), zr[1], zr[2], true)
      local n = self:expr(mctx, 2)
      local t = self:fresh("m")
      self:emit("local %s = lt.f64(%s)", t, n.c)
      add_atom(ctx, t, n.lo, n.hi, false, true)
      if #toplocals > 0 and R.chance(0.5) then   -- a kernel-level local changed between the loops
        count("top_reassign_between")
        local a = R.pick(toplocals)
        self:emit("%s = %s * %s", a.c, a.c, t)
        for _, at in ipairs(ctx.atoms) do
          if at.c == a.c then at.lo, at.hi = imul(at, n) end
        end
      end
    end
    if spec.state then
      self:emit("for i in lt.ndrange(N) do")
      add_atom(ctx, "xs[s][i]", XSR[1], XSR[2], true)
      add_atom(ctx, ("xs[s][(i + %d) %% N]"):format(R.int(1, N - 1)), XSR[1], XSR[2], true)
      add_atom(ctx, "w[i]", WR[1], WR[2], true)
    else
      if R.chance(0.15) and not (loop == 2) then
        count("struct_for")
        self:emit("for i in %s do", spec.reads.x and "x" or "w")
      else
        self:emit("for i in lt.ndrange(N) do")
      end
      local function reads(f, r)
        add_atom(ctx, f .. "[i]", r[1], r[2], true)
        add_atom(ctx, f .. "[i]", r[1], r[2], true)
        add_atom(ctx, ("%s[(i + %d) %% N]"):format(f, R.int(1, N - 1)), r[1], r[2], true)
        if R.chance(0.3) then add_atom(ctx, f .. "[i // 2]", r[1], r[2], true) end
        if R.chance(0.2) then add_atom(ctx, ("%s[(i * 3) %% N]"):format(f), r[1], r[2], true) end
      end
      if spec.reads.x then reads("x", XR) end
      if spec.reads.w then reads("w", WR) end
      if spec.reads.u then reads("u", { -6, 6 }) end
      if loop == 2 then reads("z", zr) end
      -- (read: an expression, not a value, so not in the branches of an `if`)
      if R.chance(0.2) then add_atom(ctx, "(lt.f64(i) * 0.1)", 0, 0.1 * (N - 1), true) end
    end
    self.depth = 2
    if spec.reads.p and not spec.state then
      self:emit("local pv = p[i]")
      add_atom(ctx, "pv.x", PXR[1], PXR[2], true)
      add_atom(ctx, "pv.y", PYR[1], PYR[2], true)
      add_atom(ctx, "pv:norm()", 0.3, math.sqrt(PXR[2] ^ 2 + PYR[2] ^ 2), true)
      add_atom(ctx, "pv:dot(pv)", 0.09, PXR[2] ^ 2 + PYR[2] ^ 2, true, false, "add")   -- x * x + y * y
      add_atom(ctx, "pv:normalized().y", -1, 1, true)
    end
    local nloc = R.weighted { { 2, 0 }, { 3, 1 }, { 3, 2 }, { 1, 3 } }
    for _ = 1, nloc do
      local n = self:expr(ctx, R.int(1, 3))
      local v = self:fresh("v")
      self:emit("local %s = %s", v, n.c)
      count("loop_local")
      add_atom(ctx, v, n.lo, n.hi, n.read, true, n.op)
    end
    if R.chance(0.25) then self:inner_sum(ctx, R.int(1, 2)) end
    if R.chance(0.25) then self:carried(ctx, R.int(1, 2)) end
    if R.chance(0.2) then self:while_loop(ctx, R.int(1, 2)) end
    if R.chance(0.35) then self:gen_if(ctx, 2) end
    -- writes
    local outs = {}
    if spec.state then
      outs = { "xs" }
    elseif last then
      for _, o in ipairs { "u", "y", "acc", "L", "q", "ret" } do if spec.outputs[o] then outs[#outs + 1] = o end end
    else
      outs = { "z" }
    end
    -- the lines of one write of e to output o
    local sq = R.pick { "lt.sin", "lt.atan", "lt.cos" }
    local function write(o, e)
      if spec.state then
        return { ("xs[s + 1][i] = xs[s][i] + 0.1 * %s(%s)"):format(sq, e.c) }
      elseif o == "z" or o == "u" or o == "y" then
        return { ("%s[i] = %s"):format(o, e.c) }
      elseif o == "acc" then
        local lines = { ("lt.atomic_add(acc[i %% 3], %s)"):format(e.c) }
        if R.chance(0.4) then
          count("atomic_sub")
          lines[2] = ("lt.atomic_sub(acc[(i + 1) %% 3], %s)"):format(self:expr(ctx, 2).c)
        end
        return lines
      elseif o == "L" then
        return { ("lt.atomic_add(L.value, %s)"):format(e.c) }
      elseif o == "q" then
        local f = R.weighted { { 1, "dvec2" }, { 1, "pv" }, { 1, "mix" }, { 1, "normalized" } }
        local e2 = self:expr(ctx, 2)
        if f == "dvec2" or not spec.reads.p then
          return { ("q[i] = lt.dvec2(%s, %s) * 0.5"):format(e.c, e2.c) }
        elseif f == "pv" then
          return { ("q[i] = pv * %s + lt.dvec2(%s, pv.x * pv.y)"):format(e.c, e2.c) }
        elseif f == "normalized" then
          return { ("q[i] = pv:normalized() * %s - lt.dvec2(pv.y, %s) * pv:norm()"):format(e.c, e2.c) }
        end
        return { ("q[i] = (lt.dvec2(pv.y, %s) - pv * 0.5) * %s"):format(e2.c, e.c) }
      end
      -- ret: the terms of a sum
      local e2 = (self:expr(ctx, 2))
      e = (e)
      local f = R.weighted { { 3, "a" }, { 1, "s" }, { 1, "as" }, { 1, "r" } }
      if f == "as" then return { ("%s = %s + %s - %s"):format(red, red, e.c, e2.c) }
      elseif f == "s" then return { ("%s = %s - %s"):format(red, red, e.c) }
      elseif f == "r" then return { ("%s = %s + %s"):format(red, e.c, red) } end
      return { ("%s = %s + %s"):format(red, red, e.c) }
    end
    for k, o in ipairs(outs) do
      local e = (k == #outs) and self:final(ctx, R.int(1, 3)) or self:expr(ctx, R.int(1, 3))
      count("out_" .. o)
      local zlo, zhi = e.lo, e.hi
      if R.chance(0.25) then       -- written in the branches of an `if`
        count("if_write")
        self:emit("if %s then", self:cond(ctx, 1))
        for _, l in ipairs(write(o, e)) do self:emit("  %s", l) end
        local accumulates = o == "acc" or o == "L" or o == "ret"
        if not accumulates or R.chance(0.6) then   -- a store is made in both branches
          local e2 = self:expr(ctx, R.int(1, 3))
          zlo, zhi = math.min(zlo, e2.lo), math.max(zhi, e2.hi)
          self:emit("else")
          for _, l in ipairs(write(o, e2)) do self:emit("  %s", l) end
        end
        self:emit("end")
      else
        for _, l in ipairs(write(o, e)) do self:emit("%s", l) end
      end
      if o == "z" then zr = { zlo, zhi } end
    end
    if spec.outputs.ret and spec.loops == 2 and loop == 1 and R.chance(0.3) then
      count("ret_both_loops")
      self:emit("%s = %s + %s", red, red, (self:expr(ctx, 2)).c)
    end
    self.depth = 1
    self:emit("end")
  end
  if red then self:emit("return %s", red) end
  self.depth = 0
  self:emit("end%s)", #types > 0 and (", { " .. table.concat(types, ", ") .. " }") or "")
  return table.concat(self.lines, "\n") .. "\n"
end

-- ---- cases -----------------------------------------------------------------------------

local HEADER = "local lt, F = ...\n" ..
  "local N, x, w, p, u, z, y, acc, q, L, xs = F.N, F.x, F.w, F.p, F.u, F.z, F.y, F.acc, F.q, F.L, F.xs\n" ..
  "local fn = lt.func(function(a, b) return a * b + lt.sin(a) end)\n"

local function scalar_params(R, allow_vec)
  local ps = {}
  local n = R.weighted { { 2, 0 }, { 3, 1 }, { 2, 2 } }
  for j = 1, n do
    ps[#ps + 1] = { name = ({ "a", "b" })[j], kind = "f64", range = j == 1 and AR or BR }
  end
  if allow_vec and R.chance(0.25) then
    ps[#ps + 1] = { name = "v", kind = "dvec2" }
    count("arg_dvec2")
  end
  if R.chance(0.4) then ps[#ps + 1] = { name = "m", kind = "int", range = MR } end
  return ps
end

local function argvals(R, params)
  local vals = {}
  for _, prm in ipairs(params) do
    if prm.kind == "f64" then vals[prm.name] = R.uniform(prm.range[1], prm.range[2])
    elseif prm.kind == "dvec2" then vals[prm.name] = { R.uniform(VXR[1], VXR[2]), R.uniform(VYR[1], VYR[2]) }
    elseif prm.kind == "int" and prm.range then -- 0 (no iterations) rarely
      vals[prm.name] = R.weighted { { 1, 0 }, { 2, 1 }, { 3, 2 }, { 3, 3 } }
      assert(vals[prm.name] >= prm.range[1] and vals[prm.name] <= prm.range[2])
    end
  end
  return vals
end

local function set(t) local s = {} for _, v in ipairs(t) do s[v] = true end return s end

-- A case: { chunks = {source...}, calls = {{k = index of the kernel, params, vals}, ...},
-- loss = "L" | "ret", grad = "tape" | "k", kind }
local function gen_case(R)
  local g = new_gen(R)
  local kind = R.weighted { { 10, "single" }, { 3, "chain" }, { 2, "twice" }, { 2, "state" } }
  count("case_" .. kind)
  local case = { kind = kind, kernels = {}, calls = {} }
  local function add_kernel(spec)
    local name = g:fresh("k")
    local src = g:kernel(name, spec)
    case.kernels[#case.kernels + 1] = { src = HEADER .. src .. "return " .. name .. "\n", spec = spec }
    return #case.kernels
  end
  -- ki: a generated kernel, or 0 (loss_out), -1 (loss_xs_ret(s)), -2 (loss_xs(s))
  local function call(ki, extra)
    local params = ki > 0 and case.kernels[ki].spec.params or (ki < 0 and { { name = "s", kind = "int" } } or {})
    case.calls[#case.calls + 1] = { k = ki, params = params, vals = argvals(R, params), ints = extra }
  end
  if kind == "single" then
    local vec = R.chance(0.35)
    local reads = set { "x", "w" }
    if vec then reads.p = true end
    local r = R.next()
    local outputs
    if r < 0.25 then outputs = { ret = true }
    else
      outputs = {}
      local pool = { "y", "y", "acc", "L" }
      if vec then pool[#pool + 1] = "q"; pool[#pool + 1] = "q" end
      outputs[R.pick(pool)] = true
      if R.chance(0.35) then outputs[R.pick(pool)] = true end
    end
    local ki = add_kernel { params = scalar_params(R, true), reads = reads, outputs = outputs,
      loops = R.chance(0.3) and 2 or 1 }
    call(ki)
    local only_l = true
    for o in pairs(outputs) do if o ~= "L" then only_l = false end end
    if outputs.ret then
      case.loss = "ret"
      case.grad = R.chance(0.5) and "k" or "tape"
    else
      case.loss = "L"
      case.grad = only_l and R.chance(0.5) and "k" or "tape"
      if case.grad == "tape" then call(0) end   -- 0: loss_out
    end
  elseif kind == "chain" then
    local k1 = add_kernel { params = scalar_params(R, false), reads = set { "x", "w" }, outputs = { u = true },
      loops = R.chance(0.2) and 2 or 1 }
    local last_ret = R.chance(0.3)
    local outs = last_ret and { ret = true } or { [R.pick { "y", "acc", "y", "q" }] = true }
    local reads = set { "u", R.pick { "x", "w" } }
    if outs.q then reads.p = true end
    local k2 = add_kernel { params = scalar_params(R, false), reads = reads, outputs = outs, loops = 1 }
    call(k1)
    call(k2)
    case.grad = "tape"
    if last_ret then case.loss = "ret" else case.loss = "L"; call(0) end
  elseif kind == "twice" then  -- one kernel called twice, adding into the same elements with other arguments
    local params = { { name = "a", kind = "f64", range = AR } }
    if R.chance(0.5) then params[2] = { name = "b", kind = "f64", range = BR } end
    if R.chance(0.4) then params[#params + 1] = { name = "m", kind = "int", range = MR } end
    local ki = add_kernel { params = params, reads = set { "x", "w" }, outputs = { [R.pick { "acc", "L" }] = true },
      loops = 1 }
    call(ki)
    call(ki)
    if R.chance(0.4) then call(ki) end
    case.grad, case.loss = "tape", "L"
    call(0)
  else                        -- state per step
    local params = { { name = "s", kind = "int" }, { name = "a", kind = "f64", range = AR } }
    if R.chance(0.4) then params[3] = { name = "m", kind = "int", range = MR } end
    local ki = add_kernel { params = params,
      reads = {}, outputs = { xs = true }, loops = 1, state = true }
    for s = 0, S - 2 do call(ki, { s = s }) end
    case.grad = "tape"
    if R.chance(0.4) then
      case.loss = "ret"
      call(-1, { s = S - 1 })   -- -1: loss_xs_ret
    else
      case.loss = "L"
      call(-2, { s = S - 1 })   -- -2: loss_xs
    end
  end
  return case
end

-- ---- running a case ----------------------------------------------------------------------

local sources = package.loaded["lattice.sources"] or {}
package.loaded["lattice.sources"] = sources   -- lets the generated kernels be traced

local function set_inputs(R)
  for i = 0, N - 1 do
    x[i] = R.uniform(XR[1], XR[2])
    w[i] = R.uniform(WR[1], WR[2])
    p[i] = { R.uniform(PXR[1], PXR[2]), R.uniform(PYR[1], PYR[2]) }
    xs[0][i] = R.uniform(XR[1], XR[2])
  end
end

local function clear_outputs()
  u:fill(0); z:fill(0); y:fill(0); acc:fill(0); q:fill(0)
  L.value = 0
end

local function arglist(c)
  local out = {}
  for i, prm in ipairs(c.params or {}) do
    if prm.kind == "int" then out[i] = c.ints and c.ints[prm.name] or c.vals[prm.name]
    elseif prm.kind == "f64" then out[i] = c.vals[prm.name]
    else out[i] = lt.dvec2(c.vals[prm.name][1], c.vals[prm.name][2]) end
  end
  return out
end

local function kernel_of(case, c)
  if c.k == 0 then return loss_out elseif c.k == -1 then return loss_xs_ret elseif c.k == -2 then return loss_xs end
  return case.k[c.k]
end

-- runs the calls; returns the loss
local function forward(case)
  acc:fill(0)
  L.value = 0
  local r
  for _, c in ipairs(case.calls) do
    local a = arglist(c)
    r = kernel_of(case, c)(table.unpack(a, 1, #(c.params or {})))
  end
  return case.loss == "ret" and r or L.value
end

-- the inputs: { name, get, set, grad(grads) }
local function inputs_of(case)
  local src = ""
  for _, k in ipairs(case.kernels) do src = src .. k.src:gsub("^.-\nlocal fn[^\n]*\n", "") end
  local function reads(f) return src:find("%f[%w_]" .. f .. "%[") ~= nil or src:find("for i in " .. f .. " do", 1, true) end
  local ins = {}
  for _, f in ipairs { x, w } do
    local nm = f == x and "x" or "w"
    if reads(nm) then
      for i = 0, N - 1 do
        ins[#ins + 1] = { name = ("%s[%d]"):format(nm, i), get = function() return f[i] end,
          set = function(v) f[i] = v end, grad = function() return f.grad[i] end,
          dual = function(v) f.dual[i] = v end }
      end
    end
  end
  if reads("p") then
    for i = 0, N - 1 do
      for c = 1, 2 do
        ins[#ins + 1] = { name = ("p[%d][%d]"):format(i, c), get = function() return p[i][c] end,
          set = function(v)
            local e = p[i]
            e[c] = v
            p[i] = e
          end,
          grad = function() return p.grad[i][c] end,
          dual = function(v)
            local e = p.dual[i]
            e[c] = v
            p.dual[i] = e
          end }
      end
    end
  end
  if reads("xs") then
    for i = 0, N - 1 do
      ins[#ins + 1] = { name = ("xs[0][%d]"):format(i), get = function() return xs[0][i] end,
        set = function(v) xs[0][i] = v end, grad = function() return xs.grad[0][i] end,
        dual = function(v) xs.dual[0][i] = v end }
    end
  end
  for j, c in ipairs(case.calls) do
    for _, prm in ipairs(c.params or {}) do
      if prm.kind == "f64" then
        ins[#ins + 1] = { arg = true, call = j, param = prm.name, name = ("call %d: %s"):format(j, prm.name),
          get = function() return c.vals[prm.name] end,
          set = function(v) c.vals[prm.name] = v end, grad = function(g) return g[j][prm.name] end }
      elseif prm.kind == "dvec2" then
        for comp = 1, 2 do
          local cn = comp == 1 and "x" or "y"
          ins[#ins + 1] = { arg = true, call = j, param = prm.name, comp = comp,
            name = ("call %d: %s.%s"):format(j, prm.name, cn),
            get = function() return c.vals[prm.name][comp] end,
            set = function(v) c.vals[prm.name][comp] = v end,
            grad = function(g) return g[j][prm.name] and g[j][prm.name][cn] end }
        end
      end
    end
  end
  return ins
end

local totals = { cases = 0, kernels = 0, compared = 0, skipped = 0, failed = 0, nonzero = 0, args = 0, worst = 0,
  worst_at = "", fwd = 0, fwd_gv = 0, fwd_fd = 0, fwd_nonzero = 0, fwd_args = 0, fwd_skipped = 0, fwd_failed = 0,
  fwd_worst_fd = 0, fwd_worst_fd_at = "", fwd_worst_gv = 0, fwd_worst_gv_at = "" }
local H = 1e-6
local TOL = 1e-6
-- forward against reverse mode: both are exact derivatives, evaluated in another order
local TOL_GV = 1e-8

local ALL_FIELDS = { x, w, p, u, z, y, acc, q, L, xs }

-- Forward mode on the case: a seeded direction v over the inputs (field elements
-- and the float arguments of the kernels it gives tangents), the fields' duals v
-- on the inputs and 0 elsewhere, the calls in order by k:fwd / k:fwd_args; the
-- loss's tangent against grad . v (got: reverse mode's gradients of ins) and the
-- central finite difference along v.
local function check_fwd(case, ins, got, seed, label, fail0)
  local D = rng(seed + 104729)
  local dir
  local function fail(msg)
    local vs = {}
    for i, e in ipairs(ins) do if dir[i] ~= 0 then vs[#vs + 1] = ("%s %.6g"):format(e.name, dir[i]) end end
    fail0(msg .. "; the direction v: " .. table.concat(vs, ", "))
  end
  -- the float parameters given tangents, per kernel (the same for each of its calls:
  -- one tangent version per kernel); a kernel with none runs by k:fwd
  local tparams = {}
  for ki, k in ipairs(case.kernels) do
    local t = {}
    for _, prm in ipairs(k.spec.params) do
      if prm.kind ~= "int" and D.chance(0.75) then t[prm.name] = true end
    end
    tparams[ki] = t
  end
  local base = {}
  dir = {}
  local argdir = {}     -- [call][param] = tangent (a number, or {x, y})
  for i, e in ipairs(ins) do
    base[i] = e.get()
    if e.arg then
      local c = case.calls[e.call]
      if c.k > 0 and tparams[c.k][e.param] then
        dir[i] = D.uniform(-1, 1)
        argdir[e.call] = argdir[e.call] or {}
        if e.comp then
          argdir[e.call][e.param] = argdir[e.call][e.param] or { 0, 0 }
          argdir[e.call][e.param][e.comp] = dir[i]
        else
          argdir[e.call][e.param] = dir[i]
        end
      else
        dir[i] = 0
      end
    else
      dir[i] = D.uniform(-1, 1)
    end
  end
  -- the direction, then the tangents of the calls in order
  for _, f in ipairs(ALL_FIELDS) do f.dual:fill(0) end
  for i, e in ipairs(ins) do if not e.arg then e.dual(dir[i]) end end
  acc:fill(0)
  L.value = 0
  local r, rt
  for j, c in ipairs(case.calls) do
    local k = kernel_of(case, c)
    local a = arglist(c)
    if argdir[j] then
      r, rt = k:fwd_args(argdir[j], table.unpack(a, 1, #c.params))
      totals.fwd_args = totals.fwd_args + 1
    else
      r, rt = k:fwd(table.unpack(a, 1, #(c.params or {})))
    end
  end
  local t, primal
  if case.loss == "ret" then t, primal = rt, r else t, primal = L.dual.value, L.value end
  -- k:fwd's primal loss against k's
  local loss0 = forward(case)
  if primal == nil or math.abs(primal - loss0) > 1e-12 * math.max(1, math.abs(loss0)) then
    totals.fwd_failed = totals.fwd_failed + 1
    fail(("forward mode's loss %s, the kernels' %.17g"):format(tostring(primal), loss0))
  end
  if t == nil or t ~= t then
    totals.fwd_failed = totals.fwd_failed + 1
    fail(("forward mode: no tangent of the loss (%s)"):format(tostring(t)))
    return
  end
  totals.fwd = totals.fwd + 1
  -- grad . v
  local gv = 0
  for i in ipairs(ins) do
    if got[i] == nil or got[i] ~= got[i] then gv = nil; break end
    gv = gv + got[i] * dir[i]
  end
  if gv then
    totals.fwd_gv = totals.fwd_gv + 1
    local rel = math.abs(t - gv) / math.max(1, math.abs(gv))
    if rel > TOL_GV then
      totals.fwd_failed = totals.fwd_failed + 1
      fail(("forward mode %.15g, reverse mode's grad . v %.15g"):format(t, gv))
    elseif rel > totals.fwd_worst_gv then
      totals.fwd_worst_gv, totals.fwd_worst_gv_at = rel, label
    end
  end
  -- the central difference along v
  local function fd(h)
    local function at(s)
      for i, e in ipairs(ins) do e.set(base[i] + s * dir[i]) end
      return forward(case)
    end
    local up, down = at(h), at(-h)
    for i, e in ipairs(ins) do e.set(base[i]) end
    return (up - down) / (2 * h)
  end
  local d1 = fd(H)
  if math.abs(d1) > 1e-9 then totals.fwd_nonzero = totals.fwd_nonzero + 1 end
  local rel = math.abs(t - d1) / math.max(1, math.abs(d1))
  if rel > TOL then
    local d2 = fd(H / 10)
    if math.abs(d1 - d2) > 0.5 * TOL * math.max(1, math.abs(d2)) then
      totals.fwd_skipped = totals.fwd_skipped + 1   -- a kink within h along v
      return
    end
    totals.fwd_failed = totals.fwd_failed + 1
    fail(("forward mode %.15g, finite differences along v %.15g (at h/10: %.15g)"):format(t, d1, d2))
    return
  end
  totals.fwd_fd = totals.fwd_fd + 1
  if rel > totals.fwd_worst_fd then totals.fwd_worst_fd, totals.fwd_worst_fd_at = rel, label end
end

local function case_source(case)
  local parts = {}
  for i, k in ipairs(case.kernels) do parts[#parts + 1] = ("-- kernel %d\n%s"):format(i, k.src) end
  local calls = {}
  for _, c in ipairs(case.calls) do
    local a = {}
    for _, v in ipairs(arglist(c)) do a[#a + 1] = tostring(v) end
    local nm = c.k == 0 and "loss_out" or c.k == -1 and "loss_xs_ret" or c.k == -2 and "loss_xs" or ("kernel " .. c.k)
    calls[#calls + 1] = nm .. "(" .. table.concat(a, ", ") .. ")"
  end
  parts[#parts + 1] = ("-- calls (%s, loss %s, gradient by %s): %s"):format(case.kind, case.loss,
    case.grad == "k" and "k:grad" or "lt.tape", table.concat(calls, "; "))
  return table.concat(parts, "\n")
end

local function run_case(n, seed)
  local R = rng(seed)
  local case = gen_case(R)
  local label = ("seed %d case %d"):format(SEED, n)
  if VERBOSE then print(("==== %s\n%s"):format(label, case_source(case))) end
  local failed = 0
  local function fail(msg)
    failed = failed + 1
    if failed <= 6 then T.fail(("%s: %s"):format(label, msg)) end
  end
  local ok, err = pcall(function()
    case.k = {}
    for i, k in ipairs(case.kernels) do
      local chunk = ("=autodiff_random/%d/%d"):format(n, i)
      sources[chunk] = k.src
      case.k[i] = assert(load(k.src, chunk, "t"))(lt, F)
    end
    totals.kernels = totals.kernels + #case.kernels
    set_inputs(R)
    clear_outputs()
    lt.clear_grads(x, w, p, u, z, y, acc, q, L, xs)
    local grads
    if case.grad == "k" then
      local c = case.calls[1]
      -- the adjoint recomputes from the fields the kernel read, its own first loop's output included:
      -- k runs first (docs/autodiff.md)
      case.k[c.k](table.unpack(arglist(c), 1, #c.params))
      if case.loss == "L" then L.grad.value = 1 end
      grads = { case.k[c.k]:grad(table.unpack(arglist(c), 1, #c.params)) }
    else
      local tape = lt.tape(function()
        for _, c in ipairs(case.calls) do
          kernel_of(case, c)(table.unpack(arglist(c), 1, #(c.params or {})))
        end
      end)
      if case.loss == "L" then grads = tape:backward(L) else grads = tape:backward() end
    end
    local got = {}
    local ins = inputs_of(case)
    for i, e in ipairs(ins) do got[i] = e.grad(grads) end
    local function fd(e, h)
      local v0 = e.get()
      e.set(v0 + h)
      local up = forward(case)
      e.set(v0 - h)
      local down = forward(case)
      e.set(v0)
      return (up - down) / (2 * h)
    end
    for i, e in ipairs(ins) do
      local g = got[i]
      local d1 = fd(e, H)
      if g == nil or g ~= g then
        totals.failed = totals.failed + 1
        fail(("d/d%s: no gradient (%s), finite differences %.12g"):format(e.name, tostring(g), d1))
      else
        local rel = math.abs(g - d1) / math.max(1, math.abs(d1))
        if rel > TOL then
          local d2 = fd(e, H / 10)
          if math.abs(d1 - d2) > 0.5 * TOL * math.max(1, math.abs(d2)) then
            totals.skipped = totals.skipped + 1   -- a kink within h: the differences disagree
            rel = nil
          else
            totals.failed = totals.failed + 1
            fail(("d/d%s: reverse mode %.15g, finite differences %.15g (at h/10: %.15g)"):format(e.name, g, d1, d2))
            rel = nil
          end
        end
        totals.compared = totals.compared + 1
        if math.abs(d1) > 1e-9 then totals.nonzero = totals.nonzero + 1 end
        if e.arg then totals.args = totals.args + 1 end
        if rel then
          if rel > totals.worst then totals.worst, totals.worst_at = rel, ("%s, d/d%s"):format(label, e.name) end
        end
      end
    end
    local fok, ferr = pcall(check_fwd, case, ins, got, seed, label, fail)
    if not fok then
      totals.fwd_failed = totals.fwd_failed + 1
      fail("forward mode: error: " .. tostring(ferr))
    end
  end)
  if not ok then fail("error: " .. tostring(err)) end
  if failed > 0 then
    if failed > 6 then T.fail(("%s: %d more failures"):format(label, failed - 6)) end
    print(("---- %s (generator seed %d), its source:\n%s\n----"):format(label, seed, case_source(case)))
  end
  totals.cases = totals.cases + 1
end

local t0 = os.clock()
for n = 1, CASES do
  -- one seed per case, so that LT_AD_CASE=n reproduces case n alone
  local seed = SEED * 1000003 + n * 7919
  if not ONLY or ONLY == n then run_case(n, seed) end
end

local cov = {}
for k, v in pairs(stats) do cov[#cov + 1] = ("%s=%d"):format(k, v) end
table.sort(cov)
print(("autodiff_random: seed %d, %d cases, %d kernels, %d gradients compared with finite differences "
  .. "(%d nonzero, %d by arguments), %d wrong, %d skipped at kinks, worst |g - fd| / max(1, |fd|) %.3g (%s)%s, "
  .. "%.1f s CPU"):format(SEED, totals.cases, totals.kernels, totals.compared + totals.skipped, totals.nonzero,
  totals.args, totals.failed, totals.skipped, totals.worst, totals.worst_at, has_tanh and ", lt.tanh included" or "",
  os.clock() - t0))
print(("autodiff_random: forward mode: %d loss tangents (%d nonzero, %d calls by k:fwd_args) compared with "
  .. "reverse mode's grad . v (%d) and finite differences along v (%d, %d skipped at kinks), %d wrong, "
  .. "worst |t - g.v| / max(1, |g.v|) %.3g (%s), worst |t - fd| / max(1, |fd|) %.3g (%s)"):format(totals.fwd,
  totals.fwd_nonzero, totals.fwd_args, totals.fwd_gv, totals.fwd_fd + totals.fwd_skipped, totals.fwd_skipped,
  totals.fwd_failed, totals.fwd_worst_gv, totals.fwd_worst_gv_at, totals.fwd_worst_fd, totals.fwd_worst_fd_at))
print("coverage: " .. table.concat(cov, " "))
if totals.compared + totals.skipped > 0 and not ONLY then
  T.check("fewer than 10% of the gradients skipped", totals.skipped < 0.1 * (totals.compared + totals.skipped), true)
  T.check("a tangent for every case", totals.fwd, totals.cases)
  T.check("fewer than 10% of the tangents skipped", totals.fwd_skipped < 0.1 * math.max(1, totals.fwd), true)
end
T.finish("autodiff_random")
