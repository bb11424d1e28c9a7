-- error: use arch = "cpu" (or "auto")
local lt = require "lattice"
lt.init { arch = "cuda" }
