-- error: same_line_undecidable.lua:6: cannot tell apart the 2 functions defined on line 6
-- A `<const>` local is compiled away, so neither candidate's code matches:
-- the tracer must refuse rather than trace one of them.
local lt = require "lattice"
local C <const> = 4
local k1, k2 = lt.kernel(function(a) return a * C end), lt.kernel(function(a) return a + C end)
k2(1)
