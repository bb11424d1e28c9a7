#!/bin/bash
# `lattice --profile script.lua`: the profiler is on from the start (also
# across the script's lt.init), the table goes to stderr when the script
# ends, also when it fails; the script's stdout and exit status are its own;
# without the flag nothing is printed. Usage: profile.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"

cat > "$tmp/k.lua" <<'LUA'
local lt = require "lattice"
lt.init { arch = "cpu" }
local x = lt.field(lt.f32, 64)
local step = lt.kernel(function() for i in lt.ndrange(64) do x[i] = x[i] + 1 end end)
for _ = 1, 5 do step() end
print("x0", x[0], lt.profiler.enabled())
if arg[1] == "fail" then error("boom") end
LUA

"$LATTICE" --profile "$tmp/k.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "status" "0" "$rc"
check "stdout is the script's" "x0	5.0	true" "$(cat "$tmp/out")"
check "header" "yes" "$(grep -qE '^lt\.profiler: 1 kernel, 5 launches, [0-9.]+ ms \(cpu\)$' "$tmp/err" && echo yes)"
check "column heads" "yes" "$(grep -qE '^kernel / task +calls +total ms +mean ms +min ms +max ms +% +reused$' "$tmp/err" && echo yes)"
check "kernel line" "yes" "$(grep -qE '^step +5 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +100\.0$' "$tmp/err" && echo yes)"
check "task line" "yes" "$(grep -qE '^  step#0 range_for +5 ' "$tmp/err" && echo yes)"
check "four lines" "4" "$(wc -l < "$tmp/err")"

"$LATTICE" --profile "$tmp/k.lua" fail > "$tmp/out" 2> "$tmp/err"; rc=$?
check "failing script: status" "1" "$rc"
check "failing script: error" "yes" "$(grep -q 'boom' "$tmp/err" && echo yes)"
check "failing script: table" "yes" "$(grep -qE '^step +5 ' "$tmp/err" && echo yes)"

"$LATTICE" "$tmp/k.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "no flag: status" "0" "$rc"
check "no flag: off" "x0	5.0	false" "$(cat "$tmp/out")"
check "no flag: no table" "" "$(cat "$tmp/err")"

# -e code is profiled too; a script that never launches says so
check "-e" "yes" "$("$LATTICE" --profile -e 'local lt = require "lattice"; lt.init{arch = "cpu"}
  local x = lt.field(lt.i32, 4); local k = lt.kernel(function() for i in lt.ndrange(4) do x[i] = i end end); k(); k()' \
  2>&1 >/dev/null | grep -qE '^k +2 ' && echo yes)"
check "no launch" "lt.profiler: no kernel launch recorded" "$("$LATTICE" --profile -e 'x = 1' 2>&1)"
check "usage names it" "yes" "$("$LATTICE" -h | grep -q -- '--profile' && echo yes)"

finish
