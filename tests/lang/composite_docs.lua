-- Runs every Lua example of the "Vectors, matrices and structs", "Functions"
-- and "Loops over index vectors" sections of docs/language.md (each asserts
-- its own results), so the guide stays true.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local docs = require "docs"
local total = 0
for _, title in ipairs { "Vectors, matrices and structs", "Functions", "Loops over index vectors and unrolled loops" } do
  local snippets = docs.snippets("language.md", "\n## " .. title:gsub("%p", "%%%0") .. "\n(.-)\n## ", title)
  for n, s in ipairs(snippets) do
    lt.init {}
    local ok, err = pcall(s.run)
    if not ok then error("example " .. n .. " of '" .. title .. "' fails: " .. tostring(err) .. "\n" .. s.code) end
  end
  assert(#snippets >= 1, "no examples in " .. title)
  total = total + #snippets
end
print("composite_docs: ok (" .. total .. " examples)")
