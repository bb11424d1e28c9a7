-- error: shape_zero.lua:3: dense: every extent must be > 0 (got shape (640, 0))
local lt = require "lattice"
local img = lt.field(lt.f32, { 640, 0 })
