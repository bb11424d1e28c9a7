-- Runs every Lua example of the "Sparse data structures" section of
-- docs/language.md (each asserts its own results), so the guide stays true.
local lt = require "lattice"
local root = os.getenv("LT_SOURCE_DIR") or "../.."
local f = assert(io.open(root .. "/docs/language.md", "r"))
local doc = f:read("a")
f:close()
local section = doc:match("\n## Sparse data structures\n(.-)\n## ")
assert(section, "no 'Sparse data structures' section in docs/language.md")
local sources = package.loaded["lattice.sources"] or {}
package.loaded["lattice.sources"] = sources   -- lets kernels defined in a snippet be traced
local n = 0
for code in section:gmatch("```lua\n(.-)```") do
  n = n + 1
  local name = "=docs/language.md example " .. n
  sources[name] = code
  lt.init {}
  local chunk = assert(load(code, name, "t"))
  local ok, err = pcall(chunk)
  if not ok then error("example " .. n .. " of 'Sparse data structures' fails: " .. tostring(err) .. "\n" .. code) end
end
assert(n >= 5, "expected at least 5 examples, found " .. n)
print("sparse_docs: ok (" .. n .. " examples)")
