-- error: field_name_type.lua:4: x.name must be a string (got a number)
local lt = require "lattice"
local x = lt.field(lt.f32, 4)
x.name = 5
