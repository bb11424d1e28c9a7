-- Runs the Lua examples of docs/gui.md (headless), so what the page says stays true.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local snippets = require("docs").snippets("gui.md")
for _, s in ipairs(snippets) do
  lt.init {}
  s.run()
end
local n = #snippets
assert(n >= 2, "docs/gui.md: expected at least two examples, found " .. n)
assert(io.open("out/gui_docs/waves_00003.png"), "the first example writes three frames")
assert(io.open("out/spin_window_00003.png") and not io.open("out/spin_window_00004.png"),
  "example.animate's snippet draws three frames headless")
print("gui_docs: ok (" .. n .. " examples)")
