-- sparse_stencil.lua -- struct-for stencils over pointer->dense blocks: the
-- code generator runs the interior cells of each block with neighbours at
-- constant offsets and the border cells through block lookups. Every active
-- cell is checked against a plain Lua evaluation of the same stencil, for
-- several block shapes, axis orders and offset patterns (reads and writes
-- at offsets). Only cells whose neighbours stay inside the domain count:
-- out-of-range indices are an error in debug mode and undefined otherwise.
local lt = require "lattice"
lt.init {}

local function check(name, nb, b, order, offsets, seed)
  local u, out = lt.field(lt.f32), lt.field(lt.f32)
  lt.root:pointer(order, { nb, nb }):dense(order, { b, b }):place(u, out)
  local n = nb * b
  math.randomseed(seed)
  local active, ref = {}, {}
  for bi = 0, nb - 1 do
    for bj = 0, nb - 1 do
      if math.random() < 0.5 then active[bi * nb + bj] = true end
    end
  end
  local reach = 0
  for _, o in ipairs(offsets) do reach = math.max(reach, math.abs(o[1]), math.abs(o[2])) end
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      if active[(i // b) * nb + j // b] then
        local v = (i * 7 + j * 13) % 17 - 8
        u[i][j] = v
        ref[i * n + j] = v
      end
    end
  end
  local function R(i, j) return ref[i * n + j] or 0 end
  local k = lt.kernel(function()
    for i, j in u do
      if i >= reach and j >= reach and i < n - reach and j < n - reach then
        local s = 0.0
        for w, o in ipairs(offsets) do s = s + w * u[i + o[1]][j + o[2]] end   -- unrolled: constant offsets
        out[i][j] = s
      end
    end
  end)
  k()
  local bad, cells = 0, 0
  for i = reach, n - 1 - reach do
    for j = reach, n - 1 - reach do
      if active[(i // b) * nb + j // b] then
        local want = 0
        for w, o in ipairs(offsets) do want = want + w * R(i + o[1], j + o[2]) end
        cells = cells + 1
        if out[i][j] ~= want then
          bad = bad + 1
          if bad <= 3 then print(("%s: out[%d][%d] = %s, want %s"):format(name, i, j, out[i][j], want)) end
        end
      end
    end
  end
  assert(cells > 0, name .. ": no cell checked")
  assert(bad == 0, ("%s: %d of %d cells wrong"):format(name, bad, cells))
end

local five = { { 0, 0 }, { 1, 0 }, { -1, 0 }, { 0, 1 }, { 0, -1 } }
check("5-point 8x8 blocks", 6, 8, lt.ij, five, 1)
check("5-point 4x4 blocks, column-major", 8, 4, lt.ji, five, 2)
check("asymmetric reach 2", 6, 8, lt.ij, { { 2, 0 }, { 0, -2 }, { 1, 1 }, { -1, 0 } }, 3)
check("one-sided", 5, 4, lt.ij, { { 0, 1 }, { 0, 2 }, { 0, 3 } }, 4)
check("reach equals block", 5, 2, lt.ij, { { 2, 0 }, { 0, 2 }, { -2, -2 } }, 5)

-- writes at offsets: each active cell pushes its value to the right neighbour
-- inside the same block, checked against the Lua model
do
  local a, c = lt.field(lt.i32), lt.field(lt.i32)
  local nb, b = 4, 8
  lt.root:pointer(lt.ij, { nb, nb }):dense(lt.ij, { b, b }):place(a, c)
  local n = nb * b
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      if (i // b + j // b) % 2 == 0 then a[i][j] = i * n + j end
    end
  end
  lt.kernel(function()
    for i, j in a do
      if j % b < b - 1 then c[i][j + 1] = a[i][j] end
    end
  end)()
  for i = 0, n - 1 do
    for j = 0, n - 1 do
      local want = 0
      if (i // b + j // b) % 2 == 0 and j % b > 0 then want = i * n + j - 1 end
      assert(c[i][j] == want, ("shifted write: c[%d][%d] = %d, want %d"):format(i, j, c[i][j], want))
    end
  end
end
print("sparse stencils: ok")
