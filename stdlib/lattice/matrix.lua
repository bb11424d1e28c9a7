-- matrix.lua -- vector and matrix types (lt.vec2, lt.mat(3, 3, lt.f64), ...) and
-- their values. The IR is scalar only: a vector or matrix value is a Lua object
-- holding its elements, each a kernel value (Sym), a kernel variable (Var, only
-- in composite locals) or a Lua number, so every operation here unrolls into
-- scalar IR at trace time. The same objects work in Lua scope on numbers.
--
-- A value: setmetatable({_n = rows, _m = columns or nil (a vector), _t = scalar
-- type, _e = {elements, row-major, 1-based storage}, _var = true for a
-- composite local}, Mat). Indexing is 0-based, like fields: v[0] == v.x.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local T = require "lattice.tracer"

local M = {}
local Mat = {}
M.Mat = Mat
local CType = {}            -- the type objects lt.vec2, lt.mat3, lt.vec(4, lt.i32)
M.CType = CType

local I1 = types.by_name.i1

-- Errors: at the user's line while tracing, a plain Lua error otherwise.
local function fail(msg)
  if T.active() then T.fail(msg) end
  state.raise(msg)
end
M.fail = fail

local function is_mat(x) return getmetatable(x) == Mat end
M.is_mat = is_mat
local function is_ctype(x) return getmetatable(x) == CType end
M.is_ctype = is_ctype

-- ---- types ------------------------------------------------------------------------

local PREFIX = { f32 = "", f64 = "d", i32 = "i", u32 = "u", i1 = "b" }
local ctypes = {}

local function type_name(n, m, t)
  local p = PREFIX[t.name]
  if m == nil then
    if p and n >= 2 and n <= 4 then return p .. "vec" .. n end
    return "vec(" .. n .. ", " .. t.name .. ")"
  end
  if p and n == m and n >= 2 and n <= 4 then return p .. "mat" .. n end
  return "mat(" .. n .. ", " .. m .. ", " .. t.name .. ")"
end

-- The type of n-vectors (m == nil) or n x m matrices of scalar type t (cached).
function M.ctype(n, m, t)
  local key = n .. "x" .. tostring(m) .. t.name
  local c = ctypes[key]
  if not c then
    c = setmetatable({ n = n, m = m, dtype = t, name = type_name(n, m, t), count = n * (m or 1) }, CType)
    ctypes[key] = c
  end
  return c
end

local function check_size(what, n)
  if math.type(n) ~= "integer" or n < 1 or n > 32 then
    fail(what .. ": sizes must be integers from 1 to 32 (got " .. tostring(n) .. ")")
  end
end

local function check_dtype(what, t)
  t = t or types.by_name.f32
  if not types.is_type(t) then fail(what .. ": the element type must be a scalar type such as lt.f32") end
  return t
end

-- lt.vec(n, dtype), lt.mat(n, m, dtype)
function M.vec_type(n, t)
  check_size("lt.vec", n)
  return M.ctype(n, nil, check_dtype("lt.vec", t))
end
function M.mat_type(n, m, t)
  check_size("lt.mat", n)
  check_size("lt.mat", m)
  return M.ctype(n, m, check_dtype("lt.mat", t))
end

CType.__tostring = function(c) return "lt." .. c.name end
M.type_of = function(v) return M.ctype(v._n, v._m, v._t) end

-- ---- building values -----------------------------------------------------------------

local function default_type(x)
  local o = state.opts or {}
  if math.type(x) == "integer" then return o.default_ip or types.by_name.i32 end
  return o.default_fp or types.by_name.f32
end

-- The scalar type of an element (a kernel value or a Lua number/boolean).
local function elem_type(x)
  if T.is_kv(x) then return x.t end
  if type(x) == "boolean" then return I1 end
  if type(x) == "number" then
    if T.active() and math.type(x) == "integer" then
      local t = T.current().ip
      if x < t.min or (t.max >= 0 and x > t.max) then return types.by_name.i64 end
      return t
    end
    return default_type(x)
  end
  return nil
end
M.elem_type = elem_type

local function describe(x)
  if is_mat(x) then return T.an(M.type_of(x).name) .. " value" end
  if T.composite_mt[getmetatable(x)] then return getmetatable(x).describe(x) end
  return nil
end
M.describe = describe

-- One element converted to type t (explicit conversion: constructors, casts).
-- Kernel variables are read now, so a value never aliases a local.
local function to_elem(x, t, what)
  if type(x) == "number" then
    if t == I1 then fail(what .. ": a number cannot be a boolean component") end
    return types.convert(x, t)
  end
  if type(x) == "boolean" then
    if t ~= I1 then fail(what .. ": a boolean cannot be a numeric component") end
    return x
  end
  if T.is_kv(x) then
    if (x.t == I1) ~= (t == I1) then fail(what .. ": booleans and numbers do not convert") end
    if x.t == t and getmetatable(x) == T.Sym then return x end
    return T.cast(x, t)
  end
  local d = describe(x)
  if d then fail(what .. ": a component must be a scalar, got " .. d) end
  fail(what .. ": a component must be a number or a kernel value, got a " .. type(x))
end
M.to_elem = to_elem

-- A value from a flat list of elements (already of type t, not Vars).
local function make(n, m, t, e)
  return setmetatable({ _n = n, _m = m, _t = t, _e = e }, Mat)
end
M.make = make

-- The elements as values (Vars are loaded), for operations.
local function vals(v)
  if not v._var then return v._e end
  local out = {}
  for k, x in ipairs(v._e) do out[k] = getmetatable(x) == T.Var and T.sym(T.lift(x)) or x end
  return out
end
M.vals = vals

-- Flattens constructor arguments: numbers, kernel values, vectors, tables
-- (nested at most MAX_NEST deep, so a table that contains itself is an error).
local MAX_NEST = 16
local function flatten_args(out, x, what, depth)
  if is_mat(x) then
    for k = 1, #x._e do out[#out + 1] = x._e[k] end
  elseif type(x) == "table" and not T.is_kv(x) and getmetatable(x) == nil then
    depth = (depth or 0) + 1
    if depth > MAX_NEST then
      fail(what .. ": the tables of components nest deeper than " .. MAX_NEST .. " levels (does one contain itself?)")
    end
    for k = 1, #x do flatten_args(out, x[k], what, depth) end
  else
    out[#out + 1] = x
  end
end

-- C(...): lt.vec3(1, 2, 3), lt.vec3(s) (every component s), lt.vec3({...}),
-- lt.vec3(v) (a conversion); lt.mat2(a, b, c, d) row by row, lt.mat2({a, b},
-- {c, d}), lt.mat2({{a, b}, {c, d}}), lt.mat2(s).
CType.__call = function(c, ...)
  local flat = {}
  local nargs = select("#", ...)
  for k = 1, nargs do flatten_args(flat, (select(k, ...)), "lt." .. c.name) end
  local one = (...)
  if #flat == 1 and c.count > 1 and nargs == 1 and (T.is_kv(one) or type(one) == "number" or type(one) == "boolean") then
    for k = 2, c.count do flat[k] = flat[1] end
  end
  if #flat ~= c.count then
    fail("lt." .. c.name .. " takes " .. c.count .. " components, got " .. #flat)
  end
  local e = {}
  for k = 1, c.count do e[k] = to_elem(flat[k], c.dtype, "lt." .. c.name) end
  return make(c.n, c.m, c.dtype, e)
end

local ctype_methods = {}
-- C:zero(), C:identity() (square matrices)
function ctype_methods.zero(c) return c(0) end
function ctype_methods.identity(c)
  if c.m ~= c.n then fail("lt." .. c.name .. ":identity() needs a square matrix type") end
  local e = {}
  for i = 0, c.n - 1 do
    for j = 0, c.n - 1 do e[i * c.n + j + 1] = types.convert(i == j and 1 or 0, c.dtype) end
  end
  return make(c.n, c.m, c.dtype, e)
end

-- ---- the composite-type protocol (cfield.lua, kernel arguments) --------------------------

function ctype_methods.leaf_types(c)
  local t = {}
  for k = 1, c.count do t[k] = c.dtype end
  return t
end
-- Suffixes naming each component's scalar field, in the IR's identifier
-- characters: ".x" ... ".w" (".4" on), ".12" for row 1, column 2 (".1_12"
-- once an extent passes 9).
function ctype_methods.leaf_names(c)
  local s = {}
  local wide = c.n > 10 or (c.m or 0) > 10
  for k = 0, c.count - 1 do
    if c.m == nil then
      s[k + 1] = k < 4 and ("." .. ("xyzw"):sub(k + 1, k + 1)) or ("." .. k)
    else
      s[k + 1] = "." .. (k // c.m) .. (wide and "_" or "") .. (k % c.m)
    end
  end
  return s
end
-- Where each component sits in the Lua table to_lua makes: {k} or {row, column}.
function ctype_methods.leaf_paths(c)
  local p = {}
  for k = 0, c.count - 1 do p[k + 1] = c.m == nil and { k + 1 } or { k // c.m + 1, k % c.m + 1 } end
  return p
end
function ctype_methods.from_flat(c, elems) return make(c.n, c.m, c.dtype, elems) end
function ctype_methods.member_view() return nil end
function ctype_methods.component_slot(c, i, j)
  if math.type(i) ~= "integer" then return nil end
  if c.m == nil then
    if j ~= nil or i < 0 or i >= c.n then return nil end
    return i + 1
  end
  if math.type(j) ~= "integer" or i < 0 or i >= c.n or j < 0 or j >= c.m then return nil end
  return i * c.m + j + 1
end

-- The components of value v (a value of this type, or a Lua table of
-- components) for a store into `what`.
function ctype_methods.to_flat(c, v, what)
  if is_mat(v) then
    if v._n ~= c.n or v._m ~= c.m then
      fail("cannot assign " .. T.an(M.type_of(v).name) .. " value to " .. what .. " (" .. c.name .. "): the shapes differ")
    end
    return vals(v)
  end
  if type(v) == "table" and getmetatable(v) == nil then
    local flat = {}
    flatten_args(flat, v, what)
    if #flat ~= c.count then
      fail("cannot assign " .. #flat .. " components to " .. what .. " (" .. c.name .. ", " .. c.count .. " components)")
    end
    return flat
  end
  local d = describe(v)
  fail("cannot assign " .. (d or ((T.is_kv(v) or type(v) == "number") and "a scalar" or ("a " .. type(v)))) ..
    " to " .. what .. " (" .. c.name .. ")")
end

-- Lua scope: numbers from a table (or a value of numbers); scalar broadcasts when allowed.
function ctype_methods.from_lua(c, v, what, allow_scalar)
  if type(v) == "number" and allow_scalar then
    local flat = {}
    for k = 1, c.count do flat[k] = v end
    return flat
  end
  local flat = ctype_methods.to_flat(c, v, what)
  for k, x in ipairs(flat) do
    if type(x) ~= "number" then fail(what .. ": component " .. (k - 1) .. " must be a number, got a " .. type(x)) end
  end
  return flat
end

-- Lua scope: a plain Lua table of the components ({x, y}; a matrix as rows).
function ctype_methods.to_lua(c, flat)
  if c.m == nil then return { table.unpack(flat, 1, c.count) } end
  local rows = {}
  for i = 1, c.n do rows[i] = { table.unpack(flat, (i - 1) * c.m + 1, i * c.m) } end
  return rows
end

CType.__index = function(c, k)
  if k == "m" then return nil end
  local f = ctype_methods[k]
  if f then return f end
  fail("lt." .. c.name .. " has no member '" .. tostring(k) .. "' (types have zero, identity)")
end

-- lt.vector{a, b, c} and lt.matrix{{a, b}, {c, d}}: the element type is the
-- promotion of the elements' types.
local function promote_all(list)
  local t
  for _, x in ipairs(list) do
    local xt = elem_type(x)
    if not xt then
      local d = describe(x)
      fail("a vector component must be a scalar, got " .. (d or ("a " .. type(x))))
    end
    if not t then t = xt
    elseif (t == I1) ~= (xt == I1) then fail("a vector mixes booleans and numbers")
    elseif t ~= I1 then t = types.by_id[core.result_type("max", t.id, xt.id)] end
  end
  return t or types.by_name.f32
end

function M.vector(list, dtype)
  if type(list) ~= "table" or is_mat(list) or T.is_kv(list) then fail("lt.vector: expects a table of components") end
  local t = dtype or promote_all(list)
  return M.ctype(#list, nil, t)(list)
end

function M.matrix(rows, dtype)
  if type(rows) ~= "table" or #rows == 0 then fail("lt.matrix: expects a table of rows") end
  local flat, m = {}, nil
  for i, r in ipairs(rows) do
    local row = {}
    flatten_args(row, r, "lt.matrix")
    if m and #row ~= m then fail("lt.matrix: row " .. (i - 1) .. " has " .. #row .. " components, row 0 has " .. m) end
    m = #row
    for _, x in ipairs(row) do flat[#flat + 1] = x end
  end
  local t = dtype or promote_all(flat)
  return M.ctype(#rows, m, t)(flat)
end

-- ---- locals (composite kernel variables) --------------------------------------------------

-- A composite local: one kernel variable per element, holding a copy of v.
local function declare(v)
  local e = {}
  for k = 1, #v._e do e[k] = T.new_var_of(v._e[k], v._t) end
  local r = make(v._n, v._m, v._t, e)
  r._var = true
  return r
end

-- Checks that v can be assigned to a value of old's shape; returns its elements.
local function same_shape_elems(old, new, what)
  if not is_mat(new) then
    local d = describe(new)
    fail("cannot assign " .. (d or (T.is_kv(new) or type(new) == "number") and (d or "a scalar") or ("a " .. type(new)))
      .. " to " .. what .. " (" .. M.type_of(old).name .. ")")
  end
  if new._n ~= old._n or new._m ~= old._m then
    fail("cannot assign " .. T.an(M.type_of(new).name) .. " value to " .. what .. " (" .. M.type_of(old).name ..
      "): the shapes differ")
  end
  return new._e
end
M.same_shape_elems = same_shape_elems

-- Stores element x into slot k of value v (a local's variable, a field element).
local function store_elem(v, k, x, what)
  local cur = v._e[k]
  local mt = getmetatable(cur)
  if mt == T.Var then
    T.store_var(cur, x, what)
  elseif mt == T.Sym and rawget(cur, "ptr") then
    T.field_write_ptr(cur, x)
  elseif not T.active() then
    if type(x) ~= "number" and type(x) ~= "boolean" then fail("a component must be a number, got a " .. type(x)) end
    v._e[k] = types.convert(x, v._t)
  else
    fail("cannot assign to a component of a temporary " .. M.type_of(v).name .. " value; copy it into a local first "
      .. "(local v = ...)")
  end
end

-- Stores every component of new (same shape) into v's slots (a member of a
-- struct local or of a struct field element).
function M.store_all(v, new, what)
  local e = same_shape_elems(v, new, what)
  for k = 1, #e do store_elem(v, k, e[k], what) end
end

-- `v = new` for a composite local v: element-wise stores.
local function assign(old, new, name)
  local what = "the kernel variable '" .. name .. "'"
  if not old._var then
    fail("cannot assign to '" .. name .. "': kernel arguments and loop indices are read-only; "
      .. "copy it into a local first")
  end
  local e = same_shape_elems(old, new, what)
  for k = 1, #e do T.store_var(old._e[k], e[k], what) end
  return old
end

Mat.declare, Mat.assign, Mat.describe = declare, assign, describe
T.composite_mt[Mat] = true


-- ---- indexing ---------------------------------------------------------------------------

local SWZ = { x = 0, y = 1, z = 2, w = 3, r = 0, g = 1, b = 2, a = 3 }
local methods = {}
M.methods = methods

local function tname(v) return M.type_of(v).name end

local function check_index(v, k, limit)
  if T.is_kv(k) then
    fail("a " .. tname(v) .. " is indexed with a kernel value; components take constant indices "
      .. "(a Lua number, e.g. from lt.static)")
  end
  if math.type(k) ~= "integer" then
    local i = type(k) == "number" and math.tointeger(k)
    if not i then fail("a " .. tname(v) .. " index must be an integer (got " .. tostring(k) .. ")") end
    k = i
  end
  if k < 0 or k >= limit then
    fail("index " .. k .. " is out of range for " .. T.an(tname(v)) .. " (indices 0 to " .. (limit - 1) .. ")")
  end
  return k
end

-- The slots (1-based positions in _e) a swizzle names, or nil.
local function swizzle(v, key)
  if v._m ~= nil or #key > 4 then return nil end
  local set = key:sub(1, 1):match("[xyzw]") and "[xyzw]" or "[rgba]"
  local slots = {}
  for c in key:gmatch(".") do
    if not c:match(set) then return nil end
    local k = SWZ[c]
    if k >= v._n then
      fail("component '" .. c .. "' is out of range for " .. T.an(tname(v)) .. " (" .. v._n .. " components)")
    end
    slots[#slots + 1] = k + 1
  end
  return slots
end

-- A row of a matrix: a vector sharing the matrix's element objects (so
-- m[i][j] = x reaches a local's variable or a field element).
local function row(v, i)
  local e = {}
  for j = 1, v._m do e[j] = v._e[i * v._m + j] end
  local r = make(v._m, nil, v._t, e)
  r._var, r._parent = v._var, v
  return r
end

Mat.__index = function(v, k)
  if type(k) == "string" then
    if k:sub(1, 1) == "_" then return nil end
    local f = methods[k]
    if f then return f end
    local slots = swizzle(v, k)
    if slots then
      if #slots == 1 then
        local x = v._e[slots[1]]
        return getmetatable(x) == T.Var and T.sym(T.lift(x)) or x
      end
      local e, src = {}, vals(v)
      for j, s in ipairs(slots) do e[j] = src[s] end
      return make(#e, nil, v._t, e)
    end
    fail(T.an(tname(v)) .. " has no member '" .. k .. "'")
  end
  if v._m ~= nil then return row(v, check_index(v, k, v._n)) end
  local x = v._e[check_index(v, k, v._n) + 1]
  if getmetatable(x) == T.Var then return T.sym(T.lift(x)) end
  return x
end

Mat.__newindex = function(v, k, x)
  if type(k) == "string" and k:sub(1, 1) == "_" then return rawset(v, k, x) end   -- private slots
  local what = "component " .. tostring(k) .. " of " .. T.an(tname(v))
  if type(k) == "string" then
    local slots = swizzle(v, k)
    if not slots then fail(T.an(tname(v)) .. " has no member '" .. k .. "' to assign") end
    if #slots == 1 then return store_elem(v, slots[1], x, what) end
    local e = same_shape_elems(make(#slots, nil, v._t, {}), x, "the swizzle ." .. k)
    for j, s in ipairs(slots) do store_elem(v, s, e[j], what) end
    return
  end
  if v._m ~= nil then                        -- m[i] = row vector
    local i = check_index(v, k, v._n)
    local e = same_shape_elems(make(v._m, nil, v._t, {}), x, "row " .. i .. " of " .. T.an(tname(v)))
    for j = 1, v._m do store_elem(v, i * v._m + j, e[j], what) end
    return
  end
  store_elem(v, check_index(v, k, v._n) + 1, x, what)
end

Mat.__len = function(v) return v._n end
Mat.__tostring = function(v)
  local parts = {}
  for k, x in ipairs(v._e) do parts[k] = T.is_kv(x) and ("<" .. x.t.name .. ">") or tostring(x) end
  if v._m == nil then return tname(v) .. "(" .. table.concat(parts, ", ") .. ")" end
  local rows = {}
  for i = 0, v._n - 1 do rows[#rows + 1] = "{" .. table.concat(parts, ", ", i * v._m + 1, (i + 1) * v._m) .. "}" end
  return tname(v) .. "(" .. table.concat(rows, ", ") .. ")"
end

-- ---- element-wise arithmetic -----------------------------------------------------------

-- The element type of `a op b` for element types ta, tb.
local function result_type(op, ta, tb)
  return types.by_id[core.result_type(op, ta.id, tb and tb.id)]
end
M.result_type = result_type

-- Converts a constant result to the result type (folded like the kernel would).
local function fold(x, t)
  if type(x) == "number" and t ~= I1 then return types.convert(x, t) end
  return x
end

local OPS = {
  __add = { "add", function(a, b) return a + b end },
  __sub = { "sub", function(a, b) return a - b end },
  __mul = { "mul", function(a, b) return a * b end },
  __div = { "div", function(a, b) return a / b end },
  __mod = { "mod", function(a, b) return a % b end },
  __pow = { "pow", function(a, b) return a ^ b end },
  __idiv = { "floordiv", function(a, b) return a // b end },
  __band = { "bit_and", function(a, b) return a & b end },
  __bor = { "bit_or", function(a, b) return a | b end },
  __bxor = { "bit_xor", function(a, b) return a ~ b end },
  __shl = { "shl", function(a, b) return a << b end },
  __shr = { "shr", function(a, b) return a >> b end },
}

-- Applies f element-wise to a and b (vectors/matrices of one shape, or one of
-- them a scalar, broadcast). op names the IR operation for the result type.
local function zip(op, f, a, b, opname)
  local ma, mb = is_mat(a), is_mat(b)
  local ref = ma and a or b
  if ma and mb and (a._n ~= b._n or a._m ~= b._m) then
    fail("shape mismatch in " .. opname .. ": " .. tname(a) .. " and " .. tname(b))
  end
  for k = 1, 2 do
    local x = b
    if k == 1 then x = a end
    if not is_mat(x) and not elem_type(x) then
      local d = describe(x)
      fail("cannot apply " .. opname .. " to " .. T.an(tname(ref)) .. " value and " .. (d or ("a " .. type(x))))
    end
  end
  local ta = ma and a._t or elem_type(a)
  local tb = mb and b._t or elem_type(b)
  if (ta == I1 or tb == I1) and not op:match("^bit_") and not op:match("^cmp_") then
    fail("booleans (results of comparisons) take no part in arithmetic")
  end
  local t = result_type(op, ta, tb)
  local ea, eb = ma and vals(a) or nil, mb and vals(b) or nil
  local e = {}
  for k = 1, #ref._e do
    e[k] = fold(f(ma and ea[k] or a, mb and eb[k] or b), t)
  end
  return make(ref._n, ref._m, t, e)
end
M.zip = zip

for mm, d in pairs(OPS) do
  local sym = ({ __add = "+", __sub = "-", __mul = "*", __div = "/", __mod = "%", __pow = "^", __idiv = "//",
    __band = "&", __bor = "|", __bxor = "~", __shl = "<<", __shr = ">>" })[mm]
  Mat[mm] = function(a, b) return zip(d[1], d[2], a, b, "`" .. sym .. "`") end
end

-- Applies f to every element; t is the result's element type.
local function map(v, f, t)
  local e = {}
  for k, x in ipairs(vals(v)) do e[k] = fold(f(x), t) end
  return make(v._n, v._m, t, e)
end
M.map = map

Mat.__unm = function(v)
  if v._t == I1 then fail("cannot negate a boolean vector; use lt.select") end
  return map(v, function(x) return -x end, v._t)
end
Mat.__bnot = function(v) return map(v, function(x) return ~x end, v._t) end
Mat.__concat = function() fail("vectors and matrices cannot be concatenated with ..") end
Mat.__call = function(v) fail(T.an(tname(v)) .. " value is not a function") end
Mat.__lt = function(a, b) fail("vectors are compared element-wise only in kernel code (a < b gives a boolean vector)") end
Mat.__le = Mat.__lt

-- Element-wise comparison (hooks route `a < b` here when either is a vector).
function M.compare(name, a, b)
  -- v == nil, v ~= "x": Lua's meaning (a vector is not equal to a non-number)
  if name == "eq" or name == "ne" then
    if (not is_mat(a) and not elem_type(a)) or (not is_mat(b) and not elem_type(b)) then return name == "ne" end
  end
  local lua = ({ lt = function(x, y) return x < y end, le = function(x, y) return x <= y end,
    gt = function(x, y) return x > y end, ge = function(x, y) return x >= y end,
    eq = function(x, y) return x == y end, ne = function(x, y) return x ~= y end })[name]
  local f = function(x, y)
    if T.is_kv(x) or T.is_kv(y) then return T.compare(name, x, y) end
    return lua(x, y)
  end
  return zip("cmp_" .. name, f, a, b, "a comparison")
end
Mat.compare = M.compare

-- ---- the composite protocol (tracer.lua): flattening, atomics, indices -----------------------

function Mat.flat(v)
  local tys = {}
  for k = 1, #v._e do tys[k] = v._t end
  return vals(v), tys
end
function Mat.unflat(proto, leaves) return make(proto._n, proto._m, proto._t, leaves) end
function Mat.same_shape(a, b) return is_mat(b) and a._n == b._n and a._m == b._m end

-- lt.atomic_add(x[i], v) on a vector/matrix field element or local: one
-- atomic per component (v a value of the same shape, or a scalar for every
-- component).
function Mat.atomic(op, target, v)
  local e = target._e
  if not rawget(e[1], "ptr") and getmetatable(e[1]) ~= T.Var then
    fail("lt.atomic_" .. op .. " needs a field element, an ndarray element or a kernel local as its first "
      .. "argument, e.g. lt.atomic_" .. op .. "(x[i], v)")
  end
  local src
  if is_mat(v) then src = same_shape_elems(target, v, "lt.atomic_" .. op)
  else
    src = {}
    for k = 1, #e do src[k] = v end
  end
  local old = {}
  for k = 1, #e do old[k] = T.atomic(op, e[k], src[k]) end
  return make(target._n, target._m, target._t, old)
end

-- The elements of an index vector used as field indices (x[I]).
function Mat.index_list(v)
  if v._m ~= nil then fail("a matrix cannot index a field; use a vector of indices") end
  return vals(v)
end

-- lt.any(v) / lt.all(v): or / and over the components of a boolean vector.
local function reduce_bool(v, what, f)
  if not is_mat(v) or v._t ~= I1 then
    fail(what .. " needs a boolean vector (the result of an element-wise comparison such as a < b)")
  end
  local e = vals(v)
  local r = e[1]
  for k = 2, #e do r = f(r, e[k]) end
  return r
end
function M.any(v) return reduce_bool(v, "lt.any", function(a, b) return T.or_(a, function() return b end) end) end
function M.all(v) return reduce_bool(v, "lt.all", function(a, b) return T.and_(a, function() return b end) end) end

return M
