-- List reuse: a second struct-for over the same instance without structural
-- change reuses the lists; an activation (or another instance) rebuilds them.
-- And the final IR of a struct-for kernel (golden/sparse_structfor_final.txt):
-- clear_list/listgen tasks in front of the task_struct_for.
local lt = require "lattice"
lt.init {}
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
local text = sum:ir()
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
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local path = dir .. "golden/sparse_structfor_final.txt"
if os.getenv("LT_BLESS") == "1" then
  local f = assert(io.open(path, "w"))
  f:write(final)
  f:close()
  print("blessed " .. path)
else
  local f = assert(io.open(path, "r"), "golden file missing (run with LT_BLESS=1): " .. path)
  local want = f:read("a")
  f:close()
  assert(want == final, "final IR differs from " .. path .. "\n--- got\n" .. final .. "--- want\n" .. want)
end
print("sparse_lists: ok")
