-- error: ndarray_lua_bounds.lua:4: index 5 out of range for axis 0 of an ndarray with shape (5)
local lt = require "lattice"
local a = lt.ndarray(lt.i32, 5)
print(a[5])
