-- error: composite_local_shape.lua:7: cannot assign a vec3 value to the kernel variable 'p' (vec2): the shapes differ
local lt = require "lattice"
local k = lt.kernel(function()
  local p = lt.vec2(0, 0)
  local n = 0
  while n < 3 do
    p = lt.vec3(1, 2, 3)
    n = n + 1
  end
end)
k()
