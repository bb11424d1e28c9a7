-- error: goto is not supported in kernels
-- The kernel-source rewriter must reject a function that uses goto, naming the
-- file and line. Calls the rewriter module directly (no tracer needed).
local ok_req, R = pcall(require, "lattice.rewrite")
if not ok_req then
  local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
  package.path = here .. "/../../stdlib/?.lua;" .. package.path
  R = require "lattice.rewrite"
end

local function kernel(n)
  local s = 0
  for i = 1, n do
    if i % 2 == 0 then goto continue end
    s = s + i
    ::continue::
  end
  return s
end

local info = debug.getinfo(kernel, "S")
local f = assert(io.open(info.source:sub(2), "rb"))
local text = f:read("a")
f:close()
local chunk, msg = R.function_chunk(text, info.linedefined, info.lastlinedefined, {}, info.source)
if chunk then
  print("the rewriter accepted a kernel that uses goto")
  os.exit(0)
end
if not msg:find(":" .. (info.linedefined + 3) .. ": ", 1, true) then
  print("the goto error does not name line " .. (info.linedefined + 3) .. ": " .. msg)
  os.exit(0)
end
error(msg, 0)
