-- error: func_recursion.lua:7: lt.func 'f' (defined at 
local lt = require "lattice"
local f
f = lt.func(function(n)
  local r = n
  if n > 1 then r = 1 end
  return r + f(n - 1)
end)
local k = lt.kernel(function(m) return f(m) end)
k(3)
