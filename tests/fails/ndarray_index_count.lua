-- error: ndarray_index_count.lua:5: ndarray 'a' has 2 dimensions, got 3 indices
local lt = require "lattice"
local k = lt.kernel(function(a)
  for i in lt.ndrange(a.shape[1]) do
    a[i][0][1] = 0
  end
end)
k(lt.ndarray(lt.f32, { 2, 2 }))
