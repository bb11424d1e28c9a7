-- error: float_to_int_local.lua:6: cannot assign an f32 value to the kernel variable 'count' (i32)
local lt = require "lattice"
local k = lt.kernel(function(x)
  local count = 0
  for i = 1, 10 do
    count = count + x * 0.5
  end
  return count
end, { x = lt.f32 })
k(1.0)
