-- error: composite_swizzle_range.lua:6: component 'z' is out of range for a vec2 (2 components)
local lt = require "lattice"
local x = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    x[i] = lt.vec2(i, 1).z
  end
end)
k()
