-- error: race_read.lua:9: the kernel-scope local 's' is read inside the parallel loop that updates it
-- The running sum read by each iteration depends on timing: refused.
local lt = require "lattice"
local x = lt.field(lt.i32, 1000)
local k = lt.kernel(function()
  local s = 0
  for i = 0, 999 do
    s = s + 1
    x[i] = s * 2
  end
end)
k()
