-- error: sparse_dynamic_axis_reused.lua:3: dynamic: dynamic under S1dense: axis i is already split by the ancestor S1dense
local lt = require "lattice"
local list = lt.root:dense(lt.i, 8):dynamic(lt.i, 64)
