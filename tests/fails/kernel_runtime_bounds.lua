-- error: kernel_runtime_bounds.lua:6): index 8 out of range for axis 0 of field 'v' with shape (8)
local lt = require "lattice"
lt.init { debug = true }
local v = lt.field(lt.i32, 8)
local fill = lt.kernel(function(n)
  for i = 8, n do v[i] = i end
end)
fill(8)
