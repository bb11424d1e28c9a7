-- error: ir_nesting_depth.lua:9: the kernel's IR blocks nest more than 1000 deep
-- A helper that recurses on a Lua count nests eight `if`s on kernel values per
-- level: the trace stops at the IR text form's limit (docs/ir.md) instead of
-- making IR that lattice-opt could not read back.
local lt = require "lattice"
local k = lt.kernel(function(x)
  local function nest(n, v)
    if n == 0 then return v end
    if v > 0 then if v > 1 then if v > 2 then if v > 3 then if v > 4 then if v > 5 then if v > 6 then if v > 7 then
      v = nest(n - 1, v) end end end end end end end end
    return v
  end
  local v = x
  return nest(150, v)
end)
k(1)
