-- struct.lua -- struct types (lt.struct{pos = lt.vec2, mass = lt.f32}) and their
-- values. Like vectors, a struct value is a Lua object holding its members
-- (scalars or vector/matrix values), so the IR sees only scalars. Members are
-- ordered by name: that order is the flat order of a struct field's
-- components.
local state = require "lattice.state"
local types = require "lattice.types"
local T = require "lattice.tracer"
local mx = require "lattice.matrix"

local M = {}
local SType = {}                  -- struct types
local SVal = {}                   -- struct values
M.SType, M.SVal = SType, SVal
local fail = mx.fail

local function is_stype(x) return getmetatable(x) == SType end
local function is_sval(x) return getmetatable(x) == SVal end
M.is_stype, M.is_sval = is_stype, is_sval

local function is_scalar_type(t) return types.is_type(t) and t.name ~= "i1" end

local serial = 0
-- lt.struct{name = type, ...}: members are scalar, vector/matrix or struct types.
function M.new(desc)
  if type(desc) ~= "table" then state.raise("lt.struct: expects a table {name = type, ...}") end
  local names = {}
  for name, t in pairs(desc) do
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or name:sub(1, 1) == "_" then
      state.raise("lt.struct: member names must be identifiers not starting with _ (got " .. tostring(name) .. ")")
    end
    if not is_scalar_type(t) and not mx.is_ctype(t) and not is_stype(t) then
      state.raise("lt.struct: the type of member '" .. name .. "' must be a scalar, vector, matrix or struct type")
    end
    names[#names + 1] = name
  end
  if #names == 0 then state.raise("lt.struct: a struct needs at least one member") end
  table.sort(names)
  serial = serial + 1
  local st = setmetatable({ names = names, types = {}, serial = serial }, SType)
  for _, n in ipairs(names) do st.types[n] = desc[n] end
  st.name = "struct{" .. table.concat(names, ", ") .. "}"
  return st
end

local function leaf_count(t)
  if is_scalar_type(t) then return 1 end
  if mx.is_ctype(t) then return t.count end
  local n = 0
  for _, name in ipairs(t.names) do n = n + leaf_count(t.types[name]) end
  return n
end

local methods = {}

function methods.leaf_types(st)
  local out = {}
  for _, name in ipairs(st.names) do
    local t = st.types[name]
    if is_scalar_type(t) then out[#out + 1] = t
    else for _, x in ipairs(t:leaf_types()) do out[#out + 1] = x end end
  end
  return out
end

function methods.leaf_names(st)
  local out = {}
  for _, name in ipairs(st.names) do
    local t = st.types[name]
    if is_scalar_type(t) then out[#out + 1] = "." .. name
    else for _, x in ipairs(t:leaf_names()) do out[#out + 1] = "." .. name .. x end end
  end
  return out
end

-- Where each component sits in the Lua table to_lua makes: {member[, ...]}.
function methods.leaf_paths(st)
  local out = {}
  for _, name in ipairs(st.names) do
    local t = st.types[name]
    if is_scalar_type(t) then out[#out + 1] = { name }
    else for _, sub in ipairs(t:leaf_paths()) do out[#out + 1] = { name, table.unpack(sub) } end end
  end
  return out
end

-- {member = value} from flat scalar components: a scalar member takes its
-- component, a composite one build(type, its components).
local function split_members(st, flat, build)
  local out, k = {}, 1
  for _, name in ipairs(st.names) do
    local t = st.types[name]
    local n = leaf_count(t)
    if is_scalar_type(t) then out[name] = flat[k]
    else out[name] = build(t, { table.unpack(flat, k, k + n - 1) }) end
    k = k + n
  end
  return out
end

-- A struct value from its flat scalar components.
function methods.from_flat(st, elems)
  local v = split_members(st, elems, function(t, e) return t:from_flat(e) end)
  return setmetatable({ _st = st, _v = v }, SVal)
end

local function member_value(x)
  if getmetatable(x) == T.Var then return T.sym(T.lift(x)) end
  return x
end

-- The flat components of v (a struct value of type st or a table {name = ...}).
function methods.to_flat(st, v, what)
  local src
  if is_sval(v) then
    if v._st ~= st then fail("cannot assign a " .. v._st.name .. " value to " .. what .. " (" .. st.name .. ")") end
    src = v._v
  elseif type(v) == "table" and getmetatable(v) == nil then
    for k in pairs(v) do
      if st.types[k] == nil then fail(what .. ": " .. st.name .. " has no member '" .. tostring(k) .. "'") end
    end
    src = v
  else
    fail("cannot assign " .. (mx.describe(v) or ((T.is_kv(v) or type(v) == "number") and "a scalar" or
      ("a " .. type(v)))) .. " to " .. what .. " (" .. st.name .. ")")
  end
  local out = {}
  for _, name in ipairs(st.names) do
    local t, x = st.types[name], member_value(src[name])
    if x == nil then fail(what .. ": member '" .. name .. "' is missing") end
    if is_scalar_type(t) then
      local d = mx.describe(x)
      if d then fail("cannot assign " .. d .. " to member '" .. name .. "' (" .. t.name .. ") of " .. what) end
      out[#out + 1] = x
    else
      for _, y in ipairs(t:to_flat(x, "member '" .. name .. "' of " .. what)) do out[#out + 1] = y end
    end
  end
  return out
end

function methods.from_lua(st, v, what)
  local flat = methods.to_flat(st, v, what)
  for k, x in ipairs(flat) do
    if type(x) ~= "number" then fail(what .. ": component " .. (k - 1) .. " must be a number, got a " .. type(x)) end
  end
  return flat
end

function methods.to_lua(st, flat)
  return split_members(st, flat, function(t, e) return t:to_lua(e) end)
end

function methods.component_slot() return nil end

-- s.vel on a struct field: the member's field view (scalar or composite).
function methods.member_view(st, f, name)
  local t = st.types[name]
  if t == nil then return nil end
  local k = 1
  for _, n in ipairs(st.names) do
    if n == name then break end
    k = k + leaf_count(st.types[n])
  end
  local comps = f._comps
  if is_scalar_type(t) then return comps[k] end
  local cfield = require "lattice.cfield"
  f._views = f._views or {}
  if not f._views[name] then
    f._views[name] = cfield.view(t, { table.unpack(comps, k, k + leaf_count(t) - 1) },
      (rawget(f, "_name") or "?") .. "." .. name)
  end
  return f._views[name]
end

-- S{pos = ..., mass = ...}: a struct value; missing members are zero.
SType.__call = function(st, init)
  init = init or {}
  if type(init) ~= "table" or getmetatable(init) ~= nil then fail(st.name .. "{...}: expects a table of members") end
  local v = {}
  for k in pairs(init) do
    if st.types[k] == nil then fail(st.name .. " has no member '" .. tostring(k) .. "'") end
  end
  for _, name in ipairs(st.names) do
    local t, x = st.types[name], init[name]
    if is_scalar_type(t) then
      if x == nil then x = types.convert(0, t) end
      local d = mx.describe(x)
      if d then fail(st.name .. ": member '" .. name .. "' is " .. t.name .. ", got " .. d) end
      v[name] = mx.to_elem(x, t, "member '" .. name .. "'")
    elseif x == nil then
      v[name] = mx.is_ctype(t) and t(0) or t()
    elseif mx.is_ctype(t) then
      v[name] = t(x)
    else
      if not is_sval(x) or x._st ~= t then fail(st.name .. ": member '" .. name .. "' must be a " .. t.name) end
      v[name] = x
    end
  end
  return setmetatable({ _st = st, _v = v }, SVal)
end

SType.__index = function(st, k)
  local m = methods[k]
  if m then return m end
  return nil
end
SType.__tostring = function(st) return "lt." .. st.name end

-- ---- values -----------------------------------------------------------------------------

local function describe(v) return "a " .. v._st.name .. " value" end

SVal.__index = function(v, k)
  if type(k) == "string" and k:sub(1, 1) == "_" then return nil end
  local x = v._v[k]
  if x == nil then
    fail(v._st.name .. " has no member '" .. tostring(k) .. "' (members: " .. table.concat(v._st.names, ", ") .. ")")
  end
  return member_value(x)
end

SVal.__newindex = function(v, k, x)
  if type(k) == "string" and k:sub(1, 1) == "_" then return rawset(v, k, x) end   -- private slots
  local t = v._st.types[k]
  if t == nil then
    fail(v._st.name .. " has no member '" .. tostring(k) .. "' (members: " .. table.concat(v._st.names, ", ") .. ")")
  end
  local cur = v._v[k]
  local what = "member '" .. k .. "' of " .. describe(v)
  if mx.is_mat(cur) then return mx.store_all(cur, x, what) end
  if is_sval(cur) then
    local flat = t:to_flat(x, what)
    local dst = t:flat_slots(cur)
    for i, slot in ipairs(dst) do slot(flat[i]) end
    return
  end
  local mt = getmetatable(cur)
  local d = mx.describe(x)
  if d then fail("cannot assign " .. d .. " to " .. what .. " (" .. t.name .. ")") end
  if mt == T.Var then T.store_var(cur, x, k)
  elseif mt == T.Sym and rawget(cur, "ptr") then T.field_write_ptr(cur, x)
  elseif not T.active() then v._v[k] = mx.to_elem(x, t, what)
  else fail("cannot assign to a member of a temporary struct value; copy it into a local first") end
end

-- Setters for every scalar slot of struct value v (nested struct members).
function methods.flat_slots(st, v)
  local out = {}
  for _, name in ipairs(st.names) do
    local t = st.types[name]
    if is_scalar_type(t) then
      out[#out + 1] = function(x) v[name] = x end
    elseif mx.is_ctype(t) then
      local m = v._v[name]
      for k = 0, t.count - 1 do
        out[#out + 1] = function(x) if t.m then m[k // t.m][k % t.m] = x else m[k] = x end end
      end
    else
      for _, f in ipairs(t:flat_slots(v._v[name])) do out[#out + 1] = f end
    end
  end
  return out
end

-- protocol for tracer.lua / hooks.lua
function SVal.flat(v) return v._st:to_flat(v, "a value"), v._st:leaf_types() end
function SVal.unflat(proto, leaves) return proto._st:from_flat(leaves) end
function SVal.same_shape(a, b) return is_sval(b) and a._st == b._st end
SVal.describe = describe
function SVal.declare(v)
  local flat, tys = SVal.flat(v)
  local vars = {}
  for k, x in ipairs(flat) do vars[k] = T.new_var_of(x, tys[k]) end
  local r = v._st:from_flat(vars)
  local function mark(sv)
    for _, x in pairs(sv._v) do
      if mx.is_mat(x) then x._var = true elseif is_sval(x) then mark(x) end
    end
    sv._var = true
  end
  mark(r)
  return r
end
function SVal.assign(old, new, name)
  if not old._var then fail("cannot assign to '" .. name .. "': kernel arguments are read-only; copy into a local first") end
  local what = "the kernel variable '" .. name .. "'"
  local flat = old._st:to_flat(new, what)
  for i, slot in ipairs(old._st:flat_slots(old)) do slot(flat[i]) end
  return old
end
function SVal.compare() fail("struct values cannot be compared; compare their members") end

local function no_arith(a, b)
  local v = is_sval(a) and a or b
  fail(describe(v) .. " has no arithmetic; operate on its members")
end
for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__band",
  "__bor", "__bxor", "__shl", "__shr", "__bnot", "__lt", "__le", "__concat", "__call", "__len" } do
  SVal[mm] = no_arith
end
SVal.__tostring = function(v) return describe(v) end
T.composite_mt[SVal] = true

return M
