-- error: field_dtype_readonly.lua:6: x.dtype of field 'x' is read-only: a field keeps the type and shape it was made with
local lt = require "lattice"
-- assigning x.dtype was accepted and later writes were converted for the new
-- type while the memory kept the old one
local x = lt.field(lt.f32, 4)
x.dtype = lt.i32
x[1] = 2
