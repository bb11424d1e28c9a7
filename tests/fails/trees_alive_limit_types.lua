-- error: trees_alive_limit_types.lua:6: too many SNode trees alive at once (at most 256)
local lt = require "lattice"
-- tree types are trees too; kept in a table, the 257th is refused at its line
local types = {}
for n = 1, 300 do
  types[n] = lt.tree { fields = { a = lt.f32 }, lt.dense(lt.i, 4) { "a" } }
end
