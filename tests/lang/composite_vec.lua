-- Vectors in kernels: element-wise operators with scalar broadcast, dot,
-- cross, norms, swizzles, constant indexing, component assignment and
-- element-wise builtins, each compared with a plain Lua reference computed
-- here from the same random inputs (f64 fields, so tolerances are tight).
local lt = require "lattice"
lt.init { default_fp = lt.f64 }

package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 64
local V3 = lt.dvec3
local a, b = lt.field(V3, N), lt.field(V3, N)
local out = {}
local NOUT = 20
for k = 1, NOUT do out[k] = lt.field(V3, N) end
local sc = lt.field(lt.f64, { N, 8 })

math.randomseed(42)
local A, B = {}, {}
for i = 0, N - 1 do
  A[i] = { math.random() * 4 - 2, math.random() * 4 - 2, math.random() * 4 - 2 }
  B[i] = { math.random() * 4 + 0.5, math.random() * 4 - 2, math.random() * 4 - 2 }
  a[i] = A[i]
  b[i] = B[i]
end

local k = lt.kernel(function(s)
  for i in lt.ndrange(N) do
    local x, y = a[i], b[i]
    out[1][i] = x + y
    out[2][i] = x - y
    out[3][i] = x * y
    out[4][i] = x / y
    out[5][i] = x * s          -- broadcast, both sides
    out[6][i] = 2 - x
    out[7][i] = -x
    out[8][i] = x ^ 2
    out[9][i] = x // y
    out[10][i] = x % y
    out[11][i] = x:cross(y)
    out[12][i] = x:normalized()
    out[13][i] = lt.vec3(x.z, x.x, x.y)  -- swizzle components, constructor
    out[14][i] = lt.dvec3(x.zy, x[0])    -- a two-component swizzle and constant indexing
    local v = x                          -- a composite local: copies
    v.x = 10
    v[2] = v[2] + 1
    v.xy = v.yx
    out[15][i] = v
    out[16][i] = lt.sqrt(lt.abs(x))
    out[17][i] = lt.max(x, 0)
    out[18][i] = lt.min(x, y)
    out[19][i] = lt.select(x < y, x, y)
    out[20][i] = lt.vec3(s)             -- one scalar fills every component
    sc[i][0] = x:dot(y)
    sc[i][1] = x:norm()
    sc[i][2] = x:norm_sqr()
    sc[i][3] = lt.dot(x, y) + lt.norm(y)
    sc[i][4] = lt.vec2(x.x, x.y):cross(lt.vec2(y.x, y.y))   -- 2-D cross: a scalar
    sc[i][5] = x:sum()
    sc[i][6] = lt.all(x < y) and 1 or 0
    sc[i][7] = lt.any(x > y) and 1 or 0
  end
end, { s = lt.f64 })
k(1.5)

local function map2(p, q, f) return { f(p[1], q[1]), f(p[2], q[2]), f(p[3], q[3]) } end
local function dot(p, q) return p[1] * q[1] + p[2] * q[2] + p[3] * q[3] end
local function f32(x) return (string.unpack("f", string.pack("f", x))) end
local function close(x, y, tol) return math.abs(x - y) <= tol * (1 + math.abs(y)) end

local ref = {}
for i = 0, N - 1 do
  local x, y = A[i], B[i]
  local r = {}
  r[1] = map2(x, y, function(p, q) return p + q end)
  r[2] = map2(x, y, function(p, q) return p - q end)
  r[3] = map2(x, y, function(p, q) return p * q end)
  r[4] = map2(x, y, function(p, q) return p / q end)
  r[5] = map2(x, y, function(p) return p * 1.5 end)
  r[6] = map2(x, y, function(p) return 2 - p end)
  r[7] = map2(x, y, function(p) return -p end)
  r[8] = map2(x, y, function(p) return p ^ 2 end)
  r[9] = map2(x, y, function(p, q) return p // q end)
  r[10] = map2(x, y, function(p, q) return p % q end)
  r[11] = { x[2] * y[3] - x[3] * y[2], x[3] * y[1] - x[1] * y[3], x[1] * y[2] - x[2] * y[1] }
  local n = math.sqrt(dot(x, x))
  r[12] = { x[1] / n, x[2] / n, x[3] / n }
  r[13] = { f32(x[3]), f32(x[1]), f32(x[2]) }     -- lt.vec3 is f32
  r[14] = { x[3], x[2], x[1] }
  r[15] = { x[2], 10, x[3] + 1 }
  r[16] = map2(x, y, function(p) return math.sqrt(math.abs(p)) end)
  r[17] = map2(x, y, function(p) return math.max(p, 0) end)
  r[18] = map2(x, y, function(p, q) return math.min(p, q) end)
  r[19] = map2(x, y, function(p, q) return p < q and p or q end)
  r[20] = { 1.5, 1.5, 1.5 }
  for kk = 1, NOUT do
    local got = out[kk][i]
    for c = 1, 3 do
      if not close(got[c], r[kk][c], 1e-12) then
        C.fail(("out[%d][%d][%d]: got %.17g, want %.17g"):format(kk, i, c - 1, got[c], r[kk][c]))
      end
    end
  end
  local all, any = 1, 0
  for c = 1, 3 do
    if not (x[c] < y[c]) then all = 0 end
    if x[c] > y[c] then any = 1 end
  end
  local want = { dot(x, y), n, dot(x, x), dot(x, y) + math.sqrt(dot(y, y)),
    f32(x[1]) * f32(y[2]) - f32(x[2]) * f32(y[1]), x[1] + x[2] + x[3], all, any }
  for c = 0, 7 do
    local tol = c == 4 and 1e-6 or 1e-12
    if not close(sc[i][c], want[c + 1], tol) then
      C.fail(("sc[%d][%d]: got %.17g, want %.17g"):format(i, c, sc[i][c], want[c + 1]))
    end
  end
end

-- integer vectors: // and % are floored, / gives floats
local ia = lt.field(lt.ivec2, 4)
local io = lt.field(lt.ivec4, 4)
local fo = lt.field(lt.vec2, 4)
ia:fill({ 7, -7 })
local ik = lt.kernel(function()
  for i in lt.ndrange(4) do
    local v = ia[i]
    local d = i + 1
    io[i] = lt.ivec4(v // d, v % d)
    fo[i] = v / 2
  end
end)
ik()
for i = 0, 3 do
  local d = i + 1
  local want = { 7 // d, -7 // d, 7 % d, -7 % d }
  for c = 1, 4 do C.check(("ivec4 %d %d"):format(i, c), io[i][c], want[c]) end
  C.check("ivec2 / 2", fo[i][1], 3.5)
  C.check("ivec2 / 2 (2)", fo[i][2], -3.5)
end

-- vectors in Lua scope work on numbers (0-based indexing, swizzles)
local v = lt.vec3(1, 2, 3)
C.check("Lua-scope v[0]", v[0], 1.0)
C.check("Lua-scope v.z", v.z, 3.0)
C.check("Lua-scope dot", v:dot(lt.vec3(1, 1, 1)), 6.0)
C.check("Lua-scope #v", #v, 3)
local w = v * 2 + 1
C.check("Lua-scope arithmetic", w.y, 5.0)
C.check("lt.vector infers default_fp", tostring(lt.vector { 1.5, 2 }), "dvec2(1.5, 2.0)")
C.check("tostring of a type", tostring(lt.vec(5, lt.i64)), "lt.vec(5, i64)")

C.finish("composite_vec")
