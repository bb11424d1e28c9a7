-- error: sparse_too_many_indices.lua:4: a field has at most 8 indices (got 9 axes)
local lt = require "lattice"
local x = lt.field(lt.f32)
lt.root:bitmasked({ 0, 1, 2, 3, 4, 5, 6, 7, 8 }, 2):place(x)
