-- Runs the Lua examples of docs/gui.md (headless), so what the page says stays true.
local lt = require "lattice"
local root = os.getenv("LT_SOURCE_DIR") or "../.."
local sources = package.loaded["lattice.sources"] or {}
package.loaded["lattice.sources"] = sources   -- lets kernels defined in a snippet be traced
local f = assert(io.open(root .. "/docs/gui.md", "r"))
local text = f:read("a")
f:close()
local n = 0
for code in text:gmatch("```lua\n(.-)```") do
  n = n + 1
  local name = "=docs/gui.md example " .. n
  sources[name] = code
  lt.init {}
  assert(load(code, name, "t"))()
end
assert(n >= 2, "docs/gui.md: expected at least two examples, found " .. n)
assert(io.open("out/gui_docs/waves_00003.png"), "the first example writes three frames")
assert(io.open("out/spin_window_00003.png") and not io.open("out/spin_window_00004.png"),
  "example.animate's snippet draws three frames headless")
print("gui_docs: ok (" .. n .. " examples)")
