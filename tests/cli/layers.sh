#!/bin/bash
# The layering of DESIGN.md, checked on the sources and the objects built:
# src/program (the program layer) includes no Lua or LLVM header and no
# src/lang header, and its objects name no Lua, LLVM or src/lang symbol (the
# compiler is reached through jit_default_compiler only); src/jit and src/ir
# include nothing of src/program or src/lang; src/ir nothing of src/jit.
# Usage: layers.sh LATTICE (the executable in the build folder)
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$(dirname "$LATTICE")" && pwd)

includes() {   # includes DIR PATTERN: the #include lines of DIR's files whose text (not path) matches PATTERN
  grep -rnE '^[[:space:]]*#[[:space:]]*include' "$src/$1" | sed "s|$src/||" | grep -E ":[0-9]+:.*($2)"
}
check "src/program includes no Lua header" "" "$(includes src/program '[<"/](lua|lauxlib|lualib|lua\.hpp)\.h?')"
check "src/program includes no LLVM header" "" "$(includes src/program 'llvm')"
check "src/program includes nothing of src/lang" "" "$(includes src/program 'lang/|"lang\.h"')"
check "src/jit includes nothing of src/program or src/lang" "" "$(includes src/jit 'program/|lang/|"lang\.h"|capi')"
check "src/ir includes nothing of src/jit, src/program or src/lang" "" "$(includes src/ir 'jit/|program/|lang/')"

objs=$(ls "$build"/CMakeFiles/lattice_program_obj.dir/src/program/*.o 2>/dev/null)
check "the program layer's objects are built" "yes" "$([ -n "$objs" ] && echo yes)"
if [ -n "$objs" ]; then
  undef=$(nm -u $objs | awk 'NF == 2 {print $2}' | sort -u)
  check "the program layer names no Lua symbol" "" "$(grep -E '^lua(L)?_|^luaopen_' <<< "$undef")"
  check "the program layer names no LLVM symbol" "" "$(grep -E '^LLVM|llvm' <<< "$undef")"
  check "the program layer names no src/lang symbol" "" "$(grep -E '^lang_' <<< "$undef")"
  check "the program layer reaches the compiler only through jit_default_compiler" "" \
    "$(grep -E '^(ir_compile|ir_run_passes|jit_cpu_create|jit_cuda_create|jit_emit_ptx|jit_ptxas_check)$' <<< "$undef")"
fi
finish
