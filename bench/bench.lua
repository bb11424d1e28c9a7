-- bench.lua -- the Lattice half of bench/run.sh (which compiles and runs the
-- C references and writes docs/performance.md). Run by `lattice`:
--   lattice bench/bench.lua [--threads T] [--reps R]
-- Prints "key value" lines for run.sh, then a readable summary on stderr.
local lt = require "lattice"

package.path = (arg[0]:match("^(.*/)") or "./") .. "?.lua;" .. package.path   -- bench/common.lua
local common = require "common"
local threads, reps = common.options("bench/bench.lua")
local median, ms = common.median, common.ms

lt.init { threads = threads }

-- (a) dense triad over 2^24 f32, same loop as bench/triad.c
local N = 1 << 24
local A, B, C = lt.field(lt.f32, { N }), lt.field(lt.f32, { N }), lt.field(lt.f32, { N })
local init = lt.kernel(function()
  for i in lt.ndrange(N) do
    B[i] = (i % 1000) * 0.5
    C[i] = 1.0
  end
end)
local triad = lt.kernel(function(s)
  for i in lt.ndrange(N) do
    A[i] = B[i] + s * C[i]
  end
end, { s = lt.f32 })
init()
triad(3.0) -- compile and warm up
local times = {}
for r = 1, reps do times[r] = ms(triad, 3.0) end
-- every kernel result above is only a time if the values are right: check a
-- spread of 1000 cells and both ends
for k = 0, 1000 do
  local i = math.min(N - 1, k * (N // 1000) + k % 7)
  local want = (i % 1000) * 0.5 + 3
  assert(A[i] == want, ("triad: a[%d] = %s, expected %s"):format(i, tostring(A[i]), want))
end
print(("triad_lattice_ms %.4f"):format(median(times)))

-- (b) JIT latency of the examples' kernels: first call (trace, passes, LLVM
-- optimisation and code generation, run) minus a second call (run only),
-- each rep on a fresh kernel object so nothing is cached
local W, H = 640, 320
local iters = lt.field(lt.i32, { W, H })
local u, v = lt.field(lt.f32, { 200, 200 }), lt.field(lt.f32, { 200, 200 })

local makers = {
  julia_paint = function()
    return lt.kernel(function(t)
      for i, j in lt.ndrange(W, H) do
        local zr, zi = (i / H - 1) * 2, (j / H - 0.5) * 2
        local cr, ci = -0.8, lt.cos(t) * 0.2
        local n = 0
        while zr * zr + zi * zi < 4 and n < 50 do
          zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
          n = n + 1
        end
        iters[i][j] = n
      end
    end, { t = lt.f32 }), 0.5
  end,
  heat_init = function()
    return lt.kernel(function()
      for i, j in lt.ndrange(200, 200) do
        local t = 0.0
        if j == 199 and i >= 66 and i < 134 then t = 1.0 end
        u[i][j] = t
      end
    end)
  end,
  heat_step = function()
    return lt.kernel(function()
      for i, j in lt.ndrange(198, 198) do
        local x, y = i + 1, j + 1
        local c = u[x][y]
        v[x][y] = c + 0.24 * (u[x - 1][y] + u[x + 1][y] + u[x][y - 1] + u[x][y + 1] - 4 * c)
      end
    end)
  end,
}
local names = { "julia_paint", "heat_init", "heat_step" }
local jit_reps = 9
for _, name in ipairs(names) do
  local lat = {}
  for r = 1, jit_reps do
    local k, t = makers[name]()
    local call = t and function() k(t) end or k
    local first = ms(call)
    local second = ms(call)
    lat[r] = first - second
  end
  print(("jit_ms %s %.3f"):format(name, median(lat)))
end
