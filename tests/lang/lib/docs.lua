-- docs.lua -- the ```lua snippets of a page of docs/, for the tests that run
-- a page's examples so that what it says stays true.
--   package.path = "lib/?.lua;" .. package.path
--   local docs = require "docs"
--   for _, s in ipairs(docs.snippets("language.md", "\n## Atomics\n(.-)\n## ", "Atomics")) do
--     lt.init {}
--     local ok, err = pcall(s.run)
--   end
local M = {}

local root = os.getenv("LT_SOURCE_DIR") or "../.."

-- Kernels are traced from their source text: a chunk's text must be in
-- lattice.sources under its chunk name.
local function sources()
  local t = package.loaded["lattice.sources"] or {}
  package.loaded["lattice.sources"] = t
  return t
end

-- The snippets of docs/FILE, or of the part that `section` (a Lua pattern
-- with one capture) matches; an error names the page when the pattern does
-- not match. Each snippet is { name, code, run }: run is its chunk, loaded
-- with env when one is given (else the globals), under the chunk name
-- "=docs/FILE LABEL example N".
function M.snippets(file, section, label, env)
  local f = assert(io.open(root .. "/docs/" .. file, "r"))
  local text = f:read("a")
  f:close()
  if section then
    text = text:match(section)
    assert(text, ("docs/%s: no part matches %q"):format(file, section))
  end
  local reg, list = sources(), {}
  for code in text:gmatch("```lua\n(.-)```") do
    local name = ("=docs/%s %sexample %d"):format(file, label and label .. " " or "", #list + 1)
    reg[name] = code
    list[#list + 1] = { name = name, code = code, run = assert(load(code, name, "t", env or _G)) }
  end
  return list
end

return M
