-- error: composite_vector_as_scalar.lua:7: a vec2 value is used where a scalar is needed
local lt = require "lattice"
local x = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    local v = lt.vec2(i, 1)
    for j = 0, v do x[i] = j end
  end
end)
k()
