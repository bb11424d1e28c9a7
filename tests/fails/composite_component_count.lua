-- error: composite_component_count.lua:6: cannot assign 3 components to field 'v' (vec2, 2 components)
local lt = require "lattice"
local v = lt.field(lt.vec2, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    v[i] = { i, 1, 2 }
  end
end)
k()
