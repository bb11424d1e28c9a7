-- error: sparse_dynamic_not_last.lua:4: dense: S2dynamic: a dynamic level must be the last level
local lt = require "lattice"
local list = lt.root:dense(lt.i, 8):dynamic(lt.j, 64)
list:dense(lt.k, 4)
