-- error: untraceable_function.lua:5: function 'string.format' cannot be called with kernel values
local lt = require "lattice"
local x = lt.field(lt.i32, 4)
local k = lt.kernel(function(n)
  local label = string.format("value %d", n)
  x[0] = n
end)
k(3)
