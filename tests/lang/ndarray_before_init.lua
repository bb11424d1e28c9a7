-- An ndarray made before any lt.init (host memory, no program yet) works in
-- the kernels of the program the first launch creates: where that program's
-- memory is a device's, the array moves there at that launch, values kept.
local lt = require "lattice"
local a = lt.ndarray(lt.i32, 6)          -- before any lt.init: host memory
for i = 0, 5 do a[i] = i * i end
local inc = lt.kernel(function(x) for i in lt.ndrange(x.shape[1]) do x[i] = x[i] + 1 end end)
inc(a)                                   -- the first launch (lt.init{} now)
for i = 0, 5 do assert(a[i] == i * i + 1, a[i]) end
inc(a)
assert(a:to_table()[6] == 27)
print("ndarray_before_init: ok")
