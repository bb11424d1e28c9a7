-- lt.func: inlined helpers with scalar, vector, matrix and struct arguments
-- and results, several return values, early returns (under kernel
-- conditions and from loops) of composite values, helpers calling helpers,
-- pass by value, and recursion as a trace-time error.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local C = require "check"

local Hit = lt.struct { t = lt.f32, n = lt.vec2 }

-- several results, composite ones included
local polar = lt.func(function(v)
  return v:norm(), lt.atan2(v.y, v.x), v:normalized()
end)
-- an early return of a vector under a kernel condition, and from a loop
local clamp_len = lt.func(function(v, maxlen)
  local n = v:norm()
  if n <= maxlen then return v, 0 end
  return v * (maxlen / n), 1
end)
local first_over = lt.func(function(v, limit)
  local p = v
  for k = 1, 10 do
    p = p * 2
    if p.x > limit then return p, k end
  end
  return lt.vec2(-1), -1
end)
-- a struct result, built by another lt.func
local reflect = lt.func(function(d, n) return d - 2 * d:dot(n) * n end)
local hit = lt.func(function(o, d)
  local h = Hit { t = -1 }
  if d.y < 0 then
    h.t = -o.y / d.y
    h.n = reflect(d, lt.vec2(0, 1))
  end
  return h
end)
-- pass by value: assigning to a parameter does not change the caller's local
local bump = lt.func(function(v) v.x = v.x + 100; v = v * 0; return v end)

local N = 16
local r = lt.field(lt.f32, { N, 8 })
local vs = lt.field(lt.vec2, { N, 4 })
local k = lt.kernel(function()
  for i in lt.ndrange(N) do
    local v = lt.vec2(i - 7.5, 0.5 * i)
    local len, ang, dir = polar(v)
    r[i][0], r[i][1] = len, ang
    vs[i][0] = dir
    local c, clamped = clamp_len(v, 4)
    vs[i][1] = c
    r[i][2] = clamped
    local p, steps = first_over(lt.vec2(i * 0.25 + 0.1, 0), 3)
    vs[i][2] = p
    r[i][3] = steps
    local h = hit(lt.vec2(0, 2), lt.vec2(1, i - 8))
    r[i][4] = h.t
    vs[i][3] = h.n
    local w = v
    local z = bump(w)
    r[i][5] = w.x + z.y
  end
end)
k()

local function f32(x) return (string.unpack("f", string.pack("f", x))) end
local function close(a, b, tol) return math.abs(a - b) <= tol * (1 + math.abs(b)) end
for i = 0, N - 1 do
  local x, y = f32(i - 7.5), f32(0.5 * i)
  local len = math.sqrt(x * x + y * y)
  if not close(r[i][0], len, 1e-6) then C.fail("norm " .. i) end
  if not close(r[i][1], math.atan(y, x), 1e-6) then C.fail("atan2 " .. i) end
  if not close(vs[i][0][1], x / len, 1e-6) then C.fail("normalized " .. i) end
  local want_c = len <= 4 and { x, y } or { x * 4 / len, y * 4 / len }
  if not (close(vs[i][1][1], want_c[1], 1e-6) and close(vs[i][1][2], want_c[2], 1e-6)) then
    C.fail(("clamp_len %d: got %g %g want %g %g"):format(i, vs[i][1][1], vs[i][1][2], want_c[1], want_c[2]))
  end
  C.check("clamp flag " .. i, r[i][2], len <= 4 and 0.0 or 1.0)
  local px, steps = f32(i * 0.25 + 0.1), -1
  for s = 1, 10 do
    px = px * 2
    if px > 3 then steps = s; break end
  end
  if steps < 0 then px = -1 end
  C.check("first_over steps " .. i, r[i][3], steps + 0.0)
  C.check("first_over p " .. i, vs[i][2][1], px)
  local dy = i - 8
  if dy < 0 then
    C.check("hit t " .. i, r[i][4], f32(2 / -dy))
    -- reflect (1, dy) on the normal (0, 1): (1, -dy)
    C.check("hit n " .. i, vs[i][3][1] .. "," .. vs[i][3][2], "1.0," .. (-dy + 0.0))
  else
    C.check("no hit " .. i, r[i][4], -1.0)
    C.check("no hit n " .. i, vs[i][3][1], 0.0)
  end
  C.check("pass by value " .. i, r[i][5], x)
end

-- struct arguments by value, and a struct returned early from a loop
local Body = lt.struct { pos = lt.vec2, m = lt.f32 }
local heavier = lt.func(function(b, dm) b.m = b.m + dm; b.pos.x = 0; return b end)
local find_heavy = lt.func(function(n)
  for k = 0, n do
    if k * k > 10 then return Body { pos = lt.vec2(k, -k), m = k } end
  end
  return Body { m = -1 }
end)
local bres = lt.field(Body, 4)
local kb2 = lt.kernel(function()
  for i in lt.ndrange(4) do
    local b = Body { pos = lt.vec2(i, 1), m = 2 }
    local h = heavier(b, i)
    if i < 2 then bres[i] = h else bres[i] = find_heavy(i + 1) end
    bres[i].pos.y = bres[i].pos.y + b.pos.x     -- b is unchanged by the helper
  end
end)
kb2()
local want = { { m = 2, pos = { 0, 1 } }, { m = 3, pos = { 0, 2 } }, { m = -1, pos = { 0, 2 } },
  { m = 4, pos = { 4, -1 } } }
for i = 0, 3 do
  local got = bres[i]
  C.check("struct helper m " .. i, got.m, want[i + 1].m + 0.0)
  C.check("struct helper pos " .. i, got.pos[1] .. "," .. got.pos[2],
    (want[i + 1].pos[1] + 0.0) .. "," .. (want[i + 1].pos[2] + 0.0))
end

-- a helper called from Lua runs as plain Lua (vectors work on numbers there)
local n = polar(lt.vec2(3, 4))
C.check("lt.func from Lua", n, 5.0)

-- recursion is an error naming the function
local fact
fact = lt.func(function(n2) if n2 <= 1 then return 1 end return n2 * fact(n2 - 1) end)
local kr = lt.kernel(function(m) return fact(m) end)
C.check_error("recursion", function() kr(3) end, "calls itself (recursion)")
C.check_error("recursion names the function", function() kr(3) end, "lt.func 'fact' (defined at ")

-- mismatched results at two returns
local bad = lt.func(function(x) if x > 0 then return lt.vec2(1, 2) end return 1 end)
local kb = lt.kernel(function(x) local v = bad(x); return 0 end)
C.check_error("vector and scalar returns", function() kb(1) end,
  "return value 1 is a vec2 value at one return and a scalar at another")

C.finish("func_returns")
