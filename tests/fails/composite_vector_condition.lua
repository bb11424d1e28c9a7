-- error: composite_vector_condition.lua:7: a vec2 value is used as a condition
local lt = require "lattice"
local out = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    local v = lt.vec2(i, 1)
    if v then out[i] = 1 end
  end
end)
k()
