-- error: ndarray_wrong_type.lua:8: kernel fill: argument 'a' must be an ndarray of f32 with 2 dimensions, got ndarray f64 (3, 3)
local lt = require "lattice"
local fill = lt.kernel(function(a, v)
  for i, j in lt.ndrange(a.shape[1], a.shape[2]) do a[i][j] = v end
end, { a = lt.ndarray_type(lt.f32, 2), v = lt.f32 })
local ok = lt.ndarray(lt.f32, { 3, 3 })
fill(ok, 1)
fill(lt.ndarray(lt.f64, { 3, 3 }), 1)
