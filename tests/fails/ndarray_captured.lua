-- error: ndarray_captured.lua:6: an ndarray (ndarray f32 (4)) is used in a kernel without being passed to it
local lt = require "lattice"
local a = lt.ndarray(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    a[i] = 1
  end
end)
k()
