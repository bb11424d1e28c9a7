-- Several functions on one source line: Lua records only the lines a function
-- starts and ends on, so the tracer must pick each kernel's and helper's own
-- body by its bytecode (lattice.bytecode), never the first one on the line.
-- Every result is compared with the plain-Lua function itself.
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local f2, f3 = function(a) return a * 2 end, function(a) return a * 3 end
local k1, k2 = lt.kernel(function(a) return a * 2 end), lt.kernel(function(a) return a * 3 end)
C.check("k2 first", k2(10), f3(10))
C.check("k1 second", k1(10), f2(10))

-- helpers on one line, and kernels in a one-line table
local h1, h2 = lt.func(function(x) return x + 1 end), lt.func(function(x) return x - 1 end)
local ks = { up = lt.kernel(function(a) return h1(a) end), down = lt.kernel(function(a) return h2(a) end) }
C.check("table down", ks.down(5), 4)
C.check("table up", ks.up(5), 6)

-- same code, different upvalues
local s, t = 5, 7
local u1, u2 = lt.kernel(function(a) return a * s end), lt.kernel(function(a) return a * t end)
C.check("upvalue t", u2(3), 21)
C.check("upvalue s", u1(3), 15)

-- same text, same upvalue names: either body is the right one
local same1, same2 = lt.kernel(function(a) return a - 4 end), lt.kernel(function(a) return a - 4 end)
C.check("identical 2", same2(1), -3)
C.check("identical 1", same1(9), 5)

-- a kernel with a function nested on its line, next to another kernel
local n1, n2 = lt.kernel(function(a) local g = function(y) return y * 10 end return g(a) end),
  lt.kernel(function(a) local g = function(y) return y * 100 end return g(a) end)
C.check("nested 1", n1(2), 20)
C.check("nested 2", n2(2), 200)

-- function statements on one line, used as helpers
local M = {}
function M.pos(x) return x end function M.neg(x) return -x end
local fneg, fpos = lt.func(M.neg), lt.func(M.pos)
local kn = lt.kernel(function(a) return fneg(a) + 2 * fpos(a) end)
C.check("statements", kn(3), 3)

-- kernels spanning the same lines
local m1, m2 = lt.kernel(function(a)
  return a + 100 end), lt.kernel(function(a)
  return a + 200 end)
C.check("multi-line 2", m2(1), 201)
C.check("multi-line 1", m1(1), 101)

-- a kernel with loops over a field, one line each
local x = lt.field(lt.i32, 16)
local fill, bump = lt.kernel(function() for i in lt.ndrange(16) do x[i] = i end end), lt.kernel(function() for i in lt.ndrange(16) do x[i] = x[i] * 3 end end)
bump()
fill()
for i = 0, 15 do C.check("fill " .. i, x[i], i) end
bump()
for i = 0, 15 do C.check("bump " .. i, x[i], 3 * i) end

C.finish("same_line_functions")
