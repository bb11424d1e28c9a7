-- mock: sync
-- A fault in a kernel (the mock reports an illegal address when the host
-- waits for a kernel, as the driver does) loses the GPU context: the kernel
-- call raises an error naming the kernel and saying so, every later access
-- raises, a new lt.init starts a fresh context, and the process exits normally.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

lt.init { arch = "cuda", device_memory = 64 << 20 }
local x = lt.field(lt.f32, 16)
x[1] = 2   -- before any kernel: fine
local bad = lt.kernel(function() for i in lt.ndrange(16) do x[i] = 1 end end)
local ok, err = pcall(bad)
err = tostring(err)
C.check("the kernel call fails", ok, false)
C.check("names the kernel: " .. err, err:find("kernel", 1, true) ~= nil, true)
C.check("the driver's reason: " .. err, err:find("illegal", 1, true) ~= nil, true)
C.check("says the context is lost: " .. err, err:find("context", 1, true) ~= nil, true)
C.check_error("later kernel calls fail", bad, "lost")
C.check_error("later reads fail too", function() return x[1] end, "lost")

-- a new program gets a new context
lt.init { arch = "cuda", device_memory = 64 << 20 }
local y = lt.field(lt.i32, 4)
y[2] = 9
C.check("a fresh context works", y[2], 9)
C.finish("mock_fault")
