-- error: race_assign.lua:8: the kernel-scope local 'last' is assigned inside a parallel loop (a data race
-- The last index written wins by timing: refused, not silently racy.
local lt = require "lattice"
local x = lt.field(lt.i32, 1000)
local k = lt.kernel(function()
  local last = -1
  for i = 0, 999 do
    if x[i] == 0 then last = i end
  end
  return last
end)
k()
