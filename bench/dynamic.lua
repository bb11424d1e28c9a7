-- dynamic.lua -- the Lattice half of bench/run.sh's dynamic-list row (bench/
-- dynamic.c and bench/taichi/dynamic.py are the others): a particle-in-cell
-- bucket fill. 262144 particles at fixed pseudo-random positions in the unit
-- square are appended, by id, to the list of the cell they fall in:
--     lt.root:pointer(lt.ij, 32):dynamic(lt.k, 1024, { chunk = 64 }):place(l)
--     for p in lt.ndrange(NP) do lt.append(l, cell of p, p) end
-- then a struct-for over the lists sums the ids of each cell into a dense
-- field (for i, j, k in l do lt.atomic_add(s[i][j], l[i][j][k]) end).
--   lattice bench/dynamic.lua [--threads T] [--reps R]
-- Prints "key value" lines for run.sh:
--   dynamic_lt_append_ms MS   the append kernel, median of R calls after a warm-up,
--                             from empty lists (the pointer level's
--                             deactivate_all between calls, not timed)
--   dynamic_lt_sum_ms MS      the struct-for over the lists, median of R
--   dynamic_lt_count N        elements in all lists (= the particles)
--   dynamic_lt_max N          the longest list
--   dynamic_lt_sum S          sum over cells of (ids' sum) * (i % 7 + 1) * (j % 5 + 1)
-- The positions: x = (fmix32(2p + 1) >> 8) / 2^24, y = (fmix32(2p + 2) >> 8) / 2^24
-- (MurmurHash3's finaliser; exact in f32), so every side computes the same
-- cells, and cell (i, j) = (floor(32 x), floor(32 y)).
local lt = require "lattice"

package.path = (arg[0]:match("^(.*/)") or "./") .. "?.lua;" .. package.path   -- bench/common.lua
local common = require "common"
local threads, reps = common.options("bench/dynamic.lua")
local median, ms = common.median, common.ms

local NP, G, CAP, CHUNK = 262144, 32, 1024, 64

local function fmix32(h)
  h = h ~ (h >> 16)
  h = (h * 0x85ebca6b) & 0xffffffff
  h = h ~ (h >> 13)
  h = (h * 0xc2b2ae35) & 0xffffffff
  return h ~ (h >> 16)
end

lt.init { threads = threads }
local px, py = lt.field(lt.f32, NP), lt.field(lt.f32, NP)
local l = lt.field(lt.i32)
local cells = lt.root:pointer(lt.ij, G)
cells:dynamic(lt.k, CAP, { chunk = CHUNK }):place(l)
local sums = lt.field(lt.i64, { G, G })

-- the positions, and the checksum the lists must give
local xs, ys, want = {}, {}, 0
for p = 0, NP - 1 do
  local hx, hy = fmix32(2 * p + 1) >> 8, fmix32(2 * p + 2) >> 8
  xs[p], ys[p] = hx / 16777216.0, hy / 16777216.0
  local i, j = hx >> 19, hy >> 19          -- floor(32 * h / 2^24)
  want = want + p * ((i % 7 + 1) * (j % 5 + 1))
end
px:from_table(xs)
py:from_table(ys)

local fill = lt.kernel(function()
  for p in lt.ndrange(NP) do
    lt.append(l, lt.i32(px[p] * G), lt.i32(py[p] * G), p)
  end
end)
local sum = lt.kernel(function()
  for i, j, k in l do
    lt.atomic_add(sums[i][j], lt.i64(l[i][j][k]))
  end
end)

fill() -- compile and warm up
cells:deactivate_all()
local t_fill = {}
for r = 1, reps do
  t_fill[r] = ms(fill)
  if r < reps then cells:deactivate_all() end
end
sum() -- compile and warm up
local t_sum = {}
for r = 1, reps do
  sums:fill(0)
  t_sum[r] = ms(sum)
end

local count, longest, got = 0, 0, 0
local s = sums:to_table()
for i = 0, G - 1 do
  for j = 0, G - 1 do
    local n = lt.length(l, i, j)
    count, longest = count + n, math.max(longest, n)
    got = got + s[i + 1][j + 1] * ((i % 7 + 1) * (j % 5 + 1))
  end
end
assert(count == NP, ("dynamic: %d elements in the lists, expected %d"):format(count, NP))
assert(got == want, ("dynamic: checksum %d, expected %d"):format(got, want))
print(("dynamic_lt_append_ms %.4f"):format(median(t_fill)))
print(("dynamic_lt_sum_ms %.4f"):format(median(t_sum)))
print(("dynamic_lt_count %d"):format(count))
print(("dynamic_lt_max %d"):format(longest))
print(("dynamic_lt_sum %d"):format(got))
