-- error: sparse_two_instances.lua:9: kernel copy: arguments 'a' and 'b' are both instances of the same tree type
local lt = require "lattice"
local Grid = lt.tree { fields = { rho = lt.f32 }, lt.pointer(lt.i, 8) { lt.dense(lt.i, 4) { "rho" } } }
local g1, g2 = Grid:instantiate(), Grid:instantiate()
local copy = lt.kernel(function(a, b)
  for i in a.rho do b.rho[i] = a.rho[i] end
end, { a = Grid, b = Grid })
g1.rho[3] = 1
copy(g1, g2)
