-- Trees are freed when nothing refers to them any more (fields, SNode
-- handles, tree types, instances, compiled kernels): a program may create and
-- drop any number of them, though at most 256 are alive at once. Their ids
-- and pool memory go to later trees; a kernel compiled against a tree keeps
-- it while the kernel lives.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

-- 1000 dense trees, 25 per kernel: each field is its own tree (materialised
-- by a Lua-scope write before the next one is made)
local N, K = 8, 25
for round = 1, 40 do
  local xs = {}
  for t = 1, K do
    local x = lt.field(lt.i32, N)
    x[0] = round * 100 + t                       -- materialises x's tree alone
    xs[t] = x
  end
  local out = lt.field(lt.i64, N)
  lt.kernel(function()
    for i in lt.ndrange(N) do
      local s = 0
      for t in lt.static(1, K) do s = s + xs[t][0] + i end   -- unrolled: reads all 25 trees
      out[i] = s
    end
  end)()
  for i = 0, N - 1 do
    local want = 0
    for t = 1, K do want = want + round * 100 + t + i end
    C.check(("round %d out[%d]"):format(round, i), out[i], want)
  end
  if round % 4 == 0 then collectgarbage() end
end

-- the pool does not grow with trees made and dropped: dense ones reuse the
-- memory of freed ones, and pointer cells go back to their allocators
local function sparse_round(seed)
  local v = lt.field(lt.f32)
  lt.root:pointer(lt.i, 64):dense(lt.i, 256):place(v)      -- 1 KiB cells, 16 KiB of slots
  local dense = lt.field(lt.f64, 64 << 10)                  -- 512 KiB
  lt.kernel(function()
    for i in lt.ndrange(64) do
      v[i * 256 + 3] = i + seed
      dense[i * 1000] = i * seed
    end
  end)()
  local ok = 0
  for i = 0, 63 do
    if v[i * 256 + 3] == i + seed and dense[i * 1000] == i * seed then ok = ok + 1 end
  end
  return ok
end
C.check("sparse round 1", sparse_round(1), 64)
collectgarbage()
C.check("sparse round 2", sparse_round(2), 64)
collectgarbage()
local used = lt.stats().pool_used
for r = 3, 14 do
  C.check("sparse round " .. r, sparse_round(r), 64)
  collectgarbage()
end
C.check("pool used after 12 more rounds (was " .. used .. ")", lt.stats().pool_used <= used + (64 << 10), true)

-- tree types and their instances, dropped in a loop
for r = 1, 12 do
  local T = lt.tree { fields = { a = lt.i32 }, lt.pointer(lt.i, 16) { lt.dense(lt.i, 16) { "a" } } }
  local g = T:instantiate()
  lt.kernel(function(t) for i in lt.ndrange(16) do t.a[i * 16] = i * r end end, { t = T })(g)
  C.check("tree type round " .. r, g.a[15 * 16], 15 * r)
  if r % 4 == 0 then collectgarbage() end
end

-- a kernel keeps the trees it was compiled against: here it reaches field
-- a only through a table, a is then dropped and many trees come and go; the
-- kernel still writes a's memory, never a newer tree's
local holder = { lt.field(lt.i32, 16) }
local k = lt.kernel(function() for i in lt.ndrange(16) do holder[1][i] = holder[1][i] + 1 end end)
k()
local a_tree = holder[1]
C.check("kernel on a", a_tree[5], 1)
holder[1], a_tree = nil, nil
collectgarbage()
local keep = {}
for r = 1, 300 do
  local x = lt.field(lt.i32, 16)
  x:fill(r)
  if r > 200 then keep[#keep + 1] = x end
  if r % 50 == 0 then collectgarbage() end
end
k()
k()
local intact = 0
for n, x in ipairs(keep) do
  local all = true
  for i = 0, 15 do if x[i] ~= 200 + n then all = false end end
  if all then intact = intact + 1 end
end
C.check("newer trees untouched by the old kernel", intact, 100)

C.finish("trees_reclaim")
print("trees_reclaim: ok")
