-- lt.svd and lt.polar_decompose for 2x2 and 3x3 matrices, in f32 and f64:
-- on random matrices (both signs of the determinant, and rank-deficient
-- ones, the identity, rotations, zero), checks reconstruction U S V^T == A,
-- orthogonality and det +1 of U and V, diagonal S sorted by magnitude;
-- R S == A with R a rotation and S symmetric. All checks are computed here in
-- plain Lua from the fields.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 200
math.randomseed(3)

local linref = require "linref"
local matmul, transpose, det = linref.matmul, linref.transpose, linref.det
local function maxdiff(p, q)
  local d = 0
  for i = 1, #p do for j = 1, #p[1] do d = math.max(d, math.abs(p[i][j] - q[i][j])) end end
  return d
end
local function eye(n)
  local r = {}
  for i = 1, n do r[i] = {} for j = 1, n do r[i][j] = i == j and 1 or 0 end end
  return r
end

local function random_matrix(n, i)
  local m = {}
  for r = 1, n do m[r] = {} for c = 1, n do m[r][c] = math.random() * 2 - 1 end end
  if i % 10 == 0 then                          -- rank deficient: two equal rows
    for c = 1, n do m[n][c] = m[1][c] end
  elseif i % 10 == 1 then                      -- diagonal (already decomposed)
    for r = 1, n do for c = 1, n do if r ~= c then m[r][c] = 0 end end end
  elseif i % 10 == 2 then                      -- near the identity (deformation gradients)
    for r = 1, n do for c = 1, n do m[r][c] = m[r][c] * 0.01 + (r == c and 1 or 0) end end
  elseif i % 10 == 3 then                      -- exactly the identity, or a multiple of it
    for r = 1, n do for c = 1, n do m[r][c] = (r == c) and (i % 20 == 3 and 1 or -0.5) or 0 end end
  elseif i % 10 == 4 then                      -- a rotation (all singular values 1)
    local a, b = math.random() * 6, math.random() * 6
    if n == 2 then m = { { math.cos(a), -math.sin(a) }, { math.sin(a), math.cos(a) } }
    else
      local ca, sa, cb, sb = math.cos(a), math.sin(a), math.cos(b), math.sin(b)
      m = matmul({ { ca, -sa, 0 }, { sa, ca, 0 }, { 0, 0, 1 } }, { { 1, 0, 0 }, { 0, cb, -sb }, { 0, sb, cb } })
    end
  elseif i % 10 == 5 then                      -- zero
    for r = 1, n do for c = 1, n do m[r][c] = 0 end end
  end
  return m
end

local function run(n, dtype, tol)
  local T = lt.mat(n, n, dtype)
  local a, u, s, v, r, p = lt.field(T, N), lt.field(T, N), lt.field(T, N), lt.field(T, N), lt.field(T, N),
    lt.field(T, N)
  local A = {}
  for i = 0, N - 1 do A[i] = random_matrix(n, i); a[i] = A[i] end
  local k = lt.kernel(function()
    for i in lt.ndrange(N) do
      local U, S, V = lt.svd(a[i])
      u[i], s[i], v[i] = U, S, V
      local R, P = lt.polar_decompose(a[i])
      r[i], p[i] = R, P
    end
  end)
  k()
  local label = n .. "x" .. n .. " " .. dtype.name
  local worst = 0
  for i = 0, N - 1 do
    local Ai, U, S, V, R, P = A[i], u[i], s[i], v[i], r[i], p[i]
    local errs = {
      recon = maxdiff(matmul(matmul(U, S), transpose(V)), Ai),
      UtU = maxdiff(matmul(transpose(U), U), eye(n)),
      VtV = maxdiff(matmul(transpose(V), V), eye(n)),
      detU = math.abs(det(U) - 1), detV = math.abs(det(V) - 1),
      polar = maxdiff(matmul(R, P), Ai),
      RtR = maxdiff(matmul(transpose(R), R), eye(n)),
      detR = math.abs(det(R) - 1),
      Psym = maxdiff(P, transpose(P)),
    }
    local offdiag = 0
    for x = 1, n do for y = 1, n do if x ~= y then offdiag = math.max(offdiag, math.abs(S[x][y])) end end end
    errs.offdiag = offdiag
    for x = 1, n - 1 do
      if math.abs(S[x][x]) < math.abs(S[x + 1][x + 1]) - tol then
        C.fail(("%s #%d: singular values not sorted: %g < %g"):format(label, i, S[x][x], S[x + 1][x + 1]))
      end
    end
    for x = 1, n - 1 do
      if S[x][x] < -tol then C.fail(("%s #%d: sigma %d is negative (%g)"):format(label, i, x - 1, S[x][x])) end
    end
    for what, e in pairs(errs) do
      worst = math.max(worst, e)
      if not (e <= tol) then C.fail(("%s #%d: %s error %g > %g"):format(label, i, what, e, tol)) end
    end
    -- the sign of the last singular value is the sign of det(A)
    local d = det(Ai)
    if math.abs(d) > 1e-3 and (d > 0) ~= (S[n][n] > 0) then
      C.fail(("%s #%d: sign of the last singular value %g against det %g"):format(label, i, S[n][n], d))
    end
  end
  return worst
end

print(("svd/polar worst errors: 2x2 f32 %.2g, 2x2 f64 %.2g, 3x3 f32 %.2g, 3x3 f64 %.2g"):format(
  run(2, lt.f32, 2e-5), run(2, lt.f64, 1e-12), run(3, lt.f32, 5e-5), run(3, lt.f64, 1e-10)))

-- Lua scope: the same functions on numbers
local U, S, V = lt.svd(lt.mat2(3, 1, 1, 2))
local back = U:mul(S):mul(V:transpose())
C.check("Lua-scope svd", math.abs(back[0][1] - 1) < 1e-5, true)

C.finish("composite_svd")
