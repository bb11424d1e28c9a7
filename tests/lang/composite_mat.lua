-- Matrices in kernels: product (matrix x matrix, matrix x vector, vector x
-- matrix), transpose, trace, determinant, inverse, outer product, identity,
-- element-wise operators, row and element assignment, nested-table Lua-scope
-- access; compared with plain Lua references on random inputs (f64).
local lt = require "lattice"
lt.init { default_fp = lt.f64 }

package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 32
local M2, M3 = lt.dmat2, lt.dmat3
local a2, b2 = lt.field(M2, N), lt.field(M2, N)
local a3, b3 = lt.field(M3, N), lt.field(M3, N)
local v3 = lt.field(lt.dvec3, N)
local o2 = {}
for k = 1, 4 do o2[k] = lt.field(M2, N) end
local o3 = {}
for k = 1, 8 do o3[k] = lt.field(M3, N) end
local ov = {}
for k = 1, 2 do ov[k] = lt.field(lt.dvec3, N) end
local sc = lt.field(lt.f64, { N, 4 })

math.randomseed(7)
local function rnd_mat(n)
  local m = {}
  for i = 1, n do
    m[i] = {}
    for j = 1, n do m[i][j] = math.random() * 4 - 2 end
  end
  return m
end
local A2, B2, A3, B3, V = {}, {}, {}, {}, {}
for i = 0, N - 1 do
  A2[i], B2[i], A3[i], B3[i] = rnd_mat(2), rnd_mat(2), rnd_mat(3), rnd_mat(3)
  V[i] = { math.random(), math.random(), math.random() }
  a2[i], b2[i], a3[i], b3[i], v3[i] = A2[i], B2[i], A3[i], B3[i], V[i]
end

local k = lt.kernel(function()
  for i in lt.ndrange(N) do
    local x, y = a2[i], b2[i]
    o2[1][i] = x:mul(y)
    o2[2][i] = x:inverse()
    o2[3][i] = x * y + 1                -- element-wise
    local m = x:transpose()
    m[0][1] = 5
    m[1] = lt.dvec2(7, m[1][1])
    o2[4][i] = m
    local p, q = a3[i], b3[i]
    o3[1][i] = p:mul(q)
    o3[2][i] = lt.matmul(p, q:transpose())
    o3[3][i] = p:inverse()
    o3[4][i] = p:inverse():mul(p)        -- ~ identity
    o3[5][i] = v3[i]:outer(v3[i])
    o3[6][i] = lt.dmat3:identity() * 2 - p
    o3[7][i] = -p / 4
    o3[8][i] = lt.dmat3(p[2], p[1], p[0])   -- rows from vectors
    ov[1][i] = p:mul(v3[i])
    ov[2][i] = v3[i]:mul(p)
    sc[i][0] = x:determinant()
    sc[i][1] = p:determinant()
    sc[i][2] = p:trace()
    sc[i][3] = p[1][2] + p[2].x
  end
end)
k()

local linref = require "linref"
local matmul, transpose, det3 = linref.matmul, linref.transpose, linref.det
-- Gauss-Jordan inverse (an independent method from the kernel's adjugate)
local function inverse(m)
  local n = #m
  local a = {}
  for i = 1, n do
    a[i] = {}
    for j = 1, n do a[i][j] = m[i][j] end
    for j = 1, n do a[i][n + j] = (i == j) and 1 or 0 end
  end
  for c = 1, n do
    local p = c
    for r = c + 1, n do if math.abs(a[r][c]) > math.abs(a[p][c]) then p = r end end
    a[c], a[p] = a[p], a[c]
    local d = a[c][c]
    for j = 1, 2 * n do a[c][j] = a[c][j] / d end
    for r = 1, n do
      if r ~= c then
        local f = a[r][c]
        for j = 1, 2 * n do a[r][j] = a[r][j] - f * a[c][j] end
      end
    end
  end
  local r = {}
  for i = 1, n do r[i] = {} for j = 1, n do r[i][j] = a[i][n + j] end end
  return r
end
local function map(p, f)
  local r = {}
  for i = 1, #p do r[i] = {} for j = 1, #p[1] do r[i][j] = f(p[i][j], i, j) end end
  return r
end
local function close(x, y, tol) return math.abs(x - y) <= tol * (1 + math.abs(y)) end
local function check_mat(what, got, want, tol)
  for i = 1, #want do
    for j = 1, #want[1] do
      if not close(got[i][j], want[i][j], tol) then
        C.fail(("%s [%d][%d]: got %.17g, want %.17g"):format(what, i - 1, j - 1, got[i][j], want[i][j]))
        return
      end
    end
  end
end

for i = 0, N - 1 do
  local x, y, p, q, v = A2[i], B2[i], A3[i], B3[i], V[i]
  check_mat("mat2 mul " .. i, o2[1][i], matmul(x, y), 1e-12)
  -- the inverse of a random matrix can be ill-conditioned: compare relative to its size
  check_mat("mat2 inverse " .. i, o2[2][i], inverse(x), 1e-9)
  check_mat("mat2 elementwise " .. i, o2[3][i], map(x, function(e, r, c) return e * y[r][c] + 1 end), 1e-12)
  check_mat("mat2 assignment " .. i, o2[4][i], { { x[1][1], 5 }, { 7, x[2][2] } }, 0)
  check_mat("mat3 mul " .. i, o3[1][i], matmul(p, q), 1e-12)
  check_mat("mat3 matmul transpose " .. i, o3[2][i], matmul(p, transpose(q)), 1e-12)
  check_mat("mat3 inverse " .. i, o3[3][i], inverse(p), 1e-8)
  check_mat("mat3 inverse * m " .. i, o3[4][i], { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, 1e-8)
  check_mat("outer " .. i, o3[5][i], matmul({ { v[1] }, { v[2] }, { v[3] } }, { v }), 1e-12)
  check_mat("identity * 2 - p " .. i, o3[6][i], map(p, function(e, r, c) return (r == c and 2 or 0) - e end), 1e-12)
  check_mat("-p / 4 " .. i, o3[7][i], map(p, function(e) return -e / 4 end), 1e-12)
  check_mat("rows " .. i, o3[8][i], { p[3], p[2], p[1] }, 0)
  check_mat("mat x vec " .. i, { ov[1][i] }, transpose(matmul(p, { { v[1] }, { v[2] }, { v[3] } })), 1e-12)
  check_mat("vec x mat " .. i, { ov[2][i] }, matmul({ v }, p), 1e-12)
  if not close(sc[i][0], x[1][1] * x[2][2] - x[1][2] * x[2][1], 1e-12) then C.fail("det2 " .. i) end
  if not close(sc[i][1], det3(p), 1e-12) then C.fail("det3 " .. i) end
  if not close(sc[i][2], p[1][1] + p[2][2] + p[3][3], 1e-12) then C.fail("trace " .. i) end
  C.check("constant indexing " .. i, sc[i][3], p[2][3] + p[3][1])
end

-- Lua scope: matrices as nested tables, fill, to_table
local m = lt.field(lt.mat2, { 2, 3 })
m[1][2] = { { 1, 2 }, { 3, 4 } }
local r = m[1][2]
C.check("read back [0][1]", r[1][2], 2.0)
C.check("read back [1][0]", r[2][1], 3.0)
m:fill(0.5)
C.check("fill scalar", m[0][0][2][2], 0.5)
m:fill(lt.mat2(1, 2, 3, 4))
local t = m:to_table()
C.check("to_table shape", #t .. "x" .. #t[1], "2x3")
C.check("to_table element", t[2][3][2][1], 3.0)
C.check("shape", table.concat(m.shape, ","), "2,3")
C.check("dtype", tostring(m.dtype), "lt.mat2")
C.check_error("wrong count from Lua", function() m[0][0] = { 1, 2, 3 } end, "cannot assign 3 components")
C.check_error("a number for a matrix", function() m[0][0] = 1 end, "cannot assign a scalar")

C.finish("composite_mat")
