#!/bin/bash
# The stdlib modules load from their embedded Lua bytecode (cmake/luac.c,
# src/lang/lang.c), not from their source: a build that leaves the bytecode
# out, or a Lua that refuses it, still works but parses ~300 KB of Lua at
# every start-up (~12 ms). core.stdlib_loads() counts how modules were loaded.
# Also: their functions keep the chunk names and lines tracebacks use.
# Usage: stdlib_bytecode.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"

check "lattice: every stdlib module from bytecode" "bytecode yes, source 0" \
  "$("$LATTICE" -e 'local core = require "lattice.core"
require "lattice.gui"; require "lattice.example"   -- modules loaded on demand too
local b, s = core.stdlib_loads()
print(("bytecode %s, source %d"):format(b > 10 and "yes" or tostring(b), s))')"
check "stdlib functions keep their chunk name and lines (debug info kept)" "yes" \
  "$("$LATTICE" -e 'local d = debug.getinfo(require("lattice").field, "S")
print(d.source:match("^=lattice/[%w_/]+%.lua$") and d.linedefined > 0 and "yes" or (d.source .. " " .. d.linedefined))' 2>&1)"
finish
