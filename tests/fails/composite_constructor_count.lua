-- error: composite_constructor_count.lua:6: lt.mat2 takes 4 components, got 3
local lt = require "lattice"
local v = lt.field(lt.mat2, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    v[i] = lt.mat2(i, 1, 2)
  end
end)
k()
