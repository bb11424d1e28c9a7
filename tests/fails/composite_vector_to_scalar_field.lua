-- error: composite_vector_to_scalar_field.lua:6: cannot assign a vec2 value to field 'x' (f32, a scalar)
local lt = require "lattice"
local x = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    x[i] = lt.vec2(i, 1) * 2
  end
end)
k()
