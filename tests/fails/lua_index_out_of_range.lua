-- error: lua_index_out_of_range.lua:4: index 640 out of range for axis 0 of field 'pixels' with shape (640, 320)
local lt = require "lattice"
local pixels = lt.field(lt.f32, { 640, 320 })
pixels[640][0] = 1.0
