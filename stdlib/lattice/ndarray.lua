-- ndarray.lua -- lt.ndarray: external arrays that own their memory (the C half
-- is src/lang/ndarray.c), their Lua-scope access, their annotation type
-- lt.ndarray_type(dtype, ndim), and what a kernel sees of one: the data's
-- address and the extents are kernel arguments, so one compiled kernel
-- serves every shape (docs/language.md, "External arrays").
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"

local M = {}
local ND, NDType, HostAcc, Shape = {}, {}, {}, {}
M.ND, M.NDType = ND, NDType

-- a.shape is a plain list marked by this metatable, so that lt.ndrange(a.shape)
-- can take it as the list of extents (not as a {begin, end} pair)
local function shape_list(t) return setmetatable(t, Shape) end
function M.is_shape(x) return getmetatable(x) == Shape end

local MAX_DIMS = 8
local U64, I32, I64 = types.by_name.u64, types.by_name.i32, types.by_name.i64
local VOID = core.type_id("void")
local raise = state.raise

function M.is_ndarray(x) return getmetatable(x) == ND end
function M.is_type(x) return getmetatable(x) == NDType end

local function shape_text(shape)
  local t = {}
  for i, n in ipairs(shape) do t[i] = tostring(n) end
  return "(" .. table.concat(t, ", ") .. ")"
end

local function check_dtype(dtype, what)
  if not types.is_type(dtype) or dtype.name == "i1" then
    raise(what .. ": the element type must be a scalar type such as lt.f32")
  end
end

-- ---- annotation types ---------------------------------------------------------------

local type_cache = {}

-- lt.ndarray_type(dtype, ndim): the type of an ndarray argument of any shape.
function M.type(dtype, ndim)
  check_dtype(dtype, "lt.ndarray_type")
  if math.type(ndim) ~= "integer" or ndim < 1 or ndim > MAX_DIMS then
    raise("lt.ndarray_type: the number of dimensions must be an integer from 1 to " .. MAX_DIMS)
  end
  local key = dtype.name .. ":" .. ndim
  if not type_cache[key] then
    type_cache[key] = setmetatable({ dtype = dtype, ndim = ndim, key = "ndarray(" .. dtype.name .. "," .. ndim .. ")" },
      NDType)
  end
  return type_cache[key]
end
NDType.__tostring = function(t) return "lt.ndarray_type(lt." .. t.dtype.name .. ", " .. t.ndim .. ")" end
NDType.__index = function(_, k) raise("ndarray types have no member '" .. tostring(k) .. "'") end

-- ---- construction ---------------------------------------------------------------------

-- A value in a message, without calling its metamethods.
local function show(v)
  if type(v) == "number" then return tostring(v) end
  if type(v) == "string" and #v <= 24 then return string.format("%q", v) end
  return "a " .. type(v)
end

-- The shape (a plain list) of extents from an integer or a table of them,
-- read raw; what: the caller, for messages.
local function check_shape(shape, what)
  if math.type(shape) == "integer" then shape = { shape } end
  local n = type(shape) == "table" and rawlen(shape) or 0
  if n < 1 or n > MAX_DIMS then
    raise(what .. ": the shape must be an integer or a table of 1 to " .. MAX_DIMS .. " integers (got " ..
      (type(shape) == "table" and ("a table of " .. n) or show(shape)) .. ")")
  end
  local s = {}
  for i = 1, n do
    local e = rawget(shape, i)
    if math.type(e) ~= "integer" or e <= 0 then
      raise(what .. ": every extent must be an integer > 0 (extent " .. i .. " is " .. show(e) .. ")")
    end
    s[i] = e
  end
  for k in next, shape do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      raise(what .. ": the shape has an entry with the key " .. show(k) .. ", which is not an axis 1.." .. n)
    end
  end
  return s
end

local function make(dtype, shape, what)
  check_dtype(dtype, what)
  local s = check_shape(shape, what)
  local ud, err = core.ndarray_new(dtype.id, s, state.prog)   -- device memory when prog has one
  if not ud then raise(what .. ": " .. err) end
  return setmetatable({ _ud = ud, _dtype = dtype, _shape = s, _type = M.type(dtype, #s) }, ND)
end

-- The lt.ndarray of a userdata made in C (lt_push_ndarray, an lt_ndarray kernel argument).
function M.wrap(ud)
  local id, shape = core.ndarray_info(ud)
  local dtype = types.by_id[id]
  return setmetatable({ _ud = ud, _dtype = dtype, _shape = shape, _type = M.type(dtype, #shape) }, ND)
end

-- A Lua value converted for an array of dtype (the rules of field writes).
local function check_value(a, v)
  if type(v) ~= "number" then
    raise("cannot write a " .. type(v) .. " to an ndarray of " .. a._dtype.name .. ": ndarrays hold numbers")
  end
  if a._dtype.is_int and math.type(v) == "float" then
    local i = math.tointeger(v)
    if not i then
      raise("cannot write the float " .. tostring(v) .. " to an ndarray of " .. a._dtype.name ..
        "; convert it explicitly, e.g. math.floor(v)")
    end
    v = i
  end
  return types.convert(v, a._dtype)
end

-- Every element from nested tables of a's shape (src/lang/datatable.c's
-- rules: each level counts from 1, or from 0 when it has a [0] entry).
local function from_table(a, values, what)
  local ok, err = core.ndarray_from_table(a._ud, values)
  if not ok then raise(what .. ": " .. err) end
end

-- lt.ndarray(dtype, shape[, values]): zero-filled, or filled from nested
-- tables; lt.ndarray(dtype, shape, {needs_grad = true[, values = ...]})
-- also makes a.grad, an ndarray of the same dtype and shape (reverse mode,
-- docs/autodiff.md).
function M.new(dtype, shape, values)
  local opts
  if type(values) == "table" and getmetatable(values) == nil and rawget(values, "offset") ~= nil then
    raise("lt.ndarray: an ndarray takes no offset (its indices count from 0); use a field, "
      .. "lt.field(dtype, shape, {offset = ...}), or add the offset to the indices in the kernel")
  end
  if type(values) == "table" and getmetatable(values) == nil and (values.needs_grad ~= nil or values.values ~= nil) then
    opts, values = values, values.values
    for k in pairs(opts) do
      if k ~= "needs_grad" and k ~= "values" then
        raise("lt.ndarray: unknown option '" .. tostring(k) .. "' (needs_grad, values)")
      end
    end
  end
  local a = make(dtype, shape, "lt.ndarray")
  if values ~= nil then from_table(a, values, "lt.ndarray") end
  if opts and opts.needs_grad then
    if dtype.name ~= "f32" and dtype.name ~= "f64" then
      raise("lt.ndarray: an ndarray with a gradient (needs_grad) holds f32 or f64, not " .. dtype.name)
    end
    rawset(a, "_grad", make(dtype, shape, "lt.ndarray"))
    rawset(a._grad, "_grad_of", a)
  end
  return a
end

-- Lua writes to an ndarray with a gradient (or to one whose gradient it is
-- not) inside lt.tape would be missed by the gradients: refused.
local function no_tape(a, what)
  if state.tape and not rawget(a, "_grad_of") then
    raise(what .. " inside lt.tape: the tape records kernel calls only, so gradients would miss this write; "
      .. "write it before the tape starts, or in a kernel")
  end
end

-- The shape of nested tables: each level's entry count (counting from 1, or
-- from 0 when it has a [0] entry), down the first entries, at most MAX_DIMS
-- levels; a table met again on the way (t[1] = t) is a cycle.
local function infer_shape(values, what)
  local shape, t, seen, path = {}, values, {}, "t"
  while type(t) == "table" do
    if seen[t] then
      raise(what .. ": " .. path .. " is " .. seen[t] .. " again: the tables form a cycle")
    end
    if #shape == MAX_DIMS then
      raise(what .. ": the tables nest deeper than " .. MAX_DIMS .. " levels (" .. path .. " is a table); " ..
        "an ndarray has at most " .. MAX_DIMS .. " dimensions")
    end
    seen[t] = path
    local base = rawget(t, 0) ~= nil and 0 or 1
    local n = rawlen(t) + 1 - base
    if n < 1 then raise(what .. ": " .. path .. " is an empty table; every extent must be > 0") end
    shape[#shape + 1] = n
    path = path .. "[" .. base .. "]"
    t = rawget(t, base)
  end
  return shape
end

-- lt.ndarray_from(dtype, values): the shape from nested tables (rectangular).
function M.from(dtype, values)
  check_dtype(dtype, "lt.ndarray_from")
  if type(values) ~= "table" then
    raise("lt.ndarray_from: expects nested tables of numbers, got " .. show(values))
  end
  local a = make(dtype, infer_shape(values, "lt.ndarray_from"), "lt.ndarray_from")
  from_table(a, values, "lt.ndarray_from")
  return a
end

-- ---- Lua-scope access ------------------------------------------------------------------

local function linear(a, idx)
  local off = 0
  for k = 1, #a._shape do
    local i, n = idx[k], a._shape[k]
    if math.type(i) ~= "integer" then
      local ii = type(i) == "number" and math.tointeger(i)
      if not ii then
        raise("index " .. (k - 1) .. " of an ndarray must be an integer (got " .. show(i) .. ")")
      end
      i = ii
    end
    if i < 0 or i >= n then
      raise("index " .. i .. " out of range for axis " .. (k - 1) .. " of an ndarray with shape " ..
        shape_text(a._shape))
    end
    off = off * n + i
  end
  return off
end

local function wrong_count(a, got)
  raise("the ndarray has " .. #a._shape .. " dimensions, got " .. got .. " indices")
end

-- a read: the element's value, noted for a[i][j][k] one index too many (field.lua)
local last = require("lattice.field").last_read
local function one_too_many(a) wrong_count(a, #a._shape + 1) end
local function get(a, idx)
  local v = core.ndarray_get(a._ud, linear(a, idx))
  last.obj, last.fail = a, one_too_many
  return v
end

-- a[I]: I a table of indices or an index vector (lt.grouped), as for fields
local function index_list(k)
  local T = package.loaded["lattice.tracer"]
  return T and T.index_list(k)
end

-- a[i][j]...: the indices so far are idx[1..n] (counted: one may be nil)
local function more(h, k)
  local idx = table.move(h.idx, 1, h.n, 1, {})
  idx[h.n + 1] = k
  return idx, h.n + 1
end
HostAcc.__index = function(h, k)
  local idx, n = more(h, k)
  if n < #h.a._shape then return setmetatable({ a = h.a, idx = idx, n = n }, HostAcc) end
  return get(h.a, idx)
end
HostAcc.__newindex = function(h, k, v)
  no_tape(h.a, "a write of an ndarray")
  local idx, n = more(h, k)
  if n ~= #h.a._shape then wrong_count(h.a, n) end
  core.ndarray_set(h.a._ud, linear(h.a, idx), check_value(h.a, v))
end
for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__lt", "__le",
  "__concat", "__call", "__len" } do
  HostAcc[mm] = function(x, y)
    local h = getmetatable(x) == HostAcc and x or y
    wrong_count(h.a, h.n)
  end
end

local methods = {}

function methods.fill(a, v)
  no_tape(a, "a:fill")
  core.ndarray_fill(a._ud, check_value(a, v))
end

-- a:to_table() -> nested tables, 1-based: t[i + 1][j + 1] == a[i][j]
function methods.to_table(a)
  local flat, shape = core.ndarray_to_list(a._ud), a._shape
  local n = 0
  local function build(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then n = n + 1; t[i] = flat[n] else t[i] = build(d + 1) end
    end
    return t
  end
  return build(1)
end

-- a:from_table(values): every element from nested tables of a's shape
function methods.from_table(a, values)
  no_tape(a, "a:from_table")
  from_table(a, values, "a:from_table")
end

-- a:copy_from(b): every element of ndarray b (same type and shape) into a
function methods.copy_from(a, b)
  no_tape(a, "a:copy_from")
  return require("lattice.copy").ndarray(a, b)
end

require("lattice.field").guard_methods(methods, M.is_ndarray, "a", "an ndarray")

local props = {}
function props.shape(a) return shape_list({ table.unpack(a._shape) }) end
function props.dtype(a) return a._dtype end
function props.ndim(a) return #a._shape end
function props.grad(a)
  local g = rawget(a, "_grad")
  if not g then raise("this ndarray has no gradient: make it with lt.ndarray(dtype, shape, {needs_grad = true})") end
  return g
end
function props.size(a)
  local n = 1
  for _, e in ipairs(a._shape) do n = n * e end
  return n
end

-- Inside a kernel an ndarray must come as an argument: its address and shape
-- are launch values, never constants baked into the code.
local function not_in_kernel(a)
  local T = package.loaded["lattice.tracer"]
  if T and T.active() then
    T.fail("an ndarray (" .. tostring(a) .. ") is used in a kernel without being passed to it; pass it as "
      .. "an argument, e.g. lt.kernel(function(a) ... end, {a = lt.ndarray_type(lt." .. a._dtype.name .. ", "
      .. #a._shape .. ")})")
  end
end

ND.__index = function(a, k)
  if k ~= "shape" and k ~= "ndim" and k ~= "dtype" and k ~= "size" and k ~= "grad" then not_in_kernel(a) end
  if type(k) == "string" then
    if methods[k] then return methods[k] end
    if props[k] then return props[k](a) end
    raise("ndarrays have no member '" .. k .. "' (ndarrays have: shape, dtype, ndim, size, grad, fill, to_table, "
      .. "from_table)")
  end
  local list = index_list(k)
  if list then
    if #list ~= #a._shape then wrong_count(a, #list) end
    return get(a, list)
  end
  if #a._shape == 1 then return get(a, { k }) end
  return setmetatable({ a = a, idx = { k }, n = 1 }, HostAcc)
end
ND.__newindex = function(a, k, v)
  not_in_kernel(a)
  no_tape(a, "a write of an ndarray")
  if type(k) == "string" then raise("cannot set the member '" .. k .. "' of an ndarray") end
  local list = index_list(k)
  local idx, n = list or { k }, list and #list or 1              -- (k may be nil: counted)
  if n ~= #a._shape then wrong_count(a, n) end
  core.ndarray_set(a._ud, linear(a, idx), check_value(a, v))
end
ND.__len = function(a) return a._shape[1] end
ND.__tostring = function(a) return "ndarray " .. a._dtype.name .. " " .. shape_text(a._shape) end

-- ---- kernel arguments ------------------------------------------------------------------

-- The launch values of ndarray a (address, then the extents), appended to vals.
function M.launch_values(a, vals)
  vals[#vals + 1] = core.ndarray_address(a._ud, state.prog)
  for _, n in ipairs(a._shape) do vals[#vals + 1] = n end
end

-- The IR argument types of an ndarray argument of type t: u64, then ndim i32.
function M.arg_type_ids(t, ids)
  ids[#ids + 1] = U64.id
  for _ = 1, t.ndim do ids[#ids + 1] = I32.id end
end

-- ---- in kernels --------------------------------------------------------------------------

local Proxy, KAcc = {}, {}
M.Proxy = Proxy

-- The kernel's view of ndarray parameter `name` of type t, whose address is IR
-- argument n (extents n+1 ..): returns the proxy and the next free argument.
function M.proxy(b, T, t, n, name)
  b:set_arg_name(n, name)
  local base = T.sym(b:arg(n), U64)
  local shape = {}
  for k = 1, t.ndim do
    b:set_arg_name(n + k, name .. ".shape[" .. k .. "]")
    shape[k] = T.sym(b:arg(n + k), I32)
  end
  return setmetatable({ T = T, base = base, _shape = shape, t = t, argno = n, name = name }, Proxy), n + 1 + t.ndim
end

-- The element's address (an ext_ptr) for the indices idx, bounds-checked in debug mode.
local function elem_ptr(p, idx)
  local T = p.T
  local S = T.current()
  if #idx ~= p.t.ndim then
    T.fail("ndarray '" .. p.name .. "' has " .. p.t.ndim .. " dimensions, got " .. #idx .. " indices")
  end
  local off
  for k = 1, #idx do
    local s, ty = T.lift(idx[k])
    if not ty.is_int or ty.name == "i1" then
      T.fail("index " .. (k - 1) .. " of ndarray '" .. p.name .. "' must be an integer (got " .. ty.name .. ")")
    end
    local b = T.B()
    local ext = (T.lift(p._shape[k]))
    if S.debug then
      local chk = b:op("check_bound", VOID, s, ext)
      b:set_aux(chk, p.argno, k - 1)
    end
    if ty ~= I64 then s = b:cast(I64.id, s) end
    if off then off = b:binary("add", b:binary("mul", off, b:cast(I64.id, ext)), s) else off = s end
  end
  return T.B():op("ext_ptr", p.t.dtype.id, (T.lift(p.base)), off)
end

local function read(p, idx)
  local ptr = elem_ptr(p, idx)
  local T = p.T
  return setmetatable({ s = T.B():global_load(ptr), t = p.t.dtype, ptr = ptr, what = "ndarray '" .. p.name .. "'",
    index_error = "ndarray '" .. p.name .. "' has " .. p.t.ndim .. " dimensions, got " .. (#idx + 1) .. " indices" },
    T.Sym)
end

local function write(p, idx, v)
  local T = p.T
  local ptr = elem_ptr(p, idx)
  T.B():global_store(ptr, T.implicit(v, p.t.dtype, "ndarray '" .. p.name .. "'"))
end

Proxy.__index = function(p, k)
  if k == "shape" then return shape_list({ table.unpack(p._shape) }) end
  if k == "ndim" then return p.t.ndim end
  if k == "dtype" then return p.t.dtype end
  if type(k) == "string" then p.T.fail("ndarrays in kernels have no member '" .. k .. "' (use shape, ndim, dtype)") end
  local list = p.T.index_list(k)                      -- a[I]: a table or an index vector (lt.grouped)
  if list then return read(p, list) end
  if p.t.ndim == 1 then return read(p, { k }) end
  return setmetatable({ p = p, idx = { k } }, KAcc)
end
Proxy.__newindex = function(p, k, v)
  local list = p.T.index_list(k)
  if list then return write(p, list, v) end
  if p.t.ndim ~= 1 then
    p.T.fail("ndarray '" .. p.name .. "' has " .. p.t.ndim .. " dimensions, got 1 index")
  end
  write(p, { k }, v)
end
Proxy.__len = function(p) return p._shape[1] end

KAcc.__index = function(a, k)
  local idx = { table.unpack(a.idx) }
  idx[#idx + 1] = k
  if #idx < a.p.t.ndim then return setmetatable({ p = a.p, idx = idx }, KAcc) end
  return read(a.p, idx)
end
KAcc.__newindex = function(a, k, v)
  local idx = { table.unpack(a.idx) }
  idx[#idx + 1] = k
  write(a.p, idx, v)
end
for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__lt", "__le",
  "__concat", "__call", "__len" } do
  KAcc[mm] = function(x, y)
    local a = getmetatable(x) == KAcc and x or y
    a.p.T.fail("ndarray '" .. a.p.name .. "' has " .. a.p.t.ndim .. " dimensions, got " .. #a.idx .. " indices")
  end
end

return M
