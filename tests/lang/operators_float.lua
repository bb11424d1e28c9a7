-- Float operators for f32 and f64 (+ - * / // % ^ unary -, abs, min, max,
-- comparisons) including infinities and NaN, against plain Lua; f32
-- references are rounded with string.pack("f", v).
local lt = require "lattice"
lt.init {}

local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local inf, nan = math.huge, 0.0 / 0.0

local function luamod(a, b)            -- Lua's float %, written out
  local m = math.fmod(a, b)
  if (m > 0 and b < 0) or (m < 0 and b ~= m and b > 0) then m = m + b end
  return m
end

local failures = 0
local function same(got, want, tol)
  if got ~= got and want ~= want then return true end        -- both NaN
  if got == want then return true end
  if tol and want == want and math.abs(want) ~= inf then
    return math.abs(got - want) <= tol * math.max(1.0, math.abs(want))
  end
  return false
end
local function check(what, got, want, tol)
  if not same(got, want, tol) then
    failures = failures + 1
    if failures < 40 then print(("FAIL %s: got %s, want %s"):format(what, tostring(got), tostring(want))) end
  end
end

local ops = {
  { "add", function(a, b) return a + b end, function(a, b) return a + b end },
  { "sub", function(a, b) return a - b end, function(a, b) return a - b end },
  { "mul", function(a, b) return a * b end, function(a, b) return a * b end },
  { "div", function(a, b) return a / b end, function(a, b) return a / b end },
  { "idiv", function(a, b) return a // b end, function(a, b, r) return math.floor(r(a / b)) + 0.0 end },
  { "mod", function(a, b) return a % b end, function(a, b) return luamod(a, b) end },
  { "pow", function(a, b) return a ^ b end, function(a, b) return a ^ b end, 1e-6 },
  { "unm", function(a, b) return -a end, function(a, b) return -a end },
  { "abs", function(a, b) return lt.abs(a) end, function(a, b) return math.abs(a) end },
  { "min", function(a, b) return lt.min(a, b) end,
    function(a, b) if a ~= a then return b elseif b ~= b then return a end return math.min(a, b) end },
  { "max", function(a, b) return lt.max(a, b) end,
    function(a, b) if a ~= a then return b elseif b ~= b then return a end return math.max(a, b) end },
}

for _, t in ipairs { lt.f32, lt.f64 } do
  local r = t == lt.f32 and f32 or function(v) return v end
  local vals = { 0.0, 1.5, -2.25, 3.0, 7.0, 0.1, -0.7, 1e30, -1e-30, 2.0 ^ 40, inf, -inf, nan }
  local n = #vals
  local N = n * n
  local a, b = lt.field(t, N), lt.field(t, N)
  local res = lt.field(t, { #ops, N })
  local cmp = lt.field(lt.i32, { 6, N })
  for i = 0, n - 1 do
    for j = 0, n - 1 do a[i * n + j] = vals[i + 1]; b[i * n + j] = vals[j + 1] end
  end
  local k = lt.kernel(function()
    for i = 0, N - 1 do
      local x, y = a[i], b[i]
      for o, e in ipairs(ops) do res[o - 1][i] = e[2](x, y) end
      cmp[0][i] = (x < y) and 1 or 0
      cmp[1][i] = (x <= y) and 1 or 0
      cmp[2][i] = (x > y) and 1 or 0
      cmp[3][i] = (x >= y) and 1 or 0
      cmp[4][i] = (x == y) and 1 or 0
      cmp[5][i] = (x ~= y) and 1 or 0
    end
  end)
  k()
  for i = 0, N - 1 do
    local x, y = a[i], b[i]
    for o, e in ipairs(ops) do
      check(("%s %s(%s, %s)"):format(t.name, e[1], x, y), res[o - 1][i], r(e[3](x, y, r)), e[4])
    end
    local want = { x < y, x <= y, x > y, x >= y, x == y, x ~= y }
    for c = 1, 6 do
      check(("%s cmp%d(%s, %s)"):format(t.name, c, x, y), cmp[c - 1][i], want[c] and 1 or 0)
    end
  end
end

-- f32 arithmetic really happens in f32: 16777216 + 1 stays 16777216
local s = lt.field(lt.f32, 2)
local k = lt.kernel(function(a, b) s[0] = a + b; s[1] = a * b end, { a = lt.f32, b = lt.f32 })
k(16777216.0, 1.0)
check("f32 rounding of add", s[0], 16777216.0)
k(0.1, 0.2)
check("f32 rounding of mul", s[1], f32(f32(0.1) * f32(0.2)))

if failures > 0 then error(failures .. " float operator checks failed") end
print("operators_float: ok")
