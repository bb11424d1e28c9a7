-- lt.ndarray: Lua-scope access against plain Lua tables, kernels over arrays
-- of two shapes sharing one compiled kernel, several element types and
-- dimensions, atomics on elements, and the errors a user can cause.
local lt = require "lattice"
lt.init { threads = 4 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

-- ---- Lua scope ---------------------------------------------------------------------------

local a = lt.ndarray(lt.f32, { 3, 4 })
check("shape", table.concat(a.shape, ","), "3,4")
check("ndim", a.ndim, 2)
check("size", a.size, 12)
check("#a", #a, 3)
check("dtype", a.dtype, lt.f32)
check("zero-filled", a[2][3], 0.0)
for i = 0, 2 do for j = 0, 3 do a[i][j] = i * 10 + j + 0.5 end end
check("a[1][2]", a[1][2], 12.5)
local t = a:to_table()
check("to_table 1-based", t[2][3], 12.5)
check("to_table rows", #t, 3)
check("to_table cols", #t[1], 4)
a:fill(2)
check("fill", a[2][1], 2.0)
a[0][0] = 0.1
check("f32 rounding", a[0][0], lt.f32(0.1))

local b = lt.ndarray(lt.i32, { 2, 3 }, { { 1, 2, 3 }, { 4, 5, 6 } })
check("from values", b[1][2], 6)
local c = lt.ndarray_from(lt.i16, { { 1, -2 }, { 3, 40000 } })
check("ndarray_from shape", table.concat(c.shape, ","), "2,2")
check("i16 wraps", c[1][1], 40000 - 65536)
check("negative", c[0][1], -2)
local v = lt.ndarray(lt.u8, 5)
v[4] = 300
check("1-D u8 wraps", v[4], 44)
check("1-D length", #v, 5)
c:from_table({ { 7, 8 }, { 9, 10 } })
check("from_table", c[1][0], 9)

check_error("index out of range", function() return a[3][0] end,
  "index 3 out of range for axis 0 of an ndarray with shape (3, 4)")
check_error("negative index", function() a[0][-1] = 1 end,
  "index -1 out of range for axis 1 of an ndarray with shape (3, 4)")
check_error("float into i32", function() b[0][0] = 1.5 end, "cannot write the float 1.5 to an ndarray of i32")
check_error("string value", function() b[0][0] = "x" end, "cannot write a string to an ndarray of i32")
check_error("too few indices", function() return a[1] + 1 end, "the ndarray has 2 dimensions, got 1 indices")
check_error("bad shape", function() lt.ndarray(lt.f32, { 3, 0 }) end, "every extent must be an integer > 0")
check_error("bad values", function() lt.ndarray(lt.f32, { 2, 2 }, { { 1, 2 } }) end,
  "lt.ndarray: t[2] is missing (the ndarray has shape (2, 2))")
check_error("bad member", function() return a.foo end, "ndarrays have no member 'foo'")

-- ---- kernels: two shapes, one compiled kernel ------------------------------------------------

local scale = lt.kernel(function(x, y, s)
  for i, j in lt.ndrange(x.shape[1], x.shape[2]) do
    y[i][j] = x[i][j] * s + i - j
  end
end, { x = lt.ndarray_type(lt.f32, 2), y = lt.ndarray_type(lt.f32, 2), s = lt.f32 })

local function run_scale(n, m)
  local x, y = lt.ndarray(lt.f32, { n, m }), lt.ndarray(lt.f32, { n, m })
  local ref = {}
  for i = 0, n - 1 do
    ref[i] = {}
    for j = 0, m - 1 do
      x[i][j] = (i * 7 + j * 3) % 11 - 5
      ref[i][j] = lt.f32(lt.f32(x[i][j] * lt.f32(1.5)) + i - j)
    end
  end
  scale(x, y, 1.5)
  local bad = 0
  for i = 0, n - 1 do for j = 0, m - 1 do if y[i][j] ~= ref[i][j] then bad = bad + 1 end end end
  check(("scale %dx%d mismatches"):format(n, m), bad, 0)
end
run_scale(7, 5)
run_scale(64, 33)
run_scale(1, 1000)
check("one compiled kernel for three shapes", #scale:signatures(), 1)
check("signature", scale:signatures()[1], "ndarray(f32,2),ndarray(f32,2),f32")

-- an unannotated argument takes the ndarray's type; #x is x.shape[1]
local sum_rows = lt.kernel(function(x, out)
  for i in lt.ndrange(#x) do
    local s = x[i][0]                       -- an i64 local
    for j = 1, x.shape[2] - 1 do s = s + x[i][j] end
    out[i] = s
  end
end)
local m = lt.ndarray(lt.i64, { 50, 9 })
local rows = lt.ndarray(lt.i64, 50)
local ref_rows = {}
for i = 0, 49 do
  ref_rows[i] = 0
  for j = 0, 8 do m[i][j] = i * 1000000007 + j; ref_rows[i] = ref_rows[i] + m[i][j] end
end
sum_rows(m, rows)
local bad = 0
for i = 0, 49 do if rows[i] ~= ref_rows[i] then bad = bad + 1 end end
check("row sums (i64, unannotated)", bad, 0)

-- 3-D f64 with fields in the same kernel
local f = lt.field(lt.f64, { 4, 5, 6 })
local cube = lt.ndarray(lt.f64, { 4, 5, 6 })
for i = 0, 3 do for j = 0, 4 do for k = 0, 5 do cube[i][j][k] = i + j * 0.5 + k * 0.25 end end end
local copy3 = lt.kernel(function(src)
  for i, j, k in lt.ndrange(src.shape[1], src.shape[2], src.shape[3]) do
    f[i][j][k] = src[i][j][k] * 2
    src[i][j][k] = -src[i][j][k]
  end
end)
copy3(cube)
check("3-D into a field", f[3][4][5], (3 + 2 + 1.25) * 2)
check("3-D written back", cube[1][2][3], -(1 + 1 + 0.75))

-- atomics on ndarray elements: a histogram against a Lua count
local N, BINS = 20000, 16
local data = lt.ndarray(lt.i32, N)
local hist = lt.ndarray(lt.i32, BINS)
local ref_hist = {}
for i = 0, BINS - 1 do ref_hist[i] = 0 end
local seed = 99
for i = 0, N - 1 do
  seed = (seed * 1103515245 + 12345) % 2147483648
  data[i] = seed % 1000
  local bin = data[i] % BINS
  ref_hist[bin] = ref_hist[bin] + 1
end
local histogram = lt.kernel(function(d, h)
  for i in lt.ndrange(d.shape[1]) do
    lt.atomic_add(h[d[i] % h.shape[1]], 1)
  end
end)
histogram(data, hist)
bad = 0
for i = 0, BINS - 1 do if hist[i] ~= ref_hist[i] then bad = bad + 1 end end
check("histogram with atomics", bad, 0)

-- lt.ndrange(a.shape): the extents of every axis, in kernels and in Lua scope
local ramp = lt.kernel(function(x)
  for i, j, k in lt.ndrange(x.shape) do x[i][j][k] = i * 100 + j * 10 + k end
end)
local r3 = lt.ndarray(lt.i32, { 2, 3, 4 })
ramp(r3)
bad = 0
local visited = 0
for i, j, k in lt.ndrange(r3.shape) do
  visited = visited + 1
  if r3[i][j][k] ~= i * 100 + j * 10 + k then bad = bad + 1 end
end
check("lt.ndrange(a.shape) in a kernel", bad, 0)
check("lt.ndrange(a.shape) in Lua scope", visited, 24)

-- a serial kernel returning an element
local get = lt.kernel(function(x, i, j) return x[i][j] end, { x = lt.ndarray_type(lt.i32, 2), i = lt.i32 })
check("kernel result", get(b, 1, 0), 4)

-- ---- argument errors --------------------------------------------------------------------------

check_error("number for an ndarray", function() scale(1, a, 1) end,
  "argument 'x' must be an ndarray of f32 with 2 dimensions, got a number")
check_error("wrong element type", function() scale(b, a, 1) end,
  "argument 'x' must be an ndarray of f32 with 2 dimensions, got ndarray i32 (2, 3)")
check_error("wrong dimensions", function() scale(lt.ndarray(lt.f32, 4), a, 1) end,
  "argument 'x' must be an ndarray of f32 with 2 dimensions, got ndarray f32 (4)")
check_error("ndarray for a number", function() get(b, a, 0) end, "argument 'i' must be a number")
check_error("bad annotation", function() lt.ndarray_type(lt.f32, 9) end, "from 1 to 8")

-- memory is freed with the object (run under ASan: no leak)
for _ = 1, 20 do
  local big = lt.ndarray(lt.f64, { 512, 512 })
  big[511][511] = 1
end
collectgarbage()

T.finish("ndarray")
