-- error: break_parallel.lua:6: break cannot leave the outermost for loop of a kernel
local lt = require "lattice"
local x = lt.field(lt.i32, 8)
local k = lt.kernel(function()
  for i = 0, 7 do
    if x[i] > 3 then break end
    x[i] = 1
  end
end)
k()
