-- error: wrong_arg_type.lua:6: kernel scale: argument 'factor' must be a number (f32), got a table
local lt = require "lattice"
local scale = lt.kernel(function(factor)
  return factor * 2
end, { factor = lt.f32 })
scale({ 1, 2 })
