-- sparse_driver.lua -- random operations on a sparse i32 field, in Lua scope
-- and in kernels, checked against lib/sparse_model.lua after every batch.
local lt = require "lattice"
local model = require "sparse_model"

local M = {}

-- A small deterministic generator (independent of math.random's algorithm).
function M.rng(seed)
  local s = seed
  return function(a, b)
    s = (s * 1103515245 + 12345) % 2147483648
    return a + (s >> 8) % (b - a + 1)
  end
end

local function kernels2(x, cnt, sum)
  return {
    set = lt.kernel(function(i, j, v) x[i][j] = v end),
    get = lt.kernel(function(i, j) return x[i][j] end),
    act = lt.kernel(function(i, j) lt.activate(x, i, j) end),
    deact = lt.kernel(function(i, j) lt.deactivate(x, i, j) end),
    is = lt.kernel(function(i, j) return lt.select(lt.is_active(x, i, j), 1, 0) end),
    clear = lt.kernel(function() x:deactivate_all() end),
    count = lt.kernel(function()
      for i, j in x do
        lt.atomic_add(cnt.value, 1)
        lt.atomic_add(sum.value, x[i][j])
      end
    end),
    grouped = lt.kernel(function()
      for I in lt.grouped(x) do lt.atomic_add(cnt.value, 1); lt.atomic_add(sum.value, x[I] + I[0] - I[0]) end
    end),
  }
end

local function kernels1(x, cnt, sum)
  return {
    set = lt.kernel(function(i, v) x[i] = v end),
    get = lt.kernel(function(i) return x[i] end),
    act = lt.kernel(function(i) lt.activate(x, i) end),
    deact = lt.kernel(function(i) lt.deactivate(x, i) end),
    is = lt.kernel(function(i) return lt.select(lt.is_active(x, i), 1, 0) end),
    clear = lt.kernel(function() x:deactivate_all() end),
    count = lt.kernel(function()
      for i in x do
        lt.atomic_add(cnt.value, 1)
        lt.atomic_add(sum.value, x[i])
      end
    end),
    grouped = lt.kernel(function()
      for I in lt.grouped(x) do lt.atomic_add(cnt.value, 1); lt.atomic_add(sum.value, x[I]) end
    end),
  }
end

local function lua_get(x, idx) if #idx == 1 then return x[idx[1]] end return x[idx[1]][idx[2]] end
local function lua_set(x, idx, v) if #idx == 1 then x[idx[1]] = v else x[idx[1]][idx[2]] = v end end

-- Runs nops random operations; errors with a description on the first mismatch.
function M.run(spec, seed, nops, batch)
  local x = spec.x
  local cnt, sum = spec.cnt, spec.sum
  local K = (#spec.shape == 2) and kernels2(x, cnt, sum) or kernels1(x, cnt, sum)
  local m = model.new(spec)
  for _, lvl in ipairs(spec.levels) do lvl.handle:deactivate_all() end   -- start empty
  local rng = M.rng(seed)
  local checks = 0
  local function fail(what, got, want, idx)
    error(("%s: seed %d op %d%s: got %s, want %s"):format(spec.name, seed, checks, idx and
      (" at (" .. table.concat(idx, ", ") .. ")") or "", tostring(got), tostring(want)), 2)
  end
  local function check_all()
    local t = x:to_table()
    model.each(m, function(idx)
      local got = (#idx == 1) and t[idx[1] + 1] or t[idx[1] + 1][idx[2] + 1]
      local want = model.read(m, idx)
      if got ~= want then fail("to_table", got, want, idx) end
    end)
    local act = x:active()
    local n, s = model.count_sum(m)
    if #act ~= n then fail("number of active cells (x:active())", #act, n) end
    for _, idx in ipairs(act) do
      if not model.is_active(m, idx) then fail("x:active() lists an inactive cell", true, false, idx) end
    end
    for _, k in ipairs { "count", "grouped" } do
      cnt.value, sum.value = 0, 0
      K[k]()
      if cnt.value ~= n then fail("struct-for count (" .. k .. ")", cnt.value, n) end
      if sum.value ~= s then fail("struct-for sum (" .. k .. ")", sum.value, s) end
    end
  end
  for op = 1, nops do
    checks = op
    local idx = model.random_index(m, rng)
    local r = rng(1, 100)
    local args = { table.unpack(idx) }
    if os.getenv("LT_TRACE") then print(op, r, table.concat(idx, ",")) end
    if r <= 20 then                                   -- write from Lua
      local v = rng(1, 1000)
      lua_set(x, idx, v)
      model.write(m, idx, v)
    elseif r <= 40 then                               -- write in a kernel
      local v = rng(1, 1000)
      args[#args + 1] = v
      K.set(table.unpack(args))
      model.write(m, idx, v)
    elseif r <= 50 then                               -- read from Lua
      local got, want = lua_get(x, idx), model.read(m, idx)
      if got ~= want then fail("Lua read", got, want, idx) end
    elseif r <= 58 then                               -- read in a kernel
      local got, want = K.get(table.unpack(args)), model.read(m, idx)
      if got ~= want then fail("kernel read", got, want, idx) end
    elseif r <= 64 then
      lt.activate(x, table.unpack(idx))
      model.activate(m, idx)
    elseif r <= 70 then
      K.act(table.unpack(args))
      model.activate(m, idx)
    elseif r <= 76 then
      lt.deactivate(x, table.unpack(idx))
      model.deactivate(m, idx)
    elseif r <= 81 then
      K.deact(table.unpack(args))
      model.deactivate(m, idx)
    elseif r <= 87 then
      local got, want = lt.is_active(x, table.unpack(idx)), model.is_active(m, idx)
      if got ~= want then fail("lt.is_active", got, want, idx) end
    elseif r <= 93 then
      local got, want = K.is(table.unpack(args)), model.is_active(m, idx) and 1 or 0
      if got ~= want then fail("lt.is_active in a kernel", got, want, idx) end
    elseif r <= 94 then
      if rng(0, 1) == 0 then x:deactivate_all() else K.clear() end
      model.deactivate_all(m)
    elseif r <= 96 and #spec.levels > 1 then          -- an outer level, through its handle
      local h = spec.levels[1].handle
      lt.deactivate(h, table.unpack(idx))
      model.deactivate(m, idx, 1)
    end
    if op % batch == 0 then check_all() end
  end
  check_all()
  return nops
end

return M
