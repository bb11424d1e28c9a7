-- error: atomic_local_race.lua:9: the kernel-scope local 'n' is read inside the parallel loop that updates it
-- An explicit reduction into a local (lt.atomic_add(n, 1)) next to a plain
-- read of it in the same parallel loop: the value read depends on timing.
local lt = require "lattice"
local x = lt.field(lt.i32, 1000)
local k = lt.kernel(function()
  local n = 0
  for i in lt.ndrange(1000) do
    if x[i] > n then lt.atomic_add(n, 1) end
  end
  x[0] = n
end)
k()
