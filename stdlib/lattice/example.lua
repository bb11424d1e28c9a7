-- lattice.example -- the command line shared by the scripts in examples/:
--   lattice examples/NAME.lua [--out DIR] [--test]
-- options(script) reads the global `arg` and returns { out = DIR, test = bool }
-- (out defaults to "out"); an unknown argument is an error naming the usage.
-- lib(name) loads examples/lib/NAME.lua (helpers and plain-Lua references
-- shared by the examples), found next to the running script.
local M = {}

function M.lib(name)
  local dir = (arg and arg[0] and arg[0]:match("^(.*)/")) or "."
  local path = dir .. "/lib/" .. name .. ".lua"
  local chunk, err = loadfile(path)
  if not chunk then error("cannot load the example library " .. path .. ": " .. err, 2) end
  return chunk()
end

function M.options(script)
  local opts = { out = "out", test = false }
  local a = 1
  while arg and arg[a] do
    if arg[a] == "--test" then
      opts.test = true
    elseif arg[a] == "--out" and arg[a + 1] then
      opts.out = arg[a + 1]
      a = a + 1
    else
      error(("usage: lattice %s [--out DIR] [--test]  (unknown argument '%s')"):format(script, arg[a]), 2)
    end
    a = a + 1
  end
  return opts
end

return M
