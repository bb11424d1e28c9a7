-- lt.compile's notice on stderr: nothing while it is quick, one line naming
-- the kernels (k of n) once it has taken longer than lt.compile_notice says;
-- the kernels are ready when lt.compile returns, and their results right.
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 64
local x = lt.field(lt.f32, N)
local fill = lt.kernel(function() for i in lt.ndrange(N) do x[i] = i end end)
local twice = lt.kernel(function(s) for i in lt.ndrange(N) do x[i] = x[i] * s end end, { s = lt.f32 })

local _, err = C.capture(function() lt.compile(fill, twice) end)   -- default: after a second
C.check("quick: no notice", err, "")

local fill2 = lt.kernel(function() for i in lt.ndrange(N) do x[i] = i + 1 end end)
local scale2 = lt.kernel(function(s) for i in lt.ndrange(N) do x[i] = x[i] * s end end, { s = lt.f32 })
lt.compile_notice(0)
_, err = C.capture(function() lt.compile(fill2, scale2) end)
C.check("one line when slow", select(2, err:gsub("\n", "")), 1)
C.check("the line", (err:gsub("after [%d.]+ s", "after T s")),
  "lattice: lt.compile: tracing (1 of 2 kernels) after T s\n")
C.check("ready: one signature", table.concat(scale2:signatures(), ";"), "f32")
fill2()
scale2(3)
for i = 0, N - 1 do C.check("result " .. i, x[i], (i + 1) * 3) end

lt.compile_notice(math.huge)
_, err = C.capture(function() lt.compile(lt.kernel(function() x[0] = 1 end)) end)
C.check("never", err, "")
C.check_error("bad threshold", function() lt.compile_notice(-1) end,
  "lt.compile_notice: expected a number of seconds (0 or more), got -1")
C.check_error("not a kernel", function() lt.compile(fill, "x") end, "lt.compile: argument 2 is not a kernel")
C.finish("compile_notice")
