-- compile.lua -- the Lattice half of bench/run.sh's compile-time row: how
-- the compile time of one kernel grows with its size. The kernel writes N
-- fields of 64 f32 in one parallel loop (a Lua loop over the fields,
-- unrolled while tracing):
--     for i = 0, 63 do for k in lt.static(1, N) do fs[k][i] = i * k end end
-- Its first call traces it, runs the IR passes, compiles it with LLVM, links
-- it and runs it (64 cells a field: nothing next to the rest); the figure is
-- the process CPU time of that call (os.clock, which the other engineers'
-- work on a shared machine disturbs less than wall time).
--   lattice bench/compile.lua N
-- Prints "compile_ms N ms", after checking a spread of the written values.
local lt = require "lattice"

local N = math.tointeger(tonumber(arg[1] or ""))
assert(N and N >= 1, "usage: lattice bench/compile.lua N")
lt.init {}
local fs = {}
for k = 1, N do fs[k] = lt.field(lt.f32, 64) end
local kern = lt.kernel(function()
  for i = 0, 63 do
    for k in lt.static(1, N) do fs[k][i] = i * k end
  end
end)
local t0 = os.clock()
kern()
local ms = (os.clock() - t0) * 1e3
for k = 1, N, math.max(1, N // 17) do
  for _, i in ipairs { 0, 5, 63 } do
    assert(fs[k][i] == i * k, ("field %d, cell %d: %s, expected %d"):format(k, i, tostring(fs[k][i]), i * k))
  end
end
print(("compile_ms %d %.1f"):format(N, ms))
