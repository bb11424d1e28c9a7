-- sparse_model.lua -- a plain-Lua model of a field under sparse levels, and
-- a random-operation driver that checks Lattice against it (used by the
-- tests/lang/sparse_prop_*.lua tests; not a test itself).
--
-- spec = {
--   shape = {n, m},                field shape (1-D or 2-D)
--   levels = {{block = {bi, bj}, handle = h}, ...}  sparse levels, outermost first:
--                                  the cell of a level covers `block` field cells
--   x = the field (i32), placed by the test
-- }
local M = {}

local function key(idx) return table.concat(idx, ",") end

local function block_key(level, idx)
  local t = {}
  for a = 1, #idx do t[a] = idx[a] // level.block[a] end
  return table.concat(t, ",")
end

function M.new(spec)
  local m = { spec = spec, vals = {}, active = {} }
  for l = 1, #spec.levels do m.active[l] = {} end
  return m
end

local function inner(m) return #m.spec.levels end

function M.is_active(m, idx)
  for l = 1, inner(m) do
    if not m.active[l][block_key(m.spec.levels[l], idx)] then return false end
  end
  return true
end

function M.activate(m, idx)
  for l = 1, inner(m) do m.active[l][block_key(m.spec.levels[l], idx)] = true end
end

-- every field cell in the block of level l holding idx
local function cells_of(m, l, idx)
  local shape, b = m.spec.shape, m.spec.levels[l].block
  local out = {}
  if #shape == 1 then
    local i0 = idx[1] // b[1] * b[1]
    for i = i0, i0 + b[1] - 1 do out[#out + 1] = { i } end
  else
    local i0, j0 = idx[1] // b[1] * b[1], idx[2] // b[2] * b[2]
    for i = i0, i0 + b[1] - 1 do for j = j0, j0 + b[2] - 1 do out[#out + 1] = { i, j } end end
  end
  return out
end

-- deactivating a cell of level l clears its data and every level under it
function M.deactivate(m, idx, l)
  l = l or inner(m)
  m.active[l][block_key(m.spec.levels[l], idx)] = nil
  for _, c in ipairs(cells_of(m, l, idx)) do
    m.vals[key(c)] = nil
    for d = l + 1, inner(m) do m.active[d][block_key(m.spec.levels[d], c)] = nil end
  end
end

function M.deactivate_all(m)
  local l = inner(m)
  for k in pairs(m.active[l]) do
    local idx = {}
    for v in k:gmatch("-?%d+") do idx[#idx + 1] = tonumber(v) * 1 end
    for a = 1, #idx do idx[a] = idx[a] * m.spec.levels[l].block[a] end
    for _, c in ipairs(cells_of(m, l, idx)) do m.vals[key(c)] = nil end
  end
  m.active[l] = {}
end

function M.write(m, idx, v)
  M.activate(m, idx)
  m.vals[key(idx)] = v
end

function M.read(m, idx)
  if not M.is_active(m, idx) then return 0 end
  return m.vals[key(idx)] or 0
end

-- all cells, row-major
function M.each(m, fn)
  local shape = m.spec.shape
  if #shape == 1 then
    for i = 0, shape[1] - 1 do fn({ i }) end
  else
    for i = 0, shape[1] - 1 do for j = 0, shape[2] - 1 do fn({ i, j }) end end
  end
end

function M.count_sum(m)
  local n, s = 0, 0
  M.each(m, function(idx)
    if M.is_active(m, idx) then n = n + 1; s = s + M.read(m, idx) end
  end)
  return n, s
end

function M.random_index(m, rng)
  local idx = {}
  for a, n in ipairs(m.spec.shape) do idx[a] = rng(0, n - 1) end
  return idx
end

return M
