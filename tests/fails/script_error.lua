-- error: script_error.lua:3: boom
-- a script that raises an error: `lattice` must print "lattice: ...boom" and exit 1
local function inner() error("boom") end
inner()
