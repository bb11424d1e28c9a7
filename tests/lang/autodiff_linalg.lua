-- autodiff_linalg.lua -- reverse mode (docs/autodiff.md) through the vector
-- and matrix operations of stdlib/lattice/linalg.lua, which trace into scalar
-- IR ops and differentiate as those: dot, cross (2-D, 3-D), norm, norm_sqr,
-- normalized, outer, matmul (matrix x matrix, matrix x vector, vector x
-- matrix), transpose, trace, determinant and inverse (2x2, 3x3), lt.svd and
-- lt.polar_decompose (2x2, 3x3), lt.tanh. Each kernel returns a loss of f64
-- vector/matrix fields with gradients; k:grad() against central finite
-- differences, |g - fd| <= 1e-6 * max(1, |fd|), at generic points (for the
-- decompositions: well-separated singular values, det > 0; also diagonal and
-- rank-deficient matrices whose singular values are distinct). Then what
-- docs/autodiff.md says of svd/polar at degenerate matrices (repeated or
-- several zero singular values): finite gradients, the true one for losses of
-- the singular values alone, and for the polar decomposition (2x2 in closed
-- form; 3x3 where sigma_i + sigma_j > 0: the identity, 2.5 I, rotations,
-- diag(2, 1, 1) and its rotations, diag(3, 3, 1), near-degenerate, det < 0
-- and generic matrices).
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"

-- ---- inputs: element 0 of f64 fields with gradients -----------------------------------------

local function field(t, name) return lt.field(t, 1, { needs_grad = true, name = name }) end
local a3, b3 = field(lt.dvec3, "a3"), field(lt.dvec3, "b3")
local a2, b2 = field(lt.dvec2, "a2"), field(lt.dvec2, "b2")
local A2, B2 = field(lt.dmat2, "A2"), field(lt.dmat2, "B2")
local A3, B3 = field(lt.dmat3, "A3"), field(lt.dmat3, "B3")
local s = field(lt.f64, "s")
local all = { a3, b3, a2, b2, A2, B2, A3, B3, s }

-- generic points (no symmetry, no zero entries); A2 and A3 have det > 0 and
-- well-separated singular values (A2: 1.70, 0.52; A3: 1.72, 1.28, 0.62)
local base = {
  [a3] = { 0.31, -0.72, 0.54 }, [b3] = { -0.45, 0.28, 0.83 },
  [a2] = { 0.62, -0.37 }, [b2] = { 0.21, 0.94 },
  [A2] = { { 1.3, 0.7 }, { 0.4, 0.9 } }, [B2] = { { 0.5, -0.8 }, { 0.9, 0.35 } },
  [A3] = { { 1.2, 0.3, -0.4 }, { 0.1, 0.9, 0.25 }, { -0.2, 0.35, 1.5 } },
  [B3] = { { 0.45, -0.6, 0.3 }, { 0.8, 0.15, -0.35 }, { -0.25, 0.55, 0.7 } },
  [s] = 0.37,
}

-- an element as a flat list of numbers (row-major), and back
local function flat(v)
  if type(v) == "number" then return { v } end
  local r = {}
  for _, x in ipairs(v) do
    if type(x) == "table" then for _, y in ipairs(x) do r[#r + 1] = y end else r[#r + 1] = x end
  end
  return r
end
local function unflat(like, l)
  if type(like) == "number" then return l[1] end
  local r, k = {}, 0
  for i, x in ipairs(like) do
    if type(x) == "table" then
      r[i] = {}
      for j = 1, #x do k = k + 1; r[i][j] = l[k] end
    else
      k = k + 1
      r[i] = l[k]
    end
  end
  return r
end
local function set_inputs(values)
  for _, f in ipairs(all) do f[0] = (values or base)[f] or base[f] end
end

-- ---- losses of kernel values ------------------------------------------------------------------

-- fixed generic weights, so that every output component matters
local function weight(k) return math.sin(1.3 * k + 0.4) end
-- the components of a vector or matrix value (or a scalar) in a kernel
local Mat = getmetatable(lt.dvec2(0, 0))
local function comps(v)
  if getmetatable(v) ~= Mat then return { v } end
  local r = {}
  for i = 0, #v - 1 do
    local row = v[i]
    if getmetatable(row) == Mat then for j = 0, #row - 1 do r[#r + 1] = row[j] end else r[#r + 1] = row end
  end
  return r
end
-- sum_k w_k e_k + (sum_k w'_k e_k)^2 / 2 over the components of the values given
local function loss(...)
  local lin, q, k = 0.0, 0.0, 0
  for _, v in ipairs { ... } do
    for _, e in ipairs(comps(v)) do
      k = k + 1
      lin = lin + weight(k) * e
      q = q + weight(k + 7) * e
    end
  end
  return lin + 0.5 * q * q
end

-- ---- the check --------------------------------------------------------------------------------

local worst = {}        -- group -> largest |g - fd| / max(1, |fd|)
local checked = 0
local H = 1e-6

-- Runs k:grad() at the inputs (base, or values overriding it) and compares the gradient of every
-- field in fs with central differences of k's result.
local function grad_check(group, name, k, fs, values)
  local failures = T.failures
  set_inputs(values)
  lt.clear_grads(table.unpack(all))
  k:grad()
  local gmax = 0                    -- stays 0 with a NaN, which fails below anyway
  for _, f in ipairs(fs) do
    local g = flat(f.grad[0])
    for _, x in ipairs(g) do gmax = math.max(gmax, math.abs(x)) end
    local x0 = f[0]
    local x = flat(x0)
    for c = 1, #x do
      local v0 = x[c]
      x[c] = v0 + H
      f[0] = unflat(x0, x)
      local up = k()
      x[c] = v0 - H
      f[0] = unflat(x0, x)
      local down = k()
      x[c] = v0
      f[0] = unflat(x0, x)
      local fd = (up - down) / (2 * H)
      local err = math.abs(g[c] - fd) / math.max(1, math.abs(fd))
      if not (err <= 1e-6) then
        T.fail(("%s: d/d%s[%d]: reverse mode %.12g, finite differences %.12g"):format(name, f.name, c, g[c], fd))
      end
      worst[group] = math.max(worst[group] or 0, err ~= err and math.huge or err)
      checked = checked + 1
    end
  end
  if gmax == 0 and T.failures == failures then T.fail(name .. ": the gradient is zero: the check proves nothing") end
end

local function case(group, name, fs, fn, values)
  grad_check(group, name, lt.kernel(fn), fs, values)
end

-- ---- vectors ----------------------------------------------------------------------------------

case("dot", "dot 3-D", { a3, b3 }, function() return loss(a3[0]:dot(b3[0])) end)
case("dot", "dot 2-D, lt.dot", { a2, b2 }, function() return loss(lt.dot(a2[0], b2[0]), a2[0]:dot(a2[0])) end)
case("cross", "cross 3-D", { a3, b3 }, function() return loss(a3[0]:cross(b3[0])) end)
case("cross", "cross 2-D", { a2, b2 }, function() return loss(lt.cross(a2[0], b2[0])) end)
case("norm", "norm", { a3, a2 }, function() return loss(a3[0]:norm(), lt.norm(a2[0])) end)
case("norm", "norm_sqr", { a3, a2 }, function() return loss(a3[0]:norm_sqr(), lt.norm_sqr(a2[0])) end)
case("norm", "normalized", { a3, b2 }, function() return loss(a3[0]:normalized(), lt.normalized(b2[0])) end)
case("outer", "outer 3x2", { a3, b2 }, function() return loss(a3[0]:outer(b2[0])) end)
case("outer", "outer 3x3", { a3, b3 }, function() return loss(lt.outer(a3[0], b3[0])) end)

-- ---- matrices ---------------------------------------------------------------------------------

case("matmul", "matrix x matrix 3x3", { A3, B3 }, function() return loss(A3[0]:mul(B3[0])) end)
case("matmul", "matrix x matrix 2x2, lt.matmul", { A2, B2 },
  function() return loss(lt.matmul(A2[0], B2[0])) end)
case("matmul", "matrix x vector", { A3, a3 }, function() return loss(A3[0]:mul(a3[0])) end)
case("matmul", "matrix x vector 2x2", { A2, b2 }, function() return loss(lt.matmul(A2[0], b2[0])) end)
case("matmul", "vector x matrix", { b3, B3 }, function() return loss(b3[0]:mul(B3[0])) end)
case("transpose", "transpose", { A3, B3, B2 },
  function() return loss(A3[0]:transpose():mul(B3[0]), lt.transpose(B2[0])) end)
case("trace", "trace", { A3, B3, A2 },
  function() return loss(A3[0]:trace() * B3[0]:trace(), lt.trace(A2[0]), A3[0]:mul(B3[0]):trace()) end)
case("determinant", "determinant 2x2", { B2 }, function() return loss(B2[0]:determinant()) end)
case("determinant", "determinant 3x3", { B3 }, function() return loss(lt.determinant(B3[0])) end)
case("inverse", "inverse 2x2", { B2 }, function() return loss(B2[0]:inverse()) end)
case("inverse", "inverse 3x3", { B3 }, function() return loss(lt.inverse(B3[0])) end)

-- ---- decompositions ---------------------------------------------------------------------------

local function svd_loss(M)
  local U, S, V = lt.svd(M)
  return loss(U, S, V)
end
local function polar_loss(M)
  local R, S = lt.polar_decompose(M)
  return loss(R, S)
end
local svd2 = lt.kernel(function() return svd_loss(A2[0]) end)
local svd3 = lt.kernel(function() return svd_loss(A3[0]) end)
local polar2 = lt.kernel(function() return polar_loss(A2[0]) end)
local polar3 = lt.kernel(function() return polar_loss(A3[0]) end)
grad_check("svd", "svd 2x2", svd2, { A2 })
grad_check("svd", "svd 3x3", svd3, { A3 })
grad_check("polar", "polar_decompose 2x2", polar2, { A2 })
grad_check("polar", "polar_decompose 3x3", polar3, { A3 })

-- special but not degenerate: diagonal (the 3x3 Jacobi rotations start at angle 0), rank-deficient
-- with distinct singular values (2x2 rank 1, 3x3 rank 2: the third row the sum of the others), a
-- negative determinant. (Not the 2x2 diag(a, d) with a < d: there the 2x2 U and V change sign
-- together, atan2(c + b, a - d) crossing its cut; U S V^T does not.)
local special = {
  { "diagonal", { [A2] = { { 1.7, 0 }, { 0, 0.6 } }, [A3] = { { 1.8, 0, 0 }, { 0, 0.7, 0 }, { 0, 0, 1.2 } } } },
  { "rank-deficient", { [A2] = { { 1.0, 2.0 }, { 0.5, 1.0 } },
    [A3] = { { 1.2, 0.3, -0.4 }, { 0.1, 0.9, 0.25 }, { 1.3, 1.2, -0.15 } } } },
  { "det < 0", { [A2] = { { 0.4, 1.3 }, { 1.1, -0.7 } },
    [A3] = { { 0.3, 1.2, -0.4 }, { 0.9, 0.1, 0.25 }, { 0.35, -0.2, 1.5 } } } },
}
for _, sp in ipairs(special) do
  grad_check("svd", "svd 2x2, " .. sp[1], svd2, { A2 }, sp[2])
  grad_check("svd", "svd 3x3, " .. sp[1], svd3, { A3 }, sp[2])
  if sp[1] ~= "det < 0" then   -- R is a rotation: with det < 0 and rank < n it is not smooth in A
    grad_check("polar", "polar_decompose 2x2, " .. sp[1], polar2, { A2 }, sp[2])
    grad_check("polar", "polar_decompose 3x3, " .. sp[1], polar3, { A3 }, sp[2])
  end
end

-- ---- degenerate matrices (docs/autodiff.md, "What is differentiated") ----------------------------

local c, sn = math.cos(0.7), math.sin(0.7)
local degenerate = {
  { "identity", { { 1, 0 }, { 0, 1 } }, { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } } },
  { "2.5 identity", { { 2.5, 0 }, { 0, 2.5 } }, { { 2.5, 0, 0 }, { 0, 2.5, 0 }, { 0, 0, 2.5 } } },
  { "rotation", { { c, -sn }, { sn, c } }, { { c, -sn, 0 }, { sn, c, 0 }, { 0, 0, 1 } } },
  { "two equal", nil, { { 2, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } } },
  { "reflection", { { 1, 0 }, { 0, -1 } }, { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, -1 } } },
  { "rank 1", nil, { { 1, 2, 3 }, { 0.5, 1, 1.5 }, { -1, -2, -3 } } },
  { "zero", { { 0, 0 }, { 0, 0 } }, { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } } },
}
-- U and V (and R) are not differentiable there: the gradient is finite, never NaN or inf
local function finite(name, k, f, value)
  set_inputs({ [f] = value })
  lt.clear_grads(table.unpack(all))
  k:grad()
  for i, g in ipairs(flat(f.grad[0])) do
    if not (math.abs(g) < math.huge) then T.fail(("%s: d/d%s[%d] is %s"):format(name, f.name, i, g)) end
  end
end
-- an energy of the singular values alone, symmetric in them: differentiable at repeated ones (where
-- they are not zero), and its gradient there is the true one
local function energy(S, n)
  local e = 0.0
  for i = 0, n - 1 do e = e + (S[i][i] - 1.0) * (S[i][i] - 1.0) + 0.3 * S[i][i] end
  return e
end
local energy2 = lt.kernel(function() local _, S = lt.svd(A2[0]); return energy(S, 2) end)
local energy3 = lt.kernel(function() local _, S = lt.svd(A3[0]); return energy(S, 3) end)
for _, dg in ipairs(degenerate) do
  local name, m2, m3 = dg[1], dg[2], dg[3]
  if m2 then
    finite("svd 2x2 at " .. name, svd2, A2, m2)
    finite("polar_decompose 2x2 at " .. name, polar2, A2, m2)
  end
  finite("svd 3x3 at " .. name, svd3, A3, m3)
  finite("polar_decompose 3x3 at " .. name, polar3, A3, m3)
  if name ~= "zero" and name ~= "rank 1" and name ~= "reflection" then
    if m2 then grad_check("svd degenerate", "energy of svd 2x2 at " .. name, energy2, { A2 }, { [A2] = m2 }) end
    grad_check("svd degenerate", "energy of svd 3x3 at " .. name, energy3, { A3 }, { [A3] = m3 })
  end
  -- the 2x2 polar decomposition is in closed form: smooth wherever a + d and c - b are not both 0;
  -- the 3x3 one is differentiated as R's implicit derivative wherever every sigma_i + sigma_j > 0
  if name ~= "zero" and name ~= "reflection" and name ~= "rank 1" then
    if m2 then grad_check("polar degenerate", "polar_decompose 2x2 at " .. name, polar2, { A2 }, { [A2] = m2 }) end
    grad_check("polar degenerate", "polar_decompose 3x3 at " .. name, polar3, { A3 }, { [A3] = m3 })
  end
end

-- the 3x3 polar decomposition at more points where singular values repeat (R is smooth there, U and V
-- are not), nearly repeat, and generic ones; 2x2 at some of them
local function rotation(x, y, z, w)         -- of a quaternion
  local n = math.sqrt(x * x + y * y + z * z + w * w)
  x, y, z, w = x / n, y / n, z / n, w / n
  return { { 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w) },
    { 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w) },
    { 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y) } }
end
local function mm(p, q)
  local r = {}
  for i = 1, #p do
    r[i] = {}
    for j = 1, #q[1] do
      local x = 0
      for k = 1, #q do x = x + p[i][k] * q[k][j] end
      r[i][j] = x
    end
  end
  return r
end
local function scaled(m, f)
  local r = {}
  for i = 1, #m do r[i] = {} for j = 1, #m do r[i][j] = m[i][j] * f end end
  return r
end
local function diag3(a, b, d) return { { a, 0, 0 }, { 0, b, 0 }, { 0, 0, d } } end
local P1, P2 = rotation(0.3, -0.5, 0.7, 0.4), rotation(-0.6, 0.2, 0.1, 0.75)
local Q1 = rotation(0.05, 0.9, -0.2, -0.3)
local c2, s2 = math.cos(2.2), math.sin(2.2)
local more = {
  { "a generic rotation", { { c2, -s2 }, { s2, c2 } }, P1 },
  { "2.5 x a rotation", scaled({ { c2, -s2 }, { s2, c2 } }, 2.5), scaled(Q1, 2.5) },
  { "a rotation by pi/2", { { 0, -1 }, { 1, 0 } }, { { 0, -1, 0 }, { 1, 0, 0 }, { 0, 0, 1 } } },
  { "-I (det > 0)", { { -1, 0 }, { 0, -1 } }, nil },
  { "diag(2, 1, 1) rotated", nil, mm(mm(P1, diag3(2, 1, 1)), P2) },
  { "diag(1, 1, 2)", nil, diag3(1, 1, 2) },
  { "diag(3, 3, 1) rotated", nil, mm(mm(P2, diag3(3, 3, 1)), Q1) },
  { "diag(0.5, 2, 2)", nil, diag3(0.5, 2, 2) },
  { "a rotation x diag(1.2, 0.7)", mm({ { c2, -s2 }, { s2, c2 } }, { { 1.2, 0 }, { 0, 0.7 } }),
    mm(Q1, diag3(1.2, 0.7, 0.7)) },
  { "near I", { { 1 + 1e-4, 2e-4 }, { -1e-4, 1 } },
    { { 1 + 1e-4, 2e-4, -1e-4 }, { -1e-4, 1 - 2e-4, 3e-4 }, { 2e-4, 1e-4, 1 } } },
  { "nearly repeated", nil, mm(mm(P1, diag3(1.5, 1 + 1e-7, 1)), P2) },
  { "generic 1", { { 0.8, -0.3 }, { 0.6, 1.4 } }, { { 0.8, -0.3, 0.2 }, { 0.6, 1.4, -0.5 }, { 0.1, 0.45, 0.9 } } },
  { "generic 2", { { 2.1, 0.4 }, { -0.9, 0.3 } },
    { { 2.1, 0.4, -0.7 }, { -0.9, 0.3, 0.6 }, { 0.2, -1.1, 0.8 } } },
  { "generic 3 (ill-conditioned)", nil, mm(mm(P2, diag3(3, 0.02, 0.001)), P1) },
  { "det < 0, generic", { { 0.4, 1.3 }, { 1.1, -0.7 } }, mm(mm(P1, diag3(1.6, 0.9, -0.4)), Q1) },
  { "rank 2", nil, mm(mm(Q1, diag3(1.3, 0.6, 0)), P2) },
}
for _, mc in ipairs(more) do
  local name, m2, m3 = mc[1], mc[2], mc[3]
  if m2 then grad_check("polar more", "polar_decompose 2x2 at " .. name, polar2, { A2 }, { [A2] = m2 }) end
  if m3 then grad_check("polar more", "polar_decompose 3x3 at " .. name, polar3, { A3 }, { [A3] = m3 }) end
end

-- ---- tanh -------------------------------------------------------------------------------------

case("tanh", "tanh", { s, a3 }, function()
  return loss(lt.tanh(s[0]), lt.tanh(a3[0] * 1.7), lt.tanh(s[0] * 40.0 + 60.0))
end)

T.check("every case compared", checked > 0, true)
local groups = {}
for g in pairs(worst) do groups[#groups + 1] = g end
table.sort(groups)
local parts = {}
for _, g in ipairs(groups) do parts[#parts + 1] = ("%s %.1e"):format(g, worst[g]) end
print("worst |g - fd| / max(1, |fd|): " .. table.concat(parts, ", "))
T.finish("autodiff_linalg")
print("autodiff_linalg: ok (" .. checked .. " derivatives)")
