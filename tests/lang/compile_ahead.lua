-- lt.compile / k:compile(): kernels traced at once and compiled on other
-- threads; the first call waits. Results must equal plain Lua, the signature
-- must be the one a call would make (no second compilation), and resetting or
-- collecting kernels while they compile must be safe.
local lt = require "lattice"
lt.init { threads = 2 }
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 257
local x = lt.field(lt.f32, N)
local y = lt.field(lt.i32, N)
local v = lt.field(lt.vec2, N)

local fill = lt.kernel(function(a) for i in lt.ndrange(N) do x[i] = a * i end end, { a = lt.f32 })
local count = lt.kernel(function(k) for i in lt.ndrange(N) do y[i] = (i * k) % 7 end end, { k = lt.i32 })
local spin = lt.kernel(function(g) for i in lt.ndrange(N) do v[i] = g * i end end, { g = lt.vec2 })
local none = lt.kernel(function() for i in lt.ndrange(N) do y[i] = y[i] + 1 end end)

lt.compile(fill, count, spin, none)
-- k:ir() shows the IR of a kernel compiled ahead, before its first call
C.check("ir after lt.compile", (count:ir():find("kernel", 1, true)) ~= nil, true)
local ahead = lt.kernel(function(a) return a + 1 end, { a = lt.i32 })
ahead:compile()
C.check("ir after k:compile", (ahead:ir():find("add", 1, true)) ~= nil, true)
C.check("signature after lt.compile", table.concat(fill:signatures(), ";"), "f32")
C.check("composite signature", table.concat(spin:signatures(), ";"), "lt.vec2")
fill(0.5)
count(3)
spin({ 1, -2 })
none()
C.check("one compilation per signature", table.concat(fill:signatures(), ";"), "f32")
for i = 0, N - 1 do
  C.check("fill " .. i, x[i], 0.5 * i)
  C.check("count+1 " .. i, y[i], (i * 3) % 7 + 1)
  local e = v[i]
  C.check("spin " .. i, e[1] .. "," .. e[2], (1.0 * i) .. "," .. (-2.0 * i))
end
count:compile()   -- already compiled: nothing to do
C.check("compile again", #count:signatures(), 1)

-- the annotations must give every argument's type
local loose = lt.kernel(function(a, b) for i in lt.ndrange(N) do x[i] = a + b end end, { a = lt.f32 })
C.check_error("unannotated argument", function() lt.compile(loose) end,
  "argument 'b' has no type annotation; compiling before the first call needs the types of every argument")
C.check_error("not a kernel", function() lt.compile(fill, 3) end, "lt.compile: argument 2 is not a kernel")
-- a trace error is raised by lt.compile itself, at the user's line
local broken = lt.kernel(function() for i in lt.ndrange(N) do x[i] = undefined_name + 1 end end)
C.check_error("trace error", function() lt.compile(broken) end, "compile_ahead.lua:48: unknown name 'undefined_name'")

-- kernels dropped or a program reset while their code is being made
do
  local tmp = lt.kernel(function() for i in lt.ndrange(N) do x[i] = 1 end end)
  tmp:compile()
end
collectgarbage()
collectgarbage()
local late = lt.kernel(function() for i in lt.ndrange(N) do x[i] = 2 end end)
late:compile()
lt.init { threads = 2 }          -- frees the program: the pending compilation is waited for
local z = lt.field(lt.f32, 4)
local after = lt.kernel(function() for i in lt.ndrange(4) do z[i] = i + 0.25 end end)
lt.compile(after)
after()
C.check("after a reset", z[3], 3.25)

C.finish("compile_ahead")
