-- error: composite_shape_mismatch.lua:7: shape mismatch in `+`: vec2 and vec3
local lt = require "lattice"
local out = lt.field(lt.vec3, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    local a, b = lt.vec2(1, 2), lt.vec3(1, 2, 3)
    out[i] = a + b
  end
end)
k()
