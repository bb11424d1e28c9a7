-- mock: none
-- Device memory settings: a pool larger than the GPU is refused naming the
-- size and the free memory; device_memory_fraction takes a share of the GPU's
-- memory (the mock has 1 GiB); a kernel that needs libdevice when there is
-- none fails to compile naming the function; a full pool (cells activated
-- from Lua scope, through host requests on the device) raises an error
-- naming the SNode, the pool and the setting, and the program stays usable.
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
else   -- compiles and launches where libdevice is found, else says it is missing
  local ok, err = pcall(k)
  C.check("sin with libdevice, or a message that it is missing: " .. tostring(err),
    ok or tostring(err):find("needs libdevice", 1, true) ~= nil, true)
end

local POOL = 6000000
lt.init { arch = "cuda", device_memory = POOL }
local y = lt.field(lt.f32)
lt.root:pointer(lt.ij, 64):dense(lt.ij, 16):place(y)
y[0][0] = 1
y:deactivate_all()   -- the lists deactivation needs, made while there is room
y[5][5] = 42
local ok, msg = pcall(function()
  for i = 0, 1023, 16 do for j = 0, 1023, 16 do y[i][j] = 2 end end
end)
msg = tostring(msg)
C.check("filling 4 MiB of cells in a 6 MB pool fails", ok, false)
for _, part in ipairs { "mock_memory.lua:", "pointer", "fields y", tostring(POOL), "device_memory" } do
  C.check("the message names " .. part .. ": " .. msg, msg:find(part, 1, true) ~= nil, true)
end
C.check("earlier data intact", y[5][5] ~= 0, true)
y:deactivate_all()
C.check("deactivated", y[5][5], 0.0)
y[1000][1000] = 3
C.check("usable again", y[1000][1000], 3.0)
C.finish("mock_memory")
