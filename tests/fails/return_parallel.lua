-- error: return_parallel.lua:6: return cannot leave the outermost for loop of a kernel
local lt = require "lattice"
local x = lt.field(lt.i32, 8)
local first = lt.kernel(function()
  for i = 0, 7 do
    if x[i] > 3 then return i end
  end
  return -1
end)
first()
