-- Random operations on dense(i, 8) -> dynamic(j, 24, chunk 4): append, length,
-- writes (which lengthen a list), reads, is_active, clearing lists and
-- deactivate_all, in Lua scope and in kernels, checked against Lua arrays.
package.path = "lib/?.lua;" .. package.path
local lt = require "lattice"
local driver = require "sparse_driver"
lt.init {}
local cnt, sum = lt.field(lt.i32, {}), lt.field(lt.i64, {})
local l = lt.field(lt.i32)
local rows = lt.root:dense(lt.i, 8)
local lists = rows:dynamic(lt.j, 24, { chunk = 4 })
lists:place(l)
local N, CAP = 8, 24

local kappend = lt.kernel(function(i, v) return lt.append(l, i, v) end)
local klength = lt.kernel(function(i) return lt.length(l, i) end)
local kset = lt.kernel(function(i, j, v) l[i][j] = v end)
local kget = lt.kernel(function(i, j) return l[i][j] end)
local kis = lt.kernel(function(i, j) return lt.select(lt.is_active(l, i, j), 1, 0) end)
local kclear = lt.kernel(function(i) lt.deactivate(l, i) end)
local kall = lt.kernel(function() l:deactivate_all() end)
local kcount = lt.kernel(function()
  for i, j in l do
    lt.atomic_add(cnt.value, 1)
    lt.atomic_add(sum.value, l[i][j] * (j + 1))
  end
end)

local model = {}
for i = 0, N - 1 do model[i] = {} end
local function mread(i, j) local v = model[i][j + 1]; return v or 0 end

-- the elements the dynamic level holds by lt.stats() (summed over the
-- runtime's per-thread counters)
local function level_active(kind)
  for _, sn in ipairs(lt.stats().snodes) do
    if sn.kind == (kind or "dynamic") then return sn.active end
  end
end

local rng = driver.rng(7)
local function check(step)
  for i = 0, N - 1 do
    local want = #model[i]
    if lt.length(l, i) ~= want then error(("step %d: length(%d) = %d, want %d"):format(step, i, lt.length(l, i), want)) end
    if klength(i) ~= want then error(("step %d: kernel length(%d) = %d, want %d"):format(step, i, klength(i), want)) end
  end
  local t = l:to_table()
  local n, s = 0, 0
  for i = 0, N - 1 do
    for j = 0, CAP - 1 do
      if t[i + 1][j + 1] ~= mread(i, j) then
        error(("step %d: l[%d][%d] = %s, want %s"):format(step, i, j, t[i + 1][j + 1], mread(i, j)))
      end
      if j < #model[i] then n = n + 1; s = s + mread(i, j) * (j + 1) end
    end
  end
  cnt.value, sum.value = 0, 0
  kcount()
  if cnt.value ~= n or sum.value ~= s then
    error(("step %d: struct-for count/sum %d/%d, want %d/%d"):format(step, cnt.value, sum.value, n, s))
  end
  if #l:active() ~= n then error(("step %d: %d active, want %d"):format(step, #l:active(), n)) end
  if level_active() ~= n then error(("step %d: lt.stats() counts %d elements, want %d"):format(step, level_active(), n)) end
end

for step = 1, 3000 do
  local i, r = rng(0, N - 1), rng(1, 100)
  local row = model[i]
  if r <= 25 and not (r <= 12 and #row >= CAP) then   -- (a Lua append to a full list is tested below)
    local v = rng(1, 500)
    local at = (r <= 12) and lt.append(l, i, v) or kappend(i, v)
    if #row < CAP then
      if at ~= #row then error(("step %d: append returned %d, want %d"):format(step, at, #row)) end
      row[#row + 1] = v
    elseif r > 12 and at ~= -1 then
      error(("step %d: append to a full list in a kernel returned %d, want -1"):format(step, at))
    end
  elseif r <= 35 then                                 -- Lua append: an error exactly when full
    local ok = pcall(lt.append, l, i, 1)
    if ok ~= (#row < CAP) then error("step " .. step .. ": append status " .. tostring(ok)) end
    if ok then row[#row + 1] = 1 end
  elseif r <= 50 then                                 -- writes lengthen the list
    local j, v = rng(0, CAP - 1), rng(1, 500)
    if r <= 42 then l[i][j] = v else kset(i, j, v) end
    for k = #row + 1, j do row[k] = 0 end
    row[j + 1] = v
  elseif r <= 65 then
    local j = rng(0, CAP - 1)
    local got = (r <= 58) and l[i][j] or kget(i, j)
    if got ~= mread(i, j) then error(("step %d: read l[%d][%d] = %s, want %s"):format(step, i, j, got, mread(i, j))) end
  elseif r <= 80 then
    local j = rng(0, CAP - 1)
    local got = (r <= 72) and lt.is_active(l, i, j) or (kis(i, j) == 1)
    if got ~= (j < #row) then error(("step %d: is_active(%d, %d) = %s"):format(step, i, j, tostring(got))) end
  elseif r <= 90 then
    if r <= 85 then lt.deactivate(l, i) else kclear(i) end
    model[i] = {}
  elseif r <= 91 then
    if rng(0, 1) == 0 then l:deactivate_all() else kall() end
    for k = 0, N - 1 do model[k] = {} end
  end
  if step % 250 == 0 then check(step) end
end
check(3000)
-- a full list: Lua-scope append is an error naming the field and the capacity
lt.deactivate(l, 0)
for k = 1, CAP do lt.append(l, 0, k) end
local ok, msg = pcall(lt.append, l, 0, 99)
assert(not ok and msg:find("is full") and msg:find("capacity 24"), msg)

-- Many threads appending at once: a range-for fills 64 lists under a pointer
-- level with 40 000 ids in a scattered order; every id lands exactly once,
-- each list's length is its share, and the counts of lt.stats() agree.
local ids = lt.field(lt.i32)
local cells = lt.root:pointer(lt.i, 64)
cells:dynamic(lt.j, 1024, { chunk = 32 }):place(ids)
local M = 40000
local fill = lt.kernel(function()
  for p in lt.ndrange(M) do lt.append(ids, (p * 37) % 64, p) end
end)
local per = lt.field(lt.i64, 64)
local seen = lt.field(lt.i64, {})
local tally = lt.kernel(function()
  for i, j in ids do
    lt.atomic_add(per[i], 1)
    lt.atomic_add(seen.value, ids[i][j] + 1)
  end
end)
local share = {}
for i = 0, 63 do share[i] = 0 end
for p = 0, M - 1 do share[(p * 37) % 64] = share[(p * 37) % 64] + 1 end
for round = 1, 3 do
  ids:deactivate_all()
  per:fill(0)
  seen.value = 0
  fill()
  tally()
  for i = 0, 63 do
    if lt.length(ids, i) ~= share[i] or per[i] ~= share[i] then
      error(("round %d: list %d holds %d (struct-for %d), want %d"):format(round, i, lt.length(ids, i), per[i], share[i]))
    end
  end
  assert(seen.value == M * (M + 1) // 2, ("round %d: ids sum to %d"):format(round, seen.value))
  local in_l, counted = 0, 0
  for i = 0, N - 1 do in_l = in_l + lt.length(l, i) end
  for _, sn in ipairs(lt.stats().snodes) do
    if sn.kind == "dynamic" then counted = counted + sn.active end
  end
  assert(counted == M + in_l, ("round %d: lt.stats() counts %d elements, want %d"):format(round, counted, M + in_l))
end
print("sparse_prop_dynamic: ok")
