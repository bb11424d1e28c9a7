-- error: cuda_arch.lua:3: lt.init: the CUDA backend is not available yet
local lt = require "lattice"
lt.init { arch = "cuda" }
