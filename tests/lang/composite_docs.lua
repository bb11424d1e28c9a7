-- Runs every Lua example of the "Vectors, matrices and structs", "Functions"
-- and "Loops over index vectors" sections of docs/language.md (each asserts
-- its own results), so the guide stays true.
local lt = require "lattice"
local root = os.getenv("LT_SOURCE_DIR") or "../.."
local f = assert(io.open(root .. "/docs/language.md", "r"))
local doc = f:read("a")
f:close()
local sources = package.loaded["lattice.sources"] or {}
package.loaded["lattice.sources"] = sources   -- lets kernels defined in a snippet be traced
local total = 0
for _, title in ipairs { "Vectors, matrices and structs", "Functions", "Loops over index vectors and unrolled loops" } do
  local section = doc:match("\n## " .. title:gsub("%p", "%%%0") .. "\n(.-)\n## ")
  assert(section, "no '" .. title .. "' section in docs/language.md")
  local n = 0
  for code in section:gmatch("```lua\n(.-)```") do
    n = n + 1
    local name = "=docs/language.md " .. title .. " example " .. n
    sources[name] = code
    lt.init {}
    local chunk = assert(load(code, name, "t"))
    local ok, err = pcall(chunk)
    if not ok then error("example " .. n .. " of '" .. title .. "' fails: " .. tostring(err) .. "\n" .. code) end
  end
  assert(n >= 1, "no examples in " .. title)
  total = total + n
end
print("composite_docs: ok (" .. total .. " examples)")
