-- error: kernel_assert.lua:8): assertion failed: x must stay below 5 (lt.assert)
local lt = require "lattice"
lt.init { debug = true }
local x = lt.field(lt.i32, 10)
local check = lt.kernel(function()
  for i in x do
    x[i] = i
    lt.assert(x[i] < 5, "x must stay below 5 (lt.assert)")
  end
end)
check()
