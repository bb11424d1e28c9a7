-- Lua-scope conversions to float types keep the sign of zero (-0.0 stays
-- -0.0, as in kernels) in lt.f32/lt.f64, composite values and every data
-- entry point (element writes, fill, from_table, lt.ndarray values), and an
-- integer converts to f32 with one rounding, as a kernel's conversion does.
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local function negzero(x) return x == 0 and 1 / x < 0 end
local function check_nz(what, x) if not negzero(x) then C.fail(what .. ": got " .. tostring(x) .. ", want -0.0") end end

check_nz("lt.f32(-0.0)", lt.f32(-0.0))
check_nz("lt.f64(-0.0)", lt.f64(-0.0))
check_nz("lt.vec2(-0.0, 1)[0]", lt.vec2(-0.0, 1)[0])
check_nz("lt.dvec2(-0.0)[1]", lt.dvec2(-0.0)[1])
local P = lt.struct { a = lt.f32, b = lt.f64 }
check_nz("struct member", P { a = -0.0 }.a)
C.check("lt.f32(0) is +0.0", 1 / lt.f32(0), math.huge)
C.check("lt.i32(-0.0)", math.type(lt.i32(-0.0)), "integer")

for _, t in ipairs { lt.f32, lt.f64 } do
  local n = t.name
  local a = lt.ndarray(t, { 3 })
  a[0] = -0.0
  check_nz(n .. " ndarray write", a[0])
  a:fill(-0.0)
  check_nz(n .. " ndarray fill", a[2])
  a:from_table({ 1, -0.0, 2 })
  check_nz(n .. " ndarray from_table", a[1])
  check_nz(n .. " ndarray to_table", a:to_table()[2])
  check_nz(n .. " lt.ndarray values", lt.ndarray(t, { 2 }, { -0.0, 1 })[0])
  check_nz(n .. " lt.ndarray_from", lt.ndarray_from(t, { { -0.0 } })[0][0])
  local x = lt.field(t, { 2, 2 })
  x[1][1] = -0.0
  check_nz(n .. " field write", x[1][1])
  x:fill(-0.0)
  check_nz(n .. " field fill", x[0][1])
  x:from_table({ { 1, 2 }, { 3, -0.0 } })
  check_nz(n .. " field from_table", x[1][1])
  check_nz(n .. " field to_table", x:to_table()[2][2])
end

local v = lt.field(lt.vec2, 2)
v[0] = { -0.0, 1 }
check_nz("vector field write", v[0][1])
v:fill(-0.0)
check_nz("vector field fill (scalar)", v[1][2])
v:from_table({ { 1, 2 }, { -0.0, 3 } })
check_nz("vector field from_table", v[1][1])
local s = lt.field(P, 2)
s[1] = { a = -0.0, b = -0.0 }
check_nz("struct field write a", s[1].a)
check_nz("struct field write b", s[1].b)

-- integers to f32: one rounding to nearest (ties to even), as in kernels.
-- The reference rounds with integer arithmetic alone: keep the top 24 bits.
local function ref_f32(v)
  if v == 0 then return 0.0 end
  local neg = v < 0
  local a = neg and -v or v
  if a < 0 then return -2.0 ^ 63 end                     -- math.mininteger
  local k = 0
  while (a >> k) >= (1 << 24) do k = k + 1 end
  local top, rest = a >> k, a & ((1 << k) - 1)
  local half = k > 0 and (1 << (k - 1)) or 0
  if k > 0 and (rest > half or (rest == half and top & 1 == 1)) then top = top + 1 end
  local r = top * 2.0 ^ k
  return neg and -r or r
end
local cases = { 0, 1, -1, 16777217, -16777217, (1 << 53) + 1, (1 << 54) + (1 << 30) + 1,
  (1 << 62) + (1 << 38) + 1, (1 << 62) + (1 << 38), (1 << 62) + (1 << 39) + (1 << 38),
  math.maxinteger, math.mininteger, -((1 << 60) + (1 << 36) + 7), 9007199791611905 }
local seed = 12345
for _ = 1, 200 do
  seed = (seed * 6364136223846793005 + 1442695040888963407)
  cases[#cases + 1] = seed >> (seed & 31)
end
local xa = lt.ndarray(lt.i64, { #cases })
local ya = lt.ndarray(lt.f32, { #cases })
local conv = lt.kernel(function(src, dst)
  for i in lt.ndrange(src.shape[1]) do dst[i] = lt.f32(src[i]) end
end, { src = lt.ndarray_type(lt.i64, 1), dst = lt.ndarray_type(lt.f32, 1) })
for i, c in ipairs(cases) do xa[i - 1] = c end
conv(xa, ya)
local xf = lt.field(lt.f32, #cases)
for i, c in ipairs(cases) do
  local want = ref_f32(c)
  C.check("lt.f32(" .. c .. ")", lt.f32(c), want)
  C.check("kernel f32(" .. c .. ")", ya[i - 1], want)
  xf[i - 1] = c
  C.check("field write " .. c, xf[i - 1], want)
end

C.finish("lua_scope_conversions")
