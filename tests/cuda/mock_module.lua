-- mock: module
-- The driver refuses PTX (the mock fails every module load with a log):
-- arch "cuda" raises an error quoting the driver's log; arch "auto" falls back
-- to the CPU and runs kernels there.
local lt = require "lattice"
local state = require "lattice.state"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local ok, err = pcall(lt.init, { arch = "cuda" })
err = tostring(err)
C.check("refused", ok, false)
C.check("says the driver cannot load PTX: " .. err, err:find("cannot load the PTX", 1, true) ~= nil, true)
C.check("quotes the driver's log: " .. err, err:find("log", 1, true) ~= nil, true)

lt.init { arch = "auto" }
C.check("auto fell back to the CPU", state.opts.arch, "cpu")
local x = lt.field(lt.i32, 8)
lt.kernel(function() for i in lt.ndrange(8) do x[i] = 3 * i end end)()
C.check("and runs kernels", x[7], 21)
C.finish("mock_module")
