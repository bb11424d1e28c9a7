-- error: lua_state_table.lua:9: this writes a Lua table made outside the code it is in
-- q is a kernel variable, so `if q == 0` is a condition on kernel values:
-- both branches are traced and t[m] would be 20 for every m.
local lt = require "lattice"
local t = {}
local k = lt.kernel(function()
  for m in lt.static(0, 3) do
    local q = m % 2
    if q == 0 then t[m] = 10 else t[m] = 20 end
  end
end)
k()
