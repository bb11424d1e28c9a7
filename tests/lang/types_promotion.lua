-- Promotion rules, result types and conversions (docs/arithmetic.md). Result
-- types are observed through values: a sum that wraps at 8 bits was computed
-- in i8; written into an i64/f64 field, the value shows the type.
local lt = require "lattice"
lt.init {}

local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local failures = 0
local function check(what, got, want)
  local ok = got == want or (got ~= got and want ~= want)
  if ok and math.type(got) ~= math.type(want) then ok = false end
  if not ok then
    failures = failures + 1
    print(("FAIL %s: got %s (%s), want %s (%s)"):format(what, tostring(got), math.type(got), tostring(want),
      math.type(want)))
  end
end

local I = lt.field(lt.i64, 16)
local F = lt.field(lt.f64, 16)

-- integer promotion: the wider type; at equal width unsigned wins; no widening to 32 bits
local ints = lt.kernel(function(a8, b8, c16, d32, e64, u8v, u16v, u32v, s16)
  I[0] = a8 + b8          -- i8 + i8: wraps at 8 bits
  I[1] = a8 + c16         -- i8 + i16 -> i16
  I[2] = d32 + u32v       -- i32 + u32 -> u32
  I[3] = d32 + e64        -- i32 + i64 -> i64
  I[4] = u8v + c16        -- u8 + i16 -> i16
  I[5] = s16 + u16v       -- i16 + u16 -> u16 (equal width: unsigned)
  I[6] = a8 + 1           -- a Lua integer is an i32 constant: no wrap at 8 bits
  I[7] = a8 * b8          -- wraps at 8 bits
  I[8] = u8v - 1          -- u8 - i32 -> i32: no wrap
  I[9] = u8v - u8v - u8v  -- u8: wraps to 256 - 255
end, { a8 = lt.i8, b8 = lt.i8, c16 = lt.i16, d32 = lt.i32, e64 = lt.i64, u8v = lt.u8, u16v = lt.u16,
  u32v = lt.u32, s16 = lt.i16 })
ints(100, 100, 32700, -1, 2147483647, 255, 0, 0, -1)
check("i8 + i8", I[0], -56)
check("i8 + i16", I[1], -32736)
check("i32 + u32", I[2], 4294967295)
check("i32 + i64", I[3], 2147483646)
check("u8 + i16", I[4], 32955 - 65536)
check("i16 + u16", I[5], 65535)
check("i8 + 1", I[6], 101)
check("i8 * i8", I[7], (100 * 100) % 256 - 256 * (((100 * 100) % 256) >= 128 and 1 or 0))
check("u8 - 1", I[8], 254)
check("u8 - u8 - u8", I[9], 1)

-- floats: the wider float; an integer counts as nothing; / and ^ are float
local floats = lt.kernel(function(big, x32, x64, i, j, l)
  F[0] = big + x32        -- i64 + f32 -> f32
  F[1] = x32 + x64        -- f32 + f64 -> f64
  F[2] = i / j            -- i32 / i32 -> f32
  F[3] = l / j            -- i64 / i32 -> f64
  F[4] = i ^ j            -- i32 ^ i32 -> f32
  F[5] = i + 0.1          -- a Lua float next to an integer is a default_fp (f32) constant
  F[6] = x64 + 0.1        -- next to an f64 it is the exact double
  F[7] = i // j           -- integer floor division stays integer
  F[8] = x32 * 3          -- f32 * i32 constant -> f32
end, { big = lt.i64, x32 = lt.f32, x64 = lt.f64, i = lt.i32, j = lt.i32, l = lt.i64 })
floats(16777217, 0.1, 0.0, 1, 3, 1)
check("i64 + f32", F[0], f32(f32(16777217) + f32(0.1)))  -- the i64 converts to f32 first
check("f32 + f64", F[1], f32(0.1))
check("i32 / i32", F[2], f32(1 / 3))
check("i64 / i32", F[3], 1 / 3)
check("i32 ^ i32", F[4], 1.0)
check("i32 + 0.1", F[5], f32(1 + f32(0.1)))
check("f64 + 0.1", F[6], 0.1)
check("i32 // i32", F[7], 0.0)
check("f32 * 3", F[8], f32(f32(0.1) * 3))
floats(0, 0.0, 0.0, 2, -2, 7)
check("i32 ^ negative", F[4], 0.25)
check("i64 / i32 (2)", F[3], -3.5)
check("i32 // negative", F[7], -1.0)

-- explicit conversions: float -> int truncates and saturates, NaN -> 0; int -> int wraps
local conv = lt.kernel(function(x, n)
  I[0] = lt.i32(x)
  I[1] = lt.cast(x, lt.u8)
  I[2] = lt.i8(n)
  I[3] = lt.u16(n)
  I[4] = lt.i64(x)
  F[0] = lt.f32(n)
  F[1] = lt.f32(x)
end, { x = lt.f64, n = lt.i64 })
local cases = { 3e9, -3e9, 0.0 / 0.0, -2.7, 2.7, 300.7, -1.5, 1e30, 255.9 }
for _, x in ipairs(cases) do
  for _, n in ipairs { 300, -1, 16777217, 65537, 1 << 40 } do
    conv(x, n)
    check(("lt.i32(%s)"):format(x), I[0], lt.i32(x))
    check(("lt.u8(%s)"):format(x), I[1], lt.u8(x))
    check(("lt.i8(%d)"):format(n), I[2], lt.i8(n))
    check(("lt.u16(%d)"):format(n), I[3], lt.u16(n))
    check(("lt.i64(%s)"):format(x), I[4], lt.i64(x))
    check(("lt.f32(%d)"):format(n), F[0], lt.f32(n))
    check(("lt.f32(%s)"):format(x), F[1], lt.f32(x))
  end
end
-- the Lua-scope conversions themselves, against hand-derived values
check("Lua lt.i32(3e9)", lt.i32(3e9), 2147483647)
check("Lua lt.i32(-3e9)", lt.i32(-3e9), -2147483648)
check("Lua lt.i32(nan)", lt.i32(0.0 / 0.0), 0)
check("Lua lt.u8(-1.5)", lt.u8(-1.5), 0)
check("Lua lt.u8(300.7)", lt.u8(300.7), 255)
check("Lua lt.i8(300)", lt.i8(300), 44)
check("Lua lt.i32(-2.7)", lt.i32(-2.7), -2)
check("Lua lt.f32(16777217)", lt.f32(16777217), 16777216.0)

-- implicit conversions on assignment: int -> narrower int field wraps, int -> float rounds,
-- f64 -> f32 rounds, an int assigned to a float local converts
local small = lt.field(lt.i8, 2)
local single = lt.field(lt.f32, 2)
local imp = lt.kernel(function(n, d)
  small[0] = n
  single[0] = n
  single[1] = d
  local v = 0.5
  v = n
  F[0] = v
end, { n = lt.i32, d = lt.f64 })
imp(300, 0.1)
check("i32 -> i8 field", small[0], 44)
check("i32 -> f32 field", single[0], 300.0)
check("f64 -> f32 field", single[1], f32(0.1))
check("i32 -> f32 local", F[0], 300.0)
imp(16777217, 1e300)
check("i32 -> f32 field rounds", single[0], 16777216.0)
check("f64 -> f32 overflow", single[1], math.huge)

-- default_fp / default_ip change the type of Lua constants
lt.init { default_fp = lt.f64, default_ip = lt.i64 }
local G = lt.field(lt.f64, 2)
local J = lt.field(lt.i64, 1)
local d = lt.kernel(function(x) G[0] = x + 0.1; J[0] = x * 0 + 2147483647 + 1 end, { x = lt.i64 })
d(1)
check("default_fp f64", G[0], 1.1)
check("default_ip i64", J[0], 2147483648)

if failures > 0 then error(failures .. " promotion checks failed") end
print("types_promotion: ok")
