-- Kernel objects: typed and untyped arguments, return values, the signature
-- cache, metaprogramming (Lua loops over Lua tables unroll; captured values
-- are compile-time constants), helper functions, argument errors.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check_error = T.check_error
-- values and their number subtypes (integer or float) must both match
local function check(what, got, want)
  if got ~= want or math.type(got) ~= math.type(want) then
    T.fail(("%s: got %s (%s), want %s (%s)"):format(what, tostring(got), math.type(got),
      tostring(want), math.type(want)))
  end
end
local function f32(v) return (string.unpack("f", string.pack("f", v))) end

-- annotated arguments convert; the return value comes back with its type
local axpy = lt.kernel(function(a, x, y) return a * x + y end, { a = lt.f64, x = lt.i32, y = lt.i32 })
check("f64 result", axpy(0.5, 3, 4), 5.5)
check("integral float accepted for i32", axpy(2, 3.0, 1), 7.0)
local imul = lt.kernel(function(a, b) return a * b end, { a = lt.i64, b = lt.i64 })
check("i64 result", imul(1 << 40, 3), 3 << 40)
local wrap8 = lt.kernel(function(a) return a + a end, { a = lt.i8 })
check("i8 result wraps", wrap8(100), -56)
local cmp = lt.kernel(function(a) return a > 3 end)
check("boolean result", cmp(5), true)
check("boolean result false", cmp(2), false)

-- unannotated arguments take their type from the value: integer -> i32, float -> f32
local half = lt.kernel(function(v) return v / 2 end)
check("int arg", half(3), 1.5)
check("float arg", half(0.1), f32(f32(0.1) / 2))
local idiv = lt.kernel(function(v) return v // 2 end)
check("int arg keeps integer ops", idiv(7), 3)
check("float arg floors", idiv(7.0), 3.0)

-- the cache: one compile per signature; captured values are constants of that compile
local scale = 2
local scaled = lt.kernel(function(v) return v * scale end)
check("captured constant", scaled(10), 20)
scale = 3
check("cached signature keeps its constant", scaled(10), 20)
check("new signature sees the new value", scaled(10.0), 30.0)
scaled(11)
scaled(12.5)
check("one compile per signature", table.concat(scaled:signatures(), " "), "f32 i32")

-- metaprogramming: a Lua loop over a Lua table unrolls into straight-line IR
local weights = { 0.25, 0.5, 0.25 }
local src = lt.field(lt.f32, 16)
local dst = lt.field(lt.f32, 16)
for i = 0, 15 do src[i] = i * i end
local blur = lt.kernel(function()
  for i = 1, 14 do
    local acc = 0.0
    for k, w in ipairs(weights) do acc = acc + w * src[i + k - 2] end
    dst[i] = acc
  end
end)
blur()
for i = 1, 14 do
  local want = f32(f32(f32(0.25 * (i - 1) ^ 2) + f32(0.5 * i * i)) + f32(0.25 * (i + 1) ^ 2))
  check("blur " .. i, dst[i], want)
end
-- one range_for (the outer loop) in the IR printed after each pass: the inner loop left none
local blur_ir = blur:ir { all = true }
check("unrolled loop leaves no IR loop", select(2, blur_ir:gsub("range_for", "")), select(2, blur_ir:gsub("# after", "")))

-- helpers: functions defined inside the kernel are rewritten (control flow works);
-- plain Lua helpers outside run at trace time (arithmetic)
local function sq(v) return v * v end
local helpers = lt.kernel(function(n)
  local function clamp(v, lo, hi)
    local r = v                     -- (return under a kernel condition is not supported)
    if v < lo then r = lo elseif v > hi then r = hi end
    return r
  end
  local s = 0
  for i = 0, n - 1 do s = s + clamp(sq(i), 2, 50) end
  return s
end)
local want = 0
for i = 0, 9 do want = want + math.max(2, math.min(50, i * i)) end
check("helpers", helpers(10), want)

-- lt.func: a helper defined outside whose comparisons and control flow are traced
local sign = lt.func(function(v)
  local r = 0
  if v > 0 then r = 1 elseif v < 0 then r = -1 end
  return r
end)
local signs = lt.kernel(function(a, b) return sign(a) * 10 + sign(b) end)
check("lt.func in a kernel", signs(5, -3), 9)
check("lt.func in a kernel (2)", signs(0, 7), 1)
check("lt.func called from Lua runs as Lua", sign(-2), -1)
local bump = lt.func(function(v) v = v + 1; return v end)
local byvalue = lt.kernel(function()
  local c = 5
  local d = bump(c)               -- parameters are copies: c stays 5
  return c * 100 + d
end)
check("lt.func passes by value", byvalue(), 506)

-- early returns in lt.func helpers: under conditions and from nested loops
local clamp = lt.func(function(v, lo, hi)
  if v < lo then return lo end
  if v > hi then return hi end
  return v
end)
local find = lt.func(function(n, target)
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      if i * n + j == target then return i * 100 + j end
    end
  end
  return -1
end)
local use = lt.kernel(function(a, t)
  local r = 0
  for _ = 1, 1 do r = clamp(a, 2, 50) * 1000000 + find(5, t) end   -- loops in find are serial
  return r
end)
for _, a in ipairs { -5, 2, 30, 77 } do
  for _, t in ipairs { 0, 7, 24, 25 } do
    local want = clamp.fn(a, 2, 50) * 1000000 + find.fn(5, t)     -- the plain Lua functions
    check(("early returns (%d, %d)"):format(a, t), use(a, t), want)
  end
end

-- and/or/not on Lua values keep Lua's meaning (defaults, guards) inside kernels
local opts = { m = 3 }
local defaults = lt.kernel(function(a)
  local n = opts.n or 10
  local m = opts.m and opts.m * 2
  local r = 0
  if not opts.n and a > 0 then r = n + m end
  return r
end)
check("Lua idioms in kernels", defaults(1), 16)
check("Lua idioms in kernels (2)", defaults(-1), 0)

-- static tables of constants, lt.static unrolling
local coeffs = { 3, -1, 4 }
local poly = lt.kernel(function(x)
  local r = 0
  for i in lt.static(1, 3) do r = r * x + coeffs[i] end
  return r
end)
check("horner", poly(2), (3 * 2 - 1) * 2 + 4)

-- argument errors name the kernel and the argument
check_error("too many args", function() axpy(1, 2, 3, 4) end, "kernel axpy expects 3 arguments (a, x, y), got 4")
check_error("too few args", function() half() end, "kernel half expects 1 argument (v), got 0")
check_error("table for f64", function() axpy({}, 1, 2) end, "kernel axpy: argument 'a' must be a number (f64), got a table")
check_error("fraction for i32", function() axpy(1, 1.5, 2) end, "argument 'x' is i32 and needs an integer")
check_error("unannotated integer too large", function() half(1 << 40) end, "does not fit in i32")
check_error("bad annotation", function() lt.kernel(function(a) end, { b = lt.f32 }) end, "no argument named 'b'")
check_error("kernel calls kernel", function()
  local inner = lt.kernel(function() end)
  local outer = lt.kernel(function() inner() end)
  outer()
end, "a kernel cannot call another kernel")

-- a failing trace leaves nothing behind: the next kernel works
local broken = lt.kernel(function()
  local q = undefined_name + 1
end)
check_error("trace error", function() broken() end, "unknown name 'undefined_name'")
check("after a trace error", half(4), 2.0)

T.finish("kernel")
print("kernels: ok")
