-- error: composite_vector_compare_condition.lua:6: a bvec2 value is used as a condition
local lt = require "lattice"
local out = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    while lt.vec2(i, 1) < lt.vec2(2, 2) do out[i] = 1 end
  end
end)
k()
