-- error: wrong_arg_count.lua:6: kernel step expects 2 arguments (dt, n), got 1
local lt = require "lattice"
local step = lt.kernel(function(dt, n)
  return dt * n
end)
step(0.5)
