-- A tiny pool (lt.init{device_memory = ...}) runs out: the kernel's and the
-- Lua-scope write's errors name the SNode, the bytes, the pool size and the
-- setting; pcall catches them and the program stays usable (data written
-- before is intact, deactivating frees room for new cells).
local lt = require "lattice"
local POOL = 6000000
lt.init { device_memory = POOL }
assert(lt.stats().pool_bytes == POOL, "pool size " .. lt.stats().pool_bytes)

local total = lt.field(lt.f64, {})     -- (a tree made after the pool is full would not fit)
local x = lt.field(lt.f32)
lt.root:pointer(lt.ij, 64):dense(lt.ij, 16):place(x)
-- The lists deactivate_all and GC need (active containers, free cells) take
-- pool memory on first use; one warm-up cycle makes them while there is room.
-- (A runtime that reserved them up front would not need this.)
x[0][0] = 1
x:deactivate_all()
x[5][5] = 42

local fill = lt.kernel(function(n) for i, j in lt.ndrange(n, n) do x[i][j] = 1 end end)
local ok, msg = pcall(fill, 1024)
assert(not ok, "filling 4 MiB of cells in a 6 MB pool should fail")
for _, part in ipairs { "sparse_pool_exhausted.lua:21:", "kernel fill", "S2pointer", "fields x", "bytes",
  tostring(POOL), "device_memory" } do
  assert(msg:find(part, 1, true), "the message lacks '" .. part .. "': " .. msg)
end

-- Lua scope: the same error at the user's line
ok, msg = pcall(function() for i = 0, 1023, 16 do x[i][1000] = 2 end end)
assert(not ok and msg:find("sparse_pool_exhausted.lua:29:", 1, true) and msg:find("device_memory", 1, true), msg)

-- still usable: earlier data, reads, deactivation and new writes
assert(x[5][5] == 1.0, "x[5][5] = " .. x[5][5])
x:deactivate_all()
assert(x[5][5] == 0.0)
fill(64)
local sum = lt.kernel(function() for i, j in lt.ndrange(64, 64) do lt.atomic_add(total.value, x[i][j]) end end)
sum()
assert(total.value == 64 * 64, "sum after recovery " .. total.value)
x[1000][1000] = 3
assert(x[1000][1000] == 3.0)

-- a tree (8 MiB of f64) that does not fit: lt.tree (registering it) or its
-- instantiation fails, naming the setting
local Big
ok, Big = pcall(lt.tree, { fields = { v = lt.f64 }, lt.dense(lt.ij, 1024) { "v" } })
msg = Big
if ok then ok, msg = pcall(Big.instantiate, Big) end
assert(not ok and tostring(msg):find("device_memory", 1, true), tostring(msg))
-- bad option values
ok, msg = pcall(lt.init, { device_memory = -1 })
assert(not ok and msg:find("device_memory must be"), msg)
print("sparse_pool_exhausted: ok")
