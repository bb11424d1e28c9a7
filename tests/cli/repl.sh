#!/bin/bash
# The REPL fed through a pipe (no terminal: no prompt, line-by-line
# evaluation): values print, multi-line chunks continue, errors are reported
# and the session goes on, commands work, a kernel typed at the prompt runs
# and shows its IR (:ir k, :ir k all, :ir k PASS); values echo readably.
# Usage: repl.sh LATTICE
set -u
LATTICE=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
  if [ "$2" != "$3" ]; then echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); else echo "ok   $1"; fi
}
expect() {  # expect NAME FILE FIXED-STRING: FILE must contain the line(s)
  if grep -qxF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no line [$3] in $2:"; cat "$2"; fails=$((fails + 1)); fi
}
expect_sub() {  # like expect, a substring of a line
  if grep -qF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no [$3] in $2:"; cat "$2"; fails=$((fails + 1)); fi
}

HOME="$tmp" "$LATTICE" > "$tmp/out" 2> "$tmp/err" <<'LUA'
1 + 41
"two", 2
function twice(x)
  local y = x * 2
  return y
end
twice(50)
error("boom")
print("after the error")
local keep = 7
keep * 3
t = {
  1, 2,
  3 }
#t
nosuch.field = 1
print("still alive")
x = = 2
print("after a syntax error")
:help
:ir nosuchkernel
:ir 42
:frobnicate
lt.init {}
f = lt.field(lt.f32, {8})
local k = lt.kernel(function()
  for i in lt.ndrange(8) do
    f[i] = i * 3
  end
end)
k()
f[5]
:ir k
print("-- views")
:ir k offload
print("-- all")
:ir k all
print("-- end")
:ir k offlaod
:ir k grad
kt = { ["a b"] = k }
:ir kt["zz"]
print("before quit")
:quit
print("not reached")
LUA
rc=$?
echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; echo "---"
[ "$rc" -eq 0 ] && echo "ok   exit status 0" || { echo "FAIL exit status $rc"; fails=$((fails + 1)); }
expect "expression value" "$tmp/out" "42"
expect "several values" "$tmp/out" "two	2"
expect "multi-line function" "$tmp/out" "100"
expect_sub "error reported with its input line" "$tmp/err" "lattice: in[8]:1: boom"
expect "survives an error" "$tmp/out" "after the error"
expect "a leading local persists" "$tmp/out" "21"
expect "multi-line table" "$tmp/out" "3"
expect_sub "runtime error" "$tmp/err" "attempt to index a nil value (global 'nosuch')"
expect "survives a runtime error" "$tmp/out" "still alive"
expect_sub "syntax error" "$tmp/err" "unexpected symbol near '='"
expect "survives a syntax error" "$tmp/out" "after a syntax error"
expect_sub ":help" "$tmp/out" ":ir NAME"
expect_sub ":ir of a missing name" "$tmp/err" "no kernel named 'nosuchkernel'"
expect_sub ":ir of a number" "$tmp/err" "'42' is a number value, not a kernel"
expect_sub "unknown command" "$tmp/err" "unknown command ':frobnicate'"
expect "kernel typed at the prompt ran" "$tmp/out" "15.0"
expect_sub ":ir prints the kernel's IR" "$tmp/out" "kernel"
# :ir k prints the final IR alone; :ir k offload that pass; :ir k all every pass
final=$(sed -n '/^15.0$/,/^-- views$/p' "$tmp/out" | grep -c '^# after ')
check ":ir k: one section" 1 "$final"
expect ":ir k: the final IR (after the last dce)" "$tmp/out" "# after dce"
offload=$(sed -n '/^-- views$/,/^-- all$/p' "$tmp/out" | grep '^# after ')
check ":ir k offload: that section" "# after offload" "$offload"
all=$(sed -n '/^-- all$/,/^-- end$/p' "$tmp/out" | grep -c '^# after ')
[ "$all" -gt 10 ] && echo "ok   :ir k all: every pass ($all)" || { echo "FAIL :ir k all: $all sections"; fails=$((fails + 1)); }
expect_sub ":ir k all starts with the trace" "$tmp/out" "# after trace"
expect_sub ":ir k with an unknown pass lists the passes" "$tmp/err" "unknown pass 'offlaod' (the passes: trace, typecheck,"
expect_sub ":ir k grad with no adjoint" "$tmp/err" "has no adjoint compiled yet; call k:grad(...) first"
expect_sub ":ir with quotes in NAME" "$tmp/err" "no kernel named 'kt[\"zz\"]'"
expect "runs until :quit" "$tmp/out" "before quit"
if grep -q "not reached" "$tmp/out"; then echo "FAIL :quit did not stop"; fails=$((fails + 1)); fi
if [ -e "$tmp/.lattice_history" ]; then echo "FAIL history written without a terminal"; fails=$((fails + 1)); fi

# values echo readably: Lattice's objects by their __tostring, plain tables
# as constructors (lattice.show); strings and numbers as print shows them
HOME="$tmp" LT_CACHE=off "$LATTICE" > "$tmp/out" 2> "$tmp/err" <<'LUA'
f = lt.field(lt.f32, {4, 5}, "x")
f
f.shape
v = lt.field(lt.vec2, 8, "v")
v
lt.ndarray(lt.i32, {3, 3})
k = lt.kernel(function(a) f[0][0] = a end, {a = lt.f32})
k(1)
k
lt.root:pointer(lt.ij, 16)
{1, {2, 3}, name = "n"}
"plain", 7
LUA
expect "echo: a field" "$tmp/out" "field f32 (4, 5) 'x'"
expect "echo: a shape" "$tmp/out" "{4, 5}"
expect "echo: a vector field" "$tmp/out" "field vec2 (8) 'v'"
expect "echo: an ndarray" "$tmp/out" "ndarray i32 (3, 3)"
expect "echo: a kernel" "$tmp/out" "kernel k(a: f32) compiled for (f32)"
expect_sub "echo: a level" "$tmp/out" "level pointer [ij: 16, 16] #"
expect "echo: a nested table" "$tmp/out" '{1, {2, 3}, name = "n"}'
expect "echo: a string and a number" "$tmp/out" "plain	7"
[ -s "$tmp/err" ] && { echo "FAIL echo: errors:"; cat "$tmp/err"; fails=$((fails + 1)); }

# end of input inside an unfinished chunk is a syntax error, not a hang
printf 'function f()\n  return 1\n' | "$LATTICE" > "$tmp/out" 2> "$tmp/err"
expect_sub "unfinished chunk at end of input" "$tmp/err" "'end' expected"

# on a terminal (a pty from util-linux `script`, where available): banner,
# prompts, line editing, history saved in $HOME/.lattice_history
if command -v script > /dev/null; then
  printf 'function g()\nreturn 6 * 7 end\ng()\n:quit\n' |
    HOME="$tmp" TERM=dumb script -qec "$LATTICE" /dev/null > "$tmp/tty" 2>&1
  expect_sub "terminal: banner" "$tmp/tty" ":help for help"
  expect_sub "terminal: continuation prompt" "$tmp/tty" ">> "
  expect_sub "terminal: value" "$tmp/tty" "42"
  expect_sub "terminal: history saved" "$tmp/.lattice_history" "g()"
else
  echo "note: no 'script' command, terminal checks skipped"
fi

echo "$fails failed"
[ "$fails" -eq 0 ]
