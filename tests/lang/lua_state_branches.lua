-- Lua values in kernels under conditions on kernel values and in kernel loops
-- (docs/language.md, "Lua values under kernel conditions"): what stays
-- allowed -- Lua state made or declared inside the construct that changes it,
-- a function's own parameters, static conditions and unrolled loops -- gives
-- the results plain Lua gives; what would silently ignore the condition is an
-- error (tests/fails/lua_state_*.lua).
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local out = lt.field(lt.f32, 8)
local k = lt.kernel(function(x)
  local acc = 0.0                               -- a kernel variable: assignable anywhere
  if x > 0 then
    local w = { 1, 2 }                          -- made inside the branch: may be changed there
    w[3] = x * 3
    local label                                  -- declared inside the branch
    label = "pos"
    acc = acc + w[1] + w[2] + w[3]
  else
    local function scaled(v, f) f = f * 2; return v * f end   -- f (a Lua number) is the function's own
    acc = scaled(x, 1)
  end
  for i in lt.static(0, 2) do                   -- unrolled: Lua state may change freely
    local t = {}
    t[1] = i
    out[i] = acc + t[1]
  end
  local cfg = { scale = 2 }
  cfg.scale = 3                                  -- at the top level: runs once, as written
  if 1 > 0 then cfg.scale = 4 end                -- a static condition: only the taken branch
  return acc * cfg.scale
end)
local function ref(x)
  local acc = 0
  if x > 0 then acc = acc + 1 + 2 + x * 3 else acc = x * 2 end
  return acc * 4
end
for _, x in ipairs { 2.5, -1.5, 0 } do
  C.check("k(" .. x .. ")", k(x), ref(x))
  C.check("out[2] at " .. x, out[2], ref(x) / 4 + 2)
end

C.finish("lua_state_branches")
