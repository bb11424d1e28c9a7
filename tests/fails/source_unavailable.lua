-- error: register the chunk's text with lt_register_source(L, chunkname, text, len)
-- A kernel defined in a chunk loaded from a string (as a C host does with
-- luaL_loadbuffer) has no source to trace: the message says how to give it.
local chunk = load([[
local lt = require "lattice"
local k = lt.kernel(function() end)
k()
]], "=host chunk")
chunk()
