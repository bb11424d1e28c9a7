-- error: race_product.lua:7: the kernel-scope local 'p' is assigned inside a parallel loop (a data race
-- There is no atomic product: a parallel product is refused with the local's name and line.
local lt = require "lattice"
local k = lt.kernel(function(n)
  local p = lt.f64(1)
  for i = 1, n do
    p = p * (1 + 1 / i)
  end
  return p
end)
k(10)
