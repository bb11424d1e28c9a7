-- sparse.lua -- the Lattice half of the sparse benchmarks of bench/run.sh
-- (which compiles and runs the C references, compares checksums and writes
-- docs/performance.md). Run by `lattice`:
--   lattice bench/sparse.lua [--threads T] [--reps R]
-- Prints "key value" lines for run.sh:
--   laplace_lt_ms PCT MS     5-point Laplacian as a struct-for over a
--                            pointer(256)->dense(16) grid, PCT% of blocks active
--   laplace_lt_sum PCT S     its checksum (bench/sparse_laplace.c prints the same)
--   laplace_dense_ms MS      the same stencil over the dense 4096^2 domain
--   mem_* PCT BYTES          pool bytes (lt.stats): taken by the grid, by the grid
--                            with no block active, in all; the active blocks' bytes
--   activate_lt_* ...        activation throughput and its checksum
--                            (bench/sparse_activate.c prints the same)
-- The grid, the blocks and the checksums are those of bench/sparse_blocks.h.
local lt = require "lattice"

package.path = (arg[0]:match("^(.*/)") or "./") .. "?.lua;" .. package.path   -- bench/common.lua
local common = require "common"
local threads, reps = common.options("bench/sparse.lua")

local N, B = 4096, 16                 -- cells along an axis, cells along a block's axis
local NB = N // B                     -- blocks along an axis (the pointer table is NB x NB)
local SEED = 2463534242
local PCTS = { 1, 10, 50 }
local W, ACT_PCT = 4, 50              -- activation: writes per block, blocks activated (%)

local median, ms = common.median, common.ms

-- the seeded choice of sparse_blocks.h: pct% of the NB*NB blocks, drawn by a
-- partial Fisher-Yates shuffle (xorshift32) from the interior blocks
local function choose_blocks(pct, sorted)
  local n, count = (NB - 2) * (NB - 2), pct * NB * NB // 100
  local ids = {}
  for m = 0, n - 1 do ids[m] = (1 + m // (NB - 2)) * NB + 1 + m % (NB - 2) end
  local s = SEED
  for k = 0, count - 1 do
    s = s ~ ((s << 13) & 0xffffffff)
    s = s ~ (s >> 17)
    s = s ~ ((s << 5) & 0xffffffff)
    local j = k + s % (n - k)
    ids[k], ids[j] = ids[j], ids[k]
  end
  local out = {}
  for k = 0, count - 1 do out[k + 1] = ids[k] end
  if sorted then table.sort(out) end
  return out
end

-- an i32 field holding a Lua list (0-based in the field)
local function list_field(list)
  local f = lt.field(lt.i32, { #list })
  for k = 1, #list do f[k - 1] = list[k] end
  return f
end

local function pool_used() return lt.stats().pool_used end

-- active cells of the pointer SNode (the blocks) according to lt.stats
local function active_blocks()
  local n
  for _, s in ipairs(lt.stats().snodes) do
    if s.kind == "pointer" then
      assert(not n, "more than one pointer SNode in the program")
      n = s.active
    end
  end
  return assert(n, "lt.stats() lists no pointer SNode")
end

local function check(what, got, want)
  if got ~= want then
    error(("sparse bench: %s is %s, expected %s"):format(what, tostring(got), tostring(want)), 2)
  end
end

-- (a), (b) sparse Laplacian at one occupancy, in a program of its own so the
-- pool holds only this grid
local function laplace_at(pct)
  lt.init { threads = threads }
  local list = choose_blocks(pct, true)
  local nblk = #list
  local blist = list_field(list)
  local sum = lt.field(lt.i64, {})
  sum.value = 0
  local before = pool_used()          -- runtime state and the two dense helpers

  local u, lap = lt.field(lt.f32), lt.field(lt.f32)
  lt.root:pointer(lt.ij, NB):dense(lt.ij, B):place(u, lap)
  local _ = u.shape                   -- lays the tree out: pointer table, runtime tables
  local empty = pool_used()

  -- every cell of u gets its value; lap lives in the same cells
  local fill = lt.kernel(function()
    for k in lt.ndrange(nblk * B * B) do
      local id, c = blist[k // (B * B)], k % (B * B)
      local i, j = id // NB * B + c // B, id % NB * B + c % B
      u[i][j] = ((i * 7 + j * 13) % 17) * 0.25
    end
  end)
  local laplace = lt.kernel(function()
    for i, j in u do
      lap[i][j] = u[i + 1][j] + u[i - 1][j] + u[i][j + 1] + u[i][j - 1] - 4 * u[i][j]
    end
  end)
  local checksum = lt.kernel(function()
    for i, j in lap do
      lt.atomic_add(sum.value, lt.i64(lap[i][j] * 4) * ((i % 7 + 1) * (j % 5 + 1)))
    end
  end)

  -- Activate the blocks one by one in list order, as sparse_laplace.c lays
  -- out its blocks: placement in memory decides much of the speed of a sweep
  -- over blocks (a parallel activation interleaves the threads' blocks), and
  -- the comparison is about the generated code, not about placement.
  for k = 1, nblk do lt.activate(u, list[k] // NB * B, list[k] % NB * B) end
  fill()
  check(("active blocks after filling %d%%"):format(pct), active_blocks(), nblk)
  laplace() -- compile and warm up
  local times = {}
  for r = 1, reps do times[r] = ms(laplace) end
  check(("active blocks after the Laplacian at %d%% (neighbour reads must not activate)"):format(pct),
    active_blocks(), nblk)
  checksum()
  local after = pool_used()
  print(("laplace_lt_ms %d %.4f"):format(pct, median(times)))
  print(("laplace_lt_sum %d %d"):format(pct, sum.value))
  print(("mem_pool_bytes %d %d"):format(pct, after - before))
  print(("mem_pool_empty %d %d"):format(pct, empty - before))
  print(("mem_pool_total %d %d"):format(pct, after))
  print(("mem_block_bytes %d %d"):format(pct, nblk * B * B * 8))  -- u and lap: f32 each
end

-- the dense stencil over the whole domain (its border excluded), for scale
local function laplace_dense()
  lt.init { threads = threads }
  local u, lap = lt.field(lt.f32, { N, N }), lt.field(lt.f32, { N, N })
  local fill = lt.kernel(function()
    for i, j in lt.ndrange(N, N) do u[i][j] = ((i * 7 + j * 13) % 17) * 0.25 end
  end)
  local laplace = lt.kernel(function()
    for i, j in lt.ndrange({ 1, N - 1 }, { 1, N - 1 }) do
      lap[i][j] = u[i + 1][j] + u[i - 1][j] + u[i][j + 1] + u[i][j - 1] - 4 * u[i][j]
    end
  end)
  fill()
  laplace()
  local times = {}
  for r = 1, reps do times[r] = ms(laplace) end
  -- spot check: interior cells of the dense stencil against plain Lua
  local function uv(i, j) return ((i * 7 + j * 13) % 17) * 0.25 end
  for k = 1, 200 do
    local i, j = 1 + (k * 7919) % (N - 2), 1 + (k * 104729) % (N - 2)
    local want = uv(i + 1, j) + uv(i - 1, j) + uv(i, j + 1) + uv(i, j - 1) - 4 * uv(i, j)
    check(("dense lap[%d][%d]"):format(i, j), lap[i][j], want)
  end
  print(("laplace_dense_ms %.4f"):format(median(times)))
end

-- (c) activation throughput: W writes into each block of the ACT_PCT% set
-- (drawn order), from an empty grid; deactivate_all + GC between repetitions
local function activation()
  lt.init { threads = threads }
  local list = choose_blocks(ACT_PCT, false)
  local nblk = #list
  local blist = list_field(list)
  local sum = lt.field(lt.i64, {})
  sum.value = 0
  local v = lt.field(lt.f32)
  lt.root:pointer(lt.ij, NB):dense(lt.ij, B):place(v)

  local write = lt.kernel(function()
    for k in lt.ndrange(nblk * W) do
      local id, c = blist[k // W], ((k % W) * 85 + 7) % (B * B)
      v[id // NB * B + c // B][id % NB * B + c % B] = lt.f32(k + 1)
    end
  end)
  local checksum = lt.kernel(function()
    for i, j in v do
      lt.atomic_add(sum.value, lt.i64(v[i][j]) * ((i % 7 + 1) * (j % 5 + 1)))
    end
  end)

  write() -- compile and warm up
  v:deactivate_all()
  local times, first = {}, nil
  for r = 1, reps do
    times[r] = ms(write)
    if r == 1 then first = pool_used() end
    if r < reps then v:deactivate_all() end
  end
  check("active blocks after activation", active_blocks(), nblk)
  local last = pool_used()            -- before the checksum's struct-for builds its lists
  checksum()
  print(("activate_lt_ms %.4f"):format(median(times)))
  print(("activate_lt_writes %d"):format(nblk * W))
  print(("activate_lt_blocks %d"):format(active_blocks()))
  print(("activate_lt_sum %d"):format(sum.value))
  print(("activate_pool_first %d"):format(first))
  print(("activate_pool_last %d"):format(last))
end

for _, pct in ipairs(PCTS) do laplace_at(pct) end
laplace_dense()
activation()
