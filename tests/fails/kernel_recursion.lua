-- error: kernel_recursion.lua:5: the function defined at line 5 is called 200 levels deep
local lt = require "lattice"
local x = lt.field(lt.i32, 4)
local k = lt.kernel(function(n)
  local function fact(v)
    return lt.select(v <= 1, 1, v * fact(v - 1))   -- both sides are traced: never ends
  end
  x[0] = fact(n)
end)
k(5)
