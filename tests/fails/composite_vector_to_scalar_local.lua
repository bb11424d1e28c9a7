-- error: composite_vector_to_scalar_local.lua:7: cannot assign a vec3 value to the scalar kernel variable 's' (f32)
local lt = require "lattice"
local k = lt.kernel(function()
  local s = 0.0
  for i = 0, 3 do
    local v = lt.vec3(i)
    s = v
  end
end)
k()
