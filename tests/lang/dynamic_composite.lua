-- lt.append of vectors, matrices, structs and several fields placed together
-- in one dynamic level: parallel appends from a kernel (each list checked as a
-- multiset against a plain-Lua model), Lua-scope appends, lt.length and
-- struct-for over such fields, and the errors.
local lt = require "lattice"
lt.init {}

local function check(what, got, want)
  if got ~= want then error(what .. ": got " .. tostring(got) .. ", want " .. tostring(want), 2) end
end
local function check_error(what, f, text)
  local ok, msg = pcall(f)
  if ok then error(what .. ": no error (wanted '" .. text .. "')", 2) end
  if not tostring(msg):find(text, 1, true) then error(what .. ": wrong message: " .. tostring(msg), 2) end
end
-- a multiset of strings: key -> count
local function bag(list)
  local b = {}
  for _, k in ipairs(list) do b[k] = (b[k] or 0) + 1 end
  return b
end
local function same_bag(what, a, b)
  for k, n in pairs(a) do if b[k] ~= n then error(what .. ": " .. k .. " x" .. n .. " vs x" .. tostring(b[k]), 2) end end
  for k, n in pairs(b) do if a[k] ~= n then error(what .. ": " .. k .. " x" .. tostring(a[k]) .. " vs x" .. n, 2) end end
end

-- ---- vec2 lists: parallel appends from many iterations ----------------------------------
local NL, CAP, NIT = 5, 96, 400
local v = lt.field(lt.vec2, nil, "v")
lt.root:dense(lt.i, NL):dynamic(lt.j, CAP, { chunk = 8 }):place(v)
local push = lt.kernel(function(n)
  for it = 0, n - 1 do
    lt.append(v, it % NL, lt.vec2(it, it * 2 + 0.5))
  end
end, { n = lt.i32 })
push(NIT)
local model = {}
for i = 0, NL - 1 do model[i] = {} end
for it = 0, NIT - 1 do
  local l = model[it % NL]
  if #l < CAP then l[#l + 1] = ("%g,%g"):format(it, it * 2 + 0.5) end
end
for i = 0, NL - 1 do
  check("vec2 length " .. i, lt.length(v, i), #model[i])
  local got = {}
  for j = 0, lt.length(v, i) - 1 do
    local e = v[i][j]
    got[#got + 1] = ("%g,%g"):format(e[1], e[2])
    check("components of one element come from one append", e[2], e[1] * 2 + 0.5)
  end
  same_bag("vec2 list " .. i, bag(got), bag(model[i]))
end

-- struct-for over the vector field and lt.length in a kernel
local sum, cnt = lt.field(lt.f64, {}), lt.field(lt.i32, {})
local lens = lt.field(lt.i32, NL)
lt.kernel(function()
  for i, j in v do
    lt.atomic_add(sum.value, v[i][j].y - v[i][j].x)
    lt.atomic_add(cnt.value, 1)
  end
  for i = 0, NL - 1 do lens[i] = lt.length(v, i) end
end)()
local want_sum = 0
for it = 0, NIT - 1 do want_sum = want_sum + it + 0.5 end
check("struct-for count", cnt.value, NIT)
check("struct-for sum", sum.value, want_sum)
for i = 0, NL - 1 do check("kernel lt.length", lens[i], NIT // NL) end

-- a full list: -1 in a kernel, the value dropped
local small = lt.field(lt.vec2, nil, "small")
lt.root:dynamic(lt.i, 3):place(small)
local idx = lt.field(lt.i32, 5)
lt.kernel(function()
  for k in lt.static_range(5) do idx[k] = lt.append(small, lt.vec2(k, -k)) end
end)()
for k = 0, 4 do check("full list index " .. k, idx[k], k < 3 and k or -1) end
check("full list length", lt.length(small), 3)
check_error("Lua append to a full list", function() lt.append(small, { 1, 2 }) end, "is full")

-- Lua scope: a vec3 and a matrix
local w = lt.field(lt.vec3, nil, "w")
local m = lt.field(lt.mat2, nil, "m")
lt.root:dense(lt.i, 2):dynamic(lt.j, 10):place(w)
lt.root:dense(lt.i, 2):dynamic(lt.j, 10):place(m)
check("Lua vec3 append", lt.append(w, 1, { 1, 2, 3 }), 0)
check("Lua vec3 append 2", lt.append(w, 1, { 4, 5, 6 }), 1)
check("w[1][1].z", w[1][1][3], 6)
check("w length", lt.length(w, 1), 2)
lt.append(m, 0, { { 1, 2 }, { 3, 4 } })
lt.kernel(function() lt.append(m, 0, lt.mat2(5, 6, 7, 8)) end)()
check("matrix appends", lt.length(m, 0), 2)
check("m[0][0][1][2]", m[0][0][1][2], 2)
check("m[0][1][2][1]", m[0][1][2][1], 7)

-- ---- structs -------------------------------------------------------------------------------
local P = lt.struct { pos = lt.vec2, id = lt.i32 }
local parts = lt.field(P, nil, "parts")
lt.root:dense(lt.i, 3):dynamic(lt.j, 64, { chunk = 4 }):place(parts)
lt.kernel(function()
  for k = 0, 59 do
    lt.append(parts, k % 3, P { pos = lt.vec2(k, 0.25 * k), id = k })
  end
end)()
lt.append(parts, 2, { pos = { -1, -2 }, id = 1000 })
local pm = { [0] = {}, {}, {} }
for k = 0, 59 do table.insert(pm[k % 3], tostring(k)) end
table.insert(pm[2], "1000")
for i = 0, 2 do
  local got = {}
  for j = 0, lt.length(parts, i) - 1 do
    local e = parts[i][j]
    got[#got + 1] = tostring(e.id)
    if e.id ~= 1000 then check("struct element", e.pos[1] + e.pos[2], e.id * 1.25) end
  end
  same_bag("struct list " .. i, bag(got), bag(pm[i]))
end

-- ---- several scalar fields placed together -------------------------------------------------
local a, b = lt.field(lt.f32, nil, "a"), lt.field(lt.i32, nil, "b")
lt.root:dense(lt.i, 4):dynamic(lt.j, 200):place(a, b)
lt.kernel(function()
  for k = 0, 299 do lt.append({ a, b }, k % 4, { k * 0.5, k }) end
end)()
check("Lua append of two fields", lt.append({ b, a }, 3, { 7, 3.5 }), 75)
for i = 0, 3 do
  check("a/b length", lt.length(a, i), i == 3 and 76 or 75)
  for j = 0, lt.length(b, i) - 1 do check("a/b element", a[i][j], b[i][j] * 0.5) end
end
-- struct-for over one of them visits every element
cnt.value = 0
lt.kernel(function() for i, j in b do lt.atomic_add(cnt.value, 1) end end)()
check("struct-for over a shared dynamic", cnt.value, 301)

-- ---- errors --------------------------------------------------------------------------------
check_error("one field of two", function() lt.append(a, 0, 1) end, "shares its dynamic level with field 'b'")
check_error("one field of two (kernel)", function() lt.kernel(function() lt.append(b, 0, 1) end)() end,
  "lt.append({b, a}, i, {...})")
check_error("wrong value count", function() lt.append({ a, b }, 0, { 1 }) end, "must be a table of 2 values")
check_error("scalar to a vector field", function() lt.append(v, 0, 3) end, "lt.append")
check_error("scalar to a vector field (kernel)", function() lt.kernel(function() lt.append(v, 0, 3) end)() end,
  "vec2")
check_error("fields of two levels", function() lt.append({ a, w }, 0, { 1, { 1, 2, 3 } }) end,
  "is not in the dynamic level of the first field")
check_error("a field twice", function() lt.append({ a, a }, 0, { 1, 2 }) end, "is given twice")
check_error("not dynamic", function() lt.append(lens, 0, 1) end, "not in a dynamic level")
check_error("a non-integer index", function() lt.append(w, 0.5, { 1, 2, 3 }) end, "must be an integer")
local h = lt.root:dense(lt.i, 2):dynamic(lt.j, 4)
local c1, c2 = lt.field(lt.f32, nil, "c1"), lt.field(lt.f32, nil, "c2")
h:place(c1, c2)
check_error("handle of two fields", function() lt.append(h, 0, 1) end, "holds 2 fields")
check_error("several axes", function() lt.root:dynamic(lt.ij, 4) end, "exactly one axis, e.g. lt.j (got 2 axes), as in Taichi")
print("dynamic_composite: ok")
