-- Math builtins in kernels against Lua's math library: f64 to ~1 ulp, f32 to
-- f32 precision; floor/ceil/round/trunc/abs/min/max exactly.
local lt = require "lattice"
lt.init {}

local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local failures = 0
local function check(what, got, want, tol)
  local ok
  if got ~= got or want ~= want then ok = (got ~= got) == (want ~= want)
  elseif got == want then ok = true
  elseif tol then ok = math.abs(got - want) <= tol * math.max(1.0, math.abs(want))
  else ok = got == want end
  if not ok then
    failures = failures + 1
    print(("FAIL %s: got %.17g, want %.17g"):format(what, got, want))
  end
end

-- tanh by its definition (Lua has none): exact enough where exp(2x) is finite
local function ref_tanh(x)
  if math.abs(x) > 22 then return x < 0 and -1.0 or 1.0 end
  if math.abs(x) < 1e-4 then return x - x * x * x / 3 end
  local e = math.exp(2 * x)
  return (e - 1) / (e + 1)
end

local function round_away(x) if x >= 0 then return math.floor(x + 0.5) else return math.ceil(x - 0.5) end end
local function trunc(x) if x >= 0 then return math.floor(x) else return math.ceil(x) end end

local unary = {
  { "sqrt", function(x) return lt.sqrt(x) end, math.sqrt, true },
  { "sin", function(x) return lt.sin(x) end, math.sin, true },
  { "cos", function(x) return lt.cos(x) end, math.cos, true },
  { "tan", function(x) return lt.tan(x) end, math.tan, true },
  { "asin", function(x) return lt.asin(x) end, math.asin, true },
  { "acos", function(x) return lt.acos(x) end, math.acos, true },
  { "atan", function(x) return lt.atan(x) end, math.atan, true },
  { "tanh", function(x) return lt.tanh(x) end, ref_tanh, true },
  { "exp", function(x) return lt.exp(x) end, math.exp, true },
  { "log", function(x) return lt.log(x) end, math.log, true },
  { "floor", function(x) return lt.floor(x) end, math.floor, false },
  { "ceil", function(x) return lt.ceil(x) end, math.ceil, false },
  { "round", function(x) return lt.round(x) end, round_away, false },
  { "trunc", function(x) return lt.trunc(x) end, trunc, false },
  { "abs", function(x) return lt.abs(x) end, math.abs, false },
}
local binary = {
  { "min", function(a, b) return lt.min(a, b) end, math.min, false },
  { "max", function(a, b) return lt.max(a, b) end, math.max, false },
  { "pow", function(a, b) return lt.pow(a, b) end, function(a, b) return a ^ b end, true },
  { "atan2", function(a, b) return lt.atan2(a, b) end, math.atan, true },
}

local xs = { 0.0, 0.25, 0.5, -0.5, 0.7, -0.9, 1.0, 2.5, -2.5, 3.75, 10.0, -7.3, 100.5 }
local n = #xs
for _, t in ipairs { lt.f32, lt.f64 } do
  local r = t == lt.f32 and f32 or function(v) return v end
  local tol = t == lt.f32 and 2e-6 or 1e-14
  local inp = lt.field(t, n)
  local out1 = lt.field(t, { #unary, n })
  local out2 = lt.field(t, { #binary, n })
  for i = 1, n do inp[i - 1] = xs[i] end
  local k = lt.kernel(function()
    for i = 0, n - 1 do
      local x = inp[i]
      for u, e in ipairs(unary) do out1[u - 1][i] = e[2](x) end
      local y = inp[(i + 1) % n]
      for u, e in ipairs(binary) do out2[u - 1][i] = e[2](lt.abs(x) + 0.5, y) end
    end
  end)
  k()
  for i = 1, n do
    local x = inp[i - 1]
    for u, e in ipairs(unary) do
      local want = r(e[3](x))
      if e[1] == "log" and x <= 0 or (e[1] == "sqrt" or e[1] == "math.sqrt") and x < 0 or
         (e[1] == "asin" or e[1] == "acos") and math.abs(x) > 1 then
        check(t.name .. " " .. e[1] .. "(" .. x .. ") is NaN", out1[u - 1][i - 1] ~= out1[u - 1][i - 1] and 1 or 0,
          (e[1] == "log" and x == 0) and 0 or 1)
      else
        check(t.name .. " " .. e[1] .. "(" .. x .. ")", out1[u - 1][i - 1], want, e[4] and tol or nil)
      end
    end
    local a, y = r(math.abs(x) + 0.5), inp[i % n]
    for u, e in ipairs(binary) do
      check(t.name .. " " .. e[1] .. "(" .. a .. ", " .. y .. ")", out2[u - 1][i - 1], r(e[3](a, y)), e[4] and tol or nil)
    end
  end
end

-- integer arguments: lt.sqrt converts to f32 (f64 for 64-bit); abs/min/max keep integers
local res = lt.field(lt.f64, 5)
local ires = lt.field(lt.i64, 3)
local ik = lt.kernel(function(a, b)
  res[0] = lt.sqrt(a)
  res[1] = lt.sqrt(b)
  res[2] = lt.floor(a / 2)
  res[3] = lt.atan2(a, 1)
  res[4] = math.sqrt(b) + math.floor(a / 4)      -- math.* in the kernel's own code maps to lt.*
  ires[0] = lt.abs(-a)
  ires[1] = lt.min(a, -b)
  ires[2] = lt.max(a, b)
end, { a = lt.i32, b = lt.i64 })
ik(2, 2)
check("sqrt(i32) is f32", res[0], f32(math.sqrt(2)))
check("sqrt(i64) is f64", res[1], math.sqrt(2))
check("floor(i32 / 2)", res[2], 1.0)
check("atan2(i32, 1)", res[3], f32(math.atan(2, 1)), 2e-7)
check("math.* maps to lt.*", res[4], math.sqrt(2) + 0.0)
check("abs(i32)", ires[0], 2)
check("min(i32, i64)", ires[1], -2)
check("max(i32, i64)", ires[2], 2)

-- the same builtins on Lua values run in Lua
check("Lua-scope lt.sqrt", lt.sqrt(16), 4.0)
check("Lua-scope lt.round", lt.round(-2.5), -3.0)

-- tanh at large |x| is +-1 (no inf / inf), keeps the sign of zero, passes NaN; f32 and f64,
-- and in Lua scope (its own code: Lua has no math.tanh) the same as in a kernel
do
  local ts = { 40.0, -40.0, 400.0, -400.0, 1e300, -1e300, 1 / 0, -1 / 0, 22.5, -19.0, 0.0, -0.0, 1e-300,
    -3e-9, 0.3, -0.75, 2.0, 0 / 0 }
  local m = #ts
  for _, t in ipairs { lt.f32, lt.f64 } do
    local r = t == lt.f32 and f32 or function(v) return v end
    local tol = t == lt.f32 and 2e-6 or 1e-14
    local inp = lt.field(t, m)
    local out = lt.field(t, m)
    for i = 1, m do inp[i - 1] = ts[i] end
    lt.kernel(function() for i in lt.ndrange(m) do out[i] = lt.tanh(inp[i]) end end)()
    for i = 1, m do
      local x = inp[i - 1]
      local got = out[i - 1]
      local what = t.name .. " tanh(" .. x .. ")"
      if x ~= x then check(what .. " is NaN", got ~= got and 1 or 0, 1)
      else
        check(what, got, r(ref_tanh(x)), tol)
        if math.abs(x) >= 40 then check(what .. " is exactly +-1", got, x < 0 and -1.0 or 1.0) end
        if x == 0 then check(what .. " keeps the sign of zero", 1 / got, 1 / x) end
        local lua = lt.tanh(x)
        check("Lua-scope " .. what, lua, r(ref_tanh(x)), tol)
      end
    end
  end
  check("Lua-scope lt.tanh(-0.0) is -0.0", 1 / lt.tanh(-0.0), -1 / 0)
  check("Lua-scope lt.tanh(nan) is NaN", lt.tanh(0 / 0) ~= lt.tanh(0 / 0) and 1 or 0, 1)
  check("Lua-scope lt.tanh(integer)", lt.tanh(1), ref_tanh(1.0), 1e-15)
  check("Lua-scope lt.tanh(1e-20)", lt.tanh(1e-20), 1e-20)
  -- per component on vectors, in a kernel and in Lua scope; an integer argument converts to f32
  local vout = lt.field(lt.vec3, 1)
  local iout = lt.field(lt.f32, 1)
  lt.kernel(function(n)
    vout[0] = lt.tanh(lt.vec3(0.5, -40.0, 2.0))
    iout[0] = lt.tanh(n)
  end, { n = lt.i32 })(1)
  local v = vout[0]
  check("lt.tanh(vec3).x", v[1], f32(ref_tanh(0.5)), 2e-6)
  check("lt.tanh(vec3).y", v[2], -1.0)
  check("lt.tanh(vec3).z", v[3], f32(ref_tanh(2.0)), 2e-6)
  check("lt.tanh(i32) is f32", iout[0], f32(ref_tanh(1.0)), 2e-7)
  local lv = lt.tanh(lt.dvec2(0.25, -1.5))
  check("Lua-scope lt.tanh(dvec2).x", lv.x, ref_tanh(0.25), 1e-15)
  check("Lua-scope lt.tanh(dvec2).y", lv.y, ref_tanh(-1.5), 1e-15)
end

if failures > 0 then error(failures .. " math builtin checks failed") end
print("math_builtins: ok")
