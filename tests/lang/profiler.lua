-- lt.profiler (docs/profiler.md): exact call counts per kernel and per task,
-- the tasks' names for a dense kernel and a sparse struct-for (clear_list,
-- listgen and struct_for records, list reuse hits, a GC task), the times'
-- consistency (min <= mean <= max, a kernel's time covers its tasks', all of
-- it inside the wall-clock time around the calls), clear(), disable(), the
-- lt.init option and the printed table. Runs on every arch variant: on CUDA
-- (mockgpu/) the task times come from CUDA events.
local lt = require "lattice"
local clock = require "lattice.clock"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

-- never enabled: nothing recorded, and the report says how to switch it on
lt.init {}
local pre = lt.field(lt.f32, 8)
local touch = lt.kernel(function() for i in lt.ndrange(8) do pre[i] = 1 end end)
touch()
C.check("no records before enable", #lt.profiler.get(), 0)
C.check("off", lt.profiler.enabled(), false)
if not lt.profiler.report():find("it is off", 1, true) then C.fail("report when off: " .. lt.profiler.report()) end
C.check_error("profile option type", function() lt.init { profile = 1 } end, "profile must be a boolean, got 1")

lt.init { profile = true }
C.check("on after lt.init{profile = true}", lt.profiler.enabled(), true)

local N = 4096
local a = lt.field(lt.f32, N)
local b = lt.field(lt.f32, N)
local fill = lt.kernel(function(v)
  for i in lt.ndrange(N) do a[i] = v * i end
end, { v = lt.f32 })
-- two top-level loops: two range_for tasks
local two = lt.kernel(function()
  for i in lt.ndrange(N) do b[i] = a[i] + 1 end
  for i in lt.ndrange(N) do a[i] = b[i] * 0.5 end
end)
-- a heavier kernel, so that some time is surely measured
local heavy = lt.kernel(function()
  for i in lt.ndrange(N) do
    local s = 0.0
    for k = 1, 200 do s = s + lt.sin(a[i] + k) end
    b[i] = s
  end
end)

-- a sparse tree: pointer -> dense, a struct-for over it, and a kernel that
-- deactivates (a GC task follows it)
local y = lt.field(lt.f32)
local ptr = lt.root:pointer(lt.i, 32)
ptr:dense(lt.i, 8):place(y)
local activate = lt.kernel(function(n) for i in lt.ndrange(n) do y[i * 8] = 1 end end)
local sfor = lt.kernel(function() for i in y do y[i] = y[i] + 1 end end)
local drop = lt.kernel(function() for i in lt.ndrange(4) do lt.deactivate(ptr, i * 8) end end)

local t0 = clock.now()
for k = 1, 7 do fill(k) end
for _ = 1, 3 do two() end
heavy()
activate(16)
for _ = 1, 5 do sfor() end     -- lists built once, reused 4 times
activate(24)                   -- new pointer cells: the dense level's list is stale
sfor()                         -- built again
drop()
local wall_ms = (clock.now() - t0) * 1e3

local recs = lt.profiler.get()
local by = {}
for _, r in ipairs(recs) do
  if by[r.name] then C.fail("two records named " .. r.name) end
  by[r.name] = r
end
local function rec(name)
  local r = by[name]
  if not r then
    local names = {}
    for _, x in ipairs(recs) do names[#names + 1] = x.name end
    C.fail("no record " .. name .. " (records: " .. table.concat(names, ", ") .. ")")
    return { calls = -1, reused = -1, total_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0 }
  end
  return r
end

-- kernels: exact calls
local launches = { fill = 7, two = 3, heavy = 1, activate = 2, sfor = 6, drop = 1 }
for name, n in pairs(launches) do
  C.check(name .. " calls", rec(name).calls, n)
  C.check(name .. " kind", rec(name).kind, "kernel")
end
C.check("touch ran before enable: no record", by.touch, nil)

-- dense tasks
C.check("fill#0 range_for calls", rec("fill#0 range_for").calls, 7)
C.check("fill#0 kernel", rec("fill#0 range_for").kernel, "fill")
C.check("fill#0 task", rec("fill#0 range_for").task, 0)
C.check("fill#0 kind", rec("fill#0 range_for").kind, "range_for")
C.check("two#0 calls", rec("two#0 range_for").calls, 3)
C.check("two#1 calls", rec("two#1 range_for").calls, 3)
C.check("fill has one task", by["fill#1 range_for"], nil)

-- the sparse struct-for: its levels' ids from lt.stats
local P, D
for _, s in ipairs(lt.stats().snodes) do
  if s.kind == "pointer" then P = s.id elseif s.kind == "dense" and P and s.id > P and not D then D = s.id end
end
-- the pointer level's list (its containers: the root's cells) never goes
-- stale here; the dense level's does when pointer cells are activated
local sp = {
  { ("sfor#0 clear_list S%d"):format(P), "clear_list", 1, 5 },
  { ("sfor#1 listgen S%d"):format(P), "listgen", 1, 5 },
  { ("sfor#2 clear_list S%d"):format(D), "clear_list", 2, 4 },
  { ("sfor#3 listgen S%d"):format(D), "listgen", 2, 4 },
  { ("sfor#4 struct_for S%d"):format(D), "struct_for", 6, 0 },
}
for t, e in ipairs(sp) do
  local r = rec(e[1])
  C.check(e[1] .. " kind", r.kind, e[2])
  C.check(e[1] .. " calls", r.calls, e[3])
  C.check(e[1] .. " reused", r.reused, e[4])
  C.check(e[1] .. " task", r.task, t - 1)
  C.check(e[1] .. " kernel", r.kernel, "sfor")
end
C.check("struct_for snode", rec(sp[5][1]).snode, D)
local gc
for _, r in ipairs(recs) do
  if r.kernel == "drop" and r.kind == "gc" then gc = r end
end
if not gc then C.fail("no gc record for drop") else
  C.check("gc calls", gc.calls, 1)
  C.check("gc name", gc.name, ("drop#%d gc S%d"):format(gc.task, P))
end

-- times: min <= mean <= max, total = mean * calls, tasks inside their kernel,
-- kernels inside the wall-clock time; the heavy kernel took some time
local kernel_sum, task_sum = 0, {}
for _, r in ipairs(recs) do
  if r.calls > 0 then
    if not (r.min_ms >= 0 and r.min_ms <= r.mean_ms + 1e-9 and r.mean_ms <= r.max_ms + 1e-9) then
      C.fail(("%s: min %g mean %g max %g"):format(r.name, r.min_ms, r.mean_ms, r.max_ms))
    end
    if math.abs(r.mean_ms * r.calls - r.total_ms) > 1e-6 * (1 + r.total_ms) then
      C.fail(("%s: mean %g x %d calls ~= total %g"):format(r.name, r.mean_ms, r.calls, r.total_ms))
    end
    if r.calls == 1 and r.min_ms ~= r.max_ms then C.fail(r.name .. ": one call, min ~= max") end
  end
  if r.kind == "kernel" then
    kernel_sum = kernel_sum + r.total_ms
  else
    task_sum[r.kernel] = (task_sum[r.kernel] or 0) + r.total_ms
  end
end
for name in pairs(launches) do
  if task_sum[name] > rec(name).total_ms * 1.0001 + 1e-6 then
    C.fail(("%s: its tasks took %g ms, more than the kernel's %g ms"):format(name, task_sum[name], rec(name).total_ms))
  end
end
if kernel_sum > wall_ms then C.fail(("kernels %g ms, more than the %g ms around them"):format(kernel_sum, wall_ms)) end
if not (rec("heavy").total_ms > 0 and rec("heavy#0 range_for").total_ms > 0) then
  C.fail("heavy: no time measured")
end
local pct = 0
for _, r in ipairs(recs) do if r.kind == "kernel" then pct = pct + r.pct end end
if math.abs(pct - 100) > 1e-6 then C.fail("kernels' shares add up to " .. pct .. "%") end
-- order: kernels by total time, each followed by its own tasks
local last_kernel, last_total = nil, math.huge
for _, r in ipairs(recs) do
  if r.kind == "kernel" then
    if r.total_ms > last_total then C.fail("kernels not sorted by total time at " .. r.name) end
    last_kernel, last_total = r.name, r.total_ms
  elseif r.kernel ~= last_kernel then
    C.fail(r.name .. " is not under its kernel")
  end
end

-- the printed table
local out = {}
lt.profiler.print({ write = function(_, s) out[#out + 1] = s end })
local lines = {}
for l in table.concat(out):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
if not lines[1]:find("^lt%.profiler: 6 kernels, 20 launches, [%d.]+ ms %(") then C.fail("header: " .. lines[1]) end
if not lines[2]:find("^kernel / task +calls +total ms +mean ms +min ms +max ms +%% +reused$") then
  C.fail("column heads: " .. lines[2])
end
C.check("lines: two heads, one per record, the runtime summary", #lines, 2 + #recs + 1)
for i, r in ipairs(recs) do
  local l = lines[2 + i] or ""
  local indent = r.kind == "kernel" and "" or "  "
  local pat = "^" .. indent .. r.name:gsub("[%-%.%#%%]", "%%%0") .. " +" .. r.calls .. " +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+"
  if not l:find(pat) then C.fail(("line for %s: %q"):format(r.name, l)) end
  if (r.kind == "listgen" or r.kind == "clear_list") and not l:find(" " .. r.reused .. "$") then
    C.fail("reuse column of " .. r.name .. ": " .. l)
  end
  if l:find("%s$") then C.fail("trailing space: " .. l) end
end
local last = lines[#lines]
if not last:find("^sparse runtime tasks: clear_list [%d.]+ ms %(3%), listgen [%d.]+ ms %(3%), gc [%d.]+ ms %(1%); lists reused 9 times$") then
  C.fail("runtime summary: " .. last)
end

-- disable: nothing more recorded; enable again: recording goes on
lt.profiler.disable()
fill(1)
C.check("disabled: fill calls unchanged", rec("fill").calls, 7)
for _, r in ipairs(lt.profiler.get()) do
  if r.name == "fill" then C.check("disabled: fill calls unchanged (get)", r.calls, 7) end
end
lt.profiler.enable()
fill(2)
local f2
for _, r in ipairs(lt.profiler.get()) do if r.name == "fill" then f2 = r end end
C.check("enabled again: fill calls", f2 and f2.calls, 8)

-- clear: everything forgotten, counting restarts from zero
lt.profiler.clear()
C.check("cleared", #lt.profiler.get(), 0)
two()
local after = {}
for _, r in ipairs(lt.profiler.get()) do after[r.name] = r end
C.check("after clear: two calls", after.two and after.two.calls, 1)
C.check("after clear: two#1 calls", after["two#1 range_for"] and after["two#1 range_for"].calls, 1)
C.check("after clear: nothing else", #lt.profiler.get(), 3)

-- lt.init keeps the records and the switch unless told: a new program is profiled too
lt.init {}
C.check("still on after lt.init{}", lt.profiler.enabled(), true)
local z = lt.field(lt.i32, 16)
local again = lt.kernel(function() for i in lt.ndrange(16) do z[i] = i end end)
again()
again()
local seen = {}
for _, r in ipairs(lt.profiler.get()) do seen[r.name] = r.calls end
C.check("new program's kernel", seen.again, 2)
C.check("earlier program's records kept", seen.two, 1)
lt.init { profile = false }
C.check("off after lt.init{profile = false}", lt.profiler.enabled(), false)
local w = lt.field(lt.i32, 16)
local quiet = lt.kernel(function() for i in lt.ndrange(16) do w[i] = i end end)
quiet()
for _, r in ipairs(lt.profiler.get()) do
  if r.name == "quiet" then C.fail("recorded while off") end
end

C.finish("profiler")
print("profiler: ok")
