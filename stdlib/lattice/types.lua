-- types.lua -- the scalar type objects (lt.i32, lt.f32, ...) and the conversion
-- rules of docs/arithmetic.md applied to plain Lua values (trace time and Lua
-- scope). Calling a type object converts: lt.i32(x); inside a kernel the
-- tracer turns the same call on a kernel value into an IR cast.
local core = require "lattice.core"

local M = { by_id = {}, by_name = {} }

local Type = {}
Type.__index = Type
Type.__tostring = function(t) return "lt." .. t.name end
M.Type = Type

-- Wrap an integer to `bits` bits (two's complement); u64/i64 stay Lua integers
-- (u64 values >= 2^63 read as negative Lua integers, as in Lua's own unsigned ops).
function M.wrap(v, bits, signed)
  if bits >= 64 then return v end
  local m = v & ((1 << bits) - 1)
  if signed and m >= (1 << (bits - 1)) then m = m - (1 << bits) end
  return m
end

local function round_f32(x)
  return (string.unpack("f", string.pack("f", x)))
end
M.round_f32 = round_f32

-- float -> integer: round toward zero, saturate, NaN -> 0
local function float_to_int(x, t)
  if x ~= x then return 0 end
  local lo, hi = t.min, t.max
  if t.bits == 64 and not t.signed then
    if x <= 0 then return 0 end
    if x >= 18446744073709551616.0 then return -1 end           -- 2^64 - 1 as bits
    if x >= 9223372036854775808.0 then
      return math.tointeger(math.floor(x - 18446744073709551616.0)) or -1
    end
    return math.tointeger(x >= 0 and math.floor(x) or math.ceil(x))
  end
  if x <= lo then return lo end
  if x >= hi then return hi end
  return math.tointeger(x >= 0 and math.floor(x) or math.ceil(x))
end

-- An integer to the nearest f32, rounded once (ties to even), as a kernel's
-- conversion does: through a double it would round twice past 2^53. Above
-- that the bits below the f32's 24 and two more fold into a sticky bit, which
-- leaves a value a double holds exactly and that rounds the same way.
local function int_to_f32(v)
  if v >= -(1 << 53) and v <= (1 << 53) then return round_f32(v + 0.0) end
  if v == math.mininteger then return -9223372036854775808.0 end
  local a, k = v < 0 and -v or v, 0
  while (a >> k) >= (1 << 26) do k = k + 1 end
  local top = a >> k
  if a & ((1 << k) - 1) ~= 0 then top = top | 1 end
  local r = round_f32(top + 0.0) * 2.0 ^ k
  return v < 0 and -r or r
end

-- Converts the Lua number v to type t (explicit conversion rules). Floats
-- keep their sign of zero (-0.0 stays -0.0, as in kernels).
function M.convert(v, t)
  if t.is_float then
    if math.type(v) == "integer" then return t.bits == 32 and int_to_f32(v) or v + 0.0 end
    if t.bits == 32 then v = round_f32(v) end
    return v
  end
  if math.type(v) == "integer" then return M.wrap(v, t.bits, t.signed) end
  return float_to_int(v, t)
end

local names = { "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "i1" }
for _, name in ipairs(names) do
  local t = setmetatable({ name = name, id = core.type_id(name) }, Type)
  t.is_float = name:sub(1, 1) == "f"
  t.is_int = not t.is_float
  t.signed = name:sub(1, 1) ~= "u" and name ~= "i1"
  t.bits = tonumber(name:sub(2))
  if t.is_int and name ~= "i1" then
    if t.signed then
      t.min, t.max = -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
      if t.bits == 64 then t.min, t.max = math.mininteger, math.maxinteger end
    else
      t.min, t.max = 0, t.bits < 64 and (1 << t.bits) - 1 or -1
    end
  end
  M.by_id[t.id] = t
  M.by_name[name] = t
end

function M.is_type(x) return getmetatable(x) == Type end

-- A float type able to hold the result of / and ^ on t (docs/arithmetic.md).
function M.float_for(t)
  if t.is_float then return t end
  return t.bits == 64 and M.by_name.f64 or M.by_name.f32
end

return M
