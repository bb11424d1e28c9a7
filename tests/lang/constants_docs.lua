-- Runs the Lua examples of docs/arithmetic.md's "Constants" section and of
-- docs/language.md's "Types" section (each asserts its own results), so the
-- rules they state stay true.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local docs = require "docs"
local total = 0
for _, doc in ipairs { { "arithmetic.md", "Constants" }, { "language.md", "Types" } } do
  local snippets = docs.snippets(doc[1], "\n## " .. doc[2]:gsub("%p", "%%%0") .. "\n(.-)\n## ", doc[2])
  for _, s in ipairs(snippets) do
    lt.init {}
    s.run()
  end
  assert(#snippets > 0, "no examples in " .. doc[2])
  total = total + #snippets
end
print("constants_docs: ok (" .. total .. " examples)")
