#!/bin/bash
# Scripts that start with a UTF-8 byte-order mark (as some editors save them):
# `lattice` skips it as lua5.4 does, also before a `#!` line, and kernels in
# such files trace with the right line numbers. Usage: bom.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
BOM=$'\xef\xbb\xbf'

# a kernel: x[i] = i * i + 1, printed as a plain-Lua sum for comparison
body='local lt = require "lattice"
local x = lt.field(lt.i32, 8)
local k = lt.kernel(function()
  for i in x do x[i] = i * i + 1 end
end)
k()
local s, want = 0, 0
for i = 0, 7 do s = s + x[i]; want = want + i * i + 1 end
print(s == want and "same" or ("differs: " .. s .. " vs " .. want), debug.getinfo(1, "l").currentline)'
printf '%s%s\n' "$BOM" "$body" > "$tmp/bom.lua"
check "BOM: kernel runs, line numbers kept" "same	9" "$("$LATTICE" "$tmp/bom.lua" 2>&1)"
printf '%s#!/usr/bin/env lattice\n%s\n' "$BOM" "$body" > "$tmp/bomhash.lua"
check "BOM then #!: kernel runs, line numbers kept" "same	10" "$("$LATTICE" "$tmp/bomhash.lua" 2>&1)"
check "BOM script on stdin" "same	9" "$("$LATTICE" - < "$tmp/bom.lua" 2>&1)"

# errors name the right line: one found while tracing, one in plain Lua
bad='local lt = require "lattice"
local x = lt.field(lt.f32, 4)
local k = lt.kernel(function()
  for i in x do
    x[i] = lt.sqrt("a")
  end
end)
print(pcall(k))
error("plain error")'
printf '%s#!/usr/bin/env lattice\n%s\n' "$BOM" "$bad" > "$tmp/bad.lua"
"$LATTICE" "$tmp/bad.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "trace error at its line" "false	$tmp/bad.lua:6: lt.sqrt needs a number, got a string" "$(cat "$tmp/out")"
check "plain error at its line" "lattice: $tmp/bad.lua:10: plain error" "$(head -1 "$tmp/err")"
check "error status" "1" "$rc"

# a module with a BOM and a #! line, loaded by require: its kernel is traced from the file
printf '%s#!x\nlocal lt = require "lattice"\nreturn function(x)\n  local k = lt.kernel(function()\n    for i in x do x[i] = i * 3 end\n  end)\n  k()\n  local r = lt.sqrt("a")\n  return r\nend\n' "$BOM" > "$tmp/bommod.lua"
cat > "$tmp/use.lua" <<LUA
package.path = "$tmp/?.lua;" .. package.path
local lt = require "lattice"
local x = lt.field(lt.i32, 4)
local ok, e = pcall(require "bommod", x)
print(x[3], e)
LUA
check "required module with a BOM" "9	$tmp/bommod.lua:8: lt.sqrt: expects a number, got a string" "$("$LATTICE" "$tmp/use.lua" 2>&1)"

finish
