-- Composite locals and arguments: loop-carried vectors and matrices in while
-- and for loops, assignment of whole values and components under kernel
-- conditions, vector/matrix/struct kernel arguments, lt.static_range
-- unrolling, serial loops nested in the parallel one.
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local C = require "check"

local function f32(v) return (string.unpack("f", string.pack("f", v))) end

-- a 2-D rotation iterated in a while loop: the vector is loop-carried
local N = 8
local out = lt.field(lt.vec2, N)
local steps = lt.field(lt.i32, N)
local spin = lt.kernel(function(c, s, limit)
  for i in lt.ndrange(N) do
    local p = lt.vec2(1 + i, 0)
    local R = lt.mat2(c, -s, s, c)
    local n = 0
    while p.y < limit do
      p = R:mul(p)
      n = n + 1
      if n > 100 then break end
    end
    if n % 2 == 0 then p.x = -p.x else p = p * 2 end
    out[i] = p
    steps[i] = n
  end
end, { c = lt.f32, s = lt.f32, limit = lt.f32 })
local ang = 0.1
spin(math.cos(ang), math.sin(ang), 3.0)
for i = 0, N - 1 do
  -- reference in Lua with f32 rounding at each step
  local c, s = f32(math.cos(ang)), f32(math.sin(ang))
  local x, y, n = f32(1 + i), 0.0, 0
  while y < 3.0 do
    x, y = f32(f32(c * x) + f32(-s * y)), f32(f32(s * x) + f32(c * y))
    n = n + 1
    if n > 100 then break end
  end
  if n % 2 == 0 then x = -x else x, y = x * 2, y * 2 end
  C.check("steps " .. i, steps[i], n)
  C.check("p.x " .. i, out[i][1], x)
  C.check("p.y " .. i, out[i][2], y)
end

-- vector, matrix and struct arguments (one scalar argument per component)
local Body = lt.struct { pos = lt.vec3, m = lt.f32 }
local res = lt.field(lt.vec3, 4)
local args = lt.kernel(function(g, M, b)
  for i in lt.ndrange(4) do
    res[i] = M:mul(b.pos) * b.m + g * i
  end
end, { g = lt.vec3, M = lt.mat3, b = Body })
args({ 0, -9.5, 1 }, { { 1, 0, 0 }, { 0, 2, 0 }, { 0, 0, 3 } }, { pos = { 1, 1, 1 }, m = 2 })
C.check("vector args (tables)", res[1][2], 2 * 2 - 9.5)
args(lt.vec3(0, -9.5, 1), lt.mat3:identity(), Body { pos = lt.vec3(1, 2, 3), m = 1 })
for i = 0, 3 do
  C.check("vector args x " .. i, res[i][1], 1.0)
  C.check("vector args y " .. i, res[i][2], 2 - 9.5 * i)
  C.check("vector args z " .. i, res[i][3], 3.0 + i)
end
C.check("one signature per composite type", #args:signatures(), 1)
C.check("signature text", args:signatures()[1], "lt.vec3,lt.mat3,lt.struct{m, pos}")
C.check_error("wrong component count", function() args({ 1, 2 }, lt.mat3:identity(), Body {}) end,
  "cannot assign 2 components to kernel args: argument 'g'")
C.check_error("a scalar for a vector", function() args(1, lt.mat3:identity(), Body {}) end,
  "argument 'g' (vec3)")
local untyped = lt.kernel(function(g) res[0] = g end)
C.check_error("an unannotated vector argument", function() untyped({ 1, 2, 3 }) end, "need their type, e.g.")
local big = lt.kernel(function(M, N2) res[0] = M:mul(N2)[0] end, { M = lt.mat3, N2 = lt.mat3 })
C.check_error("too many scalar slots", function() big(lt.mat3(0), lt.mat3(0)) end, "at most 16")

-- lt.static_range unrolls; a range loop inside the parallel loop is serial
local acc = lt.field(lt.f32, N)
local st = lt.kernel(function()
  for i in lt.ndrange(N) do
    local v = lt.vec4(0)
    for k in lt.static_range(4) do v[k] = i * 10 + k end   -- constant indices: k is a Lua number
    local s = 0.0
    for j = 0, i do s = s + v:sum() + j end                 -- serial loop inside the parallel one
    acc[i] = s
  end
end)
st()
for i = 0, N - 1 do
  local vs = 4 * i * 10 + 6
  C.check("static_range + serial loop " .. i, acc[i], (i + 1) * vs + i * (i + 1) / 2)
end
local ir = st:ir { pass = "offload" }
local _, tasks = ir:match("# after offload(.*)"):gsub("offloaded", "")
C.check("one parallel task (the inner range loop is serial)", tasks, 1)
local unrolled = 0
for k in lt.static_range(2, 10, 3) do unrolled = unrolled + k end
C.check("static_range in Lua scope", unrolled, 2 + 5 + 8)

-- an unrolled grouped range (the MPM stencil pattern): offsets are vectors of Lua
-- integers, so they index Lua tables of weights; atomics scatter vectors
local g = lt.field(lt.vec2, { 8, 8 })
local scatter = lt.kernel(function()
  for p in lt.ndrange(4) do
    local base = lt.vec2(p + 0.7, p + 0.2):cast(lt.i32)
    local w = { lt.vec2(1, 2), lt.vec2(3, 4), lt.vec2(5, 6) }
    for off in lt.static(lt.grouped(lt.ndrange(3, 3))) do
      lt.atomic_add(g[base + off], lt.vec2(w[off.x + 1].x * w[off.y + 1].y, off:max() - off:min()))
    end
  end
end)
scatter()
local ref = {}
for p = 0, 3 do
  for ox = 0, 2 do
    for oy = 0, 2 do
      local key = (p + ox) .. "," .. (p + oy)
      local r = ref[key] or { 0, 0 }
      r[1] = r[1] + ({ 1, 3, 5 })[ox + 1] * ({ 2, 4, 6 })[oy + 1]
      r[2] = r[2] + math.max(ox, oy) - math.min(ox, oy)
      ref[key] = r
    end
  end
end
for i = 0, 7 do
  for j = 0, 7 do
    local r = ref[i .. "," .. j] or { 0, 0 }
    C.check(("scatter %d %d"):format(i, j), g[i][j][1] .. "," .. g[i][j][2], (r[1] + 0.0) .. "," .. (r[2] + 0.0))
  end
end
local ir2 = scatter:ir({ pass = "trace" }):match("# after trace(.*)")
C.check("the stencil is unrolled (no inner loop)", ir2:find("range_for", 1, true) ~= nil and
  select(2, ir2:gsub("range_for", "")) == 1, true)

-- dynamic indices are an error that names the fix
local dyn = lt.kernel(function(j)
  for i in lt.ndrange(2) do local v = lt.vec2(1, 2); acc[i] = v[j] end
end)
C.check_error("dynamic index", function() dyn(1) end, "components take constant indices")

C.finish("composite_locals")
