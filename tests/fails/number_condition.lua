-- error: number_condition.lua:6: condition must be a comparison (got a value of type i32)
local lt = require "lattice"
local flags = lt.field(lt.i32, 8)
local k = lt.kernel(function()
  for i = 0, 7 do
    if flags[i] then flags[i] = 2 end
  end
end)
k()
