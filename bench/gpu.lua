-- gpu.lua -- the GPU's dense bandwidth: the triad a[i] = b[i] + s*c[i] over
-- 2^26 f32 as a Lattice kernel on CUDA against a device-to-device copy
-- measured in the same run (the best a kernel streaming memory can do).
--   lattice bench/gpu.lua [--reps R]            (bench/gpu.sh runs it)
-- Prints "key value" lines: triad_gpu_ms, copy_gpu_ms, and both as GB/s.
local lt = require "lattice"
local core = require "lattice.core"
local state = require "lattice.state"

package.path = (arg[0]:match("^(.*/)") or "./") .. "?.lua;" .. package.path
local common = require "common"
local _, reps = common.options("bench/gpu.lua")

lt.init { arch = "cuda" }
local N = 1 << 26
local A, B, C = lt.field(lt.f32, { N }), lt.field(lt.f32, { N }), lt.field(lt.f32, { N })
lt.kernel(function()
  for i in lt.ndrange(N) do
    B[i] = (i % 1000) * 0.5
    C[i] = 1.0
  end
end)()
local triad = lt.kernel(function(s)
  for i in lt.ndrange(N) do A[i] = B[i] + s * C[i] end
end, { s = lt.f32 })
triad(3.0)
local t = {}
for r = 1, reps do t[r] = common.ms(triad, 3.0) end
for k = 0, 1000 do
  local i = math.min(N - 1, k * (N // 1000) + k % 7)
  assert(A[i] == (i % 1000) * 0.5 + 3, ("triad: a[%d] = %s"):format(i, tostring(A[i])))
end
local triad_ms = common.median(t)
-- the copy moves 4N bytes each way (8N of traffic); the triad reads 8N and writes 4N
local copy_ms = assert(core.device_copy_ms(state.prog, 4 * N, reps))
print(("triad_gpu_ms %.4f"):format(triad_ms))
print(("copy_gpu_ms %.4f"):format(copy_ms))
print(("triad_gpu_gbs %.1f"):format(12 * N / triad_ms / 1e6))
print(("copy_gpu_gbs %.1f"):format(8 * N / copy_ms / 1e6))
