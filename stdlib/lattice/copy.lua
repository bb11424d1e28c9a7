-- copy.lua -- x:copy_from(y): every element of field y into field x (scalar
-- or composite fields of one shape, offset and element type), and
-- a:copy_from(b) for ndarrays. Afterwards x reads what y reads everywhere:
-- where x is sparse, its active cells take y's values (0 where y is
-- inactive) and y's active cells are written, so activated, in x.
--
-- Fields copy with a kernel compiled once per pair (kept while both fields
-- live); fields of tree instances, which a kernel may only take as
-- arguments, copy element by element from Lua.
local state = require "lattice.state"
local fieldm = require "lattice.field"
local cfield = require "lattice.cfield"
local T = require "lattice.tracer"

local M = {}
local raise = state.raise

local kernels = setmetatable({}, { __mode = "k" })   -- dst -> {src -> kernel} (weak both ways)

local function scalar_of(f) return cfield.is(f) and cfield.first(f) or f end

local function list_text(t)
  local s = {}
  for k, v in ipairs(t) do s[k] = tostring(v) end
  return "(" .. table.concat(s, ", ") .. ")"
end

local function same_list(a, b)
  if #a ~= #b then return false end
  for k = 1, #a do
    if a[k] ~= b[k] then return false end
  end
  return true
end

local function kind_of(f)
  if cfield.is(f) then return tostring(rawget(f, "_ct")) end
  return f.dtype.name
end

local function describe(f)
  return "field '" .. fieldm.guess_name(scalar_of(f)) .. "' (" .. kind_of(f) .. " " .. list_text(f.shape) .. ")"
end

-- Where each index of f starts (lt.field's offset option; zeros without one).
local function offset_of(f)
  local s = scalar_of(f)
  local o, out = rawget(s, "_offset"), {}
  for k = 1, s._nidx do out[k] = o and o[k] or 0 end
  return out
end

-- Whether any sparse level is above scalar field f.
local function sparse_above(f)
  local sparse = require "lattice.sparse"
  return sparse.struct_level(f) ~= nil
end

-- The copy kernel's text: a chunk of its own, registered where lt.kernel
-- looks for sources (package.loaded["lattice.sources"]), since the tracer
-- rewrites a kernel from its source text.
local KERNEL_CHUNK = "=lattice/copy_kernel"
local KERNEL_SRC = [[
local lt, dst, src, dst_sparse, src_sparse = ...
return function()
  -- x's own cells first (y reads 0 where inactive), then y's active cells:
  -- a dense x is covered by the first loop, a dense y by the second
  if not (dst_sparse and not src_sparse) then
    for I in lt.grouped(dst) do dst[I] = src[I] end
  end
  if dst_sparse then
    for I in lt.grouped(src) do dst[I] = src[I] end
  end
end
]]

local function load_kernel(dst, src, dst_sparse, src_sparse)
  local sources = package.loaded["lattice.sources"]
  if type(sources) ~= "table" then
    sources = {}
    package.loaded["lattice.sources"] = sources
  end
  sources[KERNEL_CHUNK] = KERNEL_SRC
  return assert(load(KERNEL_SRC, KERNEL_CHUNK, "t"))(require "lattice", dst, src, dst_sparse, src_sparse)
end

local function copy_kernel(dst, src)
  local by_src = kernels[dst]
  if not by_src then
    by_src = setmetatable({}, { __mode = "k" })
    kernels[dst] = by_src
  end
  local k = by_src[src]
  if k then return k end
  k = require("lattice").kernel(load_kernel(dst, src, sparse_above(scalar_of(dst)), sparse_above(scalar_of(src))))
  by_src[src] = k
  return k
end

-- Element by element from Lua (fields of tree instances).
local function copy_elements(dst, src)
  local seen = {}
  local function key(I) return table.concat(I, ",") end
  for _, I in ipairs(dst:active()) do
    dst[I] = src[I]
    seen[key(I)] = true
  end
  for _, I in ipairs(src:active()) do
    if not seen[key(I)] then dst[I] = src[I] end
  end
end

function M.field(dst, src)
  if T.active() then
    T.fail("x:copy_from(y) runs in Lua scope; in a kernel copy with a loop: for I in lt.grouped(y) do x[I] = y[I] end")
  end
  fieldm.guess_name(scalar_of(dst))     -- named from the caller's variables, not the copy kernel's
  if not (fieldm.is_field(src) or cfield.is(src)) then
    raise("x:copy_from(y): y must be a field, got " .. (require("lattice.ndarray").is_ndarray(src) and "an ndarray"
      or "a " .. type(src)) .. " (copy an ndarray into a field with x:from_table(a:to_table()) or a kernel)")
  end
  fieldm.guess_name(scalar_of(src))
  local same_type = cfield.is(dst) and cfield.is(src) and rawget(dst, "_ct") == rawget(src, "_ct")
    or not cfield.is(dst) and not cfield.is(src) and dst.dtype == src.dtype
  if not same_type then
    raise("x:copy_from(y): " .. describe(dst) .. " and " .. describe(src) .. " have different element types")
  end
  if not same_list(dst.shape, src.shape) then
    raise("x:copy_from(y): " .. describe(dst) .. " and " .. describe(src) .. " have different shapes")
  end
  local doff, soff = offset_of(dst), offset_of(src)
  if not same_list(doff, soff) then
    raise("x:copy_from(y): " .. describe(dst) .. " starts at " .. list_text(doff) .. " and " ..
      describe(src) .. " at " .. list_text(soff) .. " (their offsets differ)")
  end
  if dst == src then return end
  if rawget(scalar_of(dst), "_inst") or rawget(scalar_of(src), "_inst") then return copy_elements(dst, src) end
  copy_kernel(dst, src)()
end

function M.ndarray(dst, src)
  local nd = require "lattice.ndarray"
  if T.active() then T.fail("a:copy_from(b) runs in Lua scope; in a kernel copy with a loop") end
  if not nd.is_ndarray(src) then
    raise("a:copy_from(b): b must be an ndarray, got " .. (fieldm.is_field(src) and "a field" or "a " .. type(src)))
  end
  local ds, ss = dst.shape, src.shape
  if dst.dtype ~= src.dtype or not same_list(ds, ss) then
    raise("a:copy_from(b): the ndarrays differ: " .. dst.dtype.name .. " " .. list_text(ds) .. " and " ..
      src.dtype.name .. " " .. list_text(ss))
  end
  require("lattice.core").ndarray_copy(rawget(dst, "_ud"), rawget(src, "_ud"))
end

return M
