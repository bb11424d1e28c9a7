-- The full set of atomics (add, sub, min, max, mul, and, or, xor) on field
-- elements, ndarray elements and kernel locals, for every scalar type that
-- allows them, from parallel loops: every result equals the fold of the same
-- values in plain Lua (integers wrap, so the order does not matter), and the
-- old values atomic_add hands out are the serial ones in some order. Then
-- atomics on locals in serial code and per-iteration locals, and the errors.
local lt = require "lattice"
lt.init { threads = 4 }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

local N = 2000
local TYPES = { "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64" }
local OPS = { "add", "sub", "min", "max", "mul", "and", "or", "xor" }

-- ---- the per-iteration values, as Lua numbers (converted to the type in the kernel) ------------

local function conv(v, t) -- Lua's model of lt.<t>(v): integers wrap, floats round to f32
  local ty = lt[t]
  if ty.is_float then return (string.unpack(t == "f32" and "f" or "d", string.pack(t == "f32" and "f" or "d", v))) end
  local bits, signed = tonumber(t:sub(2)), t:sub(1, 1) == "i"
  if bits == 64 then return v end
  local m = v & ((1 << bits) - 1)
  if signed and m >= (1 << (bits - 1)) then m = m - (1 << bits) end
  return m
end

local function raw(op, t, i) -- the value iteration i applies with op (before conversion to t)
  local float, bits = t:sub(1, 1) == "f", tonumber(t:sub(2))
  if op == "add" then return 1 end
  if op == "sub" then return 2 end
  if op == "min" or op == "max" then
    local r = (i * 7919) % 1009
    if t:sub(1, 1) == "i" then r = r - 500 end
    return float and (r - 500) * 0.25 or r
  end
  if op == "mul" then                    -- 3^5 * (-1)^7 = -243 (wrapped for integers)
    if i % 400 == 0 then return 3 end
    if i % 300 == 1 then return -1 end
    return 1
  end
  if op == "and" then                    -- clears the even bits
    local b = i % bits
    return b % 2 == 0 and ~(1 << b) or -1
  end
  if op == "or" then return 1 << (i % (bits - 1)) end
  return i                               -- xor
end

local START = { add = 0, sub = 0, mul = 1, ["and"] = -1, ["or"] = 0, xor = 0 }
local function start(op, t)
  local ty = lt[t]
  if op == "min" then return ty.is_float and 1e30 or ty.max == -1 and -1 or ty.max end
  if op == "max" then return ty.is_float and -1e30 or ty.min end
  return conv(START[op], t)
end

local function ult(a, b) return math.ult(a, b) end
local function expected(op, t)
  local acc, unsigned64 = start(op, t), t == "u64"
  for i = 0, N - 1 do
    local v = conv(raw(op, t, i), t)
    if op == "add" then acc = acc + v
    elseif op == "sub" then acc = acc - v
    elseif op == "mul" then acc = acc * v
    elseif op == "min" then if (unsigned64 and ult(v, acc)) or (not unsigned64 and v < acc) then acc = v end
    elseif op == "max" then if (unsigned64 and ult(acc, v)) or (not unsigned64 and v > acc) then acc = v end
    elseif op == "and" then acc = acc & v
    elseif op == "or" then acc = acc | v
    else acc = acc ~ v end
    acc = conv(acc, t)
  end
  return acc
end

local function ops_for(t)
  local list = {}
  for _, op in ipairs(OPS) do
    if t:sub(1, 1) ~= "f" or (op ~= "and" and op ~= "or" and op ~= "xor") then list[#list + 1] = op end
  end
  return list
end

-- the values, one i64 (f64 for float types) field per op, filled from Lua
local function sources(t)
  local float = t:sub(1, 1) == "f"
  local src = {}
  for _, op in ipairs(ops_for(t)) do
    local f = lt.field(float and lt.f64 or lt.i64, N)
    for i = 0, N - 1 do f[i] = raw(op, t, i) end
    src[op] = f
  end
  return src
end

-- the old values atomic_add(., 1) returned: the wrapped 0..N-1, in some order
local function check_olds(what, olds, t)
  local want, got = {}, {}
  for i = 0, N - 1 do
    local w = conv(i, t)
    want[w] = (want[w] or 0) + 1
    local g = olds[i]
    got[g] = (got[g] or 0) + 1
  end
  local ok = true
  for k, c in pairs(want) do if got[k] ~= c then ok = false end end
  for k, c in pairs(got) do if want[k] ~= c then ok = false end end
  check(what .. ": old values are 0..N-1 in some order", ok, true)
end

-- ---- fields, ndarrays, locals: one kernel per type and target ----------------------------------

for _, t in ipairs(TYPES) do
  local ty = lt[t]
  local ops = ops_for(t)
  local src = sources(t)
  local res, olds = {}, lt.field(ty, N)
  for _, op in ipairs(ops) do res[op] = lt.field(ty, {}) end

  -- field elements
  local on_fields = lt.kernel(function()
    for i in lt.ndrange(N) do
      for _, op in ipairs(ops) do            -- a Lua loop: unrolled at trace time
        local old = lt["atomic_" .. op](res[op].value, ty(src[op][i]))
        if op == "add" then olds[i] = old end
      end
    end
  end)
  for _, op in ipairs(ops) do res[op].value = start(op, t) end
  on_fields()
  for _, op in ipairs(ops) do check(t .. " field atomic_" .. op, res[op].value, expected(op, t)) end
  check_olds(t .. " field atomic_add", olds, t)

  -- ndarray elements (element k for the k-th op)
  local on_nd = lt.kernel(function(a)
    for i in lt.ndrange(N) do
      for k, op in ipairs(ops) do
        local old = lt["atomic_" .. op](a[k - 1], ty(src[op][i]))
        if op == "add" then olds[i] = old end
      end
    end
  end, { a = lt.ndarray_type(ty, 1) })
  local a = lt.ndarray(ty, #ops)
  for k, op in ipairs(ops) do a[k - 1] = start(op, t) end
  on_nd(a)
  for k, op in ipairs(ops) do check(t .. " ndarray atomic_" .. op, a[k - 1], expected(op, t)) end
  check_olds(t .. " ndarray atomic_add", olds, t)

  -- kernel-scope locals, read after the loop
  local starts = {}
  for _, op in ipairs(ops) do starts[op] = start(op, t) end
  local on_locals = lt.kernel(function()
    local acc = {}
    for _, op in ipairs(ops) do acc[op] = ty(starts[op]) end   -- locals of type t (lt.<t>(x) declares one)
    local s_add, s_sub, s_min, s_max, s_mul = acc.add, acc.sub, acc.min, acc.max, acc.mul
    local s_and, s_or, s_xor = acc["and"], acc["or"], acc.xor   -- nil for floats
    for i in lt.ndrange(N) do
      olds[i] = lt.atomic_add(s_add, ty(src.add[i]))
      lt.atomic_sub(s_sub, ty(src.sub[i]))
      lt.atomic_min(s_min, ty(src.min[i]))
      lt.atomic_max(s_max, ty(src.max[i]))
      lt.atomic_mul(s_mul, ty(src.mul[i]))
      if not ty.is_float then
        lt.atomic_and(s_and, ty(src["and"][i]))
        lt.atomic_or(s_or, ty(src["or"][i]))
        lt.atomic_xor(s_xor, ty(src.xor[i]))
      end
    end
    res.add.value, res.sub.value, res.min.value, res.max.value, res.mul.value = s_add, s_sub, s_min, s_max, s_mul
    if not ty.is_float then res["and"].value, res["or"].value, res.xor.value = s_and, s_or, s_xor end
  end)
  for _, op in ipairs(ops) do res[op].value = 0 end
  on_locals()
  for _, op in ipairs(ops) do check(t .. " local atomic_" .. op, res[op].value, expected(op, t)) end
  check_olds(t .. " local atomic_add", olds, t)
end

-- ---- locals: a struct-for, serial code, per-iteration locals ------------------------------------

local cells = lt.field(lt.i32, 64)
local r32 = lt.field(lt.i32, 4)
local over_cells = lt.kernel(function()
  local n, bits = 0, 0
  for i in cells do                        -- a struct-for: parallel too
    lt.atomic_add(n, 1)
    lt.atomic_or(bits, 1 << (i % 31))
  end
  r32[0], r32[1] = n, bits
end)
over_cells()
check("struct-for atomic_add on a local", r32[0], 64)
check("struct-for atomic_or on a local", r32[1], (1 << 31) - 1)

local serial = lt.kernel(function()
  local s = 5
  local o = lt.atomic_add(s, 3)            -- serial: a read-modify-write returning the old value
  local m = 7
  local om = lt.atomic_mul(m, -2)
  r32[0], r32[1], r32[2], r32[3] = o, s, om, m
end)
serial()
check("serial atomic_add old", r32[0], 5)
check("serial atomic_add new", r32[1], 8)
check("serial atomic_mul old", r32[2], 7)
check("serial atomic_mul new", r32[3], -14)

local per = lt.field(lt.i64, N)
local per_iteration = lt.kernel(function()
  for i in lt.ndrange(N) do
    local c = lt.i64(i)                    -- private to the iteration
    local o = lt.atomic_mul(c, 3)
    local x = lt.atomic_xor(c, 1)
    for _ = 1, 2 do lt.atomic_add(c, 1) end
    per[i] = o * 1000000 + x * 1000 + c
  end
end)
per_iteration()
local ok = true
for i = 0, N - 1 do
  if per[i] ~= i * 1000000 + 3 * i * 1000 + ((3 * i) ~ 1) + 2 then ok = false end
end
check("atomics on a per-iteration local", ok, true)

-- a vector local: one atomic per component
local vout = lt.field(lt.f32, 2)
local vec_local = lt.kernel(function()
  local v = lt.vec2(0, 0)
  for _ in lt.ndrange(N) do lt.atomic_add(v, lt.vec2(1, 2)) end
  vout[0], vout[1] = v.x, v.y
end)
vec_local()
check("atomic_add on a vec2 local, x", vout[0], N)
check("atomic_add on a vec2 local, y", vout[1], 2 * N)

-- the old value of an atomic on a kernel-scope local in a parallel loop
local slots = lt.field(lt.i32, N)
local claim = lt.kernel(function()
  local next = 0
  for i in lt.ndrange(N) do
    local k = lt.atomic_add(next, 1)
    slots[k] = i + 1
  end
end)
claim()
local seen, unique = {}, true
for i = 0, N - 1 do
  local v = slots[i]
  if v < 1 or v > N or seen[v] then unique = false end
  seen[v] = true
end
check("old values of a local hand out unique slots", unique, true)

-- ---- errors ------------------------------------------------------------------------------------

local fx = lt.field(lt.f32, 4)
local ix = lt.field(lt.i32, 4)
local function line_in(fn, k) return "atomics_full.lua:" .. (debug.getinfo(fn, "S").linedefined + k) .. ":" end

for _, op in ipairs { "and", "or", "xor" } do
  local f = lt["atomic_" .. op]
  check_error("float field atomic_" .. op, function()
    lt.kernel(function() for i in lt.ndrange(4) do f(fx[i], 1) end end)()
  end, "lt.atomic_" .. op .. " needs integers, but field 'fx' is an f32")
  check_error("float ndarray atomic_" .. op, function()
    lt.kernel(function(a) for i in lt.ndrange(4) do f(a[i], 1) end end, { a = lt.ndarray_type(lt.f64, 1) })(
      lt.ndarray(lt.f64, 4))
  end, "lt.atomic_" .. op .. " needs integers")
  check_error("float local atomic_" .. op, function()
    lt.kernel(function()
      local s = 0.0
      for _ in lt.ndrange(4) do f(s, 1) end
      fx[0] = s
    end)()
  end, "lt.atomic_" .. op .. " needs integers, but the kernel variable 's' is an f32")
end
check_error("float value into an integer atomic", function()
  lt.kernel(function() for i in lt.ndrange(4) do lt.atomic_or(ix[i], 1.5) end end)()
end, "cannot assign the float 1.5 to field 'ix' (i32)")

local K = 7
check_error("atomic on a loop index", function()
  lt.kernel(function() for i in lt.ndrange(4) do lt.atomic_add(i, 1) end end)()
end, "lt.atomic_add needs a field element, an ndarray element or a kernel local")
check_error("atomic on an expression", function()
  lt.kernel(function() for i in lt.ndrange(4) do lt.atomic_mul(ix[i] + 1, 2) end end)()
end, "lt.atomic_mul needs a field element, an ndarray element or a kernel local")
check_error("atomic on a captured Lua number", function()
  lt.kernel(function() for _ in lt.ndrange(4) do lt.atomic_xor(K, 2) end end)()
end, "lt.atomic_xor needs a field element, an ndarray element or a kernel local")
check_error("atomic on a boolean local", function()
  lt.kernel(function()
    local b = ix[0] > 0
    lt.atomic_or(b, 1)
  end)()
end, "lt.atomic_or on the kernel variable 'b', a boolean")

local read_race = function()
  local s = 0
  for i in lt.ndrange(4) do
    lt.atomic_add(s, 1)
    ix[i] = s
  end
  ix[0] = s
end
check_error("atomic and read of a local in one parallel loop", function() lt.kernel(read_race)() end,
  line_in(read_race, 4) .. " the kernel-scope local 's' is read inside the parallel loop that updates it")
local write_race = function()
  local s = 0
  for i in lt.ndrange(4) do
    lt.atomic_max(s, ix[i])
    s = i
  end
  ix[0] = s
end
check_error("atomic and store of a local in one parallel loop", function() lt.kernel(write_race)() end,
  line_in(write_race, 4) .. " the kernel-scope local 's' is assigned inside a parallel loop")
local mixed = function()
  local s = 1
  for i in lt.ndrange(4) do
    lt.atomic_add(s, ix[i])
    lt.atomic_mul(s, 2)
  end
  ix[0] = s
end
check_error("two kinds of atomics on a local in one parallel loop", function() lt.kernel(mixed)() end,
  line_in(mixed, 4) .. " the kernel-scope local 's' is updated with lt.atomic_mul here and with lt.atomic_add at line "
  .. (debug.getinfo(mixed, "S").linedefined + 3))
local add_sub = lt.kernel(function()                -- add and sub mix: the result is one
  local s = 0
  for i in lt.ndrange(4) do
    lt.atomic_add(s, 3)
    lt.atomic_sub(s, i)
  end
  r32[0] = s
end)
add_sub()
check("atomic_add and atomic_sub on one local", r32[0], 12 - 6)

check_error("atomic on a Lua number in Lua scope", function()
  local s = 0
  lt.atomic_add(s, 1)
end, "lt.atomic_add(s, v) outside a kernel: s is a Lua number")
check_error("atomic on a field element in Lua scope", function() lt.atomic_mul(ix[0], 2) end,
  "lt.atomic_mul(s, v) outside a kernel")

-- gradients: new atomics are refused by name
local gx = lt.field(lt.f32, 4, { needs_grad = true })
local gy = lt.field(lt.f32, {}, { needs_grad = true })
check_error("atomic_mul on a field in a grad kernel", function()
  lt.kernel(function() for i in lt.ndrange(4) do lt.atomic_mul(gy.value, gx[i]) end end):grad()
end, "atomic_mul on field 'gy' has no gradient rule")
check_error("atomic on a local in a grad kernel", function()
  lt.kernel(function()
    local s = 0.0
    for i in lt.ndrange(4) do lt.atomic_add(s, gx[i]) end
    gy.value = s
  end):grad()
end, "lt.atomic_add on a kernel local")

local dx = lt.field(lt.f32, 4, { needs_dual = true })
local dy = lt.field(lt.f32, {}, { needs_dual = true })
check_error("atomic_mul on a field with a dual in k:fwd", function()
  lt.kernel(function() for i in lt.ndrange(4) do lt.atomic_mul(dy.value, dx[i]) end end):fwd()
end, "lt.atomic_mul on field 'dy', which has a dual, has no forward mode")
check_error("atomic on a float local with a tangent in k:fwd", function()
  lt.kernel(function()
    local s = 0.0
    for i in lt.ndrange(4) do lt.atomic_add(s, dx[i]) end
    dy.value = s
  end):fwd()
end, "lt.atomic_add on a kernel local (write s = s + v for a sum) has no tangent rule")

-- docs/language.md's "Atomics" examples (each asserts its results); last, as lt.init starts afresh
local snippets = require("docs").snippets("language.md", "\n## Atomics\n(.-)\n## ", "Atomics")
for n, s in ipairs(snippets) do
  lt.init {}
  local ok, err = pcall(s.run)
  check("docs example " .. n .. " runs (" .. tostring(err) .. ")", ok, true)
end
check("docs examples found", #snippets > 0, true)

T.finish("atomics_full")
