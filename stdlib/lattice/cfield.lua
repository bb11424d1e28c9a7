-- cfield.lua -- fields of composite types (vectors, matrices, structs):
-- lt.field(lt.vec2, {n}), placement, component views (SoA), kernel and
-- Lua-scope access. A composite field is a list of scalar fields, one per
-- scalar component in the type's flat order (row-major; struct members in
-- declaration order); the IR only ever sees those scalar fields.
--
-- Placing the composite field places all components in one cell (AoS);
-- placing its component views separately (v:component(0), v.x, s.vel, ...)
-- gives SoA or any mix. The field is usable once every component is placed.
local state = require "lattice.state"
local fieldm = require "lattice.field"
local T = require "lattice.tracer"

local M = {}
local CField = {}
M.CField = CField
local HostAcc                     -- v[i] of a composite field with more indices (Lua scope)

local raise = state.raise
local function is(x) return getmetatable(x) == CField end
M.is = is

-- The composite type kinds: matrix.lua types and struct.lua types register
-- here (is_ctype(x) -> bool).
M.kinds = {}
function M.is_ctype(x)
  for _, k in ipairs(M.kinds) do if k(x) then return true end end
  return false
end

local function fail(msg)
  if T.active() then T.fail(msg) end
  raise(msg)
end

local serial = 0
-- A composite field of type ct over the scalar fields comps.
local function make(ct, comps, name)
  serial = serial + 1
  return setmetatable({ _ct = ct, _comps = comps, _name = name, _serial = 1000000 + serial }, CField)
end

-- lt.field(ct, shape, name[, needs_grad[, needs_dual[, offset]]]): with needs_grad every
-- component has its gradient (placed beside it), and f.grad is the composite
-- of those; needs_dual likewise gives f.dual, the tangents (forward mode);
-- every component takes the offset (a checked list)
function M.new(ensure, ct, shape, name, needs_grad, needs_dual, offset)
  local tys, suffixes = ct:leaf_types(), ct:leaf_names()
  -- what (a struct's "gradients"/"duals") and the option's phrase for the messages
  local function check_float(plural, option)
    if not require("lattice.matrix").is_ctype(ct) then
      raise("lt.field: " .. plural .. " of struct fields are not supported yet (vectors and matrices have them); "
        .. "docs/autodiff.md")
    end
    if ct.dtype.name ~= "f32" and ct.dtype.name ~= "f64" then
      raise("lt.field: a field with " .. option .. " holds f32 or f64 components, not " .. ct.dtype.name)
    end
  end
  if needs_dual then check_float("duals", "a dual (needs_dual, forward mode)") end
  if needs_grad then check_float("gradients", "a gradient (needs_grad)") end
  local comps = {}
  for k, t in ipairs(tys) do
    comps[k] = fieldm.new(ensure, t, nil, { name = name and (name .. suffixes[k]) or nil, needs_grad = needs_grad,
      needs_dual = needs_dual, offset = offset })
  end
  local f = make(ct, comps, name)
  -- f.grad / f.dual: the composite of the components' own
  for _, side in ipairs { needs_grad and "grad" or false, needs_dual and "dual" or false } do
    if side then
      local parts = {}
      for k, c in ipairs(comps) do parts[k] = c[side] end
      rawset(f, "_" .. side, make(ct, parts, name and (name .. "." .. side) or nil))
    end
  end
  if shape ~= nil then
    ensure()
    if type(shape) == "number" then shape = { shape } end
    if type(shape) ~= "table" then raise("lt.field: the shape must be a number or a table of numbers") end
    if #shape == 0 then fieldm.root_builder():place(f)
    else
      local axes = {}
      for i = 1, #shape do axes[i] = i - 1 end
      fieldm.root_builder():dense(axes, shape):place(f)
    end
  end
  return f
end

-- The scalar fields of f in order (for place).
function M.components(f) return f._comps end

local function name_of(f) return fieldm.guess_name(f) end

-- Readies every component (placed, materialised) and checks they agree.
function M.ready(f)
  if rawget(f, "_nidx") then return f end
  for k, c in ipairs(f._comps) do
    if not c._snode then
      fail("component " .. (k - 1) .. " of field '" .. name_of(f) .. "' is not placed; place the field (AoS) "
        .. "or each of its components (SoA)")
    end
  end
  local ok, err = pcall(function() for _, c in ipairs(f._comps) do fieldm.ready(c) end end)
  if not ok then fail((tostring(err):gsub("^[^:\n]*:%d+: ", ""))) end
  local first = f._comps[1]
  for k, c in ipairs(f._comps) do
    if c._nidx ~= first._nidx or fieldm.shape_text(c._shape) ~= fieldm.shape_text(first._shape) then
      fail("the components of field '" .. name_of(f) .. "' are placed with different shapes (component 0: " ..
        fieldm.shape_text(first._shape) .. ", component " .. (k - 1) .. ": " .. fieldm.shape_text(c._shape) .. ")")
    end
    if fieldm.shape_text(c.offset) ~= fieldm.shape_text(first.offset) then
      fail("the components of field '" .. name_of(f) .. "' are placed with different offsets (component 0: " ..
        fieldm.shape_text(first.offset) .. ", component " .. (k - 1) .. ": " .. fieldm.shape_text(c.offset) .. ")")
    end
  end
  rawset(f, "_nidx", first._nidx)
  rawset(f, "_shape", first._shape)
  return f
end

-- The scalar field a struct-for over f loops over (its first component).
function M.first(f) return M.ready(f)._comps[1] end

-- ---- in kernels ----------------------------------------------------------------------------

-- Names the components after the composite (grid_v.x, grid_v.y, C.01, ...)
-- once its name is known, for the IR and messages; a field made by
-- lt.field(lt.vec2, n) is placed before the local that holds it exists.
local function name_components(f)
  if rawget(f, "_comps_named") then return end
  local n = rawget(f, "_name") or fieldm.find_name(f)
  if not n then return end
  local suffixes = f._ct:leaf_names()
  for i, c in ipairs(f._comps) do
    if not rawget(c, "_name") then fieldm.set_name(c, n .. suffixes[i]) end
  end
  rawset(f, "_comps_named", true)
end

function M.read(f, idx)
  M.ready(f)
  name_components(f)
  local elems = {}
  for k, c in ipairs(f._comps) do elems[k] = T.field_read(c, idx) end
  return f._ct:from_flat(elems)
end

function M.write(f, idx, v)
  M.ready(f)
  name_components(f)
  local flat = f._ct:to_flat(v, "field '" .. name_of(f) .. "'")
  for k, c in ipairs(f._comps) do T.field_write(c, idx, flat[k]) end
end

T.cfield = M

-- ---- Lua scope -----------------------------------------------------------------------------

local core = require "lattice.core"
local last_read = fieldm.last_read

local function host_read(f, idx)
  name_components(f)
  local flat = {}
  for k, c in ipairs(f._comps) do flat[k] = fieldm.host_get(c, idx) end
  last_read.obj = nil          -- the element is a table: v[i][1] indexes it, not a field
  return f._ct:to_lua(flat)
end

-- The flat components of v converted for f's components, each checked as a
-- single write checks it (fieldm.check_value), before anything is written.
local function checked_flat(f, v, what, allow_scalar)
  name_components(f)
  local flat = f._ct:from_lua(v, what, allow_scalar)
  for k, c in ipairs(f._comps) do flat[k] = fieldm.check_value(c, flat[k]) end
  return flat
end

local function host_write(f, idx, v)
  local flat = checked_flat(f, v, "field '" .. name_of(f) .. "'")
  for k, c in ipairs(f._comps) do fieldm.host_set(c, idx, flat[k]) end
end

local function wrong_count(f, got)
  fail("field '" .. name_of(f) .. "' has " .. f._nidx .. " indices, got " .. got)
end

HostAcc = fieldm.host_accessor(host_read, host_write, wrong_count)

local methods, props = {}, {}

-- x:fill(v): v a value or table of the element's type, or a scalar for every component.
function methods.fill(f, v)
  if T.active() then return T.unsupported("x:fill inside a kernel; write a loop") end
  M.ready(f)
  local flat
  if type(v) == "number" then
    flat = {}
    name_components(f)
    for k, c in ipairs(f._comps) do flat[k] = fieldm.check_value(c, v) end
  else
    local ok, res = pcall(checked_flat, f, v, "field '" .. name_of(f) .. "'", true)
    if not ok then raise("x:fill: " .. tostring(res):gsub("^[^:\n]*:%d+: ", "")) end
    flat = res
  end
  for k, c in ipairs(f._comps) do c:fill(flat[k]) end
end

-- Nested tables over the indices; each element as a Lua table (vector: {x, y};
-- matrix: rows; struct: {member = ...}).
function methods.to_table(f)
  if T.active() then return T.unsupported("x:to_table inside a kernel") end
  M.ready(f)
  local parts = {}
  for k, c in ipairs(f._comps) do parts[k] = c:to_table() end
  local function combine(ts, depth)
    if depth == 0 then return f._ct:to_lua(ts) end
    local out = {}
    for i = 1, #ts[1] do
      local sub = {}
      for k = 1, #ts do sub[k] = ts[k][i] end
      out[i] = combine(sub, depth - 1)
    end
    return out
  end
  return combine(parts, f._nidx)
end

-- "t[i][j]" for the p-th element (row-major, from 1) of tbl, in its own
-- numbering (each level from 0 or 1), for messages.
local function elem_path(tbl, shape, p)
  local idx, r = {}, p - 1
  for d = #shape, 1, -1 do idx[d] = r % shape[d]; r = r // shape[d] end
  local path, t = "t", tbl
  for d = 1, #shape do
    local base = rawget(t, 0) ~= nil and 0 or 1
    path = path .. "[" .. (idx[d] + base) .. "]"
    t = rawget(t, idx[d] + base)
  end
  return path
end

-- The inverse of to_table: each element a Lua table as to_table gives it or as
-- a single write takes it (v[i] = e, the same rules), the index levels as a
-- scalar field's from_table takes them (counting from 1 or 0). Every element
-- is checked before anything is written.
function methods.from_table(f, tbl)
  if T.active() then return T.unsupported("x:from_table inside a kernel") end
  M.ready(f)
  local function bad(msg) raise("x:from_table of field '" .. name_of(f) .. "': " .. msg) end
  if f._nidx > 0 and type(tbl) ~= "table" then bad("expects a table, got a " .. type(tbl)) end
  -- vector and matrix elements in their plain form are split in C; the others
  -- (and every struct element) are converted here
  local ct, comps = f._ct, f._comps
  local cols, others = core.table_elements(tbl, f._shape, ct.n and #comps or 0, ct.n or 0, ct.m or 0,
    ct.n ~= nil and ct.dtype.is_int)
  if not cols then bad(others) end
  name_components(f)
  for k = 1, #comps do cols[k] = cols[k] or {} end
  for i = 1, #others, 2 do                       -- {p, element, p, element, ...}, row-major
    local p, e = others[i], others[i + 1]
    local ok, flat = pcall(checked_flat, f, e, "the element")
    if not ok then
      bad(elem_path(tbl, f._shape, p) .. ": " .. tostring(flat):gsub("^[^:\n]*:%d+: ", ""))
    end
    for k = 1, #comps do cols[k][p] = flat[k] end
  end
  for k, c in ipairs(comps) do fieldm.set_list(c, cols[k]) end
end

function methods.active(f) return M.first(f):active() end
function methods.parent(f) return M.first(f):parent() end
function methods.deactivate_all(f) return M.first(f):deactivate_all() end
function methods.copy_from(f, src) return require("lattice.copy").field(f, src) end

-- Component k's scalar field, named after f when f has a name.
local function comp(f, k)
  local c = f._comps[k]
  if not rawget(c, "_name") then
    local nm = rawget(f, "_name") or fieldm.find_name(f)
    if nm then fieldm.set_name(c, nm .. f._ct:leaf_names()[k]) end
  end
  return c
end

-- The scalar field view of one component: v:component(k), m:component(i, j).
function methods.component(f, i, j)
  local k = f._ct:component_slot(i, j)
  if not k then
    fail("field '" .. name_of(f) .. "' (" .. tostring(f._ct) .. ") has no component " .. tostring(i) ..
      (j ~= nil and (", " .. tostring(j)) or ""))
  end
  return comp(f, k)
end

fieldm.guard_methods(methods, is, "x", "a vector, matrix or struct field")

function props.shape(f) M.ready(f); local s = {}; for i, n in ipairs(f._shape) do s[i] = n end; return s end
function props.dtype(f) return f._ct end
function props.offset(f) return M.first(f).offset end
function props.name(f) return name_of(f) end
function props.grad(f)                   -- x.grad of lt.field(lt.vec2, n, {needs_grad = true})
  local g = rawget(f, "_grad")
  if not g then
    fail("field '" .. name_of(f) .. "' has no gradient: make it with lt.field(dtype, shape, {needs_grad = true})")
  end
  return g
end
function props.dual(f)                   -- x.dual of lt.field(lt.vec2, n, {needs_dual = true})
  local d = rawget(f, "_dual")
  if not d then
    fail("field '" .. name_of(f) .. "' has no dual: make it with lt.field(dtype, shape, {needs_dual = true})")
  end
  return d
end
function props.value(f)
  if T.active() then return M.read(f, {}) end
  M.ready(f)
  if f._nidx ~= 0 then wrong_count(f, 0) end
  return host_read(f, {})
end

local SWZ = { x = 0, y = 1, z = 2, w = 3 }

CField.__index = function(f, k)
  if type(k) == "string" then
    if k:sub(1, 1) == "_" then return nil end
    local view = f._ct:member_view(f, k)               -- struct members first: s.vel
    if view then return view end
    local m = methods[k]
    if m then return m end
    local p = props[k]
    if p then return p(f) end
    if SWZ[k] and f._ct.m == nil and f._ct.n and SWZ[k] < f._ct.n then return comp(f, SWZ[k] + 1) end
    fail("field '" .. name_of(f) .. "' (" .. tostring(f._ct) .. ") has no member '" .. k .. "' (composite "
      .. "fields have: shape, offset, dtype, name, value, fill, to_table, from_table, copy_from, component" ..
      (f._ct.n and f._ct.m == nil and ", x, y, z, w" or "") .. ")")
  end
  if T.active() then return T.field_index(f, k) end
  M.ready(f)
  local list = T.index_list(k)
  if list then
    if #list ~= f._nidx then wrong_count(f, #list) end
    return host_read(f, list)
  end
  if f._nidx == 0 then fail("field '" .. name_of(f) .. "' has no indices (0-D): read it with x.value") end
  if f._nidx > 1 then return setmetatable({ f = f, idx = { k }, n = 1 }, HostAcc) end
  return host_read(f, { k })
end

CField.__newindex = function(f, k, v)
  if type(k) == "string" and k:sub(1, 1) == "_" then return rawset(f, k, v) end   -- private slots
  if k == "value" then
    if T.active() then return M.write(f, {}, v) end
    M.ready(f)
    if f._nidx ~= 0 then wrong_count(f, 0) end
    return host_write(f, {}, v)
  end
  if k == "name" and type(v) == "string" then
    rawset(f, "_name", v)
    local suffixes = f._ct:leaf_names()
    for i, c in ipairs(f._comps) do fieldm.set_name(c, v .. suffixes[i]) end
    return
  end
  if type(k) == "string" then
    fail("cannot set member '" .. k .. "' of a field (only x.value and x.name can be assigned)")
  end
  local list = T.index_list(k)
  local idx, n = list or { k }, list and #list or 1              -- (k may be nil: counted)
  if T.active() then return T.field_write(f, idx, v) end
  M.ready(f)
  if f._nidx ~= n then wrong_count(f, n) end
  host_write(f, idx, v)
end

-- "field vec2 (8) 'v'": its components' shape and offset (field.lua's describe)
CField.__tostring = function(f)
  local first = rawget(f, "_comps")[1]
  return fieldm.describe(first or {}, (tostring(rawget(f, "_ct")):gsub("^lt%.", "")), rawget(f, "_name"))
end

-- A composite field over a slice of another's components (struct member views).
function M.view(ct, comps, name) return make(ct, comps, name) end

return M
