-- error: lua_state_loop_append.lua:8: this writes a Lua table made outside the code it is in
-- The body of a kernel loop is traced once: appending to a Lua table there
-- would append once, not n times.
local lt = require "lattice"
local k = lt.kernel(function(n)
  local seen = {}
  for i = 0, n - 1 do
    seen[#seen + 1] = i
  end
  return #seen
end)
k(10)
