-- error: untraceable_goto.lua:6: goto
local lt = require "lattice"
local x = lt.field(lt.i32, 8)
local k = lt.kernel(function(n)
  for i = 0, n - 1 do
    if i % 2 == 0 then goto continue end
    x[i] = 1
    ::continue::
  end
end)
k(8)
