-- Tree-wide deactivation (lt.deactivate_all(), lt.root:deactivate_all(),
-- g:deactivate_all()), x:copy_from(y) for fields and ndarrays, and
-- lt.no_activate, each against a plain-Lua model of the cells.
local lt = require "lattice"

local function expect_error(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error matching " .. pattern)
  assert(tostring(err):find(pattern, 1, true), "unexpected message: " .. tostring(err))
end

local function count_active(f) return #f:active() end

-- ---- tree-wide deactivation --------------------------------------------------------------

do
  -- three lt.root trees (one materialises before the next starts) and two instances
  local a = lt.field(lt.f32)
  lt.root:pointer(lt.ij, 8):bitmasked(lt.ij, 4):place(a)
  a[1][1] = 1                                          -- materialises a's tree
  local l = lt.field(lt.i32)
  lt.root:dense(lt.i, 4):dynamic(lt.j, 64, { chunk = 8 }):place(l)
  local dense = lt.field(lt.i32, 16)                   -- a dense tree: left as it is
  local G = lt.tree { fields = { r = lt.f32 }, lt.pointer(lt.i, 8) { lt.dense(lt.i, 4) { "r" } } }
  local g1, g2 = G:instantiate(), G:instantiate()

  local function fill()
    a[1][1], a[20][30], a[31][0] = 1, 2, 3
    for k = 1, 5 do lt.append(l, 1, k) end
    lt.append(l, 3, 9)
    dense[4] = 44
    g1.r[5], g1.r[30] = 1, 2
    g2.r[0] = 7
  end

  fill()
  assert(count_active(a) == 3 and lt.length(l, 1) == 5 and count_active(g1.r) == 8 and count_active(g2.r) == 4)

  lt.deactivate_all()                                  -- every tree, instances included
  assert(count_active(a) == 0 and a[20][30] == 0)
  assert(lt.length(l, 1) == 0 and lt.length(l, 3) == 0 and l[1][0] == 0)
  assert(count_active(g1.r) == 0 and count_active(g2.r) == 0 and g1.r[5] == 0)
  assert(dense[4] == 44)                               -- dense cells are always active: kept
  for _, n in ipairs(lt.stats().snodes) do
    if n.kind ~= "dense" then assert(n.active == 0, n.label .. " still has " .. n.active .. " active") end
  end

  fill()
  lt.root:deactivate_all()                             -- every lt.root tree, not instances
  assert(count_active(a) == 0 and lt.length(l, 1) == 0 and dense[4] == 44)
  assert(count_active(g1.r) == 8 and count_active(g2.r) == 4 and g1.r[30] == 2)

  g1:deactivate_all()                                  -- one instance
  assert(count_active(g1.r) == 0 and count_active(g2.r) == 4 and g2.r[0] == 7)

  -- in a kernel: an instance argument
  fill()
  local clear = lt.kernel(function(g) g:deactivate_all() end, { g = G })
  clear(g2)
  assert(count_active(g2.r) == 0 and count_active(g1.r) == 8 and count_active(a) == 3)

  -- cells work again afterwards, and a destroyed instance is skipped
  g2.r[9] = 5
  assert(g2.r[9] == 5 and count_active(g2.r) == 4)
  g1:destroy()
  lt.deactivate_all()
  assert(count_active(g2.r) == 0 and count_active(a) == 0)

  -- errors
  expect_error("the argument is nil", lt.deactivate_all, nil)
  expect_error("runs in Lua scope only", lt.kernel(function() lt.deactivate_all() end))
  expect_error("runs in Lua scope only", lt.kernel(function() lt.root:deactivate_all() end))
  expect_error("was destroyed", function() g1:deactivate_all() end)
end

-- ---- x:copy_from(y) ----------------------------------------------------------------------

do
  -- dense <- dense
  local a, b = lt.field(lt.f32, { 4, 5 }), lt.field(lt.f32, { 4, 5 })
  for i = 0, 3 do
    for j = 0, 4 do b[i][j] = i * 10 + j + 0.5 end
  end
  a:copy_from(b)
  for i = 0, 3 do
    for j = 0, 4 do assert(a[i][j] == i * 10 + j + 0.5) end
  end
  b[2][2] = -1
  a:copy_from(b)                                       -- the same compiled copy, run again
  assert(a[2][2] == -1)

  -- sparse <- sparse: afterwards x reads what y reads; x's active cells are a
  -- superset (its own stay active, y's are activated)
  local xs, ys = lt.field(lt.i32), lt.field(lt.i32)
  lt.root:pointer(lt.i, 16):dense(lt.i, 4):place(xs)
  lt.root:pointer(lt.i, 16):dense(lt.i, 4):place(ys)
  local model_x, model_y = {}, {}
  for _, i in ipairs { 1, 2, 30, 61 } do
    xs[i] = 100 + i
    model_x[i] = 100 + i
  end
  for _, i in ipairs { 13, 30, 33, 62 } do
    ys[i] = 7 * i
    model_y[i] = 7 * i
  end
  xs:copy_from(ys)
  for i = 0, 63 do assert(xs[i] == (model_y[i] or 0), "xs[" .. i .. "] = " .. xs[i]) end
  local act = {}
  for _, I in ipairs(xs:active()) do act[I[1]] = true end
  for _, blk in ipairs { 0, 3, 7, 8, 15 } do          -- blocks of 1, 2, 13, 30, 33, 61, 62
    for c = 0, 3 do assert(act[blk * 4 + c], "cell " .. (blk * 4 + c) .. " not active") end
  end
  assert(#xs:active() == 5 * 4)

  -- sparse <- dense activates everything; dense <- sparse reads zeros where inactive
  local d = lt.field(lt.i32, 64)
  for i = 0, 63 do d[i] = i * i end
  local s2 = lt.field(lt.i32)
  lt.root:bitmasked(lt.i, 16):dense(lt.i, 4):place(s2)
  s2:copy_from(d)
  assert(#s2:active() == 64 and s2[63] == 63 * 63)
  d:copy_from(ys)
  for i = 0, 63 do assert(d[i] == (model_y[i] or 0)) end

  -- vector fields, component by component
  local v, w = lt.field(lt.vec2, 8), lt.field(lt.vec2, 8)
  for i = 0, 7 do w[i] = { i, -i } end
  v:copy_from(w)
  for i = 0, 7 do assert(v[i][1] == i and v[i][2] == -i) end

  -- fields of tree instances (copied element by element)
  local G = lt.tree { fields = { r = lt.f32 }, lt.pointer(lt.i, 8) { lt.dense(lt.i, 4) { "r" } } }
  local g1, g2 = G:instantiate(), G:instantiate()
  g1.r[3], g1.r[17] = 1, 2
  g2.r[30] = 9
  g1.r:copy_from(g2.r)
  assert(g1.r[3] == 0 and g1.r[17] == 0 and g1.r[30] == 9 and #g1.r:active() == 12)

  -- ndarrays
  local n1, n2 = lt.ndarray(lt.i32, { 3, 3 }), lt.ndarray(lt.i32, { 3, 3 })
  for i = 0, 2 do
    for j = 0, 2 do n2[i][j] = i * 3 + j end
  end
  n1:copy_from(n2)
  for i = 0, 2 do
    for j = 0, 2 do assert(n1[i][j] == i * 3 + j) end
  end

  -- a field onto itself changes nothing
  a:copy_from(a)
  assert(a[3][4] == 34.5)

  -- mismatches and misuse name both sides
  expect_error("have different element types", function() a:copy_from(lt.field(lt.f64, { 4, 5 })) end)
  expect_error("have different shapes", function() a:copy_from(lt.field(lt.f32, { 5, 4 })) end)
  expect_error("field 'a'", function() a:copy_from(lt.field(lt.f32, 20)) end)
  expect_error("have different element types", function() v:copy_from(lt.field(lt.vec3, 8)) end)
  expect_error("have different element types", function() v:copy_from(lt.field(lt.f32, 8)) end)
  expect_error("y must be a field, got an ndarray", function() a:copy_from(n1) end)
  expect_error("y must be a field, got a number", function() a:copy_from(3) end)
  expect_error("the ndarrays differ: i32 (3, 3) and i32 (9)", function() n1:copy_from(lt.ndarray(lt.i32, 9)) end)
  expect_error("the ndarrays differ: i32 (3, 3) and f32 (3, 3)", function() n1:copy_from(lt.ndarray(lt.f32, { 3, 3 })) end)
  expect_error("b must be an ndarray, got a field", function() n1:copy_from(a) end)
  expect_error("runs in Lua scope", lt.kernel(function() a:copy_from(b) end))
end

-- ---- lt.no_activate ------------------------------------------------------------------------

do
  -- Taichi's test_no_activate: a dynamic list written at odd indices
  local x = lt.field(lt.i32)
  local d = lt.root:dynamic(lt.i, 1024, { chunk = 32 })
  d:place(x)
  local init = lt.kernel(function() for i in lt.ndrange(512) do x[i] = 1 end end)
  local bump = lt.kernel(function()
    lt.no_activate(d)
    for i in lt.ndrange(512) do x[i * 2 + 1] = x[i * 2 + 1] + 1 end
  end)
  init()
  bump()
  assert(lt.length(x) == 512)
  for i = 0, 1023 do assert(x[i] == (i < 512 and i % 2 + 1 or 0), "x[" .. i .. "] = " .. x[i]) end

  -- a pointer level: stores and atomics reach active cells only; atomics on
  -- inactive cells return 0
  local p = lt.field(lt.f32)
  lt.root:pointer(lt.i, 16):dense(lt.i, 8):place(p)
  local olds = lt.field(lt.f32, 128)
  p[3], p[60] = 1, 1                                    -- blocks 0 and 7
  local k = lt.kernel(function()
    lt.no_activate(p)
    for i in lt.ndrange(128) do
      p[i] = i
      olds[i] = lt.atomic_add(p[i], 0.5)
    end
  end)
  k()
  assert(#p:active() == 16)
  for i = 0, 127 do
    local on = i < 8 or (i >= 56 and i < 64)
    assert(p[i] == (on and i + 0.5 or 0), "p[" .. i .. "] = " .. p[i])
    assert(olds[i] == (on and i or 0), "old " .. i .. " = " .. olds[i])
  end

  -- a vector field under a bitmasked level, declared by its field
  local v = lt.field(lt.vec2)
  lt.root:bitmasked(lt.i, 8):dense(lt.i, 4):place(v)
  v[9] = { 1, 1 }
  local kv = lt.kernel(function()
    lt.no_activate(v)
    for i in lt.ndrange(32) do v[i] = lt.vec2(i, 2 * i) end
  end)
  kv()
  assert(#v:active() == 4)
  for i = 0, 31 do
    local on = i >= 8 and i < 12
    assert(v[i][1] == (on and i or 0) and v[i][2] == (on and 2 * i or 0))
  end

  -- without the declaration the same writes activate (the model's other side)
  local kv2 = lt.kernel(function() for i in lt.ndrange(32) do v[i] = lt.vec2(i, 2 * i) end end)
  kv2()
  assert(#v:active() == 32 and v[31][2] == 62)

  -- a struct-for over the field's own cells is unaffected
  local ks = lt.kernel(function()
    lt.no_activate(p)
    for i in p do p[i] = p[i] * 2 end
  end)
  ks()
  assert(p[3] == 7 and p[60] == 121 and #p:active() == 16)

  -- errors
  expect_error("must come before the kernel's first write to field 'p'",
    lt.kernel(function()
      for i in lt.ndrange(4) do p[i] = 1 end
      lt.no_activate(p)
    end))
  expect_error("is a declaration inside a kernel", function() lt.no_activate(p) end)
  expect_error("not a field or an SNode level", lt.kernel(function() lt.no_activate(3) end))
  expect_error("name the fields or levels", lt.kernel(function() lt.no_activate() end))
end

-- debug mode still stops an index out of range, also where a write would be dropped
do
  lt.init { debug = true }
  local p = lt.field(lt.f32)
  lt.root:pointer(lt.i, 16):dense(lt.i, 8):place(p)
  local k = lt.kernel(function(n)
    lt.no_activate(p)
    for i in lt.ndrange(n) do p[i] = 1 end
  end, { n = lt.i32 })
  k(128)
  assert(#p:active() == 0)
  expect_error("out of range", k, 129)
end

print("tree_ops: ok")
