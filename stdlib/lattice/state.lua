-- state.lua -- the current program (one per lt.init) shared by the lattice
-- modules, and how they blame the user's line for an error.
local core = require "lattice.core"

local M = {
  prog = nil,          -- the lang_program userdata (src/lang/program.c)
  gen = 0,             -- bumped by every lt.init: fields and kernels remember theirs
  opts = nil,          -- the options lt.init was given (with defaults)
  root = nil,          -- SNode id of the tree lt.root is building (nil: start a new one)
  root_tok = nil,      -- its handle, which keeps it until it materialises (field.lua)
  trees = {},          -- root id -> {field = true} for the fields placed in it (weak keys)
  instances = nil,     -- tree instance -> true for every instance made (weak keys; tree.lua)
}

-- The innermost frame of user code (not a lattice/ module, not C, with a
-- line): its level as the caller's debug.getinfo numbers it, its file and
-- line; nothing when there is none (core.user_loc, from this function's caller on).
function M.user_frame()
  local file, line, level = core.user_loc(nil, 2)
  if level then return level - 1, file, line end
end

-- Raises msg as "file:line: msg" at the user's statement.
function M.raise(msg)
  local _, file, line = M.user_frame()
  if file then msg = file .. ":" .. line .. ": " .. msg end
  error(msg, 0)
end

return M
