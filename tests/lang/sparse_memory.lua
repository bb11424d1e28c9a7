-- Memory stays bounded: 1000 cycles of (a kernel activating a region,
-- deactivate_all, GC) leave the pool's high-water mark where the first cycle
-- put it; destroying an lt.tree instance and instantiating again reuses its memory.
local lt = require "lattice"
lt.init {}
local x = lt.field(lt.f32)
lt.root:pointer(lt.ij, 16):dense(lt.ij, 8):place(x)
local fill = lt.kernel(function(n)
  for i, j in lt.ndrange(n, n) do x[i][j] = i + j end
end)
local total = lt.field(lt.f64, {})
local sum = lt.kernel(function() for i, j in x do lt.atomic_add(total.value, x[i][j]) end end)

local function expected(n)
  local s = 0
  for i = 0, n - 1 do for j = 0, n - 1 do s = s + i + j end end
  return s
end

fill(40)
total.value = 0
sum()                                        -- the first cycle also builds the lists
x:deactivate_all()
local first = lt.stats().high_water
for cycle = 1, 1000 do
  local n = 24 + cycle % 17                 -- regions of different sizes, all within the first's blocks
  fill(n)
  if cycle % 100 == 0 then
    total.value = 0
    sum()
    assert(total.value == expected(n), ("cycle %d: sum %s, want %s"):format(cycle, total.value, expected(n)))
  end
  x:deactivate_all()
  assert(not lt.is_active(x, 0, 0), "cycle " .. cycle .. ": still active after deactivate_all")
end
local after = lt.stats()
assert(after.high_water == first, ("high-water mark grew from %d to %d bytes"):format(first, after.high_water))
assert(after.gc_runs > 0, "no GC ran")
assert(after.active.S1pointer == 0, "cells still active: " .. tostring(after.active.S1pointer))

-- tree instances: destroy + instantiate reuses the root container and the cells
local Grid = lt.tree { fields = { rho = lt.f32 }, lt.pointer(lt.ij, 8) { lt.dense(lt.ij, 16) { "rho" } } }
local touch = lt.kernel(function(g) for i, j in lt.ndrange(128, 128) do g.rho[i][j] = 1 end end, { g = Grid })
local g = Grid:instantiate()
touch(g)
g:destroy()
local mark = lt.stats().high_water
for _ = 1, 50 do
  local h = Grid:instantiate()
  touch(h)
  assert(h.rho[127][127] == 1.0)
  h:destroy()
end
assert(lt.stats().high_water == mark, ("instances grew the pool from %d to %d bytes"):format(mark, lt.stats().high_water))
-- unreferenced instances are freed by Lua's GC and their memory reused too
for _ = 1, 3 do
  for _ = 1, 20 do touch(Grid:instantiate()) end
  collectgarbage()
  collectgarbage()
end
local gc_mark = lt.stats().high_water
for _ = 1, 5 do
  for _ = 1, 20 do touch(Grid:instantiate()) end
  collectgarbage()
  collectgarbage()
end
assert(lt.stats().high_water == gc_mark, ("collected instances grew the pool from %d to %d bytes"):format(gc_mark,
  lt.stats().high_water))
print("sparse_memory: ok", first, mark)
