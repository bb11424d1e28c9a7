-- Lua numbers in kernels (docs/arithmetic.md, "Constants"): lt.T(v) is a
-- value of type T also when v is a Lua number, so it declares typed locals;
-- a Lua float next to a float kernel value takes that value's type (exact
-- double next to an f64, rounded to f32 next to an f32); alone, or next to
-- integers only, it is a default_fp constant. References are plain Lua.
local lt = require "lattice"
lt.init { threads = 2 }
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- typed locals
local shl = lt.kernel(function(n) local a = lt.i64(1); a = a << n; return a end, { n = lt.i32 })
C.check("i64 local << 40", shl(40), 1 << 40)
C.check("i64 local << 62", shl(62), 1 << 62)
local wide = lt.kernel(function() local acc = lt.f64(0); acc = acc + 1e-10; acc = acc + 1; return acc end)
C.check("f64 local keeps 1e-10", wide(), 1 + 1e-10)
local narrow = lt.kernel(function() local acc = lt.f32(0); acc = acc + 1e-10; acc = acc + 1; return acc end)
C.check("f32 local rounds", narrow(), 1.0)
local u8 = lt.kernel(function() local b = lt.u8(250); b = b + lt.u8(10); return b end)
C.check("u8 local wraps", u8(), (250 + 10) % 256)
local neg0 = lt.kernel(function() return 1 / lt.f64(-0.0) end)
C.check("lt.f64(-0.0) keeps its sign", neg0(), -math.huge)
local conv = lt.kernel(function() return lt.i32(3.9) + lt.i32(-3.9) * 10 end)
C.check("lt.i32 of Lua floats truncates", conv(), 3 + (-3) * 10)

-- constants meet typed operands
local X = lt.field(lt.f64, 8)
local Y = lt.field(lt.f32, 8)
local alpha = 0.2                                   -- captured: a compile-time constant
local k = lt.kernel(function(x, y)
  X[0] = x * 0.1
  X[1] = alpha * x
  X[2] = x - 1e-9
  X[3] = lt.max(x, 0.3)
  X[4] = (x > 0.1) and 1 or 0
  X[5] = x / 3                                      -- an integer constant converts exactly
  Y[0] = y * 0.1
  Y[1] = 0.1 + y
  X[6] = 1 / 3                                      -- stored to an f64 field: converted exactly
  local h = 0.1                                     -- a local from a Lua float: default_fp
  X[7] = h
end, { x = lt.f64, y = lt.f32 })
k(0.7, 0.7)
C.check("f64 * 0.1", X[0], 0.7 * 0.1)
C.check("captured alpha", X[1], 0.2 * 0.7)
C.check("f64 - 1e-9", X[2], 0.7 - 1e-9)
C.check("lt.max(f64, 0.3)", X[3], 0.7)
C.check("f64 compared with 0.1", X[4], 1.0)
C.check("f64 / 3", X[5], 0.7 / 3)
C.check("f32 * 0.1", Y[0], f32(f32(0.7) * f32(0.1)))
C.check("0.1 + f32", Y[1], f32(f32(0.1) + f32(0.7)))
C.check("1/3 to an f64 field", X[6], 1 / 3)
local third = lt.kernel(function() return 1 / 3 end)   -- no typed operand: default_fp (f32)
C.check("return 1/3", third(), f32(1 / 3))
C.check("local h = 0.1", X[7], f32(0.1))
k(0.1, 0.1)
C.check("0.1 > 0.1 is false", X[4], 0.0)

-- the issue's simulation: an f64 step with captured constants stays f64
local dt, g = 1e-4, 9.81
local step = lt.kernel(function(v) for _ = 1, 1 do X[0] = v - dt * g end end, { v = lt.f64 })
step(1.0)
C.check("f64 step", X[0], 1.0 - 1e-4 * 9.81)

C.finish("typed_constants")
