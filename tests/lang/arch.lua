-- lt.init{arch = ...}: "cuda" is refused with the reason (no driver, no GPU,
-- or the backend not written yet), at the caller's line; "auto" falls back to
-- the CPU and runs kernels there; anything else is an unknown arch.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local ok, err = pcall(lt.init, { arch = "cuda" })
C.check("arch cuda refused", ok, false)
err = tostring(err)
C.check("names the caller's line: " .. err, err:find("arch.lua:8: lt.init: ", 1, true) ~= nil, true)
local why = err:find('arch "cuda" is not available: ', 1, true) or err:find("the CUDA backend cannot run kernels yet", 1, true)
C.check("says why: " .. err, why ~= nil, true)
C.check("says what to do", err:find('use arch = "cpu" (or "auto")', 1, true) ~= nil, true)

lt.init { arch = "auto" }
local x = lt.field(lt.i32, 16)
lt.kernel(function() for i in lt.ndrange(16) do x[i] = i * i end end)()
for i = 0, 15 do C.check("auto runs kernels " .. i, x[i], i * i) end

C.check_error("unknown arch", function() lt.init { arch = "tpu" } end, "unknown arch 'tpu'")
C.finish("arch")
