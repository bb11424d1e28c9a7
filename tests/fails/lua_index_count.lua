-- error: lua_index_count.lua:6: field 'grid' has 2 indices, got 3
local lt = require "lattice"
local grid = lt.field(lt.f32, { 4, 4 })
grid[1][2] = 3
local total = 0
total = total + grid[1][2][0]
print(total)
