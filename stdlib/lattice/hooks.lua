-- hooks.lua -- the __lt table that rewritten kernels call (docs/internals.md,
-- "The rewriter contract"). Each hook decides at trace time: a Lua value
-- runs the construct in Lua (static if, unrolled loop); a kernel value emits
-- the IR construct and runs each closure once inside the right IR block.
local types = require "lattice.types"
local core = require "lattice.core"
local fieldm = require "lattice.field"
local T = require "lattice.tracer"
local builtins = require "lattice.builtins"
local state = require "lattice.state"

local H = {}
local BREAK, RETURN, UNTIL = "break", "return", "until"
H.BREAK, H.RETURN, H.UNTIL = BREAK, RETURN, UNTIL

local I32 = types.by_name.i32
local fail, lift, is_kv = T.fail, T.lift, T.is_kv

-- ---- locals -----------------------------------------------------------------------

local function declare(v)
  local cm = T.composite(v)
  if cm then return cm.declare(v) end            -- a composite local: one variable per scalar
  local tv = type(v)
  if tv == "number" or tv == "boolean" or is_kv(v) then return T.new_var(v) end
  return v
end

local names_cache = {}
local function split_names(s)
  local t = names_cache[s]
  if not t then
    t = {}
    for n in s:gmatch("[^,%s]+") do t[#t + 1] = n end
    names_cache[s] = t
  end
  return t
end

-- ---- Lua state under conditions on kernel values ----------------------------------
-- The kernel's Lua code runs once, when it is traced, and both branches of a
-- condition on kernel values are traced, as is the body of a kernel loop
-- once. So a Lua value (a variable holding nil, a table, a captured number;
-- a Lua table's entries) changed inside such a construct keeps whatever the
-- last traced branch left, whatever the condition: a silently wrong result.
-- S.ir_depth counts the IR constructs the trace is inside; a Lua variable or
-- table may be changed only at the depth where it was declared or made.
-- S.decls[name]: stack of the depths of the name's declarations in scope;
-- S.decl_log[d]: the names declared at depth d (dropped when d closes);
-- S.tables[t]: the depth a table constructor in kernel code made t at.

local function declared_at(S, name)
  local st = S.decls and S.decls[name]
  return st and st[#st] or 0
end

local function note_decl(S, list)
  local d = S.ir_depth or 0
  S.decls = S.decls or {}
  S.decl_log = S.decl_log or {}
  local log = S.decl_log[d] or {}
  S.decl_log[d] = log
  for _, name in ipairs(list) do
    local st = S.decls[name] or {}
    S.decls[name] = st
    st[#st + 1] = d
    log[#log + 1] = name
  end
end

-- Closes depth d: its declarations go out of scope.
local function close_depth(S, d)
  local log = S.decl_log and S.decl_log[d]
  if not log then return end
  for i = #log, 1, -1 do
    local st = S.decls[log[i]]
    st[#st] = nil
  end
  S.decl_log[d] = nil
end

local UNDER = "under a condition on kernel values or in a loop on kernel values (an IR `if`, `while` or `for`)"

local function describe_lua(v)
  if v == nil then return "nil" end
  if type(v) == "number" then return "the Lua number " .. tostring(v) end
  return "a Lua " .. type(v)
end

function H.decl(names, ...)
  local list = split_names(names)
  local S = T.current()
  if S then note_decl(S, list) end
  local n = #list
  if n == 1 then return declare((...)) end
  local out = {}
  for i = 1, n do out[i] = declare((select(i, ...))) end
  return table.unpack(out, 1, n)
end

-- t = {...} in kernel code
function H.newtable(t)
  local S = T.current()
  if S then
    S.tables = S.tables or setmetatable({}, { __mode = "k" })
    S.tables[t] = S.ir_depth or 0
  end
  return t
end

-- t[k] = v in kernel code. A table without __newindex (a plain Lua table,
-- or an object that stores into itself) is Lua state.
function H.setindex(t, k, v)
  local S = T.current()
  if S and type(t) == "table" and (S.ir_depth or 0) > 0 then
    local mt = getmetatable(t)
    if (mt == nil or mt.__newindex == nil) and (S.ir_depth > ((S.tables and S.tables[t]) or 0)) then
      fail("this writes a Lua table made outside the code it is in, which runs " .. UNDER .. ": the kernel's "
        .. "Lua code runs once when it is traced, with both branches of such a condition and one pass of such "
        .. "a loop, so the table would not depend on the condition or the iteration; keep the value in a "
        .. "kernel variable or a field, or make the table inside that code")
    end
  end
  t[k] = v
end
local function assign_one(name, old, new)
  local m = getmetatable(old)
  if T.composite_mt[m] then return m.assign(old, new, name) end
  if m == T.Var then
    local tn = type(new)
    local cm = T.composite(new)
    if cm then
      fail("cannot assign " .. cm.describe(new) .. " to the scalar kernel variable '" .. name .. "' (" ..
        old.t.name .. ")")
    end
    if tn ~= "number" and tn ~= "boolean" and not is_kv(new) then
      fail("cannot assign a " .. (new == nil and "nil" or tn) .. " value to the kernel variable '" .. name ..
        "' (" .. old.t.name .. ")")
    end
    T.store_var(old, new, name)
    return old
  elseif m == T.Sym then
    fail("cannot assign to '" .. name .. "': kernel arguments and loop indices are read-only; "
      .. "copy it into a local first (local " .. name .. "2 = " .. name .. ")")
  end
  local S = T.current()
  if S and (S.ir_depth or 0) > declared_at(S, name) and not rawequal(old, new) then
    fail("'" .. name .. "' holds " .. describe_lua(old) .. ", not a kernel variable, and is assigned " .. UNDER
      .. ": the kernel's Lua code runs once when it is traced, with both branches of such a condition, so "
      .. "'" .. name .. "' would keep what the last traced branch gave, whatever the condition; declare it "
      .. "with a number (local " .. name .. " = 0) to make it a kernel variable, or assign it outside that code")
  end
  return new
end

function H.assign(names, ...)
  local list = split_names(names)
  local n = #list
  if n == 1 then
    local old, new = ...
    return assign_one(list[1], old, new)
  end
  local args = table.pack(...)
  local out = {}
  for i = 1, n do out[i] = assign_one(list[i], args[i], args[n + i]) end
  return table.unpack(out, 1, n)
end

function H.pack(...) return table.pack(...) end

-- ---- functions defined inside a kernel --------------------------------------------------
-- Each call of one holds a depth count while it runs (`local __depth <close> =
-- __lt.enter(line)`). Conditions on kernel values do not stop a recursion at
-- trace time (both branches are traced), so a deep one is reported at once
-- instead of running until Lua's stack overflows.

-- While one runs, the innermost function of the trace is one whose end the
-- tracer does not see (a `false` on S.rets): a `return` under a kernel
-- condition in it is an error, never a return of the enclosing kernel or
-- lt.func.

local MAX_DEPTH = 200
local depth = 0
local LEAVE = setmetatable({}, { __close = function()
  depth = depth - 1
  local S = T.current()
  if S and S.rets and S.rets[#S.rets] == false then S.rets[#S.rets] = nil end
  if S and S.param_scopes and #S.param_scopes > 0 then   -- the function's parameters go out of scope
    local list = S.param_scopes[#S.param_scopes]
    S.param_scopes[#S.param_scopes] = nil
    for i = #list, 1, -1 do
      local st = S.decls[list[i]]
      st[#st] = nil
    end
  end
end })

-- params: the function's parameter names, declared at the depth of the call.
function H.enter(line, params)
  if depth >= MAX_DEPTH then
    depth = 0                                -- the trace ends with this error
    fail("the function defined at line " .. line .. " is called " .. MAX_DEPTH .. " levels deep while the "
      .. "kernel is traced: a function that calls itself with kernel values never stops at trace time (both "
      .. "sides of a condition on kernel values are traced); write the recursion as a loop")
  end
  depth = depth + 1
  local S = T.current()
  if S then
    S.rets = S.rets or {}
    S.rets[#S.rets + 1] = false
    local list = split_names(params or "")
    S.decls = S.decls or {}
    for _, name in ipairs(list) do
      local st = S.decls[name] or {}
      S.decls[name] = st
      st[#st + 1] = S.ir_depth or 0
    end
    S.param_scopes = S.param_scopes or {}
    S.param_scopes[#S.param_scopes + 1] = list
  end
  return LEAVE
end

-- ---- comparisons and logic ------------------------------------------------------------

for _, name in ipairs { "lt", "le", "gt", "ge", "eq", "ne" } do
  local lua_cmp = ({
    lt = function(a, b) return a < b end, le = function(a, b) return a <= b end,
    gt = function(a, b) return a > b end, ge = function(a, b) return a >= b end,
    eq = function(a, b) return a == b end, ne = function(a, b) return a ~= b end,
  })[name]
  H[name] = function(a, b)
    if T.composite(a) or T.composite(b) then return T.compare(name, a, b) end
    if not is_kv(a) and not is_kv(b) then return lua_cmp(a, b) end
    return T.compare(name, a, b)
  end
end
H.and_, H.or_, H.not_ = T.and_, T.or_, T.not_

-- ---- blocks and jumps --------------------------------------------------------------------

local function loops() return T.current().loops end

-- Runs fn with the builder appending to block blk, then restores.
local MAX_IR_DEPTH = 1000          -- IR_MAX_DEPTH of src/ir/ir.h: what the IR parser accepts

local function in_block(blk, fn, ...)
  local S = T.current()
  local b = S.b
  local saved = b:block()
  b:set_block(blk)
  local d = (S.ir_depth or 0) + 1
  if d > MAX_IR_DEPTH then
    fail("the kernel's IR blocks nest more than " .. MAX_IR_DEPTH .. " deep (ifs and loops, also through helper "
      .. "functions called inside them); the IR text form allows no more (docs/ir.md): nest less")
  end
  S.ir_depth = d
  local r = table.pack(fn(...))
  close_depth(S, d)
  S.ir_depth = d - 1
  b:set_block(saved)
  return table.unpack(r, 1, r.n)
end

-- A control code (and value) that reached the end of a closure run in an IR block.
local function ir_code(where, code, ...)
  if code == BREAK then
    local l = loops()
    local kind = l[#l]
    if kind == "ir" then
      T.B():jump("break")
    elseif kind == "parallel" then
      fail("break cannot leave the outermost for loop of a kernel: its iterations run in parallel; "
        .. "use a while loop (or nest the search loop inside another loop)")
    elseif kind == "levels" then
      fail("break cannot leave a nested struct-for over a dynamic level below other levels (it is two loops); "
        .. "use a flag, or loop over the dynamic level's parent and the list yourself")
    elseif kind == nil then
      fail("break outside a loop")
    else
      fail("break under a condition on kernel values cannot stop a loop unrolled at trace time "
        .. "(lt.static or a Lua iterator); use a numeric for (an IR loop)")
    end
  elseif code == RETURN then
    if T.early_return(...) then return end
    fail("return " .. where .. " is not supported in a function defined inside a kernel; "
      .. "assign the result to a local and return it at the end (or make the function an lt.func)")
  end
end

-- ---- if / while / repeat ----------------------------------------------------------------------

function H.if_(c, thenf, elsef)
  local cs = T.cond(c)
  if not cs then
    if c then return thenf() end
    if elsef then return elsef() end
    return
  end
  local n0 = T.nret()
  local b = T.B()
  local st = b:if_(cs, elsef ~= nil)
  in_block(b:child(st, 0), function() ir_code("under a condition on kernel values", thenf()) end)
  if elsef then
    in_block(b:child(st, 1), function() ir_code("under a condition on kernel values", elsef()) end)
  end
  T.after_construct(n0)
end

-- Emits `if not c then break end` for a loop condition c (a Lua false: break).
local function break_unless(c)
  local cs = T.cond(c)
  local b = T.B()
  if cs then
    local st = b:if_(b:unary("logic_not", cs), false)
    in_block(b:child(st, 0), function() T.B():jump("break") end)
  elseif not c then
    b:jump("break")
    return true
  end
end

-- kind: "ir", or "parallel" for a range_for the offload pass will parallelise
local function ir_loop(body, kind)
  local l = loops()
  l[#l + 1] = kind or "ir"
  local ok, err = pcall(body)
  l[#l] = nil
  if not ok then error(err, 0) end
end

function H.while_(condf, bodyf)
  local n0 = T.nret()
  local b = T.B()
  local w = b:while_()
  ir_loop(function()
    in_block(b:child(w, 0), function()
      if break_unless(condf()) then return end
      ir_code("inside a loop", bodyf())
    end)
  end)
  T.after_construct(n0)
end

function H.repeat_(bodyf)
  local n0 = T.nret()
  local b = T.B()
  local w = b:while_()
  ir_loop(function()
    in_block(b:child(w, 0), function()
      local r = table.pack(bodyf())
      local code, c = r[1], r[2]
      if code == UNTIL then
        local cs = T.cond(c)
        if cs then
          local st = T.B():if_(cs, false)
          in_block(b:child(st, 0), function() T.B():jump("break") end)
        elseif c then
          T.B():jump("break")
        end
      else
        ir_code("inside a loop", table.unpack(r, 1, r.n))
      end
    end)
  end)
  T.after_construct(n0)
end

-- ---- numeric for: always an IR loop ----------------------------------------------------------

-- Lua's numeric for (docs/language.md, "Loops"): the body runs
-- trip = (b - a) // step + 1 times when a <= b (a >= b for a negative step),
-- with i = a + k * step for k = 0 .. trip - 1, counted so that no bound
-- overflows at the ends of the integer range. i is an i32 when both bounds fit
-- in one (Lua integers in range, kernel values of at most 32 signed bits),
-- else an i64. At the kernel's top level the loop is a parallel task of at
-- most 2^31 - 1 iterations (more is an error: constant bounds when traced,
-- others when the kernel runs); elsewhere, and with lt.serial, it is serial.
local I64, U64 = types.by_name.i64, types.by_name.u64
local INT32_MAX = 2147483647

-- n // d for a positive d, n read as an unsigned 64-bit integer.
local function udiv(n, d)
  if n >= 0 then return n // d end
  local q = ((n >> 1) // d) << 1
  if not math.ult(n - q * d, d) then q = q + 1 end
  return q
end

-- A bound: a Lua integer, or {s = statement, t = type} for a kernel value.
local function for_bound(x, what)
  if type(x) == "number" then
    local i = math.tointeger(x)
    if not i then fail("the " .. what .. " of a numeric for in a kernel must be an integer (got " .. x .. ")") end
    return i
  end
  local s, t = lift(x)
  if not t.is_int or t.name == "i1" then
    fail("the " .. what .. " of a numeric for in a kernel must be an integer (got " .. t.name .. ")")
  end
  return { s = s, t = t }
end

local function fits_i32(x)
  if type(x) == "number" then return x >= -2147483648 and x <= INT32_MAX end
  return x.t.bits < 32 or (x.t.bits == 32 and x.t.signed)
end

-- The bound as a statement of type t.
local function bound_stmt(x, t)
  local bld = T.B()
  if type(x) == "number" then return bld:const_int(t.id, x) end
  if x.t == t then return x.s end
  return bld:cast(t.id, x.s)
end

-- The trip count as a statement: i64 for an i32 index (it is at most 2^32),
-- else u64; a Lua integer when both bounds are.
local function trip_count(a, b, step, it)
  local mag = step > 0 and step or -step
  if type(a) == "number" and type(b) == "number" then
    if (step > 0 and a > b) or (step < 0 and a < b) then return 0 end
    return udiv(step > 0 and b - a or a - b, mag) + 1
  end
  local bld = T.B()
  local sa, sb = bound_stmt(a, I64), bound_stmt(b, I64)
  local lo, hi = step > 0 and sa or sb, step > 0 and sb or sa
  local ok = bld:binary("cmp_le", lo, hi)
  local d = bld:binary("sub", hi, lo)                  -- exact for i32 bounds; wraps for i64 ones
  local ct = I64
  if it == I64 then ct = U64; d = bld:cast(U64.id, d) end
  if mag ~= 1 then d = bld:binary("floordiv", d, bld:const_int(ct.id, mag)) end
  local n = bld:binary("add", d, bld:const_int(ct.id, 1))
  return bld:select(ok, n, bld:const_int(ct.id, 0)), ct
end

local function too_many(n)
  fail(("this parallel loop runs %s iterations; a parallel loop runs at most 2147483647 (2^31 - 1): split it, "
    .. "or make it serial with lt.serial"):format(("%u"):format(n)))      -- n is read as unsigned
end

function H.for_(a, b, step, body, serial)
  local n0 = T.nret()
  if step == nil then step = 1 end
  if math.type(step) ~= "integer" or step == 0 or step == math.mininteger then
    fail("the step of a numeric for in a kernel must be a nonzero Lua integer constant (got " ..
      (is_kv(step) and "a kernel value" or tostring(step)) .. ")")
  end
  a, b = for_bound(a, "start"), for_bound(b, "limit")
  local it = (fits_i32(a) and fits_i32(b)) and I32 or I64
  local top = T.at_top() and not serial
  local bld = T.B()
  local first, last, direct, trip, tt
  if it == I32 and step == 1 and type(a) == "number" and type(b) == "number" and b < INT32_MAX then
    first, last, direct = bld:const_int(I32.id, a), bld:const_int(I32.id, b + 1), true    -- [a, b + 1)
  elseif it == I32 and step == 1 and not top and not serial then
    first, direct = bound_stmt(a, I64), true                                               -- [a, b + 1) in i64
    last = bld:binary("add", bound_stmt(b, I64), bld:const_int(I64.id, 1))
  else
    trip, tt = trip_count(a, b, step, it)
    if top then
      if type(trip) == "number" then
        if math.ult(INT32_MAX, trip) then too_many(trip) end
        last = bld:const_int(I32.id, trip)
      else
        local ok = bld:binary("cmp_le", trip, bld:const_int(tt.id, INT32_MAX))
        local chk = bld:op("assert", core.type_id("void"), ok)
        bld:set_aux(chk, bld:add_string("\1this parallel loop has more than 2147483647 (2^31 - 1) iterations; "
          .. "split it, or make it serial with lt.serial"), 0)
        last = bld:cast(I32.id, trip)
      end
      first = bld:const_int(I32.id, 0)
    else
      tt = tt or (it == I64 and U64 or I64)
      first = bld:const_int(tt.id, 0)
      last = type(trip) == "number" and bld:const_int(tt.id, trip) or trip
    end
  end
  -- the loop variable from the counter k
  local function index(k)
    local bb = T.B()
    if direct then
      return T.sym(T.B():cast(it.id, k), it)
    end
    local i = bb:type(k) == it.id and k or bb:cast(it.id, k)
    if step ~= 1 then i = bb:binary("mul", i, bb:const_int(it.id, step)) end
    if a ~= 0 then i = bb:binary("add", bound_stmt(a, it), i) end
    return T.sym(i, it)
  end
  if serial and T.at_top() then
    -- a top-level range_for would become a parallel task: count in a while loop
    local ct = types.by_id[core.result_type("max", T.B():type(first), T.B():type(last))]
    local var = bld:alloca(ct.id)
    bld:store(var, first)
    local w = bld:while_()
    ir_loop(function()
      in_block(bld:child(w, 0), function()
        local bb = T.B()
        local k = bb:load(var)
        break_unless(T.sym(bb:binary("cmp_lt", k, last), types.by_name.i1))
        local r = table.pack(body(index(k)))
        if r[1] then return ir_code("inside a loop", table.unpack(r, 1, r.n)) end
        local b2 = T.B()
        b2:store(var, b2:binary("add", b2:load(var), b2:const_int(ct.id, 1)))
      end)
    end)
    T.after_construct(n0)
    return
  end
  local rf = bld:range_for(first, last)
  ir_loop(function()
    in_block(bld:child(rf, 0), function()
      local k = T.B():loop_index(rf)
      local i = (direct and it == I32 and T.B():type(k) == I32.id) and T.sym(k, I32) or index(k)
      if top then builtins.parallel_iteration({ i }) end
      ir_code("inside a loop", body(i))
    end)
  end, top and "parallel")
  T.after_construct(n0)
end

-- ---- generic for --------------------------------------------------------------------------------

local NDRange, Static, GroupedRange, Serial = {}, {}, {}, {}
H.NDRange, H.Static, H.GroupedRange, H.Serial = NDRange, Static, GroupedRange, Serial
H.index_vector = nil          -- set by composite.lua: indices -> an index vector

-- Runs body over Lua values (unrolled); stops on break, propagates return.
local function unroll(body, iter)
  local l = loops()
  l[#l + 1] = "static"
  local res = table.pack(pcall(function()
    for vals in iter do
      local r = table.pack(body(table.unpack(vals, 1, vals.n)))
      if r[1] == BREAK then break end
      if r[1] == RETURN then return table.unpack(r, 1, r.n) end
    end
  end))
  l[#l] = nil
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- A top-level ndrange over constant extents with at least ROWS_MIN rows (the
-- cells of all axes but the last) and INNER_MIN cells along the last axis
-- runs one parallel iteration per row with a serial loop along the last
-- axis: no division per cell to recover the indices, and the inner loop
-- vectorizes. Other ndranges are one linear parallel loop (few rows would
-- leave cores idle), and so is every ndrange on CUDA: there consecutive
-- threads must take consecutive cells of the last axis for coalesced memory
-- access (a row per thread ran the dense Laplacian of bench/sparse.lua at a
-- thirtieth of the bandwidth on an H200).
local ROWS_MIN, INNER_MIN = 64, 4

-- The indices of dims[first..last] from the linear index idx over them.
local function split_index(idx, begins, extents, first, last)
  local out, stride = {}, 1
  for k = last, first, -1 do
    local q = (stride == 1) and idx or (idx // stride)
    if k > first then q = q % extents[k] end
    out[k] = (begins[k] == 0) and q or (q + begins[k])
    stride = stride * extents[k]
  end
  return out
end

-- A bound of an lt.ndrange range: ndrange indices are i32, so a bound is a
-- Lua integer or a kernel value of at most 32 signed bits (a wider one would
-- be truncated: an error). Returns a statement, or nil and the Lua integer.
local function nd_bound(x, what)
  if type(x) == "number" then
    local i = math.tointeger(x)
    if not i then fail("the " .. what .. " of an lt.ndrange range must be an integer (got " .. x .. ")") end
    if i < -2147483648 or i > INT32_MAX then
      fail("the " .. what .. " of an lt.ndrange range must fit in 32 bits (got " .. i .. "): its indices are i32; "
        .. "use a numeric for for 64-bit indices")
    end
    return nil, i
  end
  local s, t = lift(x)
  if not t.is_int or t.name == "i1" then
    fail("the " .. what .. " of an lt.ndrange range must be an integer (got " .. t.name .. ")")
  end
  if not fits_i32({ t = t }) then
    fail("the " .. what .. " of an lt.ndrange range is " .. T.an(t.name) .. " value: its indices are i32, so "
      .. "convert it with lt.i32(...) when it fits, or use a numeric for for 64-bit indices")
  end
  if t ~= I32 then s = T.B():cast(I32.id, s) end
  return s
end

local NOT_MORE = 2147483648             -- extents are capped here while multiplying (saturating)

-- The number of iterations of an ndrange with some bounds known only at run
-- time: each axis max(end - begin, 0) in i64 (so reversed ranges are empty),
-- their product saturated at 2^31; more than 2^31 - 1 stops the kernel with
-- an error. Returns the i32 total and the i32 extents (statements or Lua
-- integers).
local function nd_total(begins, ends)
  local bld = T.B()
  local total, ext = nil, {}
  local cap, zero = bld:const_int(I64.id, NOT_MORE), bld:const_int(I64.id, 0)
  for k = 1, #begins do
    local e
    if type(begins[k]) == "number" and type(ends[k]) == "number" then
      e = math.max(ends[k] - begins[k], 0)
      ext[k] = e
      e = bld:const_int(I64.id, e)
    else
      local a = type(begins[k]) == "number" and bld:const_int(I64.id, begins[k]) or bld:cast(I64.id, begins[k])
      local b = type(ends[k]) == "number" and bld:const_int(I64.id, ends[k]) or bld:cast(I64.id, ends[k])
      e = bld:binary("max", bld:binary("sub", b, a), zero)
      ext[k] = T.sym(bld:cast(I32.id, e), I32)       -- exact whenever the loop runs (total <= 2^31 - 1)
    end
    total = total and bld:binary("min", bld:binary("mul", total, bld:binary("min", e, cap)), cap) or e
  end
  local ok = bld:binary("cmp_le", total, bld:const_int(I64.id, INT32_MAX))
  local chk = bld:op("assert", core.type_id("void"), ok)
  bld:set_aux(chk, bld:add_string("\1this lt.ndrange has more than 2147483647 (2^31 - 1) index tuples; "
    .. "split it into several loops"), 0)
  return bld:cast(I32.id, total), ext
end

local function ndrange_loop(r, body)
  if #r.dims == 0 then return require("lattice.levels").once(body, false) end   -- lt.ndrange(): once
  local n0 = T.nret()
  local dims = r.dims
  local nd = #dims
  local begins, ends, extents = {}, {}, {}
  local constant = true
  for k, d in ipairs(dims) do
    local sa, la = nd_bound(d[1], "begin")
    local sb, lb = nd_bound(d[2], "end")
    begins[k], ends[k] = la or sa, lb or sb
    if not (la and lb) then constant = false end
  end
  local total_stmt
  if constant then
    local total = 1
    for k = 1, nd do
      extents[k] = math.max(ends[k] - begins[k], 0)
      total = math.min(total * math.min(extents[k], NOT_MORE), NOT_MORE)
    end
    if total > INT32_MAX then
      local full = 1.0
      for k = 1, nd do full = full * extents[k] end
      fail(("this lt.ndrange has %.0f index tuples; a loop runs at most 2147483647 (2^31 - 1): split it into "
        .. "several loops"):format(full))
    end
  else
    total_stmt, extents = nd_total(begins, ends)
  end
  for k = 1, nd do
    if type(begins[k]) ~= "number" then begins[k] = T.sym(begins[k], I32) end
  end
  local top = T.at_top()
  local inner = nd >= 2 and top and constant and extents[nd] >= INNER_MIN
    and not (state.opts and state.opts.arch == "cuda")
  local rows = 1
  for k = 1, nd - 1 do rows = constant and rows * extents[k] or rows end
  inner = inner and rows >= ROWS_MIN
  local last = total_stmt
  if constant then
    local total = 1
    for k = 1, inner and nd - 1 or nd do total = total * extents[k] end
    last = T.B():const_int(I32.id, total)
  end
  local bld = T.B()
  local rf = bld:range_for(bld:const_int(I32.id, 0), last)
  ir_loop(function()
    in_block(bld:child(rf, 0), function()
      local idx = T.sym(T.B():loop_index(rf), I32)
      if not inner then
        if top then builtins.parallel_iteration({ idx }) end
        local out = split_index(idx, begins, extents, 1, nd)
        ir_code("inside a loop", body(table.unpack(out, 1, nd)))
        return
      end
      local out = split_index(idx, begins, extents, 1, nd - 1)
      local b = T.B()
      local jf = b:range_for(b:const_int(I32.id, 0), b:const_int(I32.id, extents[nd]))
      -- still a parallel loop to the body: break and return cannot leave it
      ir_loop(function()
        in_block(b:child(jf, 0), function()
          local j = T.sym(T.B():loop_index(jf), I32)
          builtins.parallel_iteration({ idx, j }, { rows, extents[nd] })   -- the cell's stream, as if linear
          out[nd] = (begins[nd] == 0) and j or (j + begins[nd])
          ir_code("inside a loop", body(table.unpack(out, 1, nd)))
        end)
      end, "parallel")
    end)
  end, top and "parallel")
  T.after_construct(n0)
end
H.ndrange_loop = ndrange_loop

-- for i, j in x over a field under a sparse level: a struct_for over the
-- active cells of x's parent level (the outermost loop of the kernel).
local function struct_loop(level, nidx, body, extents)
  if not T.at_top() then
    fail("a struct-for over a sparse field (for i, j in x) must be a top-level loop of the kernel "
      .. "(not inside another loop or an `if`): its cells are visited in parallel")
  end
  local n0 = T.nret()
  local bld = T.B()
  local sf = bld:struct_for(level)
  ir_loop(function()
    in_block(bld:child(sf, 0), function()
      local out = {}
      for k = 1, nidx do out[k] = T.sym(T.B():struct_index(sf, k - 1), I32) end
      builtins.parallel_iteration(out, extents)
      -- (inner struct-fors below `level` visit the cells inside this one: levels.lua)
      ir_code("inside a loop", require("lattice.levels").within(level, out, body, table.unpack(out, 1, nidx)))
    end)
  end, "parallel")
  T.after_construct(n0)
end
H.struct_loop = struct_loop

-- The loop over the cells of field f: a struct_for when sparse levels are
-- above it, else an ndrange over its shape. grouped: body takes one index table.
local function field_loop(f, body, grouped)
  local ok, err = pcall(fieldm.ready, f)
  if not ok then fail((tostring(err):gsub("^[^:\n]*:%d+: ", ""))) end
  if f._nidx == 0 then return require("lattice.levels").once(body, grouped) end   -- 0-D: the body once
  local inst = rawget(f, "_inst")
  if inst and not inst._proxy then
    fail("a struct-for over a field of a tree instance that is not a kernel argument; pass the instance "
      .. "as an argument annotated with its tree type")
  end
  local b = body
  if grouped then b = function(...) return body(H.index_vector(...)) end end
  local sparse = require "lattice.sparse"
  if require("lattice.levels").inner(sparse.info(f._snode).parent, b, f) then return end  -- in an outer struct-for
  local level, nidx = sparse.struct_level(f)
  local off = rawget(f, "_offset")        -- a field's indices run over [offset, offset + shape)
  if level then
    if off then                           -- the struct_for's cell indices count from 0
      local inner = b
      b = function(...)
        local ix = table.pack(...)
        for k = 1, ix.n do if off[k] ~= 0 then ix[k] = ix[k] + off[k] end end
        return inner(table.unpack(ix, 1, ix.n))
      end
    end
    return struct_loop(level, nidx, b, f._shape)
  end
  local dims = {}
  for k, n in ipairs(f._shape) do dims[k] = { off and off[k] or 0, (off and off[k] or 0) + n } end
  return ndrange_loop({ dims = dims }, b)
end

function H.gfor(body, f, s, ctl)
  if T.cfield and T.cfield.is(f) then f = T.cfield.first(f) end   -- a vector field: loop over its cells
  local m = getmetatable(f)
  if m == NDRange then return ndrange_loop(f, body) end
  if m == GroupedRange then
    return ndrange_loop(f.range, function(...) return body(H.index_vector(...)) end)
  end
  local sparse = require "lattice.sparse"
  if m == sparse.Grouped then
    if fieldm.is_field(f.f) then return field_loop(f.f, body, true) end
    return require("lattice.levels").loop(f.f, body, true)              -- lt.grouped(level)
  end
  if m == Serial then return H.for_(f.a, f.b, f.step, body, true) end
  if m == Static then
    local a, b, step = f.a, f.b, f.step
    return unroll(body, coroutine.wrap(function()
      for i = a, b, step do coroutine.yield(table.pack(i)) end
    end))
  end
  if fieldm.is_field(f) then return field_loop(f, body, false) end
  if m == fieldm.Builder then return require("lattice.levels").loop(f, body, false) end   -- for i, j in level
  if type(f) ~= "function" and not (getmetatable(f) and getmetatable(f).__call) then
    fail("cannot iterate over a " .. type(f) .. " in a kernel (use lt.ndrange, lt.static, ipairs or pairs)")
  end
  return unroll(body, function()
    local vals = table.pack(f(s, ctl))
    if vals[1] == nil then return nil end
    ctl = vals[1]
    return vals
  end)
end

return H
