-- debug = true: every field access in a kernel is bounds-checked; a bad index
-- raises a Lua error naming the kernel, the line, the index, the axis, the
-- field and its shape; pcall catches it and the next call works.
local lt = require "lattice"
lt.init { debug = true }

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, expect_error = T.check, T.check_error

local x = lt.field(lt.f32, { 640, 320 })
local line = debug.getinfo(1, "l").currentline + 3
local paint = lt.kernel(function(first, limit, col)
  for i = first, limit - 1 do
    x[i][col] = i * 0.5
  end
end)

paint(0, 640, 3)
check("in-range run", x[639][3], 319.5)
expect_error("axis 0 too large", function() paint(700, 701, 0) end,
  ("debug_bounds.lua:%d): index 700 out of range for axis 0 of field 'x' with shape (640, 320)"):format(line))
expect_error("names the kernel", function() paint(700, 701, 0) end, "kernel paint (")
expect_error("axis 1 negative", function() paint(0, 10, -1) end,
  "index -1 out of range for axis 1 of field 'x' with shape (640, 320)")
expect_error("axis 1 too large", function() paint(0, 1, 320) end, "index 320 out of range for axis 1")
-- the process survives and the next call works
x[5][7] = 0
paint(0, 10, 7)
check("next call works", x[5][7], 2.5)

-- a read in a serial (top-level) statement is checked too
local y = lt.field(lt.i32, 8)
local get = lt.kernel(function(i) return y[i] end)
y[7] = 99
check("serial read", get(7), 99)
expect_error("serial read out of range", function() get(8) end,
  "index 8 out of range for axis 0 of field 'y' with shape (8)")
check("serial read after error", get(7), 99)

-- Lua-scope access is always checked
expect_error("Lua scope", function() return x[640][0] end,
  "debug_bounds.lua:" .. (debug.getinfo(1, "l").currentline - 1) .. ": index 640 out of range for axis 0 of field 'x'")

T.finish("bounds")
print("debug_bounds: ok")
