-- error: nested_function_return.lua:7: return under a condition on kernel values is not supported in a function defined inside a kernel
-- The early return belongs to f, whose end the tracer does not see: it must
-- be refused, never taken as a return of the kernel (k(5) gave 1, not 11).
local lt = require "lattice"
local k = lt.kernel(function(n)
  local function f(x)
    if x > 0 then return 1 end
    return 2
  end
  return f(n) + 10
end)
k(5)
