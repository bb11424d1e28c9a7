-- error: atomic_float_bits.lua:7: lt.atomic_or needs integers, but field 'mask' is an f32
-- Bitwise atomics take integer targets only.
local lt = require "lattice"
local mask = lt.field(lt.f32, 8)
local k = lt.kernel(function()
  for i in lt.ndrange(8) do
    lt.atomic_or(mask[i], 1)
  end
end)
k()
