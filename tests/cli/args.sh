#!/bin/bash
# The `lattice` command line: `arg` exactly as lua5.4 builds it, -e, -v, -,
# exit statuses and error messages. Usage: args.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"

cat > "$tmp/s.lua" <<'LUA'
print(#arg, arg[0], arg[1], arg[2], select('#', ...), ...)
LUA
check "script args" "2	$tmp/s.lua	x	y z	2	x	y z" "$("$LATTICE" "$tmp/s.lua" x 'y z')"
printf 'print(arg[-3], arg[-2], arg[-1], arg[0], #arg)\n' > "$tmp/n.lua"
check "interpreter and options below 0" "$LATTICE	-e	x=1	$tmp/n.lua	1" "$("$LATTICE" -e 'x=1' "$tmp/n.lua" q)"
check "-e alone" "2	$LATTICE	-e" "$("$LATTICE" -e 'print(#arg, arg[0], arg[1])')"
check "-e twice, in order" "1
2" "$("$LATTICE" -e 'print(1)' -e 'print(2)')"
check "-- ends options" "1	-v" "$(echo 'print(#arg, arg[1])' > "$tmp/d.lua"; "$LATTICE" -- "$tmp/d.lua" -v)"
check "- reads stdin" "-	a	b" "$(echo 'print(arg[0], ...)' | "$LATTICE" - a b)"
check "-v" "yes" "$("$LATTICE" -v | grep -q '^Lattice [0-9]' && echo yes)"
check "require lattice" "table" "$("$LATTICE" -e 'print(type(require "lattice"))')"
check "no global lt in scripts" "nil" "$("$LATTICE" -e 'print(lt)')"
check "#! line skipped" "2" "$(printf '#!/usr/bin/env lattice\nprint(debug.getinfo(1, "l").currentline)\n' > "$tmp/h.lua"; \
  "$LATTICE" "$tmp/h.lua" 2>&1)"

# errors: "lattice: message" + traceback on stderr, exit status 1
"$LATTICE" -e 'error("boom")' > "$tmp/out" 2> "$tmp/err"; rc=$?
check "-e error status" "1" "$rc"
check "-e error message" "lattice: (command line):1: boom" "$(head -1 "$tmp/err")"
check "-e error traceback" "stack traceback:" "$(sed -n 2p "$tmp/err")"
printf 'local x = 1\nerror("line two")\n' > "$tmp/e.lua"
"$LATTICE" "$tmp/e.lua" 2> "$tmp/err"; rc=$?
check "script error" "1 lattice: $tmp/e.lua:2: line two" "$rc $(head -1 "$tmp/err")"
"$LATTICE" "$tmp/missing.lua" 2> "$tmp/err"; rc=$?
check "missing script" "1" "$rc"
check "missing script message" "yes" "$(grep -q "cannot open $tmp/missing.lua" "$tmp/err" && echo yes)"
"$LATTICE" -e 'x = = 1' 2> "$tmp/err"; rc=$?
check "syntax error" "1 yes" "$rc $(grep -q "unexpected symbol near '='" "$tmp/err" && echo yes)"
"$LATTICE" -Z 2> "$tmp/err"; rc=$?
check "bad option" "1 yes" "$rc $(grep -q "unrecognized option '-Z'" "$tmp/err" && echo yes)"
"$LATTICE" -e 2> "$tmp/err"; rc=$?
check "-e without code" "1 yes" "$rc $(grep -q "'-e' needs an argument" "$tmp/err" && echo yes)"
check "os.exit status" "3" "$("$LATTICE" -e 'os.exit(3)'; echo $?)"

# -e chunks are registered for the tracer under their chunk names
check "-e sources registered" "x=1	true" \
  "$("$LATTICE" -e 'x=1' -e 'local s = package.loaded["lattice.sources"]; print(s["=(command line)"], s["=(command line 2)"] ~= nil)')"

finish
