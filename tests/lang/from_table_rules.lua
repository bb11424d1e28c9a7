-- The data entry points take the same values single writes take, and the
-- same nested tables: x:from_table (scalar and composite fields),
-- a:from_table, lt.ndarray(dtype, shape, t) and lt.ndarray_from all count
-- each level from 1 or from 0, refuse strings, longer rows and other keys,
-- check the whole table before writing anything, and stop at cycles and
-- tables nested deeper than the 8 dimensions an array can have. A scalar
-- fills every component of a composite field. (docs/language.md)
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
local function show(t)
  if type(t) ~= "table" then return tostring(t) end
  local out = {}
  for i = 1, #t do out[i] = show(t[i]) end
  return "{" .. table.concat(out, ", ") .. "}"
end

-- ---- scalar fields: the shape and the values, nothing written on an error -----------
local x = lt.field(lt.f32, { 2, 3 })
local good = { { 1, 2, 3 }, { 4, 5, 6 } }
x:from_table(good)
local function unchanged(what, fn, text)
  C.check_error(what, fn, text)
  C.check(what .. ": nothing written", show(x:to_table()), show({ { 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0 } }))
end
unchanged("a string", function() x:from_table({ { 9, 9, 9 }, { 9, 9, "6" } }) end,
  "x:from_table of field 'x': t[2][3] is the string \"6\", not a number (the field has shape (2, 3))")
unchanged("a longer row", function() x:from_table({ { 9, 9, 9 }, { 9, 9, 9, 9 } }) end,
  "t[2] has an entry [4] outside the extent 3, counting from 1")
unchanged("a longer table", function() x:from_table({ { 9, 9, 9 }, { 9, 9, 9 }, { 9, 9, 9 } }) end,
  "t has an entry [3] outside the extent 2, counting from 1")
unchanged("a 0-based row one too long", function() x:from_table({ { 9, 9, 9 }, { [0] = 9, 9, 9, 9 } }) end,
  "t[2] has an entry [3] outside the extent 3, counting from 0")
unchanged("a string key", function() x:from_table({ { 9, 9, 9, n = 3 }, { 9, 9, 9 } }) end,
  "t[1] has an entry with the key \"n\", which is not an index")
unchanged("a hole", function() x:from_table({ { 9, nil, 9 }, { 9, 9, 9 } }) end, "t[1][2] is missing")
unchanged("a boolean", function() x:from_table({ { 9, 9, 9 }, { true, 9, 9 } }) end,
  "t[2][1] is a boolean, not a number")
unchanged("a row that is a number", function() x:from_table({ 9, { 9, 9, 9 } }) end,
  "t[1] is 9, not a table")
-- metatables are not consulted: the table is read as it is
local proxy = setmetatable({}, { __index = function() error("not called") end, __len = function() return 2 end })
unchanged("a table of metamethods", function() x:from_table(proxy) end, "t[1] is missing")
-- a table that contains itself ends where the shape does
local cyc = {}
cyc[1], cyc[2] = cyc, cyc
unchanged("a cycle", function() x:from_table(cyc) end, "t[1][1] is a table, not a number")

local n = lt.field(lt.i32, 3)
C.check_error("a fractional float", function() n:from_table({ 1, 2, 2.5 }) end,
  "t[3] is 2.5, not an integer; the field holds i32")
C.check_error("inf", function() n:from_table({ 1, 2, math.huge }) end, "t[3] is inf, not an integer")
C.check_error("NaN", function() n:from_table({ 1, 2, 0 / 0 }) end, "not an integer")
n:from_table({ 1.0, -2, (1 << 40) + 5 })                   -- integral floats; integers wrap as writes do
C.check("integral float", n[0], 1)
C.check("wrapped", n[2], 5)

-- a 0-D field takes the number itself: the inverse of its to_table
local s = lt.field(lt.f64, {})
s:from_table(2.5)
C.check("0-D from_table", s.value, 2.5)
C.check("0-D round trip", s:to_table(), 2.5)
C.check_error("0-D string", function() s:from_table("2") end, "t is the string \"2\", not a number")

-- ---- composite fields: the rules of a single write, element by element ------------
-- every case: does v[1] = e succeed, and does v:from_table put the same value there?
local function agree(ct, shape, cases)
  local w, f = lt.field(ct, shape), lt.field(ct, shape)
  for i, e in ipairs(cases) do
    local ok1, err1 = pcall(function() w[0] = e end)
    local t = {}
    for p = 1, shape do t[p] = w:to_table()[p] end
    t[1] = e
    local before = show(f:to_table())
    local ok2, err2 = pcall(function() f:from_table(t) end)
    C.check(tostring(ct) .. " case " .. i .. " accepted alike (" .. tostring(err1) .. " / " .. tostring(err2) .. ")",
      ok1, ok2)
    if ok1 and ok2 then
      C.check(tostring(ct) .. " case " .. i .. " same value", show(f:to_table()[1]), show(w[0]))
    elseif not ok2 then
      C.check(tostring(ct) .. " case " .. i .. " nothing written", show(f:to_table()), before)
      if not tostring(err2):find("t[1]", 1, true) then C.fail("case " .. i .. " names no entry: " .. err2) end
    end
  end
end
agree(lt.vec3, 2, { { 1, 2, 3 }, lt.vec3(4, 5, 6), { 1, 2, 3, 4 }, { 1, 2 }, { 1, 2, "3" }, { { 1, 2 }, 3 },
  { [0] = 1, 2, 3 }, 7, setmetatable({ 1, 2, 3 }, {}) })
agree(lt.mat2, 2, { { { 1, 2 }, { 3, 4 } }, { 1, 2, 3, 4 }, lt.mat2(5, 6, 7, 8), { { 1, 2 }, { 3, 4, 5 } },
  { { 1, 2 }, { 3, false } } })
agree(lt.ivec2, 2, { { 1, 2 }, { 1.0, 2.0 }, { 1, 2.5 }, { 1, 0 / 0 } })
local P = lt.struct { pos = lt.vec2, mass = lt.f32, id = lt.i32 }
agree(P, 2, { { pos = { 1, 2 }, mass = 3, id = 4 }, { pos = { 1, 2 }, mass = 3 },
  { pos = { 1, 2 }, mass = 3, id = 4, extra = 1 }, { pos = { 1, 2 }, mass = 3, id = 4.5 },
  { pos = { 1, 2, 3 }, mass = 3, id = 4 }, P { mass = 2 } })

-- a single write checks every component before writing any
local q = lt.field(lt.struct { a = lt.f32, b = lt.i32 }, 1)
C.check_error("partial write", function() q[0] = { a = 5, b = 0.5 } end, "cannot write the float 0.5")
C.check("partial write: a unchanged", q[0].a, 0.0)

-- x:fill with a scalar fills every component; messages name the field
local v = lt.field(lt.vec2, 3)
local m = lt.field(lt.mat2, 2)
local body = lt.field(P, 2)
v:fill(1.5)
m:fill(2)
body:fill(0)
C.check("vector fill", show(v[2]), show({ 1.5, 1.5 }))
C.check("matrix fill", show(m[1]), show({ { 2.0, 2.0 }, { 2.0, 2.0 } }))
body[1] = { pos = { 1, 2 }, mass = 3, id = 4 }
body:fill(0)
C.check("struct fill", show(body:to_table()[2].pos) .. body[1].mass .. body[1].id, "{0.0, 0.0}0.00")
C.check_error("struct fill, fractional into i32", function() body:fill(0.5) end,
  "cannot write the float 0.5 to the integer field 'body.id'")
C.check("struct fill: nothing written", body[1].mass, 0.0)
C.check_error("fill with a string", function() v:fill("1") end, "x:fill: cannot assign a string to field 'v' (vec2)")
C.check_error("fill, wrong count", function() m:fill({ 1, 2, 3 }) end,
  "x:fill: cannot assign 3 components to field 'm' (mat2, 4 components)")

-- ---- ndarrays: the same tables as fields ------------------------------------------------
local a = lt.ndarray(lt.i32, { 2, 3 })
a:from_table({ [0] = { [0] = 1, 2, 3 }, { 4, 5, 6 } })            -- 0-based and 1-based levels mixed
C.check("ndarray 0-based", show(a:to_table()), show({ { 1, 2, 3 }, { 4, 5, 6 } }))
C.check_error("ndarray longer row", function() a:from_table({ { 1, 2, 3, 4 }, { 4, 5, 6 } }) end,
  "a:from_table: t[1] has an entry [4] outside the extent 3, counting from 1 (the ndarray has shape (2, 3))")
C.check_error("ndarray string", function() a:from_table({ { 1, 2, 3 }, { 4, "5", 6 } }) end,
  "a:from_table: t[2][2] is the string \"5\", not a number")
C.check_error("ndarray fraction", function() a:from_table({ { 1, 2, 3 }, { 4, 5, 6.5 } }) end,
  "t[2][3] is 6.5, not an integer; the ndarray holds i32")
C.check("ndarray: nothing written", show(a:to_table()), show({ { 1, 2, 3 }, { 4, 5, 6 } }))
local b = lt.ndarray(lt.f32, { 3 }, { [0] = 1, 2, 3 })
C.check("lt.ndarray 0-based values", b[2], 3.0)
local c = lt.ndarray_from(lt.f64, { [0] = { [0] = 1, 2 }, { [0] = 3, 4 } })
C.check("ndarray_from 0-based shape", show(c.shape), show({ 2, 2 }))
C.check("ndarray_from 0-based values", c[1][1], 4.0)

-- cycles and depth: each a message, never a hang
local t1 = {}
t1[1] = t1
C.check_error("ndarray_from cycle", function() lt.ndarray_from(lt.f32, t1) end,
  "lt.ndarray_from: t[1] is t again: the tables form a cycle")
local t2, t3 = {}, {}
t2[1], t3[1] = t3, t2
C.check_error("ndarray_from longer cycle", function() lt.ndarray_from(lt.f32, t2) end, "t[1][1] is t again")
local deep = {}
local d = deep
for _ = 1, 100000 do d[1] = {}; d = d[1] end
C.check_error("ndarray_from deep", function() lt.ndarray_from(lt.f32, deep) end,
  "the tables nest deeper than 8 levels")
C.check_error("ndarray_from empty", function() lt.ndarray_from(lt.f32, { {} }) end,
  "t[1] is an empty table; every extent must be > 0")
C.check_error("lt.ndarray deep values", function() lt.ndarray(lt.f32, { 1, 1 }, deep) end,
  "t[1][1] is a table, not a number")
C.check_error("shape with a key", function() lt.ndarray(lt.f32, { 2, x = 1 }) end,
  "the shape has an entry with the key \"x\"")
C.check_error("shape of 9", function() lt.ndarray(lt.f32, { 1, 1, 1, 1, 1, 1, 1, 1, 1 }) end,
  "the shape must be an integer or a table of 1 to 8 integers (got a table of 9)")
local vc = { 1, 2 }
vc[3] = vc
C.check_error("vector constructor cycle", function() return lt.vec3(vc) end,
  "lt.vec3: the tables of components nest deeper than 16 levels")
C.check_error("vector write cycle", function() v[0] = vc end, "nest deeper than 16 levels")

-- a[I]: a table of indices or an index vector, in Lua scope and in kernels
a[{ 1, 2 }] = 60
C.check("a[{1, 2}]", a[1][2], 60)
C.check("a[ivec2]", a[lt.ivec2(1, 2)], 60)
local inc = lt.kernel(function(arr)
  for I in lt.grouped(lt.ndrange(arr.shape[1], arr.shape[2])) do arr[I] = arr[I] + I[0] * 10 + I[1] end
end, { arr = lt.ndarray_type(lt.i32, 2) })
inc(a)
for i = 0, 1 do for j = 0, 2 do
  C.check(("kernel a[I] %d %d"):format(i, j), a[i][j], (i == 1 and j == 2 and 60 or i * 3 + j + 1) + i * 10 + j)
end end

C.finish("from_table_rules")
