-- mock: none
-- The CUDA backend's host side against the mock driver (tests/cuda/mock_driver.c):
-- lt.init on "the GPU", the pool in device memory, Lua-scope access to dense and
-- sparse fields, dynamic lists, tree instances and ndarrays through copies and
-- host requests (lt_serve, which the mock runs natively), kernel compilation to
-- PTX and launches. The mock cannot run PTX, so kernels do nothing here; what
-- they compute is tested by the cuda/ variants of the suite on a real GPU.
local lt = require "lattice"
local core = require "lattice.core"
local state = require "lattice.state"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local gpu = assert(core.cuda_probe())
C.check("the mock is the GPU", gpu.name, "Lattice mock GPU")
C.check("its sm", gpu.sm, 80)

lt.init { arch = "cuda", device_memory = 64 << 20 }
C.check("arch", state.opts.arch, "cuda")
C.check("pool size", lt.stats().pool_bytes, 64 << 20)

-- dense fields: element access, fill, bulk copies
local x = lt.field(lt.f32, 100)
local n = lt.field(lt.i32, { 4, 5 })
x[3] = 2.5
n[2][3] = -7
C.check("dense f32 round trip", x[3], 2.5)
C.check("dense i32 round trip", n[2][3], -7)
C.check("untouched reads zero", x[4], 0.0)
x:fill(1.5)
C.check("fill", x[99], 1.5)
local t = {}
for i = 1, 100 do t[i] = i * 0.25 end
x:from_table(t)
local back = x:to_table()
local same = true
for i = 1, 100 do same = same and back[i] == t[i] end
C.check("from_table / to_table through one copy each", same, true)
C.check("element after from_table", x[10], 11 * 0.25)

-- sparse: a pointer level over dense blocks; writes activate through lt_serve
local blocks = lt.root:pointer(lt.ij, 8)
local y = lt.field(lt.f32)
blocks:dense(lt.ij, 4):place(y)
y[5][6] = 3
C.check("sparse write then read", y[5][6], 3.0)
C.check("inactive reads zero", y[0][0], 0.0)
C.check("the block holding (5, 6) is active", lt.is_active(blocks, 5, 6), true)
C.check("another block is not", lt.is_active(blocks, 0, 0), false)
lt.activate(blocks, 30, 30)
C.check("lt.activate", lt.is_active(blocks, 30, 30), true)
local function active_blocks()
  for _, sn in ipairs(lt.stats().snodes) do
    if sn.kind == "pointer" then return sn.active end
  end
end
C.check("active blocks counted", active_blocks(), 2)
lt.deactivate(blocks, 5, 6)
C.check("lt.deactivate", lt.is_active(blocks, 5, 6), false)
C.check("its data is gone", y[5][6], 0.0)

-- a dynamic list
local l = lt.root:dense(lt.i, 2):dynamic(lt.j, 16)
local z = lt.field(lt.i32)
l:place(z)
for k = 1, 5 do lt.append(l, 1, k * 10) end
C.check("appended length", lt.length(l, 1), 5)
C.check("appended value", z[1][4], 50)
C.check("other list empty", lt.length(l, 0), 0)

-- ndarrays live in device memory too
local a = lt.ndarray(lt.f64, { 3, 4 })
a[2][3] = 4.25
C.check("ndarray round trip", a[2][3], 4.25)
C.check("ndarray zero", a[0][0], 0.0)

-- kernels compile to PTX, load and launch (the mock runs nothing)
local k = lt.kernel(function(s)
  for i in lt.ndrange(100) do x[i] = x[i] * s + lt.sqrt(i) end
end, { s = lt.f32 })
k(2.0)
local sp = lt.kernel(function()
  for i, j in y do y[i][j] = y[i][j] + 1 end
end)
sp()
C.check("a kernel call returns", true, true)
C.finish("mock_backend")
