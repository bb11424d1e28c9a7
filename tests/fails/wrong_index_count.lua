-- error: wrong_index_count.lua:6: field 'grid' has 2 indices, got 3
local lt = require "lattice"
local grid = lt.field(lt.f32, { 4, 4 })
local k = lt.kernel(function()
  for i = 0, 3 do
    grid[i][i][0] = 1.0
  end
end)
k()
