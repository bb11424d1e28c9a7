-- field.lua -- fields, the lt.root SNode builder, tree materialisation and
-- Lua-scope element access (x[i][j], x[i][j] = v, x:fill, x:to_table).
-- Inside a kernel the same indexing is routed to the tracer, which emits IR.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local raise = state.raise

local M = {}
local Field = {}
M.Field = Field
local HostAcc                -- x[i] of a field with more indices (Lua scope): M.host_accessor
local Builder = {}          -- lt.root:dense(...) chains
Builder.__index = Builder

local tracer                -- set by init.lua (tracer requires this module)
function M.set_tracer(t) tracer = t end

local MAX_INDICES = 8

local function is_field(x) return getmetatable(x) == Field end
M.is_field = is_field

-- The name of the local, upvalue or global that holds obj, as seen from the
-- innermost frame of user code, or nil.
function M.find_name(obj)
  local level = state.user_frame()
  local info = level and debug.getinfo(level, "f")
  if info then
    for i = 1, 250 do
      local n, v = debug.getlocal(level, i)
      if not n then break end
      if rawequal(v, obj) and n:sub(1, 1) ~= "(" then return n end
    end
    if info.func then
      for i = 1, 250 do
        local n, v = debug.getupvalue(info.func, i)
        if not n then break end
        if rawequal(v, obj) then return n end
      end
    end
  end
  for k, v in pairs(_G) do
    if rawequal(v, obj) and type(k) == "string" then return k end
  end
  return nil
end

-- The name of a field for messages: given, or where the user's code holds it
-- (then remembered), or "field#N".
local function guess_name(f)
  local raw = rawget(f, "_name")
  if raw then return raw end
  raw = M.find_name(f)
  if raw then M.set_name(f, raw) end
  return raw or ("field#" .. f._serial)
end
M.guess_name = guess_name

function M.set_name(f, name)
  rawset(f, "_name", name)
  if f._snode and f._gen == state.gen and core.program_alive(state.prog) then
    core.set_name(state.prog, f._snode, name)
  end
  local g = rawget(f, "_grad")                   -- x's gradient is "x.grad" in messages
  if g and not rawget(g, "_name") then M.set_name(g, name .. ".grad") end
  local d = rawget(f, "_dual")                   -- and its tangent "x.dual"
  if d and not rawget(d, "_name") then M.set_name(d, name .. ".dual") end
end

local function shape_text(shape)
  local t = {}
  for i, n in ipairs(shape) do t[i] = tostring(n) end
  return "(" .. table.concat(t, ", ") .. ")"
end
M.shape_text = shape_text

-- "shape (4, 5)", or for a field with an offset "box [-2, 2) x [0, 5)" (as
-- src/program/memory.c's prog_box_text); f is ready.
function M.box_text(f)
  local o = rawget(f, "_offset")
  if not o then return "shape " .. shape_text(f._shape) end
  local t = {}
  for k, n in ipairs(f._shape) do t[k] = "[" .. o[k] .. ", " .. (o[k] + n) .. ")" end
  return "box " .. table.concat(t, " x ")
end

-- ---- offsets: indices over the box [offset, offset + shape) ---------------------
-- A field's offset (lt.field's or place's offset option) lives in f._offset
-- (shared by x.grad and x.dual) and in its place (core.set_offset) for the
-- Lua-scope accesses and messages (src/lang/field.c); kernels subtract it
-- from the indices (tracer.lua field_ptr, sparse.lua, struct-for in
-- hooks.lua). Everything below (IR, runtime, C API) counts from 0.
local OFFSET_LIMIT = 1 << 30       -- |offset| + extent stays an i32 index

-- The offset option as a list of integers (a number for one index); what
-- ("lt.field", "place") and whose ("" or " of field 'x'") for messages.
local function offset_list(offset, what, whose)
  if math.type(offset) == "integer" then offset = { offset } end
  if type(offset) ~= "table" or getmetatable(offset) ~= nil then
    raise(what .. ": the offset" .. whose .. " must be a table of integers, one per index, e.g. "
      .. "{offset = {-64, -64}} (got " .. (type(offset) == "table" and "a table with a metatable" or tostring(offset))
      .. ")")
  end
  local n = #offset
  for k in pairs(offset) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      raise(what .. ": the offset" .. whose .. " must be a list of integers, one per index (it has the key "
        .. tostring(k) .. ")")
    end
  end
  local out = {}
  for k = 1, n do
    local v = offset[k]
    if math.type(v) ~= "integer" then
      raise(what .. ": offset " .. (k - 1) .. whose .. " must be an integer (got " .. tostring(v) .. ")")
    end
    if v <= -OFFSET_LIMIT or v >= OFFSET_LIMIT then
      raise(what .. ": offset " .. (k - 1) .. whose .. " is out of range (|offset| < 2^30)")
    end
    out[k] = v
  end
  return out
end

local function same_offset(a, b)
  if #a ~= #b then return false end
  for k = 1, #a do if a[k] ~= b[k] then return false end end
  return true
end

local function offset_text(o)
  return "{" .. table.concat(o, ", ") .. "}"
end

-- Gives field f (and its gradient and dual) the offset o (a list); a field
-- that has another already is an error.
local function set_offset(f, o, what)
  local old = rawget(f, "_offset")
  if old and not same_offset(old, o) then
    raise(what .. ": field '" .. M.guess_name(f) .. "' already has the offset " .. offset_text(old) ..
      " (given " .. offset_text(o) .. ")")
  end
  rawset(f, "_offset", o)
  local g, d = rawget(f, "_grad"), rawget(f, "_dual")
  if g then rawset(g, "_offset", o) end
  if d then rawset(d, "_offset", o) end
end
M.set_offset = set_offset

-- The offset of place f (just placed as SNode id) checked against the place
-- (one integer per index, the box inside i32, not along a dynamic's axis)
-- and handed to it.
local function apply_offset(f, id)
  local o = rawget(f, "_offset")
  if not o then return end
  local pi = core.snode_info(state.prog, id)
  local whose = " of field '" .. M.guess_name(f) .. "'"
  if #o ~= pi.nidx then
    raise("place: the offset" .. whose .. " " .. offset_text(o) .. " has " .. #o .. " integer" ..
      (#o == 1 and "" or "s") .. " but the field has " .. pi.nidx .. " ind" .. (pi.nidx == 1 and "ex" or "ices") ..
      "; give one per index")
  end
  for k = 1, #o do
    if o[k] + pi.shape[k] > OFFSET_LIMIT then
      raise("place: offset " .. (k - 1) .. whose .. " is out of range (offset + extent < 2^30)")
    end
  end
  local par = pi.parent >= 0 and core.snode_info(state.prog, pi.parent)
  if par and par.kind == "dynamic" then       -- lt.append gives a list position: no offset along it
    local inparent = {}
    for _, a in ipairs(core.snode_info(state.prog, par.parent).axes) do inparent[a] = true end
    for k, a in ipairs(pi.axes) do
      if not inparent[a] and o[k] ~= 0 then
        raise("place: field '" .. M.guess_name(f) .. "' is in a dynamic level, which takes no offset along its "
          .. "axis (index " .. (k - 1) .. "): lt.append and lt.length count the list from 0")
      end
    end
  end
  core.set_offset(state.prog, id, o)
end

local serial = 0
-- lt.field(dtype, shape, name): shape nil = placed later; {} = 0-D.
function M.new(ensure, dtype, shape, name)
  local cfield = require "lattice.cfield"
  local needs_grad, needs_dual, offset = false, false, nil
  if type(name) == "table" then                  -- options: {name = "x", needs_grad = true, needs_dual = true,
    for key in pairs(name) do                    --   offset = {-64, -64}}
      if key ~= "name" and key ~= "needs_grad" and key ~= "needs_dual" and key ~= "offset" then
        raise("lt.field: unknown option '" .. tostring(key) .. "' (name, needs_grad, needs_dual, offset)")
      end
    end
    needs_grad = name.needs_grad == true
    needs_dual = name.needs_dual == true
    offset = name.offset
    name = name.name
  end
  if offset ~= nil then
    local whose = type(name) == "string" and (" of field '" .. name .. "'") or ""
    offset = offset_list(offset, "lt.field", whose)
    local n = type(shape) == "number" and 1 or type(shape) == "table" and #shape
    if n and n ~= #offset then
      raise("lt.field: the offset" .. whose .. " " .. offset_text(offset) .. " has " .. #offset .. " integer" ..
        (#offset == 1 and "" or "s") .. " but the shape " .. shape_text(type(shape) == "table" and shape or { shape })
        .. " has " .. n .. "; give one per index")
    end
  end
  if cfield.is_ctype(dtype) then
    return cfield.new(ensure, dtype, shape, name, needs_grad, needs_dual, offset)   -- vectors, matrices, structs
  end
  if not types.is_type(dtype) or dtype.name == "i1" then
    raise("lt.field: the first argument must be a scalar or composite type such as lt.f32 or lt.vec2 (got " ..
      tostring(dtype) .. ")")
  end
  if name ~= nil and type(name) ~= "string" then
    raise("lt.field: the name must be a string")
  end
  if needs_grad and dtype.name ~= "f32" and dtype.name ~= "f64" then
    raise("lt.field: a field with a gradient (needs_grad) holds f32 or f64, not " .. dtype.name)
  end
  if needs_dual and dtype.name ~= "f32" and dtype.name ~= "f64" then
    raise("lt.field: a field with a dual (needs_dual, forward mode) holds f32 or f64, not " .. dtype.name)
  end
  serial = serial + 1
  local f = setmetatable({ _dtype = dtype, _name = name, _serial = serial }, Field)   -- x.dtype: read-only
  if needs_grad then                             -- x.grad: placed beside x unless placed first
    serial = serial + 1
    local g = setmetatable({ _dtype = dtype, _name = name and (name .. ".grad"), _serial = serial, _primal = f },
      Field)
    rawset(f, "_grad", g)
  end
  if needs_dual then                             -- x.dual: its tangent, placed beside x like x.grad
    serial = serial + 1
    local d = setmetatable({ _dtype = dtype, _name = name and (name .. ".dual"), _serial = serial, _dual_of = f },
      Field)
    rawset(f, "_dual", d)
  end
  if offset then set_offset(f, offset, "lt.field") end
  if shape ~= nil then
    ensure()
    if type(shape) == "number" then shape = { shape } end
    if type(shape) ~= "table" then
      raise("lt.field: the shape must be a number or a table of numbers")
    end
    if #shape == 0 then
      M.root_builder():place(f)
    else
      local axes = {}
      for i = 1, #shape do axes[i] = i - 1 end
      M.root_builder():dense(axes, shape):place(f)
    end
  end
  return f
end

-- ---- lt.root and the chained builder ---------------------------------------

-- A tree lives while its handle (core.root_new's second result) is referenced:
-- by its fields (_tree), its SNode handles (tok) and, until it materialises,
-- by state.root_tok; once none is, the tree's ids and memory go to later trees.
-- state.trees[root] holds the tree's fields weakly (as keys).
local WEAK_KEYS = { __mode = "k" }

function M.root_builder()
  if not state.root then
    state.root, state.root_tok = core.root_new(state.prog)
    state.trees[state.root] = setmetatable({}, WEAK_KEYS)
    state.snode_cache = nil          -- SNode ids of freed trees may be given out again
  end
  return setmetatable({ id = state.root, gen = state.gen, root = state.root, naxes = 0, tok = state.root_tok },
    Builder)
end

local function check_builder(b)
  if b.gen ~= state.gen then raise("this SNode belongs to a program that lt.init has reset") end
  if core.snode_info(state.prog, b.root).materialized then
    raise("this SNode tree is already in use (materialised by a kernel or a Lua-scope access); "
      .. "start a new one from lt.root")
  end
end

local function check_axes(axes, shape, kind)
  kind = kind or "dense"
  if type(axes) ~= "table" or #axes == 0 then
    raise(kind .. ": the first argument must be axes such as lt.ij")
  end
  if #axes > MAX_INDICES then
    raise("a field has at most " .. MAX_INDICES .. " indices (got " .. #axes .. " axes)")
  end
  if type(shape) == "number" then
    local s = {}
    for i = 1, #axes do s[i] = shape end
    shape = s
  end
  if type(shape) ~= "table" then raise(kind .. ": the shape must be a number or a table") end
  if #shape > MAX_INDICES then
    raise("a field has at most " .. MAX_INDICES .. " indices (got a shape with " .. #shape .. ")")
  end
  if #shape ~= #axes then
    raise(kind .. ": " .. #axes .. " axes but " .. #shape .. " extents")
  end
  for i, n in ipairs(shape) do
    if math.type(n) ~= "integer" then
      raise(kind .. ": extent " .. i .. " must be an integer (got " .. tostring(n) .. ")")
    end
    if n <= 0 then
      raise(kind .. ": every extent must be > 0 (got shape " .. shape_text(shape) .. ")")
    end
  end
  return shape
end
M.check_axes = check_axes

-- Adds a level of `kind` under SNode id parent; returns its id (raises at the
-- user's line with the IR builder's message, which names the SNode and rule).
function M.add_level(parent, kind, axes, shape, opts)
  if kind == "dynamic" then
    if type(axes) ~= "table" or #axes ~= 1 then
      raise("dynamic: a dynamic level has exactly one axis, e.g. lt.j (got " ..
        (type(axes) == "table" and (#axes .. " axes") or tostring(axes)) .. "), as in Taichi; for a list per "
        .. "cell of several axes, put it under a level over them: lt.root:dense(lt.ij, n):dynamic(lt.k, m)")
    end
    local n = check_axes(axes, { shape }, kind)[1]
    if opts ~= nil and type(opts) ~= "table" then raise("dynamic: the options must be a table such as {chunk = 64}") end
    local chunk = opts and opts.chunk or 0
    if math.type(chunk) ~= "integer" or chunk < 0 then
      raise("dynamic: chunk must be a positive integer (cells per chunk)")
    end
    local id, err = core.dynamic(state.prog, parent, axes[1], n, chunk)
    if not id then raise("dynamic: " .. err) end
    return id
  end
  if opts ~= nil then raise(kind .. ": takes axes and a shape (no options)") end
  shape = check_axes(axes, shape, kind)
  local id, err = core.level(state.prog, parent, kind, axes, shape)
  if not id then raise(kind .. ": " .. err) end
  return id
end

-- lt.root:dense(axes, shape) / :bitmasked / :pointer / :dynamic(axis, n, {chunk = c}):
-- each returns the new level, an SNode handle (lt.activate(handle, ...),
-- handle:deactivate_all()).
for _, kind in ipairs { "dense", "bitmasked", "pointer", "dynamic" } do
  Builder[kind] = function(self, axes, shape, opts)
    check_builder(self)
    local id = M.add_level(self.id, kind, axes, shape, opts)
    local extents = type(shape) == "table" and { table.unpack(shape) } or nil   -- for tostring
    return setmetatable({ id = id, gen = self.gen, root = self.root, kind = kind, tok = self.tok,
      _axes = { table.unpack(axes) }, _extents = extents or shape }, Builder)
  end
end

function Builder:deactivate_all()
  return require("lattice.sparse").deactivate_all(self)
end

-- level:stats(): the level's counters, {kind, label, active, allocated, bytes, reserved} (sparse.lua)
function Builder:stats()
  return require("lattice.sparse").level_stats(self)
end

-- level:parent(), level:active(): the level above; its active cells (levels.lua)
function Builder:parent() return require("lattice.levels").level_parent(self) end
function Builder:active() return require("lattice.levels").level_active(self) end

-- "level pointer [ij: 16, 16] #3" (levels.lua)
Builder.__tostring = function(b) return require("lattice.levels").level_text(b) end
M.Builder = Builder

-- The scalar fields to place for place(...)'s arguments: a composite field
-- places all its components here, in one cell (AoS).
local function place_list(...)
  local cfield = require "lattice.cfield"
  local list = {}
  local n, opts = select("#", ...), nil
  local last = select(n > 0 and n or 1, ...)
  if n > 0 and type(last) == "table" and getmetatable(last) == nil then   -- place(x, y, {offset = {...}})
    opts, n = last, n - 1
  end
  for i = 1, n do
    local f = select(i, ...)
    if cfield.is(f) then
      for _, c in ipairs(cfield.components(f)) do list[#list + 1] = c end
    else
      list[#list + 1] = f
    end
  end
  return list, opts
end

function Builder:place(...)
  check_builder(self)
  local list, opts = place_list(...)
  local offset
  if opts then                                   -- the options: {offset = {...}} for every field placed here
    for key in pairs(opts) do
      if key ~= "offset" then raise("place: unknown option '" .. tostring(key) .. "' (offset)") end
    end
    if opts.offset ~= nil then offset = offset_list(opts.offset, "place", "") end
  end
  -- a field's gradient goes beside it (in its cell), unless placed already or
  -- in this call
  local given = {}
  for _, f in ipairs(list) do given[f] = true end
  for i = #list, 1, -1 do
    local g = is_field(list[i]) and rawget(list[i], "_grad")
    local d = is_field(list[i]) and rawget(list[i], "_dual")
    if d and not d._snode and not given[d] then table.insert(list, i + 1, d) end
    if g and not g._snode and not given[g] then table.insert(list, i + 1, g) end
  end
  for i = 1, #list do
    local f = list[i]
    if not is_field(f) then
      raise("place: argument " .. i .. " is not a field (create one with lt.field(lt.f32))")
    end
    if f._snode then
      raise("field '" .. guess_name(f) .. "' is placed twice; a field can be placed only once")
    end
    if offset then set_offset(f, offset, "place") end
    local id, err = core.place(state.prog, self.id, f.dtype.name, rawget(f, "_name") or "?")
    if not id then raise("place: " .. err) end
    apply_offset(f, id)
    rawset(f, "_snode", id)
    rawset(f, "_gen", state.gen)
    rawset(f, "_root", self.root)
    rawset(f, "_tree", self.tok)
    state.trees[self.root][f] = true
  end
  for _, f in ipairs(list) do                    -- link each placed field and its gradient
    local g, p = rawget(f, "_grad"), rawget(f, "_primal")
    if g and g._snode and g._gen == state.gen then core.set_grad(state.prog, f._snode, g._snode) end
    if p and p._snode and p._gen == state.gen then core.set_grad(state.prog, p._snode, f._snode) end
    local d, q = rawget(f, "_dual"), rawget(f, "_dual_of")       -- and its tangent
    if d and d._snode and d._gen == state.gen then core.set_dual(state.prog, f._snode, d._snode) end
    if q and q._snode and q._gen == state.gen then core.set_dual(state.prog, q._snode, f._snode) end
  end
  return self
end

-- Materialises f's tree (layout + memory); after that lt.root starts a new tree.
local function materialize_root(root)
  local ok, err = core.materialize(state.prog, root, true)
  if not ok then
    if state.root == root then state.root, state.root_tok = nil, nil end   -- lt.root starts a new tree
    for g in pairs(state.trees[root] or {}) do guess_name(g) end   -- name the fields in the message
    ok, err = core.materialize(state.prog, root, true)
    if not ok then raise("cannot lay out the SNode tree: " .. tostring(err)) end
  end
  for g in pairs(state.trees[root] or {}) do
    local info = core.snode_info(state.prog, g._snode)
    rawset(g, "_shape", info.shape)
    rawset(g, "_nidx", info.nidx)
    if rawget(g, "_name") then core.set_name(state.prog, g._snode, g._name) end
  end
  if state.root == root then state.root, state.root_tok = nil, nil end
end
M.materialize_root = materialize_root

-- The current lt.root tree, when it holds anything, is materialised before a
-- kernel compiles (as in the reference system).
function M.materialize_current()
  if state.root and next(state.trees[state.root]) then materialize_root(state.root) end
end

-- Makes f usable: placed, in the current program, materialised. Returns it.
function M.ready(f)
  if not f._snode then
    raise("field '" .. guess_name(f) .. "' is not placed; give it a shape (lt.field(dtype, shape)) "
      .. "or place it with lt.root:dense(...):place(x)")
  end
  if f._gen ~= state.gen then
    raise("field '" .. guess_name(f) .. "' belongs to a program that lt.init has reset; create it again")
  end
  if not f._shape then materialize_root(f._root) end
  return f
end

-- ---- Lua-scope access --------------------------------------------------------

-- The instance userdata an access goes to: an lt.tree instance's, or nil
-- (the tree's one instance).
local function inst_ud(f)
  local inst = rawget(f, "_inst")
  if not inst then return nil end
  if not inst._ud then raise("this tree instance was destroyed (g:destroy()); instantiate a new one") end
  return inst._ud
end
M.inst_ud = inst_ud

-- ---- one index too many (x[1][1][1] on a 2-D field) ---------------------------
-- A Lua-scope read gives a plain number, and indexing a number says "attempt
-- to index a number value". So numbers get a metatable (unless the host gave
-- them one) whose __index and __newindex name the field or ndarray when the
-- number indexed is what the last element read gave, at the same line of user
-- code (core.read_here), and say what Lua says otherwise. last.obj is that
-- read's field or ndarray, last.fail(obj) raises its message.
local last = setmetatable({}, { __mode = "v" })    -- weak: the last read must not keep a tree alive
M.last_read = last

local function index_number(n)
  local info = debug.getinfo(3, "S")       -- the code indexing n (2: this function's caller)
  if last.obj and info and info.what ~= "C" and info.source:sub(1, 9) ~= "=lattice/" and core.read_here(n) then
    last.fail(last.obj)
  end
  error("attempt to index a number value", 3)
end
if debug.getmetatable(0) == nil then
  debug.setmetatable(0, {
    __index = function(n, _) index_number(n) end,
    __newindex = function(n, _, _) index_number(n) end,
  })
end

local function one_too_many(f)
  raise("field '" .. guess_name(f) .. "' has " .. f._nidx .. " indices, got " .. (f._nidx + 1))
end

local function host_get(f, idx)
  local v, err = core.field_get(state.prog, f._snode, inst_ud(f), table.unpack(idx, 1, f._nidx))
  if v == nil then
    guess_name(f)                -- name the field in the message if it can be found
    v, err = core.field_get(state.prog, f._snode, inst_ud(f), table.unpack(idx, 1, f._nidx))
    raise(err)
  end
  last.obj, last.fail = f, one_too_many
  return v
end
M.host_get = host_get

local function check_value(f, v)
  if type(v) ~= "number" then
    raise("cannot write a " .. type(v) .. " to field '" .. guess_name(f) .. "' (" ..
      f.dtype.name .. "): fields hold numbers")
  end
  if f.dtype.is_int and math.type(v) == "float" then
    local i = math.tointeger(v)
    if not i then
      raise("cannot write the float " .. tostring(v) .. " to the integer field '" .. guess_name(f) ..
        "' (" .. f.dtype.name .. "); convert it explicitly, e.g. math.floor(v)")
    end
    return i
  end
  return v
end
M.check_value = check_value

-- Lua-scope writes inside lt.tape are refused: the tape records kernels only,
-- so a gradient through such a write would be silently wrong.
local function not_on_tape(f, what)
  if state.tape and not rawget(f, "_primal") and not rawget(f, "_dual_of") then
    raise(what .. " of field '" .. guess_name(f) .. "' inside lt.tape: the tape records kernel calls only, so "
      .. "gradients would miss this write; write it before the tape starts, or in a kernel")
  end
end
M.not_on_tape = not_on_tape

local function host_set(f, idx, v)
  not_on_tape(f, "a write")
  v = check_value(f, v)
  local ok, err = core.field_set(state.prog, f._snode, inst_ud(f), v, table.unpack(idx, 1, f._nidx))
  if not ok then
    if not err:find("field '?'", 1, true) then raise(err) end
    guess_name(f)
    ok, err = core.field_set(state.prog, f._snode, inst_ud(f), v, table.unpack(idx, 1, f._nidx))
    raise(err)
  end
end
M.host_set = host_set

local function wrong_count(f, got)
  raise("field '" .. guess_name(f) .. "' has " .. f._nidx .. " indices, got " .. got)
end

-- The metatable of the partial index chains x[i], x[i][j], ... of a field
-- with more indices (Lua scope): read(f, idx) and write(f, idx, v) access an
-- element, wrong(f, n) raises for n indices. Composite fields (cfield.lua)
-- make theirs with the same function.
-- The indices so far are idx[1..n] (n counted: an index may be nil, x[nil][0],
-- which the access then reports).
function M.host_accessor(read, write, wrong)
  local Acc = {}
  local function more(a, k)
    local idx = table.move(a.idx, 1, a.n, 1, {})
    idx[a.n + 1] = k
    return idx, a.n + 1
  end
  Acc.__index = function(a, k)
    local idx, n = more(a, k)
    if n < a.f._nidx then return setmetatable({ f = a.f, idx = idx, n = n }, Acc) end
    return read(a.f, idx)
  end
  Acc.__newindex = function(a, k, v)
    local idx, n = more(a, k)
    if n ~= a.f._nidx then wrong(a.f, n) end
    write(a.f, idx, v)
  end
  -- arithmetic on a partial index (x[i] + 1 for a 2-D x) names the mistake
  for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv",
    "__band", "__bor", "__bxor", "__shl", "__shr", "__bnot", "__lt", "__le", "__concat", "__call" } do
    Acc[mm] = function(a, b)
      local acc = getmetatable(a) == Acc and a or b
      wrong(acc.f, acc.n)
    end
  end
  return Acc
end
HostAcc = M.host_accessor(host_get, host_set, wrong_count)

-- Methods called without the colon (x.fill(v)) or on something else raise a
-- message naming the mistake, not an error inside a lattice module: wraps
-- every function in methods with a check of self (is_self).
function M.guard_methods(methods, is_self, var, noun)
  for name, fn in pairs(methods) do
    methods[name] = function(self, ...)
      if not is_self(self) then
        raise(var .. ":" .. name .. " is a method: call it with a colon, " .. var .. ":" .. name ..
          "(...) (got a " .. type(self) .. " as " .. var .. ", not " .. noun .. ")")
      end
      return fn(self, ...)
    end
  end
end

local methods = {}

function methods.fill(f, v)
  if tracer.active() then return tracer.unsupported("x:fill inside a kernel; write a loop") end
  not_on_tape(f, "x:fill")
  M.ready(f)
  v = check_value(f, v)
  local ok, err = core.field_fill(state.prog, f._snode, inst_ud(f), v)
  if not ok then raise("x:fill of field '" .. M.guess_name(f) .. "': " .. err) end
end

function methods.to_table(f)
  if tracer.active() then return tracer.unsupported("x:to_table inside a kernel") end
  M.ready(f)
  local t, err = core.field_to_table(state.prog, f._snode, inst_ud(f))
  if t == nil then raise("x:to_table of field '" .. M.guess_name(f) .. "': " .. err) end
  return t
end

-- x:from_table(t): x[i][j] = t[i][j] for every element, t nested like
-- to_table's result (each level counting from 1, or from 0; the rules are
-- src/lang/datatable.c's); a 0-D field takes the number itself.
function methods.from_table(f, tbl)
  if tracer.active() then return tracer.unsupported("x:from_table inside a kernel") end
  not_on_tape(f, "x:from_table")
  M.ready(f)
  if f._nidx > 0 and type(tbl) ~= "table" then
    raise("x:from_table of field '" .. M.guess_name(f) .. "': expects a table, got a " .. type(tbl))
  end
  local ok, err = core.field_from_table(state.prog, f._snode, inst_ud(f), tbl)
  if not ok then raise("x:from_table of field '" .. M.guess_name(f) .. "': " .. err) end
end

-- x:from_table for a component of a composite field (cfield.lua): every
-- element from the flat row-major list of checked numbers.
function M.set_list(f, list)
  not_on_tape(f, "x:from_table")
  local ok, err = core.field_set_list(state.prog, f._snode, inst_ud(f), list)
  if not ok then raise("x:from_table of field '" .. M.guess_name(f) .. "': " .. err) end
end

-- x:deactivate_all(): every cell of the sparse level nearest above x
function methods.deactivate_all(f)
  return require("lattice.sparse").deactivate_all(f)
end

-- x:copy_from(y): every element of y into x (copy.lua)
function methods.copy_from(f, src) return require("lattice.copy").field(f, src) end

-- x:active() -> {{i, j}, ...}: the indices of x's active elements (Lua scope)
function methods.active(f)
  if tracer.active() then return tracer.unsupported("x:active() inside a kernel; use for i, j in x") end
  M.ready(f)
  return core.field_active(state.prog, f._snode, inst_ud(f))
end

-- x:parent(): the level that holds x (an SNode handle; levels.lua)
function methods.parent(f) return require("lattice.levels").field_parent(f) end

M.guard_methods(methods, is_field, "x", "a scalar field")

local props = {}
function props.shape(f)
  M.ready(f)
  local s = {}
  for i, n in ipairs(f._shape) do s[i] = n end
  return s
end
function props.name(f) return guess_name(f) end
function props.offset(f)                 -- a fresh table: where each index starts (zeros without an offset)
  M.ready(f)
  local o, out = rawget(f, "_offset"), {}
  for k = 1, f._nidx do out[k] = o and o[k] or 0 end
  return out
end
function props.grad(f)                   -- x.grad of lt.field(..., {needs_grad = true})
  local g = rawget(f, "_grad")
  if not g then
    raise("field '" .. guess_name(f) .. "' has no gradient: make it with lt.field(dtype, shape, "
      .. "{needs_grad = true})")
  end
  if not rawget(g, "_name") and rawget(f, "_name") then rawset(g, "_name", f._name .. ".grad") end
  return g
end
function props.dual(f)                   -- x.dual of lt.field(..., {needs_dual = true}): the tangent (k:fwd)
  local d = rawget(f, "_dual")
  if not d then
    raise("field '" .. guess_name(f) .. "' has no dual: make it with lt.field(dtype, shape, "
      .. "{needs_dual = true})")
  end
  if not rawget(d, "_name") and rawget(f, "_name") then rawset(d, "_name", f._name .. ".dual") end
  return d
end
function props.value(f)                  -- the element of a 0-D field
  if tracer.active() then return tracer.field_read(f, {}) end
  M.ready(f)
  if f._nidx ~= 0 then wrong_count(f, 0) end
  return host_get(f, {})
end

Field.__index = function(f, k)
  if k == "dtype" then return rawget(f, "_dtype") end
  if type(k) == "string" then
    if k:sub(1, 1) == "_" then return nil end   -- private slots not yet set
    local m = methods[k]
    if m then return m end
    local p = props[k]
    if p then return p(f) end
    raise("fields have no member '" .. k .. "' (fields have: shape, offset, dtype, name, value, grad, dual, fill, to_table, "
      .. "from_table, copy_from, active, deactivate_all, parent)")
  end
  if tracer.active() then return tracer.field_index(f, k) end
  M.ready(f)
  local list = tracer.index_list(k)
  if list then                                           -- x[I], I = {i, j} or an index vector
    if #list ~= f._nidx then wrong_count(f, #list) end
    return host_get(f, list)
  end
  if f._nidx == 0 then
    raise("field '" .. guess_name(f) .. "' has no indices (0-D): read it with x.value")
  end
  if f._nidx > 1 then return setmetatable({ f = f, idx = { k }, n = 1 }, HostAcc) end
  return host_get(f, { k })
end

Field.__newindex = function(f, k, v)
  if k == "value" then
    if tracer.active() then return tracer.field_write(f, {}, v) end
    M.ready(f)
    if f._nidx ~= 0 then wrong_count(f, 0) end
    return host_set(f, {}, v)
  end
  if k == "name" then
    if type(v) ~= "string" then raise("x.name must be a string (got a " .. type(v) .. ")") end
    return M.set_name(f, v)
  end
  if k == "dtype" or k == "shape" or k == "offset" then
    raise("x." .. k .. " of field '" .. guess_name(f) .. "' is read-only: a field keeps the type and shape it "
      .. "was made with (and its offset); make a new field for another (lt.field(dtype, shape, {offset = ...}))")
  end
  if type(k) == "string" then
    raise("cannot set member '" .. k .. "' of a field (only x.value and x.name can be assigned)")
  end
  local idx, n = { k }, 1                                        -- (k may be nil: counted)
  local list = not is_field(k) and tracer.index_list(k)          -- x[I] = v
  if list then idx, n = list, #list end
  if tracer.active() then return tracer.field_write(f, idx, v) end
  M.ready(f)
  if f._nidx ~= n then wrong_count(f, n) end
  host_set(f, idx, v)
end

-- "field f32 (4, 5) 'x'", "field vec2 (8) 'v'" (what = the element type's
-- name; f = the field, or a composite's first component), with " offset
-- (-4, -4)" when it has one. Before its tree is laid out the shape is the
-- level's; "(not placed)" when it has none yet. Nothing is materialised.
function M.describe(f, what, name)
  local shape = rawget(f, "_shape")
  local reset = rawget(f, "_snode") and rawget(f, "_gen") ~= state.gen
  if not shape and rawget(f, "_snode") and not reset and state.prog then
    local ok, info = pcall(core.snode_info, state.prog, f._snode)
    if ok then shape = info.shape end
  end
  local s = "field " .. what .. " " .. (shape and shape_text(shape) or "(not placed)")
  if name then s = s .. " '" .. name .. "'" end
  local o = rawget(f, "_offset")
  if o then s = s .. " offset " .. shape_text(o) end
  if reset then s = s .. " (of a program lt.init has reset)" end
  return s
end

Field.__tostring = function(f)
  return M.describe(f, rawget(f, "_dtype").name, rawget(f, "_name"))
end

return M
