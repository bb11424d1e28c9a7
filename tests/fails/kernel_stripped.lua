-- error: kernel_stripped.lua:4: lt.kernel: the function was loaded from stripped bytecode
local lt = require "lattice"
local f = load(string.dump(function(a) return a * 2 end, true), "stripped", "b")
local k = lt.kernel(f)
k(1)
