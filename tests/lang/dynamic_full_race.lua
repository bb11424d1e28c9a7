-- Appends from many threads at once into lists that fill up: an append
-- reserves its index with one atomic add and gives it back when the list is
-- full, so for a moment a list's counter runs past its capacity. Checked
-- against the particles' own record of which appends were taken: every list
-- ends exactly full, holds each accepted id once and no refused one, its
-- length never reads above the capacity (also while other threads are still
-- appending), the level's active count matches, and the lists work again
-- after being cleared. Small chunks, so appends also race to make chunks.
local lt = require "lattice"
lt.init { threads = 4 }

local L, CAP, CHUNK, NP = 8, 100, 4, 4000
local l = lt.field(lt.i32)
local lists = lt.root:pointer(lt.i, L)
lists:dynamic(lt.j, CAP, { chunk = CHUNK }):place(l)
local took = lt.field(lt.i32, NP)         -- the index an append got, or -1
local over = lt.field(lt.i32, {})          -- lengths seen above the capacity

local fill = lt.kernel(function(salt)
  for p in lt.ndrange(NP) do
    local i = (p * 7 + salt) % L
    took[p] = lt.append(l, i, p)
    if lt.length(l, i) > CAP then lt.atomic_add(over.value, 1) end
  end
end)

local function level_active()
  for _, sn in ipairs(lt.stats().snodes) do
    if sn.kind == "dynamic" then return sn.active end
  end
end

for round = 1, 12 do
  local salt = round * 3
  fill(salt)
  assert(over.value == 0, ("round %d: a length above the capacity was seen %d times"):format(round, over.value))
  local t = took:to_table()
  local accepted = {}
  for i = 0, L - 1 do accepted[i] = 0 end
  for p = 0, NP - 1 do
    local i, k = (p * 7 + salt) % L, t[p + 1]
    assert(k >= -1 and k < CAP, ("round %d: particle %d got index %d"):format(round, p, k))
    if k >= 0 then
      accepted[i] = accepted[i] + 1
      assert(l[i][k] == p, ("round %d: list %d index %d holds %d, not particle %d"):format(round, i, k, l[i][k], p))
    end
  end
  for i = 0, L - 1 do
    assert(lt.length(l, i) == CAP, ("round %d: list %d has length %d"):format(round, i, lt.length(l, i)))
    assert(accepted[i] == CAP, ("round %d: list %d took %d appends"):format(round, i, accepted[i]))
  end
  assert(level_active() == L * CAP, ("round %d: %d active elements"):format(round, level_active()))
  lists:deactivate_all()
  assert(level_active() == 0 and lt.length(l, 3) == 0)
end

-- cleared lists fill again from index 0
local push = lt.kernel(function(i, v) return lt.append(l, i, v) end)
assert(push(2, 11) == 0 and push(2, 12) == 1 and lt.length(l, 2) == 2 and l[2][1] == 12)
print("dynamic_full_race: ok")
