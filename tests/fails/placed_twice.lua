-- error: placed_twice.lua:5: field 'rho' is placed twice
local lt = require "lattice"
local rho = lt.field(lt.f32)
lt.root:dense(lt.ij, { 8, 8 }):place(rho)
lt.root:dense(lt.i, 16):place(rho)
