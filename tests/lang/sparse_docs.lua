-- Runs every Lua example of the "Sparse data structures" section of
-- docs/language.md (each asserts its own results), so the guide stays true.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local snippets = require("docs").snippets("language.md", "\n## Sparse data structures\n(.-)\n## ", "Sparse data structures")
for n, s in ipairs(snippets) do
  lt.init {}
  local ok, err = pcall(s.run)
  if not ok then error("example " .. n .. " of 'Sparse data structures' fails: " .. tostring(err) .. "\n" .. s.code) end
end
local n = #snippets
assert(n >= 5, "expected at least 5 examples, found " .. n)
print("sparse_docs: ok (" .. n .. " examples)")
