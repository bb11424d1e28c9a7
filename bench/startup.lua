-- startup.lua -- bench/run.sh's start-up row against Taichi: what a program
-- does before its first result, timed from outside by bench/startup.c as
--   lattice bench/startup.lua      (bench/taichi/startup.py is Taichi's)
-- lt.init, a field, and a first trivial kernel: traced, compiled (LT_CACHE=off
-- in run.sh) and run.
local lt = require "lattice"
lt.init {}
local x = lt.field(lt.f32, 16)
local k = lt.kernel(function()
  for i in lt.ndrange(16) do x[i] = i end
end)
k()
assert(x[15] == 15)
