-- error: ndarray_kernel_bounds.lua:7): index 8 out of range for axis 1 of ndarray 'a' with shape (4, 8)
local lt = require "lattice"
lt.init { debug = true }
local a = lt.ndarray(lt.f32, { 4, 8 })
local shift = lt.kernel(function(a)
  for i, j in lt.ndrange(a.shape[1], a.shape[2]) do
    a[i][j + 1] = 1.0
  end
end)
shift(a)
