-- 0-D loops: a struct-for over a 0-D field and lt.ndrange() with no extents
-- run their body once (in kernels, at the top level and nested, and in Lua
-- scope); lt.grouped over them gives an empty index vector (#I == 0).
local lt = require "lattice"
lt.init {}

local s = lt.field(lt.f32, {})
local n = lt.field(lt.i32, {})
local lens = lt.field(lt.i32, {})
s.value = 1.5

local k = lt.kernel(function()
  for _ in s do s.value = s.value * 2 end            -- a loop of one iteration
  for _ in lt.ndrange() do lt.atomic_add(n.value, 1) end
  for I in lt.grouped(s) do lens.value = lens.value + #I + 10 end
  for I in lt.grouped(lt.ndrange()) do lens.value = lens.value + #I + 100 end
end)
k()
assert(s.value == 3.0, s.value)
assert(n.value == 1, n.value)
assert(lens.value == 110, lens.value)

-- nested: once per iteration of the outer loop
local c = lt.field(lt.i32, 5)
local k2 = lt.kernel(function()
  for i in lt.ndrange(5) do
    for _ in lt.ndrange() do c[i] = c[i] + i end
    for _ in s do c[i] = c[i] + 10 end
  end
end)
k2()
for i = 0, 4 do assert(c[i] == i + 10, c[i]) end

-- unrolled
local u = lt.field(lt.i32, {})
local k3 = lt.kernel(function()
  for I in lt.static(lt.grouped(lt.ndrange())) do u.value = u.value + #I + 1 end
  for _ in lt.static(lt.ndrange()) do u.value = u.value + 10 end
end)
k3()
assert(u.value == 11, u.value)

-- a value of the body reaches the code after it; break leaves the loop
local r = lt.field(lt.i32, {})
local k4 = lt.kernel(function()
  local v = 0
  for i in lt.serial(0, 2) do
    for _ in lt.ndrange() do
      v = v + 1
      if i == 1 then break end
      v = v + 10
    end
  end
  r.value = v
end)
k4()
assert(r.value == 23, r.value)

-- Lua scope
local count, comps = 0, -1
for _ in lt.ndrange() do count = count + 1 end
for I in lt.grouped(lt.ndrange()) do count = count + 10; comps = #I end
assert(count == 11 and comps == 0, count .. " " .. comps)
count = 0
for I in lt.grouped(s) do count = count + 1; comps = #I end
assert(count == 1 and comps == 0)

-- the examples of docs/language.md's "Loops" (under "Control flow")
package.path = "lib/?.lua;" .. package.path
local snippets = require("docs").snippets("language.md", "\n### Loops\n(.-)\n##", "Loops")
for n, s in ipairs(snippets) do
  lt.init {}
  local ok, e = pcall(s.run)
  if not ok then error("example " .. n .. " of 'Loops' fails: " .. tostring(e) .. "\n" .. s.code) end
end
assert(#snippets >= 1, "no example in 'Loops'")

print("loops_0d: ok")
