-- lt.atomic_add of a vec2 f32 value: on the CPU the x and y adds become one
-- 8-byte compare-and-swap when the pair is 8-byte aligned (cg_memory.c), and
-- stay two adds when it is not. Many threads add into few cells; every sum
-- must be exact (the values are small integers, so no rounding depends on
-- the order), and the old values returned to the threads of one cell must be
-- the partial sums 0, 1, 2, ... with x and y from the same moment.
local lt = require "lattice"
lt.init { threads = 4 }

local N, CELLS = 60000, 3

-- v alone: every cell's pair is aligned. m then v in one cell of 12 bytes:
-- v.x sits at 4 + 12 k, so every other cell's pair is not aligned.
local v = lt.field(lt.vec2, CELLS)
local m, w = lt.field(lt.f32), lt.field(lt.vec2)
lt.root:dense(lt.i, CELLS):place(m, w)
local old_v = lt.field(lt.vec2, N)
local old_w = lt.field(lt.vec2, N)

local scatter = lt.kernel(function()
  for p in lt.ndrange(N) do
    local c = p % CELLS
    old_v[p] = lt.atomic_add(v[c], lt.vec2(1, 2))
    old_w[p] = lt.atomic_add(w[c], lt.vec2(1, 3))
    lt.atomic_add(m[c], 1)
  end
end)
scatter()

local per = N // CELLS
for c = 0, CELLS - 1 do
  local got, want = v[c], { per, 2 * per }
  assert(got[1] == want[1] and got[2] == want[2], ("v[%d] = (%s, %s), want (%d, %d)"):format(c, got[1], got[2], want[1], want[2]))
  got = w[c]
  assert(got[1] == per and got[2] == 3 * per, ("w[%d] = (%s, %s), want (%d, %d)"):format(c, got[1], got[2], per, 3 * per))
  assert(m[c] == per, ("m[%d] = %s, want %d"):format(c, m[c], per))
end

-- the old values: per cell, each partial sum handed out exactly once, in x
-- and in y. Where the pair is one CAS (the CPU, aligned: v) x and y come
-- from the same moment: y = 2x.
local on_cpu = os.getenv("LT_ARCH") ~= "cuda"
local function check_olds(name, old, ky, together)
  local t = old:to_table()
  local seen_x, seen_y = {}, {}
  for p = 0, N - 1 do
    local o = t[p + 1]
    local c = p % CELLS
    if together then
      assert(o[2] == ky * o[1], ("%s: thread %d saw the pair (%s, %s): not one moment"):format(name, p, o[1], o[2]))
    end
    local kx, kyy = c * N + o[1], c * N * 4 + o[2]
    assert(not seen_x[kx], ("%s: partial sum x = %s of cell %d handed out twice"):format(name, o[1], c))
    assert(not seen_y[kyy], ("%s: partial sum y = %s of cell %d handed out twice"):format(name, o[2], c))
    assert(o[1] >= 0 and o[1] < per and o[1] == math.floor(o[1]), ("%s: old x %s out of range"):format(name, o[1]))
    assert(o[2] % ky == 0 and o[2] >= 0 and o[2] < ky * per, ("%s: old y %s out of range"):format(name, o[2]))
    seen_x[kx], seen_y[kyy] = true, true
  end
end
check_olds("v (aligned)", old_v, 2, on_cpu)
check_olds("w (every other cell unaligned)", old_w, 3, false)

-- f64 pairs and i32 pairs are not fused; they must still add up
local d = lt.field(lt.dvec2, 2)
local iv = lt.field(lt.ivec2, 2)
local more = lt.kernel(function()
  for p in lt.ndrange(N) do
    lt.atomic_add(d[p % 2], lt.dvec2(0.5, 1))
    lt.atomic_add(iv[p % 2], lt.ivec2(1, -1))
  end
end)
more()
for c = 0, 1 do
  assert(d[c][1] == N / 4 and d[c][2] == N / 2, "vec2d sums")
  assert(iv[c][1] == N // 2 and iv[c][2] == -(N // 2), "ivec2 sums")
end
print("atomic_pairs: ok")
