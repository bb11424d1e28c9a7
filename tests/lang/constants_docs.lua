-- Runs the Lua examples of docs/arithmetic.md's "Constants" section and of
-- docs/language.md's "Types" section (each asserts its own results), so the
-- rules they state stay true.
local lt = require "lattice"
local root = os.getenv("LT_SOURCE_DIR") or "../.."
local sources = package.loaded["lattice.sources"] or {}
package.loaded["lattice.sources"] = sources   -- lets kernels defined in a snippet be traced
local total = 0
for _, doc in ipairs { { "arithmetic.md", "Constants" }, { "language.md", "Types" } } do
  local f = assert(io.open(root .. "/docs/" .. doc[1], "r"))
  local text = f:read("a")
  f:close()
  local section = text:match("\n## " .. doc[2]:gsub("%p", "%%%0") .. "\n(.-)\n## ")
  assert(section, "no '" .. doc[2] .. "' section in docs/" .. doc[1])
  local n = 0
  for code in section:gmatch("```lua\n(.-)```") do
    n = n + 1
    local name = "=docs/" .. doc[1] .. " " .. doc[2] .. " example " .. n
    sources[name] = code
    lt.init {}
    assert(load(code, name, "t"))()
  end
  assert(n > 0, "no examples in " .. doc[2])
  total = total + n
end
print("constants_docs: ok (" .. total .. " examples)")
