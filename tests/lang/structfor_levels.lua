-- Struct-fors over SNode levels (for i, j in level, lt.grouped(level)), the
-- level handles of fields (x:parent(), level:parent(), level:active()), and
-- struct-fors nested in one over a level above them; each against a plain-Lua
-- model of what was activated.
local lt = require "lattice"
lt.init {}

local function key(t) return table.concat(t, ",") end

-- The set of index tuples in list (a list of lists), checked exactly against
-- the model's (a list of lists) and counted once each.
local function same_set(got, want, what)
  local w = {}
  for _, c in ipairs(want) do w[key(c)] = true end
  local seen = {}
  for _, c in ipairs(got) do
    local k = key(c)
    assert(w[k], what .. ": visited " .. k .. ", which is not active")
    assert(not seen[k], what .. ": visited " .. k .. " twice")
    seen[k] = true
  end
  assert(#got == #want, what .. ": visited " .. #got .. " cells, want " .. #want)
end

-- A kernel that records every visited cell of `it` (a level, a field, or a
-- grouped loop) in a list field: lt.append of the indices, one per axis.
local function visit2(it, grouped)
  local n = lt.field(lt.i32, {})
  local vi, vj = lt.field(lt.i32, 4096), lt.field(lt.i32, 4096)
  local k
  if grouped then
    k = lt.kernel(function()
      for I in lt.grouped(it) do
        local p = lt.atomic_add(n.value, 1)
        vi[p] = I[0]
        vj[p] = I[1]
      end
    end)
  else
    k = lt.kernel(function()
      for i, j in it do
        local p = lt.atomic_add(n.value, 1)
        vi[p] = i
        vj[p] = j
      end
    end)
  end
  k()
  local out = {}
  for p = 0, n.value - 1 do out[#out + 1] = { vi[p], vj[p] } end
  return out
end

-- The cells of a level of extents (ci, cj) cells each spanning (si, sj)
-- elements whose containers are active where active(bi, bj) says.
local function cells_of(ni, nj, si, sj, active)
  local out = {}
  for a = 0, ni - 1 do
    for b = 0, nj - 1 do
      if active(a * si, b * sj) then out[#out + 1] = { a * si, b * sj } end
    end
  end
  return out
end

-- ---- pointer over dense: the pointer level, the dense level, the field -----
do
  local x = lt.field(lt.f32)
  local block = lt.root:pointer(lt.ij, 4)
  local cells = block:dense(lt.ij, 4)
  cells:place(x)
  local pts = { { 1, 1 }, { 5, 9 }, { 13, 2 }, { 6, 10 } }
  for _, p in ipairs(pts) do x[p[1]][p[2]] = p[1] * 16 + p[2] end
  local blocks = { ["0,0"] = true, ["4,8"] = true, ["12,0"] = true }
  local function in_block(i, j) return blocks[key { i - i % 4, j - j % 4 }] end
  local want_blocks = cells_of(4, 4, 4, 4, function(i, j) return blocks[key { i, j }] end)
  local want_cells = cells_of(16, 16, 1, 1, in_block)
  same_set(block:active(), want_blocks, "block:active() (before any kernel)")
  same_set(visit2(block), want_blocks, "pointer level")
  same_set(visit2(block, true), want_blocks, "lt.grouped(pointer level)")
  same_set(visit2(cells), want_cells, "dense level under a pointer")
  same_set(visit2(x:parent()), want_cells, "x:parent()")
  same_set(visit2(x:parent():parent()), want_blocks, "x:parent():parent()")
  same_set(block:active(), want_blocks, "block:active()")
  same_set(cells:active(), want_cells, "cells:active()")
  local lua = {}
  for I in lt.grouped(block) do lua[#lua + 1] = { I[0], I[1] } end
  same_set(lua, want_blocks, "lt.grouped(block) in Lua scope")
  assert(x:parent():parent():parent():parent() == nil, "the root has no parent")
  assert(tostring(x:parent()):find("dense"))

  -- nested: a sum per block, and how many cells each block visits
  local bsum, bcnt = lt.field(lt.f32, { 4, 4 }), lt.field(lt.i32, { 4, 4 })
  local sums = lt.kernel(function()
    for bi, bj in block do
      local s, c = 0.0, 0
      for i, j in x do
        s = s + x[i][j]
        c = c + 1
      end
      bsum[bi // 4][bj // 4] = s
      bcnt[bi // 4][bj // 4] = c
    end
  end)
  sums()
  local model = {}
  for _, p in ipairs(pts) do
    local k = key { p[1] // 4, p[2] // 4 }
    model[k] = (model[k] or 0) + p[1] * 16 + p[2]
  end
  for a = 0, 3 do
    for b = 0, 3 do
      local k = key { a, b }
      assert(bsum[a][b] == (model[k] or 0), "block sum " .. k .. ": " .. bsum[a][b])
      assert(bcnt[a][b] == (blocks[key { a * 4, b * 4 }] and 16 or 0), "block count " .. k .. ": " .. bcnt[a][b])
    end
  end
  -- nested over the level itself: its one current cell; over a level below it, grouped
  local one = lt.field(lt.i32, {})
  local k2 = lt.kernel(function()
    for bi, bj in block do
      for I in lt.grouped(cells) do
        if I[0] // 4 * 4 ~= bi or I[1] // 4 * 4 ~= bj then lt.atomic_add(one.value, 1000) end
      end
      for i, j in block do
        if i == bi and j == bj then lt.atomic_add(one.value, 1) end
      end
    end
  end)
  k2()
  assert(one.value == 3, "nested loops inside the current cell: " .. one.value)
end

-- ---- bitmasked over dense ---------------------------------------------------
do
  local x = lt.field(lt.i32)
  local bm = lt.root:bitmasked(lt.ij, 8)
  bm:dense(lt.ij, 2):place(x)
  local act = {}
  for _, p in ipairs { { 0, 0 }, { 3, 15 }, { 15, 15 }, { 8, 1 }, { 9, 0 } } do
    x[p[1]][p[2]] = 1
    act[key { p[1] - p[1] % 2, p[2] - p[2] % 2 }] = true
  end
  local want = cells_of(8, 8, 2, 2, function(i, j) return act[key { i, j }] end)
  same_set(visit2(bm), want, "bitmasked level")
  same_set(visit2(x:parent():parent(), true), want, "lt.grouped(bitmasked level)")
  same_set(bm:active(), want, "bitmasked:active()")
  same_set(visit2(x:parent()), cells_of(16, 16, 1, 1, function(i, j) return act[key { i - i % 2, j - j % 2 }] end),
    "dense level under a bitmasked")
end

-- ---- two levels of dense (Taichi's test_struct_for_intermediate) and of pointer
do
  local x = lt.field(lt.i32)
  lt.root:dense(lt.ij, 4):dense(lt.ij, 4):place(x)
  same_set(visit2(x:parent():parent()), cells_of(4, 4, 4, 4, function() return true end), "two dense levels")
  local y = lt.field(lt.i32)
  lt.root:pointer(lt.ij, 4):pointer(lt.ij, 4):place(y)
  y[1][2], y[5][5], y[6][7] = 1, 1, 1
  same_set(visit2(y:parent():parent()), { { 0, 0 }, { 4, 4 } }, "outer pointer of two")
  same_set(visit2(y:parent()), { { 1, 2 }, { 5, 5 }, { 6, 7 } }, "inner pointer of two")
  -- nested across both sparse levels: outer over the top pointer, inner over y
  local n = lt.field(lt.i32, { 4, 4 })
  local k = lt.kernel(function()
    for bi, bj in y:parent():parent() do
      for i, j in y do lt.atomic_add(n[bi // 4][bj // 4], i * 100 + j) end
    end
  end)
  k()
  assert(n[0][0] == 102 and n[1][1] == 505 + 607 and n[2][2] == 0, n[1][1])
end

-- ---- three nested struct-fors: each inner one inside the current cell of the one around it
do
  local x = lt.field(lt.i32)
  local top = lt.root:pointer(lt.ij, 2)
  local mid = top:bitmasked(lt.ij, 2)
  mid:dense(lt.ij, 2):place(x)
  local pts = { { 0, 0 }, { 1, 1 }, { 2, 0 }, { 7, 7 }, { 5, 1 } }
  for _, p in ipairs(pts) do x[p[1]][p[2]] = p[1] * 8 + p[2] + 1 end
  local msum, mcnt, tcnt = lt.field(lt.i32, { 4, 4 }), lt.field(lt.i32, { 4, 4 }), lt.field(lt.i32, { 2, 2 })
  local k = lt.kernel(function()
    for ti, tj in top do
      for mi, mj in mid do
        lt.atomic_add(tcnt[ti // 4][tj // 4], 1)
        local s, c = 0, 0
        for i, j in x do
          s = s + x[i][j]
          c = c + 1
        end
        msum[mi // 2][mj // 2] = s
        mcnt[mi // 2][mj // 2] = c
      end
    end
  end)
  k()
  local ms, mc, tc = {}, {}, {}
  for _, p in ipairs(pts) do
    local m = key { p[1] // 2, p[2] // 2 }
    ms[m] = (ms[m] or 0) + p[1] * 8 + p[2] + 1
    if not mc[m] then
      mc[m] = 4
      local t = key { p[1] // 4, p[2] // 4 }
      tc[t] = (tc[t] or 0) + 1
    end
  end
  for a = 0, 3 do
    for b = 0, 3 do
      local m = key { a, b }
      assert(msum[a][b] == (ms[m] or 0) and mcnt[a][b] == (mc[m] or 0), "middle cell " .. m)
    end
  end
  for a = 0, 1 do
    for b = 0, 1 do assert(tcnt[a][b] == (tc[key { a, b }] or 0), "top cell " .. a .. "," .. b) end
  end
end

-- ---- dynamic lists: the dynamic level, its parent, nested sums ---------------
do
  local l = lt.field(lt.i32)
  local rows = lt.root:pointer(lt.i, 4)
  local lists = rows:dense(lt.i, 2):dynamic(lt.j, 32, { chunk = 4 })
  lists:place(l)
  local len = { [1] = 5, [2] = 9, [7] = 1 }
  local want, rowsum = {}, {}
  for i, n in pairs(len) do
    for k = 0, n - 1 do
      lt.append(l, i, i * 10 + k)
      want[#want + 1] = { i, k }
      rowsum[i] = (rowsum[i] or 0) + i * 10 + k
    end
  end
  same_set(visit2(lists), want, "dynamic level")
  same_set(lists:active(), want, "dynamic:active()")
  local act = {}
  for _, c in ipairs(rows:active()) do act[#act + 1] = c[1] end
  table.sort(act)
  assert(#act == 3 and act[1] == 0 and act[2] == 2 and act[3] == 6, "pointer rows: " .. table.concat(act, " "))
  local s = lt.field(lt.i32, 8)
  -- nested: rows (pointer) -> the lists (dense, dynamic): two loops
  local k = lt.kernel(function()
    for r in rows do
      for i, j in l do lt.atomic_add(s[i], l[i][j]) end
    end
  end)
  k()
  for i = 0, 7 do assert(s[i] == (rowsum[i] or 0), "row sum " .. i .. ": " .. s[i]) end
  -- nested over the dynamic level from its parent: one loop
  local t = lt.field(lt.i32, 8)
  local k2 = lt.kernel(function()
    for i in lists:parent() do
      local c = 0
      for a, b in lists do c = c + 1 end
      t[i] = c
    end
  end)
  k2()
  for i = 0, 7 do assert(t[i] == (len[i] or 0), "list length " .. i .. ": " .. t[i]) end
  local ok, msg = pcall(lt.kernel(function()
    for r in rows do
      for i, j in l do if j > 2 then break end end
    end
  end))
  assert(not ok and msg:find("break cannot leave a nested struct%-for") and msg:find("structfor_levels.lua:%d+"), msg)
end

-- ---- tree instances passed as kernel arguments ----------------------------------
do
  local Grid = lt.tree {
    fields = { rho = lt.f32 },
    lt.pointer(lt.ij, 4) { lt.dense(lt.ij, 4) { "rho" } },
  }
  local a, b = Grid:instantiate(), Grid:instantiate()
  a.rho[1][1], a.rho[9][9] = 1, 2
  b.rho[15][0] = 3
  local n = lt.field(lt.i32, {})
  local sum = lt.field(lt.f32, {})
  local count = lt.kernel(function(g)
    for bi, bj in g.rho:parent():parent() do
      lt.atomic_add(n.value, 1)
      for i, j in g.rho do lt.atomic_add(sum.value, g.rho[i][j]) end
    end
  end, { g = Grid })
  count(a)
  assert(n.value == 2 and sum.value == 3, n.value .. " " .. sum.value)
  n.value, sum.value = 0, 0
  count(b)
  assert(n.value == 1 and sum.value == 3, n.value .. " " .. sum.value)
  same_set(a.rho:parent():parent():active(), { { 0, 0 }, { 8, 8 } }, "an instance's level:active()")
  local ok, msg = pcall(lt.kernel(function()
    for i, j in a.rho:parent() do n.value = 1 end
  end))
  assert(not ok and msg:find("not a kernel argument"), msg)
end

-- ---- errors ---------------------------------------------------------------------
do
  local x, y = lt.field(lt.f32), lt.field(lt.f32)
  local top = lt.root:pointer(lt.i, 4)
  top:dense(lt.i, 4):place(x)
  local empty = top:bitmasked(lt.i, 4)         -- a level with no fields under it
  local other = lt.root:pointer(lt.i, 4)
  other:place(y)
  x[1] = 1
  local function fails(fn, pat)
    local ok, msg = pcall(lt.kernel(fn))
    assert(not ok and msg:find(pat) and msg:find("structfor_levels.lua:%d+"), tostring(msg))
  end
  fails(function() for i, j in empty do x[i] = 1 end end, "holds no fields")
  fails(function() for i in top do for j in y do x[i] = 1 end end end, "must be over a level or field below")
  fails(function() for k in lt.ndrange(2) do for i in top do x[i] = 1 end end end, "must be a top%-level loop")
  local root = x:parent():parent():parent()
  fails(function() for i in root do x[i] = 1 end end, "lt.root is not a level")
  local ok, msg = pcall(function() return root:active() end)
  assert(not ok and msg:find("lt.root is not a level"), msg)
  ok, msg = pcall(lt.grouped, 5)
  assert(not ok and msg:find("expects a field or a level"), msg)
end

print("structfor_levels: ok")
