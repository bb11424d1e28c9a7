-- tree.lua -- tree types described by tables and their instances:
--   local Grid = lt.tree { fields = { rho = lt.f32 },
--                          lt.pointer(lt.ij, 32) { lt.dense(lt.ij, 8) { "rho" } } }
--   local g = Grid:instantiate()       -- g.rho[i][j], kernels taking {g = Grid}
-- A type is one SNode tree, laid out and registered when lt.tree returns;
-- each instance is its own root container in the memory pool. Kernels are
-- compiled once per tree type; the instance is chosen at launch.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local fieldm = require "lattice.field"

local M = {}
local raise = state.raise

local Layout = {}        -- lt.dense(axes, shape){ children }
Layout.__index = Layout
local TreeType = {}
TreeType.__index = function(tt, k)
  local m = rawget(TreeType, k)
  if m then return m end
  local f = rawget(tt, "fields")
  if f and f[k] then
    raise("'" .. tostring(k) .. "' is a field of the tree type, which has no memory of its own; use it "
      .. "through an instance (local g = T:instantiate(); g." .. tostring(k) .. ")")
  end
  return nil
end
local Instance = {}
M.Layout, M.TreeType, M.Instance = Layout, TreeType, Instance

-- lt.dense / lt.bitmasked / lt.pointer (axes, shape), lt.dynamic(axis, n, {chunk = c})
function M.layout(kind, axes, shape, opts)
  return setmetatable({ kind = kind, axes = axes, shape = shape, opts = opts }, Layout)
end

Layout.__call = function(l, children)
  if type(children) ~= "table" then
    raise("lt." .. l.kind .. "(...){...}: the children must be a table of field names and levels")
  end
  return setmetatable({ kind = l.kind, axes = l.axes, shape = l.shape, opts = l.opts, children = children }, Layout)
end

local function is_layout(x) return getmetatable(x) == Layout end

-- "dense(ij, 8) {rho, vel}": a layout as lt.tree's description gives it
local AXIS_LETTERS = "ijklmnop"
local function layout_text(l)
  local axes = {}
  for k, a in ipairs(type(l.axes) == "table" and l.axes or {}) do
    axes[k] = math.type(a) == "integer" and AXIS_LETTERS:sub(a + 1, a + 1) or "?"
  end
  local shape = type(l.shape) == "table" and table.concat(l.shape, ", ") or tostring(l.shape)
  local text = l.kind .. "(" .. table.concat(axes) .. ", " .. shape .. ")"
  if not l.children then return text end
  local kids = {}
  for _, c in ipairs(l.children) do kids[#kids + 1] = is_layout(c) and layout_text(c) or tostring(c) end
  return text .. " {" .. table.concat(kids, ", ") .. "}"
end
Layout.__tostring = function(l) return "lt." .. layout_text(l) end

-- Places field c (a declared name, or NAME.grad: NAME's gradient) under
-- SNode parent; returns its place id, or the list of its components' ids.
local function place(parent, c, dtype)
  if not types.is_type(dtype) then             -- a vector/matrix/struct: its components in one cell
    local ids, suffixes = {}, dtype:leaf_names()
    for k, t in ipairs(dtype:leaf_types()) do
      local id, err = core.place(state.prog, parent, t.name, c .. suffixes[k])
      if not id then raise("lt.tree: place '" .. c .. "': " .. err) end
      ids[k] = id
    end
    return ids
  end
  local id, err = core.place(state.prog, parent, dtype.name, c)
  if not id then raise("lt.tree: place '" .. c .. "': " .. err) end
  return id
end

-- Whether the layout names "NAME.grad" somewhere (then the gradient goes there).
local function names_grad(children, name)
  for _, c in ipairs(children) do
    if c == name .. ".grad" then return true end
    if is_layout(c) and names_grad(c.children or {}, name) then return true end
  end
  return false
end

-- Adds the children of a description under SNode parent. g: the fields with
-- gradients (name -> true) and where each gradient was placed (ids).
local function build(parent, children, decl, placed, fields, g)
  for _, c in ipairs(children) do
    if type(c) == "string" then
      local base = c:match("^(.*)%.grad$")
      if base then                                 -- a gradient placed by the user
        if not g.wants[base] then
          raise("lt.tree: '" .. c .. "' is placed, but '" .. base .. "' has no gradient (add it to needs_grad = {...})")
        end
        if g.ids[base] then raise("lt.tree: '" .. c .. "' is placed twice") end
        g.ids[base] = place(parent, c, decl[base])
        goto continue
      end
      local dtype = decl[c]
      if not dtype then raise("lt.tree: field '" .. c .. "' is placed but not declared in fields = {...}") end
      if placed[c] then raise("lt.tree: field '" .. c .. "' is placed twice; a field can be placed only once") end
      placed[c] = true
      fields[c] = place(parent, c, dtype)
      if g.wants[c] and not g.explicit[c] then   -- the gradient beside the field, in the same cell
        g.ids[c] = place(parent, c .. ".grad", dtype)
      end
    elseif is_layout(c) then
      local id = fieldm.add_level(parent, c.kind, c.axes, c.shape, c.opts)
      build(id, c.children or {}, decl, placed, fields, g)
    else
      raise("lt.tree: a child must be a field name or a level such as lt.dense(lt.ij, 8){...} (got a " ..
        type(c) .. ")")
    end
    ::continue::
  end
end

-- needs_grad = {"rho", ...} of a description: name -> true, checked
local function grad_fields(desc, decl)
  local wants, explicit = {}, {}
  local ng = desc.needs_grad
  if ng == nil then return wants, explicit end
  if type(ng) ~= "table" then raise("lt.tree: needs_grad must be a list of field names, e.g. needs_grad = {\"rho\"}") end
  for _, name in ipairs(ng) do
    local t = decl[name]
    if not t then raise("lt.tree: needs_grad names '" .. tostring(name) .. "', which is not in fields = {...}") end
    local leaf = types.is_type(t) and t or (t.dtype or nil)
    if not leaf or (leaf.name ~= "f32" and leaf.name ~= "f64") or (not types.is_type(t) and not t.dtype) then
      raise("lt.tree: field '" .. name .. "' cannot have a gradient: it holds " .. tostring(t.name or t)
        .. " (gradients are of f32/f64 scalars, vectors and matrices)")
    end
    wants[name] = true
    explicit[name] = names_grad(desc, name)
  end
  return wants, explicit
end

local serial = 0

-- lt.tree{fields = {name = type, ...}, level{...}, ...} -> a tree type
function M.new(ensure, desc)
  if type(desc) ~= "table" then raise("lt.tree: expects a table {fields = {...}, lt.dense(...){...}}") end
  ensure()
  local decl = desc.fields
  if type(decl) ~= "table" then raise("lt.tree: fields = {name = lt.f32, ...} is missing") end
  for name, t in pairs(decl) do
    if type(name) ~= "string" then raise("lt.tree: field names must be strings") end
    if (not types.is_type(t) or t.name == "i1") and not require("lattice.cfield").is_ctype(t) then
      raise("lt.tree: the type of field '" .. name .. "' must be a scalar type such as lt.f32 or a vector, "
        .. "matrix or struct type such as lt.vec2")
    end
  end
  local root, tok = core.root_new(state.prog)   -- the tree lives while tok does (held by the type)
  state.snode_cache = nil                         -- SNode ids of freed trees may be given out again
  local placed, ids = {}, {}
  local wants, explicit = grad_fields(desc, decl)
  local g = { wants = wants, explicit = explicit, ids = {} }
  build(root, desc, decl, placed, ids, g)
  local names = {}
  for name in pairs(decl) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    if not placed[name] then
      raise("lt.tree: field '" .. name .. "' is declared but not placed in the layout")
    end
  end
  for name in pairs(wants) do                     -- each place knows its gradient's (the autodiff pass)
    local p, q = ids[name], g.ids[name]
    if not q then raise("lt.tree: '" .. name .. ".grad' is named in needs_grad's layout but not placed") end
    if type(p) == "table" then for k = 1, #p do core.set_grad(state.prog, p[k], q[k]) end
    else core.set_grad(state.prog, p, q) end
  end
  local ok, err = core.materialize(state.prog, root, false)
  if not ok then raise("lt.tree: cannot lay out the tree: " .. tostring(err)) end
  serial = serial + 1
  local layout = {}
  for _, c in ipairs(desc) do layout[#layout + 1] = is_layout(c) and layout_text(c) or tostring(c) end
  local tt = setmetatable({ root = root, gen = state.gen, fields = {}, names = names,
    tree = core.snode_info(state.prog, root).tree, serial = serial, tok = tok,
    layout_text = table.concat(layout, ", ") }, TreeType)
  local function describe(name, id, label)
    if type(id) == "table" then
      local comps = {}
      for k, cid in ipairs(id) do
        local inf = core.snode_info(state.prog, cid)
        comps[k] = { snode = cid, dtype = decl[name]:leaf_types()[k], shape = inf.shape, nidx = inf.nidx,
          name = label .. decl[name]:leaf_names()[k] }
      end
      return { composite = decl[name], comps = comps }
    end
    local inf = core.snode_info(state.prog, id)
    return { snode = id, dtype = decl[name], shape = inf.shape, nidx = inf.nidx }
  end
  for _, name in ipairs(names) do
    tt.fields[name] = describe(name, ids[name], name)
    if g.ids[name] then tt.fields[name].grad = describe(name, g.ids[name], name .. ".grad") end
  end
  return tt
end

function M.is_type(x) return getmetatable(x) == TreeType end
function M.is_instance(x) return getmetatable(x) == Instance end

local function check_type(tt)
  if tt.gen ~= state.gen then raise("this tree type belongs to a program that lt.init has reset; create it again") end
end

-- A field object of instance inst (a real instance or a kernel's proxy) for
-- description d; with its gradient (x.grad) when d has one.
local function field_from(inst, d, name)
  local f
  if d.composite then
    local comps = {}
    for k, c in ipairs(d.comps) do
      comps[k] = setmetatable({ _dtype = c.dtype, _name = c.name, _serial = 0, _snode = c.snode, _gen = inst._type.gen,
        _root = inst._type.root, _shape = c.shape, _nidx = c.nidx, _inst = inst, _type = inst._type }, fieldm.Field)
    end
    f = require("lattice.cfield").view(d.composite, comps, name)
  else
    f = setmetatable({ _dtype = d.dtype, _name = name, _serial = 0, _snode = d.snode, _gen = inst._type.gen,
      _root = inst._type.root, _shape = d.shape, _nidx = d.nidx, _inst = inst, _type = inst._type }, fieldm.Field)
  end
  if d.grad then
    local g = field_from(inst, d.grad, name .. ".grad")
    if d.composite then   -- each component's gradient too, as lt.field's vector fields have
      for k, c in ipairs(require("lattice.cfield").components(f)) do
        rawset(c, "_grad", require("lattice.cfield").components(g)[k])
      end
    end
    rawset(f, "_grad", g)
  end
  return f
end

local function field_of(inst, name) return field_from(inst, inst._type.fields[name], name) end

function TreeType:instantiate()
  check_type(self)
  local ud, err = core.instance_new(state.prog, self.root)
  if not ud then raise("instantiate: " .. err) end
  local inst = setmetatable({ _type = self, _ud = ud, _fields = {} }, Instance)
  state.instances = state.instances or setmetatable({}, { __mode = "k" })   -- for lt.deactivate_all()
  state.instances[inst] = true
  return inst
end

-- The stand-in for an instance argument while a kernel is traced.
function M.proxy(tt)
  return setmetatable({ _type = tt, _proxy = true, _fields = {} }, Instance)
end

-- "tree type #1 {rho: f32, vel: vec2} pointer(ij, 32) {dense(ij, 8) {rho, vel}}"
local function fields_text(tt)
  local list = {}
  for k, name in ipairs(tt.names) do
    local d = tt.fields[name]
    list[k] = name .. ": " .. (tostring(d.composite or d.dtype):gsub("^lt%.", ""))
  end
  return "tree type #" .. tt.serial .. " {" .. table.concat(list, ", ") .. "}"
end
TreeType.__tostring = function(tt)
  local layout = rawget(tt, "layout_text")
  return fields_text(tt) .. (layout and layout ~= "" and (" " .. layout) or "")
end

local inst_methods = {}
-- g:deactivate_all(): every sparse cell of the instance (sparse.lua)
function inst_methods.deactivate_all(inst) return require("lattice.sparse").deactivate_all(inst) end
function inst_methods.destroy(inst)
  if inst._proxy then require("lattice.tracer").fail("g:destroy() inside a kernel") end
  if inst._ud then core.instance_free(inst._ud) end
  rawset(inst, "_ud", nil)
end

Instance.__index = function(inst, k)
  if type(k) == "string" and k:sub(1, 1) == "_" then return nil end   -- private slots not set
  local m = inst_methods[k]
  if m then return m end
  if k == "type" then return inst._type end
  local f = inst._fields[k]
  if f then return f end
  if type(k) ~= "string" or not inst._type.fields[k] then
    raise("the tree instance has no field '" .. tostring(k) .. "' (fields: " ..
      table.concat(inst._type.names, ", ") .. ")")
  end
  if not inst._proxy then check_type(inst._type) end
  f = field_of(inst, k)
  inst._fields[k] = f
  return f
end
Instance.__newindex = function(_, k)
  raise("cannot set '" .. tostring(k) .. "' of a tree instance; write its fields' elements (g." ..
    tostring(k) .. "[i] = v)")
end
Instance.__tostring = function(inst)
  return "instance of " .. fields_text(inst._type) .. ((inst._ud or inst._proxy) and "" or " (destroyed)")
end

return M
