-- tracer.lua -- symbolic values and the IR they emit while a kernel is traced.
--
-- A kernel value is one of:
--   Sym  {s = statement, t = type}         an SSA value (read-only)
--   Var  {v = alloca, t = type}            a kernel local; reading it loads it
-- Arithmetic on them runs through metamethods; comparisons, and/or/not and
-- control flow come through the rewriter's hooks (hooks.lua). Plain Lua
-- values stay Lua values (compile-time constants) until mixed with kernel
-- values: a Lua integer becomes a default_ip constant, a float a default_fp one.
local core = require "lattice.core"
local types = require "lattice.types"
local fieldm = require "lattice.field"

local T = {}
local S = nil            -- the trace in progress (see T.begin)
local Sym, Var, KAcc, Pending = {}, {}, {}, {}
T.Sym, T.Var, T.Pending = Sym, Var, Pending
-- Metatables of composite values (vectors, matrices, structs: matrix.lua,
-- struct.lua). Each provides declare(v) (a local holding a copy),
-- assign(old, new, name) and describe(v) ("a vec2 value").
local COMPOSITE = {}
T.composite_mt = COMPOSITE
local function composite(x)
  local m = getmetatable(x)
  return COMPOSITE[m] and m or nil
end
T.composite = composite
-- Composite fields (cfield.lua): read(f, idx), write(f, idx, v), ready(f), is(f).
T.cfield = nil

local I1, I32, I64 = types.by_name.i1, types.by_name.i32, types.by_name.i64

-- s = {b = builder, debug, ip, fp (type objects), loops = {}, name, file}
function T.begin(s)
  S = s
  S.top = s.b:block()
end
-- Whether the builder appends to the kernel's top level (where the offload
-- pass makes a range_for a parallel task).
function T.at_top() return S.b:block() == S.top end
function T.finish() S = nil end
function T.active() return S ~= nil end
function T.current() return S end

-- The innermost frame of user code (not a lattice/ module, not C): the line
-- to blame for an error and to record on emitted statements. Called for every
-- statement traced, so the stack is walked in C (core.user_loc), which starts
-- at this function's caller's caller, as debug.getinfo(3) would here.
local function user_loc()
  local file, line = core.user_loc(S and S.file)   -- not a tail call: this frame is level 1 there
  return file, line
end
T.user_loc = user_loc

local function fail(msg)
  local f, l = user_loc()
  error(f .. ":" .. l .. ": " .. msg, 0)
end
T.fail = fail

function T.unsupported(what) fail(what .. " is not supported") end

-- The builder, with the location of the user's current statement set.
local function B()
  if not S then error("a kernel value was used outside the kernel that made it", 3) end
  local f, l = user_loc()
  S.b:set_loc(f, l)
  return S.b
end
T.B = B

local function sym(s, t) return setmetatable({ s = s, t = t }, Sym) end
T.sym = sym
local function sym_of(s) return sym(s, types.by_id[S.b:type(s)]) end

local function is_kv(x)
  local m = getmetatable(x)
  return m == Sym or m == Var
end
T.is_kv = is_kv

local function an(name) return (name:match("^[ifoa]") and "an " or "a ") .. name end
T.an = an

local function field_name(f) return fieldm.guess_name(f) end

local function wrong_count(f, got)
  fail("field '" .. field_name(f) .. "' has " .. tostring(f._nidx) .. " indices, got " .. got)
end

-- The type of a Lua number as a kernel constant.
local function const_type(x)
  if math.type(x) == "integer" then
    local t = S.ip
    if x < t.min or (t.max >= 0 and x > t.max) then t = I64 end
    return t
  end
  return S.fp
end

-- Any value usable in an expression -> statement, type.
local function lift(x)
  local m = getmetatable(x)
  if m == Sym then
    if not S then error("a kernel value was used outside the kernel that made it", 0) end
    return x.s, x.t
  elseif m == Var then
    return B():load(x.v), x.t
  elseif m == KAcc then
    wrong_count(x.f, #x.idx)
  elseif m == Pending then
    fail("`c and x` on a kernel condition needs an `or`: write `c and x or y` (it becomes a select)")
  elseif COMPOSITE[m] then
    fail(m.describe(x) .. " is used where a scalar is needed")
  end
  local tx = type(x)
  if tx == "number" then
    local t = const_type(x)
    if t.is_int then return B():const_int(t.id, x), t end
    return B():const_float(t.id, x), t
  elseif tx == "boolean" then
    return B():const_int(I1.id, x and 1 or 0), I1
  elseif x == nil then
    fail("a nil value is used in a kernel expression; is a name misspelt or not defined yet?")
  elseif fieldm.is_field(x) then
    fail("field '" .. field_name(x) .. "' is used as a value; index it (x[i]) or use x.value for a 0-D field")
  end
  fail("a Lua " .. tx .. " cannot be used as a kernel value (only numbers, booleans and kernel values can)")
end
T.lift = lift

-- Two operands of one operation. A Lua float next to a float kernel value
-- takes that value's type (docs/arithmetic.md, "Constants"): `x * 0.1` with x
-- an f64 multiplies by the double nearest 0.1, not by 0.1 rounded to f32
-- first; next to an f32 it is rounded to f32. Other Lua numbers are lifted
-- as alone (default_ip / default_fp).
local function lift_pair(a, b)
  local sa, ta, sb, tb
  if type(a) == "number" and math.type(a) == "float" and is_kv(b) and b.t.is_float then
    sb, tb = lift(b)
    return B():const_float(tb.id, a), tb, sb, tb
  end
  sa, ta = lift(a)
  if type(b) == "number" and math.type(b) == "float" and ta.is_float then
    return sa, ta, B():const_float(ta.id, b), ta
  end
  sb, tb = lift(b)
  return sa, ta, sb, tb
end
T.lift_pair = lift_pair

-- A Lua number converted to type t inside a kernel: a constant of that type
-- (lt.f64(0) declares an f64 local; lt.i64(1) << 40 is 2^40).
function T.typed_const(x, t)
  local v = types.convert(x, t)
  if t.is_float and math.type(x) == "float" and x == 0 then v = x end     -- keeps the sign of -0.0
  if t.is_float then return sym(B():const_float(t.id, v), t) end
  return sym(B():const_int(t.id, v), t)
end

-- The value v as a statement of type t, by the implicit conversion rules
-- (assignment to a local, a field, an atomic): integer <-> integer wraps,
-- integer -> float and float -> float convert; float -> integer and anything
-- between booleans and numbers is an error naming `what`.
local function implicit(v, t, what)
  if type(v) == "number" then
    if t == I1 then fail("cannot assign the number " .. tostring(v) .. " to " .. what .. " (a boolean)") end
    if t.is_int then
      if math.type(v) == "float" then
        fail("cannot assign the float " .. tostring(v) .. " to " .. what .. " (" .. t.name ..
          "); convert it explicitly, e.g. lt." .. t.name .. "(x)")
      end
      return B():const_int(t.id, types.convert(v, t))
    end
    return B():const_float(t.id, v)
  end
  local cm = composite(v)
  if cm then fail("cannot assign " .. cm.describe(v) .. " to " .. what .. " (" .. t.name .. ", a scalar)") end
  local s, vt = lift(v)
  if vt == t then return s end
  if vt == I1 or t == I1 then
    fail("cannot assign " .. (vt == I1 and "a boolean" or an(vt.name)) .. " value to " .. what .. " (" ..
      (t == I1 and "a boolean" or t.name) .. "); booleans and numbers do not convert implicitly")
  end
  if vt.is_float and t.is_int then
    fail("cannot assign " .. an(vt.name) .. " value to " .. what .. " (" .. t.name ..
      "); convert it explicitly with lt." .. t.name .. "(...)")
  end
  return B():cast(t.id, s)
end
T.implicit = implicit

-- ---- operators ------------------------------------------------------------------

local function binop(op, kind, mm)
  return function(a, b)
    local cm = composite(b) or composite(a)
    if cm then return cm[mm](a, b) end             -- scalar op vector: broadcast
    local sa, ta, sb, tb = lift_pair(a, b)
    if ta == I1 or tb == I1 then
      if kind ~= "bit" or ta ~= tb then
        fail("booleans (results of comparisons) take no part in arithmetic; convert with lt.select(c, 1, 0)")
      end
    end
    if kind ~= "arith" and (ta.is_float or tb.is_float) then
      fail("bitwise operators and shifts need integer operands (got " .. ta.name .. " and " .. tb.name ..
        "); convert with lt.i32(...)")
    end
    return sym_of(B():binary(op, sa, sb))
  end
end

local function not_string()
  fail("kernel values cannot be turned into strings at trace time (they have no value until the kernel runs)")
end

local function install_ops(mt)
  mt.__add = binop("add", "arith", "__add")
  mt.__sub = binop("sub", "arith", "__sub")
  mt.__mul = binop("mul", "arith", "__mul")
  mt.__div = binop("div", "arith", "__div")
  mt.__mod = binop("mod", "arith", "__mod")
  mt.__pow = binop("pow", "arith", "__pow")
  mt.__idiv = binop("floordiv", "arith", "__idiv")
  mt.__band = binop("bit_and", "bit", "__band")
  mt.__bor = binop("bit_or", "bit", "__bor")
  mt.__bxor = binop("bit_xor", "bit", "__bxor")
  mt.__shl = binop("shl", "shift", "__shl")
  mt.__shr = binop("shr", "shift", "__shr")
  mt.__unm = function(a)
    local s, t = lift(a)
    if t == I1 then fail("cannot negate a boolean; use `not`") end
    return sym_of(B():unary("neg", s))
  end
  mt.__bnot = function(a)
    local s, t = lift(a)
    if t.is_float or t == I1 then fail("~x needs an integer (got " .. t.name .. ")") end
    return sym_of(B():unary("bit_not", s))
  end
  local function cmp_outside()
    fail("kernel values compared outside kernel code: comparisons must be written in the kernel "
      .. "function or in functions defined inside it")
  end
  mt.__eq, mt.__lt, mt.__le = cmp_outside, cmp_outside, cmp_outside
  mt.__tostring, mt.__concat = not_string, not_string
  mt.__len = function() fail("the length operator # cannot be applied to a kernel value") end
  mt.__call = function() fail("a kernel value is not a function") end
end
install_ops(Sym)
install_ops(Var)

Sym.__index = function(x, k)
  if rawget(x, "field") then wrong_count(x.field, x.nidx + 1) end
  if rawget(x, "index_error") then fail(x.index_error) end      -- an ndarray element (ndarray.lua)
  fail("a kernel value (" .. x.t.name .. ") cannot be indexed")
end
Sym.__newindex = function(x, k)
  if rawget(x, "field") then wrong_count(x.field, x.nidx + 1) end
  if rawget(x, "index_error") then fail(x.index_error) end
  fail("a kernel value (" .. x.t.name .. ") cannot be indexed")
end
Var.__index = function(x, k) fail("a kernel variable (" .. x.t.name .. ") cannot be indexed") end
Var.__newindex = Var.__index

for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__band",
  "__bor", "__bxor", "__shl", "__shr", "__bnot", "__lt", "__le", "__concat", "__call", "__len" } do
  KAcc[mm] = function(a, b)
    if getmetatable(a) == KAcc then wrong_count(a.f, #a.idx) else wrong_count(b.f, #b.idx) end
  end
  Pending[mm] = function() lift(setmetatable({}, Pending)) end
end
KAcc.__tostring = not_string

-- A new kernel local holding v (decl).
function T.new_var(v)
  local s, t = lift(v)
  local b = B()
  local var = b:alloca(t.id)
  b:store(var, s)
  return setmetatable({ v = var, t = t }, Var)
end

-- A new kernel local of type t holding v (converted implicitly): a component
-- of a composite local.
function T.new_var_of(v, t)
  local s = implicit(v, t, "a " .. t.name .. " component")
  local b = B()
  local var = b:alloca(t.id)
  b:store(var, s)
  return setmetatable({ v = var, t = t }, Var)
end

function T.store_var(var, v, name)
  local s = implicit(v, var.t, "the kernel variable '" .. name .. "'")
  local b = B()
  if not rawget(var, "named") then       -- for messages about the local (the reduce pass)
    -- name: the local's, or a description quoting it ("the kernel variable 'v'": a component)
    local lname = name:match("^[%a_][%w_]*$") and name or name:match("'([%a_][%w_]*)'")
    if lname then b:name_local(var.v, lname) end
    rawset(var, "named", true)
  end
  b:store(var.v, s)
end

-- ---- comparisons and logic ----------------------------------------------------------

local cmp_op = { lt = "cmp_lt", le = "cmp_le", gt = "cmp_gt", ge = "cmp_ge", eq = "cmp_eq", ne = "cmp_ne" }

local function numeric(x) return is_kv(x) or type(x) == "number" or type(x) == "boolean" end

function T.compare(name, a, b)
  local cm = composite(a) or composite(b)
  if cm then return cm.compare(name, a, b) end
  if not numeric(a) or not numeric(b) then
    if name == "eq" then return false elseif name == "ne" then return true end
    fail("cannot order a kernel value and a " .. (numeric(a) and type(b) or type(a)))
  end
  local sa, ta, sb, tb = lift_pair(a, b)
  if (ta == I1) ~= (tb == I1) then fail("cannot compare a boolean with a number") end
  if ta == I1 and name ~= "eq" and name ~= "ne" then fail("booleans can only be compared with == and ~=") end
  return sym(B():binary(cmp_op[name], sa, sb), I1)
end

-- The statement of a kernel condition, or nil for a Lua value (a static
-- condition). Numbers are never conditions: in Lua 0 is true.
function T.cond(c)
  local m = getmetatable(c)
  if COMPOSITE[m] then
    fail(m.describe(c) .. " is used as a condition; conditions are scalar comparisons (for vectors use "
      .. "lt.all(a == b) or lt.any(a < b))")
  end
  if m == Sym or m == Var then
    if c.t ~= I1 then
      fail("condition must be a comparison (got a value of type " .. c.t.name .. "); write x ~= 0")
    end
    return (lift(c))
  end
  if type(c) == "number" then
    fail("condition must be a comparison (got the number " .. tostring(c) .. "); write x ~= 0")
  end
  if m == Pending then lift(c) end
  return nil
end

local function as_bool(x, what)
  if type(x) == "boolean" then return B():const_int(I1.id, x and 1 or 0) end
  if is_kv(x) and x.t == I1 then return (lift(x)) end
  fail("`" .. what .. "` needs booleans (comparisons) on both sides when one is a kernel value")
end

-- and/or/not on Lua values keep Lua's semantics (`opts.n or 10` works);
-- only kernel values must be booleans.
function T.and_(a, bf)
  if composite(a) then T.cond(a) end
  if not is_kv(a) and getmetatable(a) ~= Pending then
    if a then return bf() end
    return a
  end
  local ca = T.cond(a)
  local b = bf()
  if (type(b) == "number") or (is_kv(b) and b.t ~= I1) then
    return setmetatable({ c = ca, v = b }, Pending)    -- `c and x or y`
  end
  return sym(B():binary("bit_and", ca, as_bool(b, "and")), I1)
end

function T.or_(a, bf)
  if composite(a) then T.cond(a) end
  if getmetatable(a) == Pending then
    local sx, tx, sy, ty = lift_pair(a.v, bf())
    if (tx == I1) ~= (ty == I1) then fail("`c and x or y`: x and y must both be numbers or both booleans") end
    local t = types.by_id[core.result_type("max", tx.id, ty.id)]
    local b = B()
    if tx ~= t then sx = b:cast(t.id, sx) end
    if ty ~= t then sy = b:cast(t.id, sy) end
    return sym(b:select(a.c, sx, sy), t)
  end
  if not is_kv(a) then
    if a then return a end
    return bf()
  end
  local ca = T.cond(a)
  return sym(B():binary("bit_or", ca, as_bool(bf(), "or")), I1)
end

function T.not_(a)
  if composite(a) then T.cond(a) end
  if not is_kv(a) and getmetatable(a) ~= Pending then return not a end
  local ca = T.cond(a)
  return sym(B():unary("logic_not", ca), I1)
end

-- ---- fields in kernels --------------------------------------------------------------

local function prepare(f)
  if rawget(f, "_type") and not rawget(f, "_inst") then
    fail("field '" .. field_name(f) .. "' belongs to a tree type, not to an instance; use it through an "
      .. "instance (g." .. field_name(f) .. ")")
  end
  local ok, err = pcall(fieldm.ready, f)
  if not ok then fail((tostring(err):gsub("^[^:\n]*:%d+: ", ""))) end
  return f
end

local function field_ptr(f, idx)
  prepare(f)
  local inst = rawget(f, "_inst")
  if inst and not inst._proxy then
    fail("field '" .. field_name(f) .. "' of a tree instance is used in a kernel without being passed to it; "
      .. "pass the instance as an argument annotated with its tree type, e.g. lt.kernel(function(g) ... end, {g = Grid})")
  end
  local n = f._nidx
  if #idx ~= n then wrong_count(f, #idx) end
  local ss = {}
  local off = rawget(f, "_offset")          -- indices over [offset, offset + shape): the IR's count from 0
  for k = 1, n do
    local o = off and off[k] or 0
    local v = idx[k]
    if o ~= 0 and math.type(v) == "integer" then v = v - o end
    local s, t = lift(v)
    if not t.is_int or t == I1 then
      fail("index " .. (k - 1) .. " of field '" .. field_name(f) .. "' must be an integer (got " .. t.name .. ")")
    end
    if t ~= I32 then s = B():cast(I32.id, s) end
    if o ~= 0 and math.type(v) ~= "integer" then s = B():binary("sub", s, B():const_int(I32.id, o)) end
    if S.debug then B():check_index(f._snode, k - 1, s) end
    ss[k] = s
  end
  return B():global_ptr(f._snode, table.unpack(ss, 1, n))
end
T.prepare_field, T.field_ptr = prepare, field_ptr

function T.field_read(f, idx)
  if T.cfield and T.cfield.is(f) then return T.cfield.read(f, idx) end
  local p = field_ptr(f, idx)
  return setmetatable({ s = B():global_load(p), t = f.dtype, ptr = p, field = f, nidx = #idx, idx = idx }, Sym)
end

-- lt.no_activate: the declaration and the guarded writes (noactivate.lua)
local noact = require "lattice.noactivate"
T.no_activate = noact.declare

function T.field_write(f, idx, v)
  if T.cfield and T.cfield.is(f) then return T.cfield.write(f, idx, v) end
  local val = implicit(v, f.dtype, "field '" .. field_name(f) .. "'")
  noact.note_write(f)
  if noact.applies(prepare(f)) then return noact.store(f, idx, val) end
  local p = field_ptr(f, idx)
  B():global_store(p, val)
end

-- Stores v through a field element read earlier (x[i].x = v on a vector field).
function T.field_write_ptr(elem, v)
  local val = implicit(v, elem.t, "field '" .. field_name(elem.field) .. "'")
  local f, idx = elem.field, rawget(elem, "idx")
  if f then noact.note_write(f) end
  if f and idx and noact.applies(f) then return noact.store(f, idx, val) end
  B():global_store(elem.ptr, val)
end

-- x[I] with I an index vector (lt.grouped) or a table of indices.
local function index_list(k)
  if type(k) ~= "table" or is_kv(k) then return nil end
  local m = getmetatable(k)
  if m == nil then return k end
  if COMPOSITE[m] and m.index_list then return m.index_list(k) end
  return nil
end
T.index_list = index_list

function T.field_index(f, k)
  if T.cfield and T.cfield.is(f) then T.cfield.ready(f) else prepare(f) end
  local list = index_list(k)
  if list then return T.field_read(f, list) end  -- x[I]
  if f._nidx == 0 then fail("field '" .. field_name(f) .. "' has no indices (0-D): use x.value") end
  if f._nidx == 1 then return T.field_read(f, { k }) end
  return setmetatable({ f = f, idx = { k } }, KAcc)
end

KAcc.__index = function(a, k)
  local idx = { table.unpack(a.idx) }
  idx[#idx + 1] = k
  if #idx < a.f._nidx then return setmetatable({ f = a.f, idx = idx }, KAcc) end
  return T.field_read(a.f, idx)
end
KAcc.__newindex = function(a, k, v)
  local idx = { table.unpack(a.idx) }
  idx[#idx + 1] = k
  if #idx ~= a.f._nidx then wrong_count(a.f, #idx) end
  T.field_write(a.f, idx, v)
end

-- The name of the Lua local (or upvalue) that holds the kernel local var in
-- the function at stack level `level`, or nil.
local function local_name_of(var, level)
  for i = 1, 255 do
    local n, x = debug.getlocal(level + 1, i)
    if not n then break end
    if rawequal(x, var) then return n end
  end
  local info = debug.getinfo(level + 1, "f")
  for i = 1, 255 do
    local n, x = debug.getupvalue(info.func, i)
    if not n then break end
    if rawequal(x, var) then return n end
  end
end

local BITWISE = { ["and"] = true, ["or"] = true, xor = true }

-- lt.atomic_<op>(target, v): target is a field or ndarray element (a Sym
-- with a pointer) or a kernel local (a Var); returns the old value. Called
-- from lt.atomic_<op> (init.lua), so the user's code is at stack level 3.
function T.atomic(op, target, v)
  local name = "lt.atomic_" .. op
  if not S then
    if type(target) == "number" then
      error(name .. "(s, v) outside a kernel: s is a Lua number, and a function cannot change its caller's "
        .. "variable; write s = s + v (or the operation you need) in Lua, or call " .. name .. " inside a kernel",
        3)
    end
    error(name .. " can only be used inside a kernel", 3)
  end
  local cm = composite(target)
  if cm and cm.atomic then return cm.atomic(op, target, v) end
  local m = getmetatable(target)
  local what
  if m == Var then
    local lname = rawget(target, "lname") or local_name_of(target, 3)
    if lname and not rawget(target, "named") then  -- for the reduce pass's messages
      B():name_local(target.v, lname)
      rawset(target, "named", true)
    end
    rawset(target, "lname", lname)
    what = lname and ("the kernel variable '" .. lname .. "'") or "a kernel variable"
    if target.t == I1 then fail(name .. " on " .. what .. ", a boolean: atomics need a number") end
  elseif m ~= Sym or not rawget(target, "ptr") then
    fail(name .. " needs a field element, an ndarray element or a kernel local as its first argument, e.g. "
      .. name .. "(x[i], v) or " .. name .. "(s, v) after local s = 0")
  else
    what = rawget(target, "what") or ("field '" .. field_name(target.field) .. "'")
  end
  if BITWISE[op] and target.t.is_float then
    fail(name .. " needs integers, but " .. what .. " is " .. an(target.t.name) .. " (bitwise atomics work on "
      .. "integer fields, ndarrays and locals)")
  end
  local s = implicit(v, target.t, what)
  local f, idx = rawget(target, "field"), rawget(target, "idx")
  if m ~= Var and f then noact.note_write(f) end
  if m ~= Var and f and idx and noact.applies(f) then return sym(noact.atomic(op, f, idx, s, target.t), target.t) end
  return sym(B():atomic("atomic_" .. op, m == Var and target.v or target.ptr, s), target.t)
end

-- ---- builtins on kernel values -----------------------------------------------------------

function T.unary_builtin(op, x)
  local s, t = lift(x)
  if t == I1 then fail("lt." .. op .. " needs a number, got a boolean") end
  if op ~= "abs" and t.is_int then
    local ft = types.float_for(t)
    s, t = B():cast(ft.id, s), ft
  end
  return sym_of(B():unary(op, s))
end

function T.binary_builtin(op, a, b)
  local sa, ta, sb, tb = lift_pair(a, b)
  if ta == I1 or tb == I1 then fail("lt." .. op .. " needs numbers, got a boolean") end
  local t = types.by_id[core.result_type("max", ta.id, tb.id)]
  if op == "pow" or op == "atan2" then t = types.float_for(t) end
  local bld = B()
  if ta ~= t then sa = bld:cast(t.id, sa) end
  if tb ~= t then sb = bld:cast(t.id, sb) end
  return sym_of(bld:binary(op, sa, sb))
end

function T.cast(x, t)
  local s, xt = lift(x)
  if xt == t then return sym(s, t) end
  return sym(B():cast(t.id, s), t)
end

function T.select(c, a, b)
  local cs = T.cond(c)
  if not cs then fail("lt.select needs a kernel condition; with a Lua value write `c and a or b`") end
  return T.or_(setmetatable({ c = cs, v = a }, Pending), function() return b end)
end

-- ---- early returns --------------------------------------------------------------------
-- A function (the kernel, or an lt.func helper) with a `return` under a kernel
-- condition or inside an IR loop stores its result in a variable and sets a
-- flag; the rest of the function then runs under `if not flag` guards, and
-- enclosing IR loops of the function are left with break.

function T.push_function()
  S.rets = S.rets or {}
  local ctx = { base = S.b:block(), mark = S.b:last(), depth = #S.loops, nret = 0 }
  S.rets[#S.rets + 1] = ctx
  S.kernel_ctx = S.kernel_ctx or ctx            -- the first one pushed: the kernel's
  return ctx
end

-- A zero-initialised variable of type t at the start of the function.
local function declare_front(ctx, t)
  local b = B()
  local a = b:alloca(t.id)
  local z = t.is_float and b:const_float(t.id, 0) or b:const_int(t.id, 0)
  local st = b:store(a, z)
  for _, s in ipairs { a, z, st } do
    b:move_after(s, ctx.mark, ctx.base)
    ctx.mark = s
  end
  return a
end

local function value_type(v)
  if type(v) == "number" then return const_type(v) end
  if type(v) == "boolean" then return I1 end
  if is_kv(v) then return v.t end
  lift(v)                                    -- raises the right error
end

-- The slot (front variables) for return value number i, made from value v:
-- a scalar variable, or one variable per scalar of a composite (cm.flat/unflat).
local function return_slot(ctx, i, v)
  ctx.slots = ctx.slots or {}
  local slot = ctx.slots[i]
  local cm = composite(v)
  if not slot then
    if cm then
      local _, tys = cm.flat(v)
      slot = { cm = cm, proto = v, vars = {}, tys = tys, what = cm.describe(v) }
      for k, t in ipairs(tys) do slot.vars[k] = declare_front(ctx, t) end
    else
      slot = { t = value_type(v) }
      slot.var = declare_front(ctx, slot.t)
    end
    ctx.slots[i] = slot
  end
  return slot
end

-- Stores the values of one `return` into the slots.
local function store_returns(ctx, vals)
  for i = 1, vals.n do
    local v = vals[i]
    if v ~= nil then
      local slot = return_slot(ctx, i, v)
      local cm = composite(v)
      local what = "return value " .. i
      if slot.cm then
        if not cm then fail(what .. " is " .. slot.what .. " at one return and a scalar at another") end
        local leaves = cm.flat(v)
        if cm ~= slot.cm or #leaves ~= #slot.vars or not cm.same_shape(slot.proto, v) then
          fail(what .. " is " .. slot.what .. " at one return and " .. cm.describe(v) .. " at another")
        end
        for k, x in ipairs(leaves) do B():store(slot.vars[k], implicit(x, slot.tys[k], "the " .. what)) end
      else
        if cm then fail(what .. " is a scalar at one return and " .. cm.describe(v) .. " at another") end
        B():store(slot.var, implicit(v, slot.t, "the " .. what))
      end
    end
  end
end

-- A zero of type t at the front of the kernel (visible to every return).
local function front_zero(t)
  local ctx = S.kernel_ctx
  local b = B()
  local z = t.is_float and b:const_float(t.id, 0) or b:const_int(t.id, 0)
  b:move_after(z, ctx.mark, ctx.base)
  ctx.mark = z
  return z
end

-- The kernel's result type is that of its first `return v`; every return
-- converts to it (S.ret_t), and a bare `return` then returns zero.
local function set_result_type(t)
  S.ret_t = t
  S.b:set_ret(t.id)
  if S.bare_rets then                        -- earlier bare returns get the zero now
    local z = front_zero(t)
    for _, j in ipairs(S.bare_rets) do S.b:set_return_value(j, z) end
    S.bare_rets = nil
  end
end

-- The kernel's own `return` at its top level, outside any loop (maybe under
-- conditions on kernel values): an IR return. The offload pass makes the
-- tasks after it skip once it is taken (a range task gets an empty range), so
-- a guard clause `if n > cap then return end` leaves the loops after it
-- parallel; the rest of the kernel is not nested under a flag.
local function direct_return(vals)
  local v = vals[1]
  local b = B()
  if v == nil then
    if S.ret_t then b:jump("return", front_zero(S.ret_t)); return end
    S.bare_rets = S.bare_rets or {}
    S.bare_rets[#S.bare_rets + 1] = b:jump("return")
    return
  end
  local cm = composite(v)
  if cm then fail("a kernel returns one scalar, not " .. cm.describe(v) .. "; write composite results to a field") end
  if not S.ret_t then set_result_type(value_type(v)) end
  B():jump("return", implicit(v, S.ret_t, "the kernel's result, whose type its first return set"))
end

-- Emits a `return ...` found in an IR block; false when the innermost function
-- cannot take one (a function defined inside a kernel: its end is not seen).
function T.early_return(...)
  local ctx = S.rets and S.rets[#S.rets]
  if not ctx then return false end
  for i = ctx.depth + 1, #S.loops do
    if S.loops[i] == "parallel" then
      fail("return cannot leave the outermost for loop of a kernel: its iterations run in parallel")
    end
  end
  if #S.rets == 1 and #S.loops == 0 and ctx.nret == 0 then
    direct_return(table.pack(...))
    return true
  end
  if not ctx.flag then ctx.flag = declare_front(ctx, I1) end
  store_returns(ctx, table.pack(...))
  local b = B()
  b:store(ctx.flag, b:const_int(I1.id, 1))
  ctx.nret = ctx.nret + 1
  if #S.loops > ctx.depth and S.loops[#S.loops] == "ir" then b:jump("break") end
  return true
end

function T.nret()
  local ctx = S.rets and S.rets[#S.rets]
  return ctx and ctx.nret or 0
end

-- After an IR construct that emitted a return (nret grew): leave the
-- enclosing IR loop when the flag is set, and guard what follows.
function T.after_construct(nret_before)
  local ctx = S.rets and S.rets[#S.rets]
  if not ctx or ctx.nret == nret_before then return end
  local b = B()
  if #S.loops > ctx.depth and S.loops[#S.loops] == "ir" then
    local st = b:if_(b:load(ctx.flag), false)
    local saved = b:block()
    b:set_block(b:child(st, 0))
    B():jump("break")
    b:set_block(saved)
  end
  local g = B():if_(b:unary("logic_not", b:load(ctx.flag)), false)
  b:set_block(b:child(g, 0))
end

-- The end of a function pushed by push_function, which returned ... normally.
function T.pop_function(ctx, ...)
  S.rets[#S.rets] = nil
  if ctx.nret == 0 then return ... end
  store_returns(ctx, table.pack(...))
  S.b:set_block(ctx.base)
  local out, n = {}, 0
  for i, slot in pairs(ctx.slots or {}) do
    n = math.max(n, i)
    if slot.cm then
      local leaves = {}
      for k, var in ipairs(slot.vars) do leaves[k] = sym(B():load(var), slot.tys[k]) end
      out[i] = slot.cm.unflat(slot.proto, leaves)
    else
      out[i] = sym(B():load(slot.var), slot.t)
    end
  end
  return table.unpack(out, 1, n)
end

-- The kernel's `return v` at the end of the function (v nil: it ends without
-- one; after an earlier `return v`, that is a return of zero).
function T.emit_return(v)
  if v == nil then
    if S.ret_t then B():jump("return", front_zero(S.ret_t)) end
    return
  end
  direct_return({ v, n = 1 })
end

return T
