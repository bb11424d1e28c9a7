-- error: sparse_shape_nonpositive.lua:4: pointer: every extent must be > 0 (got shape (16, -2))
local lt = require "lattice"
local x = lt.field(lt.f32)
lt.root:pointer(lt.ij, { 16, -2 }):dense(lt.ij, 8):place(x)
