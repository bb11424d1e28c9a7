-- error: race_lua_semantics_f32.lua:8: the kernel-scope local 'acc' is assigned inside a parallel loop
-- A sum that narrows the accumulator on the way (an f64 local added in f32)
-- is not an atomic f64 add: refused rather than silently different.
local lt = require "lattice"
local a = lt.field(lt.f32, 100)
local k = lt.kernel(function()
  local acc = lt.f64(0)
  for i = 0, 99 do acc = lt.f32(acc) + a[i] end
  return acc
end)
k()
