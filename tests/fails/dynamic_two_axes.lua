-- error: dynamic_two_axes.lua:4: dynamic: a dynamic level has exactly one axis, e.g. lt.j (got 2 axes), as in Taichi
local lt = require "lattice"
local x = lt.field(lt.f32)
lt.root:dynamic(lt.ij, 16):place(x)
