-- One index too many in Lua scope (x[1][1][1] on a 2-D field): the element
-- read is a plain number, and indexing it names the field or ndarray and the
-- index count, at the user's line, as kernels do; indexing any other number
-- still says what Lua says.
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local x = lt.field(lt.f32, { 3, 4 })
local y = lt.field(lt.i32, 5)
local z = lt.field(lt.f64, {})
local a = lt.ndarray(lt.f32, { 2, 3 })
local b = lt.ndarray(lt.i32, 4)
local this = debug.getinfo(1, "S").short_src

-- the message, and the line it names (the line of the access)
local function check_at(what, fn, text)
  local line = debug.getinfo(fn, "S").linedefined
  C.check_error(what, fn, this .. ":" .. line .. ": " .. text)
end

check_at("read x[1][1][1]", function() local v = x[1][1][1]; return v end, "field 'x' has 2 indices, got 3")
check_at("write x[1][1][1]", function() x[1][1][1] = 2 end, "field 'x' has 2 indices, got 3")
check_at("read y[0][0]", function() local v = y[0][0]; return v end, "field 'y' has 1 indices, got 2")
check_at("write y[0][0]", function() y[0][0] = 1 end, "field 'y' has 1 indices, got 2")
check_at("z.value[0]", function() local v = z.value[0]; return v end, "field 'z' has 0 indices, got 1")
check_at("x[{1, 2}][0]", function() local v = x[{ 1, 2 }][0]; return v end, "field 'x' has 2 indices, got 3")
check_at("ndarray a[1][1][1]", function() local v = a[1][1][1]; return v end,
  "the ndarray has 2 dimensions, got 3 indices")
check_at("ndarray b[1][1] = 2", function() b[1][1] = 2 end, "the ndarray has 1 dimensions, got 2 indices")
check_at("ndarray b[{1}].x", function() local v = b[{ 1 }].x; return v end,
  "the ndarray has 1 dimensions, got 2 indices")

-- other numbers: Lua's message, at the line of the access
y[2] = 7
local n = 7
check_at("a plain number", function() local v = n[1]; return v end, "attempt to index a number value")
local r = y[2]                                   -- the last read gave 7 here, not on the next line
check_at("a number equal to the last read", function() local v = n.x; return v end,
  "attempt to index a number value")
C.check("last read", r, n)
check_at("assigning into a number", function() n.x = 1 end, "attempt to index a number value")

-- composite elements are tables: indexing them is fine
local v = lt.field(lt.vec2, 3)
v[1] = { 5, 6 }
C.check("vector element component", v[1][2], 6.0)
check_at("vector element, one more", function() local e = v[1][2][1]; return e end,
  "attempt to index a number value")

-- a nil index is an index: x[nil][0] was an index chain, not an error
check_at("x[nil][0]", function() local e = x[nil][0]; return e end, "index 0 of field 'x' must be an integer (got a nil)")
check_at("x[nil][0] = 1", function() x[nil][0] = 1 end, "index 0 of field 'x' must be an integer (got a nil)")
check_at("y[nil] = 1", function() y[nil] = 1 end, "index 0 of field 'y' must be an integer (got a nil)")
check_at("a[nil][0]", function() local e = a[nil][0]; return e end, "index 0 of an ndarray must be an integer (got a nil)")
check_at("v2[nil][0]", function() local w = lt.field(lt.vec2, { 2, 2 }); local e = w[nil][0]; return e end,
  "index 0 of field 'w.x' must be an integer (got a nil)")
check_at("x[0][\"1\"]", function() local e = x[0]["1"]; return e end,
  "index 1 of field 'x' must be an integer (got the string \"1\")")

-- methods need the colon
check_at("x.fill(5)", function() x.fill(5) end,
  "x:fill is a method: call it with a colon, x:fill(...) (got a number as x, not a scalar field)")
check_at("v.to_table()", function() v.to_table() end, "x:to_table is a method: call it with a colon")
check_at("a.from_table(t)", function() a.from_table({ 1 }) end,
  "a:from_table is a method: call it with a colon, a:from_table(...) (got a table as a, not an ndarray)")
check_at("field method on an ndarray", function() x.to_table(a) end,
  "x:to_table is a method: call it with a colon, x:to_table(...) (got a table as x, not a scalar field)")

-- in a kernel the same mistake is a trace error naming the field
C.check_error("kernel", function()
  lt.kernel(function() x[1][1][1] = 1 end)()
end, "field 'x' has 2 indices, got 3")

C.finish("lua_scope_index_count")
