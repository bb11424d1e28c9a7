-- mock: none
-- Device memory settings: a pool larger than the GPU is refused naming the
-- size and the free memory; device_memory_fraction takes a share of the GPU's
-- memory (the mock has 1 GiB); a kernel that needs libdevice when there is
-- none fails to compile naming the function.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

C.check_error("pool larger than the GPU", function() lt.init { arch = "cuda", device_memory = 4 << 30 } end,
  "out of GPU memory")
lt.init { arch = "cuda", device_memory_fraction = 0.25 }
C.check("a quarter of 1 GiB", lt.stats().pool_bytes, 256 << 20)

local x = lt.field(lt.f32, 8)
local k = lt.kernel(function() for i in lt.ndrange(8) do x[i] = lt.sin(i) end end)
if os.getenv("LT_LIBDEVICE") == "/nonexistent/libdevice.10.bc" then
  C.check_error("sin without libdevice", k, "uses sin, which on CUDA needs libdevice")
else
  k()   -- libdevice found (or not needed): compiles and launches
end
C.finish("mock_memory")
