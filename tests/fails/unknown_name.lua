-- error: unknown_name.lua:6: unknown name 'speed': it is nil when the kernel is traced
local lt = require "lattice"
local x = lt.field(lt.f32, 8)
local k = lt.kernel(function()
  for i = 0, 7 do
    x[i] = speed * i
  end
end)
k()
