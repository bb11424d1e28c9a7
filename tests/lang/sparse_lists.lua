-- List reuse: a second struct-for over the same instance without structural
-- change reuses the lists; an activation (or another instance) rebuilds them.
-- And the final IR of a struct-for kernel (golden/sparse_structfor_final.txt):
-- clear_list/listgen tasks in front of the task_struct_for.
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"
local x = lt.field(lt.i32)
lt.root:pointer(lt.ij, 4):dense(lt.ij, 8):place(x)
local total = lt.field(lt.i64, {})
local sum = lt.kernel(function()
  for i, j in x do lt.atomic_add(total.value, x[i][j]) end
end)
local function run()
  total.value = 0
  sum()
  return total.value
end

x[1][1] = 5
x[20][30] = 7
assert(run() == 12)
local s1 = lt.stats()
assert(run() == 12)
local s2 = lt.stats()
assert(s2.lists_reused > s1.lists_reused, ("no reuse: %d -> %d"):format(s1.lists_reused, s2.lists_reused))
assert(s2.lists_built == s1.lists_built, ("rebuilt without change: %d -> %d"):format(s1.lists_built, s2.lists_built))
-- a write inside an active block changes nothing structural: still reused
x[1][2] = 1
assert(run() == 13)
local s3 = lt.stats()
assert(s3.lists_built == s2.lists_built, "a write to an active cell rebuilt the lists")
-- activating a new block rebuilds
x[9][9] = 100
assert(run() == 113)
local s4 = lt.stats()
assert(s4.lists_built > s3.lists_built, "activation did not rebuild the lists")
-- deactivation rebuilds too
lt.deactivate(x, 9, 9)
assert(run() == 13)
assert(lt.stats().lists_built > s4.lists_built, "deactivation did not rebuild the lists")

-- golden IR of the struct-for kernel after every pass
local text = sum:ir { all = true }
local sections = {}
for name, body in text:gmatch("# after (%w+)\n(.-)\n\n") do sections[#sections + 1] = { name = name, body = body } end
local final = sections[#sections].body .. "\n"
local off
for _, s in ipairs(sections) do if s.name == "offload" then off = s.body end end
local a = off:find("task_clear_list S1pointer", 1, true)
local b = off:find("task_listgen S0root->S1pointer", 1, true)
local c = off:find("task_listgen S1pointer->S2dense", 1, true)
local d = off:find("task_struct_for S2dense", 1, true)
assert(a and b and c and d and a < b and b < c and c < d, "list tasks before the struct-for:\n" .. off)
C.golden("sparse_structfor_final.txt", final)
C.finish("sparse_lists")
print("sparse_lists: ok")
