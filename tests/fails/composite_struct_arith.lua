-- error: composite_struct_arith.lua:7: a struct{a} value has no arithmetic
local lt = require "lattice"
local S = lt.struct { a = lt.f32 }
local x = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    x[i] = 1 + S { a = i }
  end
end)
k()
