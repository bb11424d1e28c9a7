-- error: sparse_struct_for_nested.lua:6: a struct-for over a sparse field (for i, j in x) must be a top-level loop
local lt = require "lattice"
local x = lt.field(lt.f32)
lt.root:pointer(lt.i, 8):dense(lt.i, 4):place(x)
local k = lt.kernel(function()
  for t = 0, 3 do for i in x do x[i] = t end end
end)
k()
