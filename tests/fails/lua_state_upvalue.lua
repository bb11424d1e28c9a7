-- error: lua_state_upvalue.lua:7: 'hits' holds the Lua number 0, not a kernel variable, and is assigned under
-- A captured Lua number is a constant of the kernel: counting with it under
-- a kernel condition would count at trace time, once (k(-1) returned 1).
local lt = require "lattice"
local hits = 0
local k = lt.kernel(function(x)
  if x > 0 then hits = hits + 1 end
  return hits
end)
k(-1)
