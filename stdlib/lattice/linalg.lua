-- linalg.lua -- linear algebra on vector and matrix values (matrix.lua): dot,
-- cross, norms, matrix product, transpose, trace, determinant, inverse, outer
-- product, and the 2x2 / 3x3 SVD and polar decomposition. Everything unrolls
-- into scalar operations at trace time; conditions become selects (no IR
-- branches), so the code works the same on Lua numbers and kernel values.
local types = require "lattice.types"
local T = require "lattice.tracer"
local mx = require "lattice.matrix"

local M = {}
local methods = mx.methods
local fail, make, vals, is_mat = mx.fail, mx.make, mx.vals, mx.is_mat

-- ---- scalar helpers (kernel values or Lua numbers) ---------------------------------------

local function kv(...)
  for i = 1, select("#", ...) do if T.is_kv((select(i, ...))) then return true end end
  return false
end
local function sqrt(x) if kv(x) then return T.unary_builtin("sqrt", x) end return math.sqrt(x) end
local function abs(x) if kv(x) then return T.unary_builtin("abs", x) end return math.abs(x) end
local function sin(x) if kv(x) then return T.unary_builtin("sin", x) end return math.sin(x) end
local function cos(x) if kv(x) then return T.unary_builtin("cos", x) end return math.cos(x) end
local function atan2(y, x) if kv(y, x) then return T.binary_builtin("atan2", y, x) end return math.atan(y, x) end
-- toward zero; its derivative is 0 (docs/autodiff.md)
local function trunc(x)
  if kv(x) then return T.unary_builtin("trunc", x) end
  if x < 0 then return math.ceil(x) + 0.0 end
  return math.floor(x) + 0.0
end
local function lt_(a, b) if kv(a, b) then return T.compare("lt", a, b) end return a < b end
local function sel(c, a, b)
  if kv(c) then return T.select(c, a, b) end
  if c then return a end
  return b
end

-- The float type results of norms and inverses have.
local function float_of(v) return types.float_for(v._t) end

local function tname(v) return mx.type_of(v).name end
local function need_vec(v, what)
  if not is_mat(v) or v._m ~= nil then
    fail(what .. " needs a vector, got " .. (mx.describe(v) or (T.is_kv(v) or type(v) == "number") and "a scalar"
      or ("a " .. type(v))))
  end
end
local function need_mat(v, what, square)
  if not is_mat(v) or v._m == nil then
    fail(what .. " needs a matrix, got " .. (mx.describe(v) or "a scalar"))
  end
  if square and v._n ~= v._m then fail(what .. " needs a square matrix, got " .. T.an(tname(v))) end
end

-- A matrix of type t from a function of (i, j), 0-based.
local function build(n, m, t, f)
  local e = {}
  for i = 0, n - 1 do
    for j = 0, m - 1 do
      local x = f(i, j)
      if type(x) == "number" then x = types.convert(x, t) end
      e[i * m + j + 1] = x
    end
  end
  return make(n, m, t, e)
end
local function at(v, i, j) return v._e[i * v._m + j + 1] end

local function sum_of_products(a, b, n)
  local s = a[1] * b[1]
  for k = 2, n do s = s + a[k] * b[k] end
  return s
end

-- ---- vectors -------------------------------------------------------------------------------

function methods.dot(a, b)
  need_vec(a, "dot")
  need_vec(b, "dot")
  if a._n ~= b._n then fail("shape mismatch in dot: " .. tname(a) .. " and " .. tname(b)) end
  return sum_of_products(vals(a), vals(b), a._n)
end

-- 3-D: the cross product vector; 2-D: the scalar a.x * b.y - a.y * b.x.
function methods.cross(a, b)
  need_vec(a, "cross")
  need_vec(b, "cross")
  if a._n ~= b._n or (a._n ~= 2 and a._n ~= 3) then
    fail("cross needs two vec2 or two vec3 values, got " .. tname(a) .. " and " .. tname(b))
  end
  local x, y = vals(a), vals(b)
  if a._n == 2 then return x[1] * y[2] - x[2] * y[1] end
  return make(3, nil, mx.result_type("mul", a._t, b._t), { x[2] * y[3] - x[3] * y[2], x[3] * y[1] - x[1] * y[3], x[1] * y[2] - x[2] * y[1] })
end

function methods.norm_sqr(v)
  need_vec(v, "norm_sqr")
  local e = vals(v)
  return sum_of_products(e, e, v._n)
end
function methods.norm(v) return sqrt(methods.norm_sqr(v)) end
function methods.normalized(v) return v / methods.norm(v) end

function methods.sum(v)
  local e = vals(v)
  local s = e[1]
  for k = 2, #e do s = s + e[k] end
  return s
end

-- The largest / smallest component.
local function reduce(v, what, op)
  local e = vals(v)
  local r = e[1]
  for k = 2, #e do
    if kv(r, e[k]) then r = T.binary_builtin(op, r, e[k]) else r = math[op](r, e[k]) end
  end
  return r
end
function methods.max(v) return reduce(v, "max", "max") end
function methods.min(v) return reduce(v, "min", "min") end

-- v:cast(lt.i32): the value converted per component.
function methods.cast(v, t)
  if not types.is_type(t) then fail("v:cast needs a scalar type such as lt.i32") end
  return mx.ctype(v._n, v._m, t)(v)
end

-- The outer product a b^T (an n x m matrix).
function methods.outer(a, b)
  need_vec(a, "outer")
  need_vec(b, "outer")
  local x, y = vals(a), vals(b)
  return build(a._n, b._n, mx.result_type("mul", a._t, b._t), function(i, j) return x[i + 1] * y[j + 1] end)
end

-- ---- matrices ------------------------------------------------------------------------------

function methods.transpose(m)
  need_mat(m, "transpose")
  local e = vals(m)
  local src = make(m._n, m._m, m._t, e)
  return build(m._m, m._n, m._t, function(i, j) return at(src, j, i) end)
end

function methods.trace(m)
  need_mat(m, "trace", true)
  local e = vals(m)
  local s = e[1]
  for i = 1, m._n - 1 do s = s + e[i * m._n + i + 1] end
  return s
end

-- Matrix product: matrix x matrix, matrix x vector (a vector), vector x matrix.
function methods.mul(a, b)
  if not is_mat(a) or not is_mat(b) then
    fail("A:mul(B) / lt.matmul multiplies matrices and vectors; for a scalar factor use *")
  end
  local an, am = a._n, a._m or a._n
  local bn, bm = b._n, b._m or 1
  local avec, bvec = a._m == nil, b._m == nil
  if avec then an, am = 1, a._n end                   -- a row vector
  if am ~= bn then
    fail("shape mismatch in matrix product: " .. tname(a) .. " times " .. tname(b) .. " (" .. am ..
      " columns against " .. bn .. " rows)")
  end
  local x, y = vals(a), vals(b)
  local t = mx.result_type("mul", a._t, b._t)
  local r = build(an, bm, t, function(i, j)
    local s = x[i * am + 1] * y[j + 1]
    for k = 1, am - 1 do s = s + x[i * am + k + 1] * y[k * bm + j + 1] end
    return s
  end)
  if bvec or avec then r._m = nil; r._n = #r._e end
  return r
end

-- Determinant of the submatrix of grid g (0-based) on rows x cols, by
-- cofactor expansion along the first row (unrolled; meant for n <= 4).
local function det_of(g, rows, cols)
  local k = #rows
  if k == 1 then return g[rows[1]][cols[1]] end
  if k == 2 then return g[rows[1]][cols[1]] * g[rows[2]][cols[2]] - g[rows[1]][cols[2]] * g[rows[2]][cols[1]] end
  local s
  local sub_rows = { table.unpack(rows, 2) }
  for j = 1, k do
    local sub_cols = {}
    for q = 1, k do if q ~= j then sub_cols[#sub_cols + 1] = cols[q] end end
    local term = g[rows[1]][cols[j]] * det_of(g, sub_rows, sub_cols)
    if j == 1 then s = term elseif j % 2 == 0 then s = s - term else s = s + term end
  end
  return s
end

local function grid(m)
  local e, g = vals(m), {}
  for i = 0, m._n - 1 do
    g[i] = {}
    for j = 0, m._m - 1 do g[i][j] = e[i * m._m + j + 1] end
  end
  return g
end

local function range(n, skip)
  local r = {}
  for i = 0, n - 1 do if i ~= skip then r[#r + 1] = i end end
  return r
end

function methods.determinant(m)
  need_mat(m, "determinant", true)
  if m._n > 4 then fail("determinant is unrolled for matrices up to 4x4 (got " .. tname(m) .. ")") end
  return det_of(grid(m), range(m._n), range(m._n))
end

-- The inverse by the adjugate: adj / det (no pivoting; a singular matrix gives inf/NaN).
function methods.inverse(m)
  need_mat(m, "inverse", true)
  if m._n > 4 then fail("inverse is unrolled for matrices up to 4x4 (got " .. tname(m) .. ")") end
  local g, n = grid(m), m._n
  local t = float_of(m)
  if n == 1 then return build(1, 1, t, function() return 1.0 / g[0][0] end) end
  local det = det_of(g, range(n), range(n))
  local inv = 1.0 / det
  return build(n, n, t, function(i, j)
    local c = det_of(g, range(n, j), range(n, i))      -- cofactor (j, i): the adjugate
    if (i + j) % 2 == 1 then c = -c end
    return c * inv
  end)
end

-- ---- SVD and polar decomposition ----------------------------------------------------------
-- Convention: A = U * diag(sigma) * V^T with U and V rotations (det +1); the
-- singular values are sorted by decreasing magnitude and the last one carries
-- the sign of det(A). Returns U, S (diagonal matrix), V.

local function rot2(t, c, s) return make(2, 2, t, { c, -s, s, c }) end

-- 2x2 in closed form (no branches): A = R(phi) diag(sx, sy) R(theta).
local function svd2(A, t)
  local a, b, c, d = table.unpack(vals(A))
  local E, F = (a + d) * 0.5, (a - d) * 0.5
  local G, H = (c + b) * 0.5, (c - b) * 0.5
  -- Q = |(E, H)|, R = |(F, G)|. One of them is 0 where |sigma_1| = |sigma_2| (A is a multiple of a
  -- rotation or of a reflection): there its square root and atan2 take other operands, so that
  -- reverse mode passes them 0 instead of 0/0 (NaN); the values are the same (sqrt(0) = atan2(0, 0)
  -- = 0), but where E, H or F, G are so small that their squares underflow.
  local q2, r2 = E * E + H * H, F * F + G * G
  local qok, rok = lt_(0.0, q2), lt_(0.0, r2)
  local Q, R = sel(qok, sqrt(sel(qok, q2, 1.0)), 0.0), sel(rok, sqrt(sel(rok, r2, 1.0)), 0.0)
  local a1 = sel(rok, atan2(sel(rok, G, 0.0), sel(rok, F, 1.0)), 0.0)
  local a2 = sel(qok, atan2(sel(qok, H, 0.0), sel(qok, E, 1.0)), 0.0)
  local theta, phi = (a2 - a1) * 0.5, (a2 + a1) * 0.5
  local U = rot2(t, cos(phi), sin(phi))
  local V = rot2(t, cos(theta), -sin(theta))           -- V = R(theta)^T
  local S = make(2, 2, t, { Q + R, types.convert(0, t), types.convert(0, t), Q - R })
  return U, S, V
end

-- Makes v (a Lua list of 3 elements) unit length; when it is (nearly) zero, uses
-- the fallback list instead.
local function unit3(v, fallback)
  local n2 = v[1] * v[1] + v[2] * v[2] + v[3] * v[3]
  local ok = lt_(1e-30, n2)
  local inv = 1.0 / sqrt(sel(ok, n2, 1.0))
  local out = {}
  for k = 1, 3 do out[k] = sel(ok, v[k] * inv, fallback[k]) end
  return out
end
local function cross3(x, y)
  return { x[2] * y[3] - x[3] * y[2], x[3] * y[1] - x[1] * y[3], x[1] * y[2] - x[2] * y[1] }
end

-- 3x3: cyclic Jacobi on A^T A (a fixed number of sweeps, unrolled) gives V and
-- the squared singular values; U comes from A V by Gram-Schmidt.
local function svd3(A, t, sweeps)
  local a = vals(A)
  local function ae(i, j) return a[i * 3 + j + 1] end
  local B = {}                                              -- B = A^T A, 0-based [i][j]
  for i = 0, 2 do
    B[i] = {}
    for j = 0, 2 do B[i][j] = ae(0, i) * ae(0, j) + ae(1, i) * ae(1, j) + ae(2, i) * ae(2, j) end
  end
  local one, zero = types.convert(1, t), types.convert(0, t)
  local V = { [0] = { [0] = one, zero, zero }, { [0] = zero, one, zero }, { [0] = zero, zero, one } }
  sweeps = sweeps or (t.bits == 64 and 8 or 5)
  for _ = 1, sweeps do
    for _, pq in ipairs { { 0, 1 }, { 0, 2 }, { 1, 2 } } do
      local p, q = pq[1], pq[2]
      -- tt = tan of the angle: the smaller root of bpq t^2 + d t - bpq = 0 (d = B[q][q] - B[p][p]),
      -- 2 bpq sgn(d) / (|d| + sqrt(d^2 + 4 bpq^2)); not divided by bpq, so it is smooth (its
      -- derivative 1/d) where bpq = 0, as at a diagonal A: reverse mode differentiates through it.
      -- 0 when d = bpq = 0 (the square root guarded, so that its adjoint is not 0/0 there).
      local bpq, d = B[p][q], B[q][q] - B[p][p]
      local r2 = d * d + 4.0 * bpq * bpq
      local ok = lt_(1e-300, r2)
      local sgn = sel(lt_(d, 0.0), -1.0, 1.0)
      local tt = sel(ok, 2.0 * bpq * sgn / (abs(d) + sqrt(sel(ok, r2, 1.0))), 0.0)
      local c = 1.0 / sqrt(tt * tt + 1.0)
      local s = tt * c
      -- B <- J^T B J, V <- V J with J the rotation in the (p, q) plane
      for k = 0, 2 do
        local bkp, bkq = B[k][p], B[k][q]
        B[k][p], B[k][q] = c * bkp - s * bkq, s * bkp + c * bkq
      end
      for k = 0, 2 do
        local bpk, bqk = B[p][k], B[q][k]
        B[p][k], B[q][k] = c * bpk - s * bqk, s * bpk + c * bqk
      end
      for k = 0, 2 do
        local vkp, vkq = V[k][p], V[k][q]
        V[k][p], V[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
      end
    end
  end
  -- sort the eigenvalues (diagonal of B) in decreasing order with V's columns;
  -- each swap negates one column so V stays a rotation
  local lam = { [0] = B[0][0], B[1][1], B[2][2] }
  local function cswap(i, j)
    local c = lt_(lam[i], lam[j])
    lam[i], lam[j] = sel(c, lam[j], lam[i]), sel(c, lam[i], lam[j])
    for k = 0, 2 do
      local vi, vj = V[k][i], V[k][j]
      V[k][i], V[k][j] = sel(c, vj, vi), sel(c, -vi, vj)
    end
  end
  cswap(0, 1); cswap(0, 2); cswap(1, 2)
  local function col(j) return { V[0][j], V[1][j], V[2][j] } end
  local function Av(v)
    return { ae(0, 0) * v[1] + ae(0, 1) * v[2] + ae(0, 2) * v[3],
      ae(1, 0) * v[1] + ae(1, 1) * v[2] + ae(1, 2) * v[3],
      ae(2, 0) * v[1] + ae(2, 1) * v[2] + ae(2, 2) * v[3] }
  end
  local av0, av1, av2 = Av(col(0)), Av(col(1)), Av(col(2))
  local u0 = unit3(av0, { one, zero, zero })
  local d = u0[1] * av1[1] + u0[2] * av1[2] + u0[3] * av1[3]
  local w = { av1[1] - d * u0[1], av1[2] - d * u0[2], av1[3] - d * u0[3] }
  -- fallback for rank <= 1: any unit vector perpendicular to u0
  local ax = lt_(abs(u0[1]), 0.9)
  local e = { sel(ax, one, zero), sel(ax, zero, one), zero }
  local u1 = unit3(w, unit3(cross3(u0, e), { zero, one, zero }))
  local u2 = cross3(u0, u1)
  local function dot(x, y) return x[1] * y[1] + x[2] * y[2] + x[3] * y[3] end
  local U = make(3, 3, t, { u0[1], u1[1], u2[1], u0[2], u1[2], u2[2], u0[3], u1[3], u2[3] })
  local S = make(3, 3, t, { dot(u0, av0), zero, zero, zero, dot(u1, av1), zero, zero, zero, dot(u2, av2) })
  local Vm = make(3, 3, t, { V[0][0], V[0][1], V[0][2], V[1][0], V[1][1], V[1][2], V[2][0], V[2][1], V[2][2] })
  return U, S, Vm
end

-- Elements produced by Lua arithmetic on numbers are folded to the type.
local function fold_all(m)
  for k, x in ipairs(m._e) do if type(x) == "number" then m._e[k] = types.convert(x, m._t) end end
  return m
end

function M.svd(A)
  need_mat(A, "lt.svd", true)
  local t = float_of(A)
  local U, S, V
  if A._n == 2 then U, S, V = svd2(A, t)
  elseif A._n == 3 then U, S, V = svd3(A, t)
  else fail("lt.svd supports 2x2 and 3x3 matrices (got " .. tname(A) .. ")") end
  return fold_all(U), fold_all(S), fold_all(V)
end

-- 3x3: R0 = U V^T from the SVD, then one Newton step for the polar factor, so that reverse
-- (and forward) mode get R's derivative also where singular values repeat (the identity,
-- its multiples, rotations, diag(2, 1, 1): every MPM simulation starts at F = I). There U
-- and V are not functions of A with a derivative, so differentiating R0 = U V^T through
-- the Jacobi sweeps gives a wrong gradient, although R is smooth. Instead:
--   D = R0 with a zero derivative: trunc(x 2^p) 2^-p (trunc's derivative is 0), R0 to
--       2^-53 (f64) / 2^-24 (f32) absolute as its entries are in [-1, 1] (exact where
--       |x| >= 1/2);
--   M = D^T A, symmetric but for rounding; the Cayley rotation C(w) of the axial vector w
--       with (tr(S) I - S) (2w) = axial(M - M^T), S = sym(M), makes C^T M symmetric to
--       first order (S [x]x + [x]x S = [(tr(S) I - S) x]x for symmetric S);
--   R = D C(w), S = sym(C^T M) (= sym(R^T A)).
-- At the primal w is of rounding size (it refines R0), and as D is a constant to the
-- derivative, dR = D [2 dw]x with (tr(S) I - S) (2 dw) = axial(D^T dA - dA^T D): the
-- implicit derivative of the polar factor (R^T dA - dA^T R = K S + S K, K = R^T dR skew).
-- It is defined wherever tr(S) I - S, with eigenvalues sigma_i + sigma_j, is nonsingular,
-- repeated singular values included; singular only where R is not differentiable (or not
-- unique): two singular values 0 (rank <= 1), or det(A) < 0 with sigma_3 = -sigma_2 (as at
-- reflections, -I). Where it is (nearly) singular, w is not used: R and S are the SVD's
-- U V^T and V diag(sigma) V^T, with the SVD's gradient (finite), as before.
local function polar3(A, t)
  -- fewer sweeps than lt.svd's 8 / 5: the Newton step below squares R0's error (with 3 / 3
  -- tests/lang/composite_svd.lua still passes, with 2 f64 does not)
  local U, Sg, V = svd3(A, t, t.bits == 64 and 6 or 4)
  local u, v, a, sg = vals(U), vals(V), vals(A), vals(Sg)
  local big = t.bits == 64 and 2.0 ^ 53 or 2.0 ^ 24
  local R0, D = {}, {}                                      -- R0[i][j] = sum_k U[i][k] V[j][k]
  for i = 0, 2 do
    R0[i], D[i] = {}, {}
    for j = 0, 2 do
      local r = u[i * 3 + 1] * v[j * 3 + 1] + u[i * 3 + 2] * v[j * 3 + 2] + u[i * 3 + 3] * v[j * 3 + 3]
      R0[i][j], D[i][j] = r, trunc(r * big) * (1.0 / big)
    end
  end
  local Mm = {}                                             -- M = D^T A
  for i = 0, 2 do
    Mm[i] = {}
    for j = 0, 2 do Mm[i][j] = D[0][i] * a[j + 1] + D[1][i] * a[j + 4] + D[2][i] * a[j + 7] end
  end
  -- N = tr(S) I - S, S = sym(M), divided by tr(N) = 2 tr(M) (>= 0: sigma_1 + sigma_2 + sigma_3)
  local n = 2.0 * (Mm[0][0] + Mm[1][1] + Mm[2][2])
  local nok = lt_(1e-30, n)
  local inv = 1.0 / sel(nok, n, 1.0)
  local h = 0.5 * inv
  local tr = (Mm[0][0] + Mm[1][1] + Mm[2][2]) * inv
  local n00, n11, n22 = tr - Mm[0][0] * inv, tr - Mm[1][1] * inv, tr - Mm[2][2] * inv
  local n01, n02, n12 = -(Mm[0][1] + Mm[1][0]) * h, -(Mm[0][2] + Mm[2][0]) * h, -(Mm[1][2] + Mm[2][1]) * h
  local k0, k1, k2 = (Mm[2][1] - Mm[1][2]) * inv, (Mm[0][2] - Mm[2][0]) * inv, (Mm[1][0] - Mm[0][1]) * inv
  -- the adjugate of N (symmetric) and its determinant, the product of (sigma_i + sigma_j) / n
  local c00, c11, c22 = n11 * n22 - n12 * n12, n00 * n22 - n02 * n02, n00 * n11 - n01 * n01
  local c01, c02, c12 = n02 * n12 - n01 * n22, n01 * n12 - n02 * n11, n01 * n02 - n00 * n12
  local det = n00 * c00 + n01 * c01 + n02 * c02
  -- (nearly) singular: some (sigma_i + sigma_j) / n below about 4e-14 (f64) / 4e-6 (f32)
  local ok = lt_(t.bits == 64 and 1e-14 or 1e-6, sel(nok, det, 0.0))
  local id = 0.5 / sel(ok, det, 1.0)                      -- w = omega / 2 (Cayley)
  local w0 = sel(ok, (c00 * k0 + c01 * k1 + c02 * k2) * id, 0.0)
  local w1 = sel(ok, (c01 * k0 + c11 * k1 + c12 * k2) * id, 0.0)
  local w2 = sel(ok, (c02 * k0 + c12 * k1 + c22 * k2) * id, 0.0)
  -- C = I + 2 / (1 + |w|^2) ([w]x + [w]x^2), [w]x^2 = w w^T - |w|^2 I: a rotation for any w
  local ww = w0 * w0 + w1 * w1 + w2 * w2
  local f = 2.0 / (1.0 + ww)
  local dg = 1.0 - f * ww
  local C = {
    [0] = { [0] = dg + f * w0 * w0, f * (w0 * w1 - w2), f * (w0 * w2 + w1) },
    { [0] = f * (w0 * w1 + w2), dg + f * w1 * w1, f * (w1 * w2 - w0) },
    { [0] = f * (w0 * w2 - w1), f * (w1 * w2 + w0), dg + f * w2 * w2 },
  }
  local R, P = {}, {}
  for i = 0, 2 do
    P[i] = {}
    for j = 0, 2 do
      R[i * 3 + j + 1] = D[i][0] * C[0][j] + D[i][1] * C[1][j] + D[i][2] * C[2][j]
      P[i][j] = C[0][i] * Mm[0][j] + C[1][i] * Mm[1][j] + C[2][i] * Mm[2][j]   -- C^T M = R^T A
    end
  end
  -- where w is 0 (not ok), the SVD's R0 = U V^T and V S V^T, as they were
  local S = {}
  for i = 0, 2 do
    for j = 0, 2 do
      local s0 = v[i * 3 + 1] * sg[1] * v[j * 3 + 1] + v[i * 3 + 2] * sg[5] * v[j * 3 + 2]
        + v[i * 3 + 3] * sg[9] * v[j * 3 + 3]
      R[i * 3 + j + 1] = sel(ok, R[i * 3 + j + 1], R0[i][j])
      S[i * 3 + j + 1] = sel(ok, i == j and P[i][i] or (P[i][j] + P[j][i]) * 0.5, s0)
    end
  end
  return fold_all(make(3, 3, t, R)), fold_all(make(3, 3, t, S))
end

-- A = R S with R a rotation and S symmetric.
function M.polar_decompose(A)
  need_mat(A, "lt.polar_decompose", true)
  local t = float_of(A)
  if A._n == 2 then
    local a, b, c, d = table.unpack(vals(A))
    local x, y = a + d, c - b
    local r2 = x * x + y * y
    local ok = lt_(1e-30, r2)
    local inv = 1.0 / sqrt(sel(ok, r2, 1.0))
    local R = fold_all(rot2(t, sel(ok, x * inv, 1.0), sel(ok, y * inv, 0.0)))
    return R, methods.mul(methods.transpose(R), A)
  end
  if A._n ~= 3 then fail("lt.polar_decompose supports 2x2 and 3x3 matrices (got " .. tname(A) .. ")") end
  return polar3(A, t)
end

-- ---- functions on lt ------------------------------------------------------------------------

function M.install(lt)
  for _, name in ipairs { "dot", "cross", "norm", "norm_sqr", "normalized", "outer", "transpose", "trace",
    "determinant", "inverse" } do
    local f = methods[name]
    lt[name] = function(a, ...)
      if not is_mat(a) then fail("lt." .. name .. " needs a vector or matrix, got " .. (mx.describe(a) or
        ((T.is_kv(a) or type(a) == "number") and "a scalar" or ("a " .. type(a))))) end
      return f(a, ...)
    end
  end
  lt.matmul = methods.mul
  lt.svd, lt.polar_decompose = M.svd, M.polar_decompose
end

return M
