-- lt.init{arch = ...}: "cuda" on a machine without a usable GPU is refused
-- with the reason (no driver, no GPU), at the caller's line; "auto" falls back
-- to the CPU and runs kernels there; anything else is an unknown arch.
-- On a GPU machine "cuda" and "auto" run the kernel on the GPU instead.
local lt = require "lattice"
local core = require "lattice.core"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local gpu = core.cuda_probe()
local ok, err = pcall(lt.init, { arch = "cuda" })
if gpu then
  C.check("arch cuda accepted on " .. gpu.name .. ": " .. tostring(err), ok, true)
else
  C.check("arch cuda refused", ok, false)
  err = tostring(err)
  C.check("names the caller's line: " .. err, err:find("arch.lua:11: lt.init: ", 1, true) ~= nil, true)
  C.check("says why: " .. err, err:find('arch "cuda" is not available: ', 1, true) ~= nil, true)
  C.check("says what to do", err:find('use arch = "cpu" (or "auto")', 1, true) ~= nil, true)
end

lt.init { arch = "auto" }
local x = lt.field(lt.i32, 16)
lt.kernel(function() for i in lt.ndrange(16) do x[i] = i * i end end)()
for i = 0, 15 do C.check("auto runs kernels " .. i, x[i], i * i) end

C.check_error("unknown arch", function() lt.init { arch = "tpu" } end, "unknown arch 'tpu'")
C.check_error("fraction out of range", function() lt.init { device_memory_fraction = 1.5 } end,
  "device_memory_fraction must be between 0 and 1")
C.finish("arch")
