-- data_entry.lua -- fuzzes the Lua-scope data entry points of fields and
-- ndarrays (x:from_table, lt.ndarray_from, lt.ndarray(dtype, shape, t),
-- a:from_table, x:to_table, element reads and writes, x:fill) with generated
-- nested tables and junk: strings, booleans, nil holes, NaN, inf, huge
-- integers, fractions where integers are needed, tables with metamethods that
-- error, cycles, tables too deep, wrong shapes, 0- and 1-based levels.
--
-- Every input must either raise a Lua error (its message at this script's
-- line, never an "internal error" nor a lattice/*.lua location) and leave
-- the data as it was, or store exactly what the plain-Lua model below says
-- the documented rules give (docs/language.md, "Lua-scope access" and
-- "External arrays"): after each case every target is compared with its
-- model through to_table, and sampled element reads.
--
--   lattice tests/fuzz/data_entry.lua [SEED [CASES]]
--   LT_FUZZ_SEED=7 LT_FUZZ_CASES=200000 lattice tests/fuzz/data_entry.lua
--
-- Deterministic for a seed. Prints one summary line; exits with an error
-- when any case disagreed with the model (each is printed with its number).
local lt = require "lattice"
lt.init {}

local SEED = math.tointeger(tonumber(arg and arg[1] or os.getenv("LT_FUZZ_SEED") or "1")) or 1
local CASES = math.tointeger(tonumber(arg and arg[2] or os.getenv("LT_FUZZ_CASES") or "3000")) or 3000
local HERE = debug.getinfo(1, "S").short_src .. ":"

-- ---- deterministic choices (xorshift64*) --------------------------------------------
local rs = SEED ~ 0x2545F4914F6CDD1D
if rs == 0 then rs = 1 end
local function rnd()
  rs = rs ~ (rs >> 12); rs = rs ~ (rs << 25); rs = rs ~ (rs >> 27)
  return (rs * 0x2545F4914F6CDD1D) >> 1
end
local function below(n) return rnd() % n end
local function chance(p) return below(10000) < p * 10000 end
local function pick(list) return list[below(#list) + 1] end

-- ---- the model: the documented conversions --------------------------------------------
local BITS = { i8 = 8, i16 = 16, i32 = 32, i64 = 64, u8 = 8, u16 = 16, u32 = 32, u64 = 64, f32 = 32, f64 = 64 }
local function is_int(t) return t:sub(1, 1) ~= "f" end

-- two's complement wrap to the type's width (u64 and i64: the Lua integer)
local function wrap(v, t)
  local bits = BITS[t]
  if bits == 64 then return v end
  local m = v % (1 << bits)
  if t:sub(1, 1) == "i" and m >= (1 << (bits - 1)) then m = m - (1 << bits) end
  return m
end

-- an integer to f32 with integer arithmetic alone: keep 24 significant bits,
-- round to nearest, ties to even
local function int_f32(v)
  if v == 0 then return 0.0 end
  if v == math.mininteger then return -2.0 ^ 63 end
  local a = v < 0 and -v or v
  local k = 0
  while (a >> k) >= (1 << 24) do k = k + 1 end
  local top, rest = a >> k, a & ((1 << k) - 1)
  local half = k > 0 and (1 << (k - 1)) or 0
  if k > 0 and (rest > half or (rest == half and top & 1 == 1)) then top = top + 1 end
  local r = top * 2.0 ^ k
  return v < 0 and -r or r
end

-- the value v stored into an element of type t: ok, value | false
local function convert(v, t)
  if type(v) ~= "number" then return false end
  if is_int(t) then
    if math.type(v) == "float" then
      v = math.tointeger(v)
      if not v then return false end
    end
    return true, wrap(v, t)
  end
  if t == "f64" then return true, math.type(v) == "integer" and v + 0.0 or v end
  if math.type(v) == "integer" then return true, int_f32(v) end
  return true, (string.unpack("f", string.pack("f", v)))
end

local function zero(t) return is_int(t) and 0 or 0.0 end

-- equal as stored values: the same Lua number type, NaN equals NaN, -0.0 is not 0.0
local function same(a, b)
  if math.type(a) ~= math.type(b) then return false end
  if a ~= a then return b ~= b end
  if a == 0 and math.type(a) == "float" then return 1 / a == 1 / b end
  return a == b
end

-- an index of an element access: the integer, or nil when it is refused
local function index_of(i, n)
  if type(i) ~= "number" then return nil end
  i = math.tointeger(i)
  if not i or i < 0 or i >= n then return nil end
  return i
end

-- ---- the model of nested tables (src/lang/datatable.c's rules) ---------------------------
-- Walks t over shape from level d; leaf(v) -> ok, value. Appends to out.
local function walk(t, shape, d, leaf, out)
  if d > #shape then
    local ok, v = leaf(t)
    if not ok then return false end
    out[#out + 1] = v
    return true
  end
  if type(t) ~= "table" then return false end
  local base = rawget(t, 0) ~= nil and 0 or 1
  local n = shape[d]
  for i = 0, n - 1 do
    local e = rawget(t, i + base)
    if e == nil or not walk(e, shape, d + 1, leaf, out) then return false end
  end
  for k in next, t do
    if math.type(k) ~= "integer" or k < base or k >= base + n then return false end
  end
  return true
end

local function elements(t, shape, leaf)
  local out = {}
  if not walk(t, shape, 1, leaf, out) then return nil end
  return out
end

-- ---- composite types: the rules of a single write --------------------------------------
local P = lt.struct { id = lt.i32, pos = lt.vec2 }
local CTYPES = {
  vec3 = { ct = lt.vec3, comps = { "f32", "f32", "f32" }, n = 3 },
  ivec2 = { ct = lt.ivec2, comps = { "i32", "i32" }, n = 2 },
  mat2 = { ct = lt.mat2, comps = { "f32", "f32", "f32", "f32" }, n = 2, m = 2 },
  P = { ct = P, comps = { "i32", "f32", "f32" }, struct = true },
}
local vec2 = { ct = lt.vec2, comps = { "f32", "f32" }, n = 2 }
local made = setmetatable({}, { __mode = "k" })   -- value made by a constructor -> {n, m, flat}

-- flatten_args: values, tables of them at most 16 deep, constructor values
local function flatten(x, out, depth)
  local m = made[x]
  if m and not m.struct then
    for _, v in ipairs(m.flat) do out[#out + 1] = v end
    return true
  end
  if type(x) == "table" and getmetatable(x) == nil then
    if depth + 1 > 16 then return false end
    for k = 1, #x do if not flatten(x[k], out, depth + 1) then return false end end
    return true
  end
  out[#out + 1] = x
  return true
end

-- the raw components of e written to a field of composite type c, or nil
local function components(c, e)
  local m = made[e]
  if c.struct then
    if m then return m.struct == c and { table.unpack(m.flat) } or nil end
    if type(e) ~= "table" or getmetatable(e) ~= nil then return nil end
    for k in pairs(e) do if k ~= "id" and k ~= "pos" then return nil end end
    if e.id == nil or e.pos == nil or made[e.id] then return nil end
    local pos = components(vec2, e.pos)
    if not pos then return nil end
    return { e.id, pos[1], pos[2] }
  end
  if m then
    if m.struct or m.n ~= c.n or m.m ~= c.m then return nil end
    return { table.unpack(m.flat) }
  end
  if type(e) ~= "table" or getmetatable(e) ~= nil then return nil end
  local out = {}
  if not flatten(e, out, 0) or #out ~= #c.comps then return nil end
  return out
end

-- e converted for c's components: ok, {values} | false
local function composite_value(c, e, scalar_ok)
  local raw
  if scalar_ok and type(e) == "number" then
    raw = {}
    for k = 1, #c.comps do raw[k] = e end
  else
    raw = components(c, e)
    if not raw then return false end
  end
  local out = {}
  for k, t in ipairs(c.comps) do
    local ok, v = convert(raw[k], t)
    if not ok then return false end
    out[k] = v
  end
  return true, out
end

-- ---- generators ------------------------------------------------------------------------
local ERRMT = {
  __index = function() error("__index called") end,
  __len = function() error("__len called") end,
  __pairs = function() error("__pairs called") end,
  __newindex = function() error("__newindex called") end,
}
local function junk()
  return pick {
    "1", "x", "", true, false, {}, setmetatable({ 1 }, ERRMT), 0 / 0, math.huge, -math.huge, 1.5, -0.0,
    math.maxinteger, math.mininteger, 2.0 ^ 63, -2.0 ^ 63, 2.0 ^ 64, 1e300, -1e-300, 4.5e15 + 0.5,
    (1 << 53) + 1, (1 << 62) + (1 << 38) + 1, function() end, lt.f32,
  }
end

local function number_for(t)
  local r = below(12)
  if r < 5 then
    return is_int(t) and (below(2001) - 1000) or (below(20001) - 10000) / 16
  elseif r < 7 then
    return pick { 0, -0.0, 1, -1, 127, 128, 255, 256, -129, 32767, 65535, 1 << 31, (1 << 32) + 7, 3.0, -2.0,
      math.maxinteger, math.mininteger, 1e30, 3.4028235677973366e38, 1e-45 }
  elseif r < 9 then
    return (rnd() >> below(63)) * (chance(0.5) and 1 or -1)
  elseif r < 11 then
    return is_int(t) and pick { 2.5, 0 / 0, math.huge, 2.0 ^ 63 } or pick { 0 / 0, math.huge, -math.huge, 1e300 }
  end
  return junk()
end

local function composite_elem(c)
  local r = below(10)
  local function comp(t) return chance(0.95) and number_for(t) or junk() end
  if c.struct then
    if r == 0 then return junk() end
    local e = { id = comp("i32"), pos = { comp("f32"), comp("f32") } }
    if r == 1 then e.extra = 1 elseif r == 2 then e.pos = { 1, 2, 3 } elseif r == 3 then e.id = nil end
    if r == 5 then                                                       -- a vector value as the member
      local x, y = below(64) / 4, below(9) - 4
      e.pos = chance(0.5) and lt.vec2(x, y) or lt.ivec2(y, x // 1)
      made[e.pos] = { n = 2, flat = getmetatable(e.pos) and { e.pos[0], e.pos[1] } }
    end
    if r == 4 then
      local id, x, y = below(100), below(64) / 4, -below(64) / 4
      local v = P { id = id, pos = lt.vec2(x, y) }
      made[v] = { struct = c, flat = { id, x, y } }
      return v
    end
    return e
  end
  local flat = {}
  for k = 1, #c.comps do flat[k] = comp(c.comps[k]) end
  if r == 0 then return junk() end
  if r == 1 then flat[#flat + 1] = 1 end                                -- one component too many
  if r == 2 then flat[#flat] = nil end
  if r == 3 and #flat >= 2 then return { { flat[1], flat[2] }, table.unpack(flat, 3) } end   -- nested
  if r == 4 then                                                         -- a constructor's value
    local vals, ct = {}, c.ct
    if c.n == 2 and c.m == nil and chance(0.5) then ct = pick { lt.vec2, lt.ivec2, lt.dvec2 } end  -- same shape
    for k = 1, #c.comps do vals[k] = ct.dtype.is_int and below(100) - 50 or below(400) / 8 end
    local v = ct(table.unpack(vals))
    made[v] = { n = c.n, m = c.m, flat = vals }
    return v
  end
  if r == 5 then local cyc = { flat[1] }; cyc[2] = cyc; return cyc end    -- contains itself
  if r == 6 and c.m then return { { flat[1], flat[2] }, { flat[3], flat[4] } } end
  return flat
end

-- a nested table of `shape` whose leaves come from gen(); then maybe one mutation
local function gen_table(shape, gen)
  local levels = {}
  local function build(d)
    if d > #shape then return gen() end
    local t, base = {}, chance(0.3) and 0 or 1
    levels[#levels + 1] = { t = t, base = base, n = shape[d], d = d }
    for i = 0, shape[d] - 1 do t[i + base] = build(d + 1) end
    return t
  end
  local top = build(1)
  if #levels > 0 and chance(0.45) then
    local L = pick(levels)
    local t, i = L.t, below(L.n) + L.base
    local r = below(12)
    if r == 0 then t[i] = nil                                             -- a hole
    elseif r == 1 then t[L.n + L.base] = gen()                              -- one entry too many
    elseif r == 2 then t[pick { "n", 1.5, true, -1 }] = 1                   -- a key that is not an index
    elseif r == 3 then t[i] = junk()                                       -- junk where a row or a value goes
    elseif r == 4 then t[i] = top                                          -- a cycle
    elseif r == 5 then setmetatable(t, ERRMT)                              -- metamethods that error (not used)
    elseif r == 6 then                                                     -- too deep
      local deep, c = {}, nil
      c = deep
      for _ = 1, 40 do c[1] = {}; c = c[1] end
      t[i] = deep
    elseif r == 7 and L.base == 1 then t[0] = gen()                        -- counts from 0 then
    elseif r == 8 then t[i] = gen()
    else t[i] = junk() end
  end
  return top
end

local function gen_index(n)
  if chance(0.85) then return below(n) end
  return pick { -1, n, n + 7, 1 << 40, math.mininteger, 1.5, 0.0, -0.0, 1.0, 2.0 ^ 63, "0", true, {}, 0 / 0,
    math.huge, setmetatable({ 0 }, ERRMT), lt.f32 }
end

-- ---- targets -------------------------------------------------------------------------------
-- A target is a field, a component view or an ndarray with its model: get(p)
-- and set(p, v) for element p (1-based, row-major; a composite element is the
-- list of its component values). Sparse targets share `act` with the fields
-- in the same cells: act.on[unit] says whether the cells of unit (elements
-- (p - 1) // act.unit) are active, act.fields lists the targets to zero when
-- they are deactivated.
local targets = {}
local function prod(shape) local n = 1; for _, e in ipairs(shape) do n = n * e end; return n end

local function add(kind, dtype, shape, obj, extra)
  local t = { kind = kind, dtype = dtype, shape = shape, obj = obj, size = prod(shape) }
  for k, v in pairs(extra or {}) do t[k] = v end
  if not t.get then
    local model = {}
    t.get = function(p) return model[p] end
    t.set = function(p, v) model[p] = v end
    t.reset = function()
      for p = 1, t.size do
        if t.c then
          local z = {}
          for k, ct in ipairs(t.c.comps) do z[k] = zero(ct) end
          model[p] = z
        else
          model[p] = zero(dtype)
        end
      end
    end
    t.reset()
  end
  if t.act then t.act.fields[#t.act.fields + 1] = t end
  targets[#targets + 1] = t
  return t
end

-- a view of components first..last of composite target parent (one: a scalar view)
local function view(parent, obj, first, last, c)
  return add(c and "cfield" or "field", c and "view" or parent.c.comps[first], parent.shape, obj, {
    c = c, act = nil, view_of = parent,
    get = function(p)
      local e = parent.get(p)
      return c and { table.unpack(e, first, last) } or e[first]
    end,
    set = function(p, v)
      local e = { table.unpack(parent.get(p)) }
      if c then for k = first, last do e[k] = v[k - first + 1] end else e[first] = v end
      parent.set(p, e)
    end,
  })
end

local function new_act(unit) return { unit = unit, on = {}, fields = {} } end

for _, dt in ipairs { "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64" } do
  local shape = pick { { 5 }, { 2, 3 }, { 2, 1, 3 } }
  add("field", dt, shape, lt.field(lt[dt], shape, "x_" .. dt))
  local nshape = pick { { 4 }, { 3, 2 }, { 1, 2, 2 } }
  add("nd", dt, nshape, lt.ndarray(lt[dt], nshape))
end
add("field", "f64", {}, lt.field(lt.f64, {}, "s0"))
local sp = lt.field(lt.f32, nil, "sp")
lt.root:pointer(lt.i, 4):dense(lt.i, 4):place(sp)
add("field", "f32", { 16 }, sp, { act = new_act(4) })
local ctargets = {}
for _, name in ipairs { "vec3", "ivec2", "mat2", "P" } do
  local c, shape = CTYPES[name], pick { { 3 }, { 2, 2 } }
  ctargets[name] = add("cfield", name, shape, lt.field(c.ct, shape, "v_" .. name), { c = c })
end
add("cfield", "vec3", {}, lt.field(lt.vec3, {}, "v0"), { c = CTYPES.vec3 })
view(ctargets.vec3, ctargets.vec3.obj.y, 2, 2)                         -- v.y: a scalar field
view(ctargets.P, ctargets.P.obj.pos, 2, 3, vec2)                      -- s.pos: a vector field
-- an lt.tree type's instances: a scalar and a vector field in the same bitmasked cells
local Grid = lt.tree { fields = { m = lt.i32, vel = lt.vec2 }, lt.dense(lt.i, 2) { lt.bitmasked(lt.i, 3) { "m", "vel" } } }
for _ = 1, 2 do
  local g, act = Grid:instantiate(), new_act(1)
  add("field", "i32", { 6 }, g.m, { act = act })
  add("cfield", "vec2", { 6 }, g.vel, { c = vec2, act = act })
end

-- the position of element p (1-based, row-major) as indices
local function indices(shape, p)
  local idx, r = {}, p - 1
  for d = #shape, 1, -1 do idx[d] = r % shape[d]; r = r // shape[d] end
  return idx
end

-- the element at idx through chained indexing (x[i][j]) or the 0-D value
local function read(tg, idx)
  if #tg.shape == 0 then return tg.obj.value end
  local v = tg.obj
  for _, i in ipairs(idx) do v = v[i] end
  return v
end

local function write(tg, idx, val)
  if #tg.shape == 0 then tg.obj.value = val; return end
  local v = tg.obj
  for d = 1, #idx - 1 do v = v[idx[d]] end
  v[idx[#idx]] = val
end

-- ---- checking ---------------------------------------------------------------------------
local findings, case_no, accepted, rejected = 0, 0, 0, 0
local function finding(msg)
  findings = findings + 1
  print(("FINDING seed %d case %d: %s"):format(SEED, case_no, msg))
end

local function check_error(what, err)
  if type(err) ~= "string" then return finding(what .. ": the error is a " .. type(err)) end
  if err:find("internal error", 1, true) then finding(what .. ": " .. err) end
  if err:find("lattice/[%w_]+%.lua:%d+:") then finding(what .. ": a stdlib location: " .. err) end
  if err:sub(1, #HERE) ~= HERE then finding(what .. ": not at this script's line: " .. err) end
end

local function show(v, depth)
  if type(v) == "table" then
    depth = (depth or 0) + 1
    if getmetatable(v) ~= nil then return "<" .. (made[v] and "value" or "table with a metatable") .. ">" end
    if depth > 4 then return "{...}" end
    local out = {}
    for i = 1, math.min(rawlen(v), 8) do out[i] = show(rawget(v, i), depth) end
    return "{" .. table.concat(out, ", ") .. "}"
  end
  if math.type(v) == "float" and v == 0 and 1 / v < 0 then return "-0.0" end
  return tostring(v)
end

local function same_elem(tg, got, want)
  if not tg.c then return same(got, want) end
  local flat = {}
  local function collect(x) if type(x) == "table" and not x.id then for _, y in ipairs(x) do collect(y) end else flat[#flat + 1] = x end end
  if tg.c.struct then flat = { got.id, got.pos[1], got.pos[2] } else collect(got) end
  for k = 1, #want do if not same(flat[k], want[k]) then return false end end
  return #flat == #want
end

-- every element of tg against the model, through to_table and some single reads
local function verify(tg, what)
  local ok, t = pcall(function() return tg.obj:to_table() end)
  if not ok then return finding(what .. ": to_table failed: " .. tostring(t)) end
  for p = 1, tg.size do
    local idx = indices(tg.shape, p)
    local e = t
    for _, i in ipairs(idx) do e = type(e) == "table" and e[i + 1] or nil end
    if not same_elem(tg, e, tg.get(p)) then
      return finding(("%s: %s element %s: to_table gives %s, the model %s"):format(what, tostring(tg.obj),
        show(idx), show(e), show(tg.get(p))))
    end
  end
  for _ = 1, 2 do
    local p = below(tg.size) + 1
    local idx = indices(tg.shape, p)
    local ok2, v = pcall(read, tg, idx)
    if not ok2 or not same_elem(tg, v, tg.get(p)) then
      return finding(("%s: %s[%s] reads %s, the model %s"):format(what, tostring(tg.obj), show(idx), show(v),
        show(tg.get(p))))
    end
  end
end

-- runs fn; the model says whether it must succeed (want_ok); on success apply()
local function expect(what, want_ok, fn, apply)
  local ok, err = pcall(fn)
  if ok then accepted = accepted + 1 else rejected = rejected + 1 end
  if ok ~= want_ok then
    return finding(what .. (want_ok and (": refused: " .. tostring(err)) or ": accepted, the model refuses it"))
  end
  if not ok then check_error(what, err) elseif apply then apply() end
end

local function leaf_for(tg)
  if tg.c then return function(e) return composite_value(tg.c, e) end end
  return function(v) return convert(v, tg.dtype) end
end

local function gen_value(tg)
  if tg.c then return composite_elem(tg.c) end
  return number_for(tg.dtype)
end

-- ---- the operations ---------------------------------------------------------------------
local ops = {}

function ops.from_table(tg)
  local t = #tg.shape == 0 and gen_value(tg) or gen_table(tg.shape, function() return gen_value(tg) end)
  local vals = elements(t, tg.shape, leaf_for(tg))
  expect("from_table", vals ~= nil, function() tg.obj:from_table(t) end, function()
    for p = 1, tg.size do tg.set(p, vals[p]) end
    if tg.act then for u = 0, (tg.size - 1) // tg.act.unit do tg.act.on[u] = true end end
  end)
end

function ops.write(tg)
  local idx = {}
  for d, n in ipairs(tg.shape) do idx[d] = gen_index(n) end
  local v = gen_value(tg)
  local p, good = 0, true
  for d, n in ipairs(tg.shape) do
    local i = index_of(idx[d], n)
    if not i then good = false break end
    p = p * n + i
  end
  local ok, val
  if tg.c then ok, val = composite_value(tg.c, v) else ok, val = convert(v, tg.dtype) end
  expect("write " .. show(idx) .. " = " .. show(v), good and ok, function() write(tg, idx, v) end, function()
    tg.set(p + 1, val)
    if tg.act then tg.act.on[p // tg.act.unit] = true end
  end)
end

function ops.read(tg)
  local idx = {}
  for d, n in ipairs(tg.shape) do idx[d] = gen_index(n) end
  local p, good = 0, true
  for d, n in ipairs(tg.shape) do
    local i = index_of(idx[d], n)
    if not i then good = false break end
    p = p * n + i
  end
  local got
  expect("read " .. show(idx), good, function() got = read(tg, idx) end, function()
    if not same_elem(tg, got, tg.get(p + 1)) then
      finding(("read %s of %s gives %s, the model %s"):format(show(idx), tostring(tg.obj), show(got),
        show(tg.get(p + 1))))
    end
  end)
end

function ops.index_table(tg)          -- x[{i, j}] / a[{i, j}], reads and writes
  if #tg.shape == 0 then return ops.read(tg) end
  local idx = {}
  for d = 1, #tg.shape do idx[d] = below(tg.shape[d]) end
  local n = #tg.shape + (chance(0.2) and pick { -1, 1 } or 0)
  local key = { table.unpack(idx, 1, math.min(n, #tg.shape)) }
  if n > #tg.shape then key[n] = 0 end
  local p = 0
  for d, e in ipairs(tg.shape) do p = p * e + idx[d] end
  local v = gen_value(tg)
  local ok, val
  if tg.c then ok, val = composite_value(tg.c, v) else ok, val = convert(v, tg.dtype) end
  expect("x[{...}] = " .. show(v), ok and n == #tg.shape, function() tg.obj[key] = v end, function()
    tg.set(p + 1, val)
    if tg.act then tg.act.on[p // tg.act.unit] = true end
  end)
end

function ops.too_many(tg)             -- x[i][j][k] on a 2-D field: an error naming it
  if tg.c then return ops.read(tg) end
  local idx = {}
  for d = 1, #tg.shape do idx[d] = below(tg.shape[d]) end
  local ok, err = pcall(function()
    if #tg.shape == 0 then return tg.obj.value[0] end
    local v = tg.obj
    for d = 1, #idx - 1 do v = v[idx[d]] end
    return v[idx[#idx]][0]                   -- (the last read and the extra index on one line)
  end)
  rejected = rejected + 1
  local want = tg.kind == "nd" and "dimensions, got " .. (#tg.shape + 1) .. " indices"
    or "has " .. #tg.shape .. " indices, got " .. (#tg.shape + 1)
  if ok or not tostring(err):find(want, 1, true) then finding("one index too many: " .. tostring(err)) end
  if not ok then check_error("one index too many", err) end
end

function ops.fill(tg)
  local v = chance(0.7) and number_for(tg.c and tg.c.comps[1] or tg.dtype) or gen_value(tg)
  local ok, val
  if tg.c then ok, val = composite_value(tg.c, v, true) else ok, val = convert(v, tg.dtype) end
  expect("fill " .. show(v), ok, function() tg.obj:fill(v) end, function()
    for p = 1, tg.size do
      if not tg.act or tg.act.on[(p - 1) // tg.act.unit] then
        tg.set(p, type(val) == "table" and { table.unpack(val) } or val)
      end
    end
  end)
end

function ops.wrong_self(tg)           -- x.fill(v) for x:fill(v), or a method on something else
  local name = pick { "fill", "to_table", "from_table" }
  local self = pick { 1, nil, {}, "x", setmetatable({}, ERRMT), targets[below(#targets) + 1].obj }
  local want_ok = false
  for _, t in ipairs(targets) do
    if rawequal(t.obj, self) and t.kind == tg.kind and (t.c == nil) == (tg.c == nil) then want_ok = nil end
  end
  if want_ok == nil then return end                      -- (the right kind of object: a plain call)
  expect("x." .. name .. "(" .. show(self) .. ")", false, function() tg.obj[name](self, 0) end)
end

function ops.deactivate(tg)
  if not tg.act then return ops.fill(tg) end
  tg.obj:deactivate_all()
  for _, f in ipairs(tg.act.fields) do f.reset() end
  tg.act.on = {}
end

-- lt.ndarray_from / lt.ndarray(dtype, shape, values): new arrays, checked whole
local DTS = { "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64" }
local function infer(t)                                   -- the documented shape walk
  local shape, seen = {}, {}
  while type(t) == "table" do
    if seen[t] or #shape == 8 then return nil end
    seen[t] = true
    local base = rawget(t, 0) ~= nil and 0 or 1
    local n = rawlen(t) + 1 - base
    if n < 1 then return nil end
    shape[#shape + 1] = n
    t = rawget(t, base)
  end
  return shape
end

local function check_new(a, dt, shape, vals, what)
  local tg = { kind = "nd", dtype = dt, shape = shape, obj = a, size = prod(shape), get = function(p) return vals[p] end }
  verify(tg, what)
end

function ops.ndarray_from()
  local dt = pick(DTS)
  local shape = {}
  for d = 1, below(3) + 1 do shape[d] = below(3) + 1 end
  local t = gen_table(shape, function() return number_for(dt) end)
  if chance(0.05) then t = junk() end
  local s = type(t) == "table" and infer(t)
  local vals = s and prod(s) <= 1 << 20 and elements(t, s, function(v) return convert(v, dt) end)
  local a
  expect("lt.ndarray_from", vals and true or false, function() a = lt.ndarray_from(lt[dt], t) end,
    function() check_new(a, dt, s, vals, "lt.ndarray_from") end)
end

local function shape_ok(shape)                            -- the documented shape rules
  if math.type(shape) == "integer" then shape = { shape } end
  if type(shape) ~= "table" then return nil end
  local n = rawlen(shape)
  if n < 1 or n > 8 then return nil end
  local s, size = {}, 1
  for i = 1, n do
    local e = rawget(shape, i)
    if math.type(e) ~= "integer" or e <= 0 or e > 0x7fffffff then return nil end
    size = size * e
    if size > 0x7fffffff then return nil end
    s[i] = e
  end
  for k in next, shape do if math.type(k) ~= "integer" or k < 1 or k > n then return nil end end
  return s
end

function ops.ndarray_new()
  local dt = pick(DTS)
  local shape = {}
  for d = 1, below(3) + 1 do shape[d] = below(3) + 1 end
  local spec = shape
  local r = below(10)
  if r == 0 then spec = pick { 0, -1, 1.5, "3", {}, { 0 }, { 3, -2 }, { 2.0 }, { 1 << 31 }, { 1 << 20, 1 << 12 },
    { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, { 2, x = 1 }, setmetatable({ 2 }, ERRMT) }
  elseif r == 1 then spec = shape[1] end
  local values
  if chance(0.8) then values = gen_table(shape, function() return number_for(dt) end) end
  local s = shape_ok(spec)
  local vals = s and (values == nil and {} or elements(values, s, function(v) return convert(v, dt) end))
  if s and values == nil then for p = 1, prod(s) do vals[p] = zero(dt) end end
  local a
  expect("lt.ndarray", vals and true or false, function() a = lt.ndarray(lt[dt], spec, values) end,
    function() check_new(a, dt, s, vals, "lt.ndarray") end)
end

-- ---- findings kept as regression cases (each ran wrong once) -------------------------------
local function regressions()
  -- x[nil][0] on a 2-D field read as a table (the nil was not counted as an index)
  local x2 = targets[1]
  for _, tg in ipairs(targets) do if #tg.shape == 2 and not tg.c then x2 = tg break end end
  expect("x[nil][0]", false, function() return x2.obj[nil][0] end)
  expect("x[nil][0] = 1", false, function() x2.obj[nil][0] = 1 end)
  -- x.fill(5) for x:fill(5) failed inside field.lua
  for _, tg in ipairs(targets) do
    expect("x.fill(5)", false, function() tg.obj.fill(5) end)
    expect("x.to_table()", false, function() tg.obj.to_table() end)
  end
end

-- ---- the run ------------------------------------------------------------------------------
local weights = { from_table = 6, write = 6, read = 4, index_table = 2, too_many = 1, fill = 3, deactivate = 1,
  wrong_self = 1, ndarray_from = 2, ndarray_new = 2 }
local list = {}
for name, w in pairs(weights) do for _ = 1, w do list[#list + 1] = name end end
table.sort(list)

local t0 = os.clock()
collectgarbage()
local heap0 = collectgarbage("count")
local heap_mid, slowest = nil, 0
regressions()
for n = 1, CASES do
  case_no = n
  local c0 = os.clock()
  local op = pick(list)
  local tg = pick(targets)
  ops[op](tg)
  if op ~= "ndarray_from" and op ~= "ndarray_new" then verify(tg, op) end
  slowest = math.max(slowest, os.clock() - c0)
  if n == CASES // 10 then collectgarbage(); heap_mid = collectgarbage("count") end
  if findings >= 20 then print("stopping after 20 findings") break end
end
collectgarbage()
local heap1 = collectgarbage("count")
local rss = ""
local statm = io.open("/proc/self/statm")
if statm then
  local _, resident = statm:read("n", "n")
  if resident then rss = (", rss %.0f MB"):format(resident * 4096 / 2 ^ 20) end
  statm:close()
end
print(("data_entry: seed %d, %d cases (%d accepted, %d refused), %.1f s, slowest case %.1f ms, Lua heap %.0f -> %.0f KB%s, %d findings")
  :format(SEED, case_no, accepted, rejected, os.clock() - t0, slowest * 1000, heap0, heap1, rss, findings))
if heap_mid and heap1 > heap_mid + 16 * 1024 then
  finding(("the Lua heap grew from %.0f KB to %.0f KB"):format(heap_mid, heap1))
end
if slowest > 5 then finding(("a case took %.1f s"):format(slowest)) end
if findings > 0 then error(findings .. " findings", 0) end
