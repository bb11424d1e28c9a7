#!/bin/bash
# A failing script's traceback shows the user's frames, not Lattice's:
# frames of the embedded lattice/ modules (and C functions they call) are
# left out, the message and the user's lines stay; LT_TRACEBACK=full keeps
# every frame (repl/traceback.c, docs/repl.md). Same in the REPL.
# Usage: traceback.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
has() {     # has NAME TEXT FILE
  if grep -qF -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: no [$2] in:"; cat "$3"; fails=$((fails + 1)); fi
}
hasnt() {   # hasnt NAME TEXT FILE
  if grep -qF -- "$2" "$3"; then echo "FAIL $1: [$2] in:"; cat "$3"; fails=$((fails + 1)); else echo "ok   $1"; fi
}

# an error found while tracing a kernel, raised deep inside lattice/kernel.lua
cat > "$tmp/trace_error.lua" <<'LUA'
local lt = require "lattice"
lt.init {}
local x = lt.field(lt.f32, 8)
local function helper()
  local k = lt.kernel(function() for i = 0, 7 do x[i] = undefined_thing.y end end)
  k()
end
helper()
LUA
# a wrong argument to a Lattice function, called from the user's functions
cat > "$tmp/apierr.lua" <<'LUA'
local lt = require "lattice"
lt.init {}
local function make(n) local f = lt.field(lt.f32, n) return f end
local function setup() local f = make("eight") return f end
setup()
LUA
for s in trace_error apierr; do
  LT_CACHE=off "$LATTICE" "$tmp/$s.lua" > "$tmp/$s.out" 2> "$tmp/$s.err"
  check "$s: exit status" 1 $?
  LT_TRACEBACK=full LT_CACHE=off "$LATTICE" "$tmp/$s.lua" > /dev/null 2> "$tmp/$s.full"
done
has "message" "lattice: $tmp/trace_error.lua:5: unknown name 'undefined_thing'" "$tmp/trace_error.err"
has "user frame: helper" "$tmp/trace_error.lua:6: in local 'helper'" "$tmp/trace_error.err"
has "user frame: main chunk" "$tmp/trace_error.lua:8: in main chunk" "$tmp/trace_error.err"
hasnt "no lattice/ frames" "lattice/" "$tmp/trace_error.err"
hasnt "no C error() called by Lattice" "in function 'error'" "$tmp/trace_error.err"
has "the hidden frames are counted" "frames inside Lattice; LT_TRACEBACK=full shows them)" "$tmp/trace_error.err"
has "full: the internal frames" "lattice/kernel.lua:" "$tmp/trace_error.full"
has "full: the user's frames too" "$tmp/trace_error.lua:6: in local 'helper'" "$tmp/trace_error.full"
hasnt "full: nothing hidden" "inside Lattice" "$tmp/trace_error.full"

has "apierr: message" "lattice: $tmp/apierr.lua:3: lt.field: the shape must be" "$tmp/apierr.err"
has "apierr: the user's function calling Lattice" "$tmp/apierr.lua:3: in upvalue 'make'" "$tmp/apierr.err"
has "apierr: its caller" "$tmp/apierr.lua:4: in local 'setup'" "$tmp/apierr.err"
has "apierr: the main chunk" "$tmp/apierr.lua:5: in main chunk" "$tmp/apierr.err"
hasnt "apierr: no lattice/ frames" "lattice/" "$tmp/apierr.err"
has "apierr full: lattice/field.lua" "lattice/field.lua:" "$tmp/apierr.full"

# a user error with no Lattice frame at all reads as lua5.4's
printf 'local function f() error("plain") end\nf()\n' > "$tmp/plain.lua"
"$LATTICE" "$tmp/plain.lua" 2> "$tmp/plain.err"
check "plain: the whole traceback" "lattice: $tmp/plain.lua:1: plain
stack traceback:
	[C]: in function 'error'
	$tmp/plain.lua:1: in local 'f'
	$tmp/plain.lua:2: in main chunk
	[C]: in ?" "$(cat "$tmp/plain.err")"

# the REPL: the same for an input's error
printf 'x = lt.field(lt.f32, 4)\nk = lt.kernel(function() x[0] = nosuch.y end)\ny = k()\nprint("alive")\n' |
  LT_CACHE=off HOME="$tmp" "$LATTICE" > "$tmp/repl.out" 2> "$tmp/repl.err"
has "REPL: message" "lattice: in[2]:1: unknown name 'nosuch'" "$tmp/repl.err"
has "REPL: the input's frame" "in[3]:1: in main chunk" "$tmp/repl.err"
hasnt "REPL: no lattice/ frames" "lattice/" "$tmp/repl.err"
has "REPL: goes on" "alive" "$tmp/repl.out"
finish
