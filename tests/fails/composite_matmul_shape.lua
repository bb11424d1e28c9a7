-- error: composite_matmul_shape.lua:6: shape mismatch in matrix product: mat2 times vec3 (2 columns against 3 rows)
local lt = require "lattice"
local out = lt.field(lt.vec2, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    out[i] = lt.mat2:identity():mul(lt.vec3(1, 2, 3))
  end
end)
k()
