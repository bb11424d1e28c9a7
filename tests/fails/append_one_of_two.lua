-- error: append_one_of_two.lua:5: lt.append: field 'a' shares its dynamic level with field 'b'
local lt = require "lattice"
local a, b = lt.field(lt.f32, nil, "a"), lt.field(lt.f32, nil, "b")
lt.root:dense(lt.i, 4):dynamic(lt.j, 8):place(a, b)
lt.append(a, 0, 1.5)
