-- Every integer operator on edge values, for i8 i16 i32 i64 u8 u32 u64,
-- against a plain-Lua reference that wraps to the type's width.
local lt = require "lattice"
lt.init {}

local function wrap(v, bits, signed)
  if bits == 64 then return v end
  local m = v & ((1 << bits) - 1)
  if signed and m >= (1 << (bits - 1)) then m = m - (1 << bits) end
  return m
end

-- unsigned 64-bit division on Lua's two's-complement integers
local function udiv(a, b)
  if b < 0 then return math.ult(a, b) and 0 or 1 end
  local q = ((a >> 1) // b) << 1
  local r = a - q * b
  if not math.ult(r, b) then q = q + 1 end
  return q
end

local function make_ref(bits, signed)
  local mask = bits == 64 and -1 or ((1 << bits) - 1)
  local function w(v) return wrap(v, bits, signed) end
  local function lt_(a, b) if signed then return a < b end return math.ult(a, b) end
  local function u(v) return v & mask end           -- the value's bits, unsigned
  local function shr(a, c)
    if not signed and c < 0 then return 0 end      -- a u64 count >= 2^63
    if c < 0 then c = -c; if c >= bits then return 0 end return w(a << c) end
    if c >= bits then return 0 end
    return w(u(a) >> c)
  end
  local function shl(a, c)
    if not signed and c < 0 then return 0 end
    if c < 0 then c = -c; if c >= bits then return 0 end return w(u(a) >> c) end
    if c >= bits then return 0 end
    return w(a << c)
  end
  local function fdiv(a, b)
    if b == 0 then return 0 end
    if bits == 64 and not signed then return udiv(a, b) end
    if bits == 64 and a == math.mininteger and b == -1 then return a end
    return w(a // b)
  end
  local function fmod(a, b)
    if b == 0 then return 0 end
    if bits == 64 and not signed then return a - udiv(a, b) * b end
    return w(a - fdiv(a, b) * b)
  end
  return {
    { "add", function(a, b) return a + b end, function(a, b) return w(a + b) end },
    { "sub", function(a, b) return a - b end, function(a, b) return w(a - b) end },
    { "mul", function(a, b) return a * b end, function(a, b) return w(a * b) end },
    { "idiv", function(a, b) return a // b end, fdiv },
    { "mod", function(a, b) return a % b end, fmod },
    { "band", function(a, b) return a & b end, function(a, b) return w(a & b) end },
    { "bor", function(a, b) return a | b end, function(a, b) return w(a | b) end },
    { "bxor", function(a, b) return a ~ b end, function(a, b) return w(a ~ b) end },
    { "shl", function(a, b) return a << b end, shl },
    { "shr", function(a, b) return a >> b end, shr },
    { "unm", function(a, b) return -a end, function(a, b) return w(-a) end },
    { "bnot", function(a, b) return ~a end, function(a, b) return w(~a) end },
    { "abs", function(a, b) return lt.abs(a) end, function(a, b) return w(signed and a < 0 and -a or a) end },
    { "min", function(a, b) return lt.min(a, b) end, function(a, b) return lt_(b, a) and b or a end },
    { "max", function(a, b) return lt.max(a, b) end, function(a, b) return lt_(a, b) and b or a end },
  }, {
    { "lt", nil, function(a, b) return lt_(a, b) and 1 or 0 end },
    { "le", nil, function(a, b) return (not lt_(b, a)) and 1 or 0 end },
    { "gt", nil, function(a, b) return lt_(b, a) and 1 or 0 end },
    { "ge", nil, function(a, b) return (not lt_(a, b)) and 1 or 0 end },
    { "eq", nil, function(a, b) return (a == b) and 1 or 0 end },
    { "ne", nil, function(a, b) return (a ~= b) and 1 or 0 end },
  }
end

local failures = 0
local function check(what, got, want)
  if got ~= want then
    failures = failures + 1
    if failures < 40 then print(("FAIL %s: got %s, want %s"):format(what, tostring(got), tostring(want))) end
  end
end

for _, t in ipairs { lt.i8, lt.i16, lt.i32, lt.i64, lt.u8, lt.u32, lt.u64 } do
  local bits, signed = t.bits, t.signed
  local raw = { 0, 1, -1, 2, 3, 5, -7, 13, 100, -100, 1 << (bits - 1), (1 << (bits - 1)) - 1,
    (1 << (bits - 1)) + 1, bits, bits - 1, bits + 3 }
  if bits == 64 then raw[11], raw[12], raw[13] = math.mininteger, math.maxinteger, math.mininteger + 1 end
  local vals = {}
  for i, v in ipairs(raw) do vals[i] = wrap(v, bits, signed) end
  local n = #vals
  local N = n * n
  local arith, cmps = make_ref(bits, signed)
  local a, b = lt.field(t, N, "a"), lt.field(t, N, "b")
  local r = lt.field(t, { #arith, N }, "r")
  local c = lt.field(lt.i32, { #cmps, N }, "c")
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      a[i * n + j] = vals[i + 1]
      b[i * n + j] = vals[j + 1]
    end
  end
  local k = lt.kernel(function()
    for i = 0, N - 1 do
      local x, y = a[i], b[i]
      for op, e in ipairs(arith) do r[op - 1][i] = e[2](x, y) end   -- unrolled at trace time
      -- comparisons are written here: only the kernel's own code is rewritten
      c[0][i] = (x < y) and 1 or 0
      c[1][i] = (x <= y) and 1 or 0
      c[2][i] = (x > y) and 1 or 0
      c[3][i] = (x >= y) and 1 or 0
      c[4][i] = (x == y) and 1 or 0
      c[5][i] = (x ~= y) and 1 or 0
    end
  end)
  k()
  for i = 0, N - 1 do
    local x, y = a[i], b[i]
    for op, e in ipairs(arith) do
      check(("%s %s(%d, %d)"):format(t.name, e[1], x, y), r[op - 1][i], e[3](x, y))
    end
    for op, e in ipairs(cmps) do
      check(("%s %s(%d, %d)"):format(t.name, e[1], x, y), c[op - 1][i], e[3](x, y))
    end
  end
end

if failures > 0 then error(failures .. " integer operator checks failed") end
print("operators_int: ok")
