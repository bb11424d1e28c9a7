-- error: structfor_inner_not_below.lua:12: a struct-for over field 'y' inside a struct-for over
-- An inner struct-for visits the cells inside the outer loop's current cell,
-- so it must iterate something under the outer loop's level.
local lt = require "lattice"
local x, y = lt.field(lt.f32), lt.field(lt.f32)
local a = lt.root:pointer(lt.i, 4)
a:dense(lt.i, 4):place(x)
lt.root:pointer(lt.i, 4):place(y)
x[1], y[2] = 1, 2
local k = lt.kernel(function()
  for i in a do
    for j in y do x[i] = y[j] end
  end
end)
k()
