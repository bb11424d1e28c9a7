-- error: trees_alive_limit.lua:8: too many SNode trees alive at once (at most 256): every lt.root tree
local lt = require "lattice"
-- every field here is its own tree (materialised before the next is made) and
-- all stay referenced, so the 257th cannot start: the error is at the user's
-- line, names the limit and says what to do
local keep = {}
for n = 1, 300 do
  local x = lt.field(lt.f32, 4)
  x[0] = n
  keep[n] = x
end
