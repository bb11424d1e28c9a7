-- error: lua_state_nil_local.lua:8: 'r' holds nil, not a kernel variable, and is assigned under a condition on kernel values
-- `local r` has no value, so r is a Lua variable: both branches are traced,
-- and r would be 2 whatever x is (k(5) returned 2). Refused instead.
local lt = require "lattice"
local k = lt.kernel(function(x)
  local r
  if x > 0 then
    r = 1
  else
    r = 2
  end
  return r
end)
k(5)
