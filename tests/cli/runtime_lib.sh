#!/bin/bash
# The runtime library (liblattice_rt, docs/aot.md) has no compiler and no Lua:
# readelf -d names neither libLLVM nor liblua for the library or for a host
# linked against it; nm finds no LLVM or Lua symbol, defined or undefined, in
# the shared library or the static archive; examples/host/rt_host.c, linked
# against each, makes a runtime, moves ndarray data and reports what is missing.
# Usage: runtime_lib.sh LATTICE (the build directory is LT_BUILD_DIR)
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
B=${LT_BUILD_DIR:?}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CC=${LT_CC:-cc}
so=$B/liblattice_rt.so
ar=$B/liblattice_rt.a
check "the shared library exists" "yes" "$([ -f "$so" ] && echo yes || echo no)"
check "the static archive exists" "yes" "$([ -f "$ar" ] && echo yes || echo no)"

bad_needed() { readelf -d "$1" | grep NEEDED | grep -Ei 'llvm|lua' | tr -s ' ' ; }
bad_symbols() { nm "$@" 2>/dev/null | grep -E ' (LLVM|llvm|lua_|luaL_|luaopen_|_ZN4llvm)' | head -5; }
check "readelf: the library needs neither LLVM nor Lua" "" "$(bad_needed "$so")"
check "nm -D: no LLVM or Lua symbol in the library" "" "$(bad_symbols -D "$so")"
check "nm: no LLVM or Lua symbol in the static archive" "" "$(bad_symbols "$ar")"
check "nm: the archive has the C API" "yes" "$(nm "$ar" | grep -q ' T lt_runtime_create$' && echo yes || echo no)"
# the exported interface is lattice.h's, nothing of the internals
check "exports only lt_*" "" "$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^lt_' | grep -v '^_' | head -3)"

inc="-I$SRC/include -I$B/generated"
$CC -std=c17 -Wall -Wextra -Werror ${LT_HOST_CFLAGS:-} $inc "$SRC/examples/host/rt_host.c" -L"$B" -llattice_rt \
  -Wl,-rpath,"$B" -o "$tmp/host_shared" 2> "$tmp/cc1" || { cat "$tmp/cc1"; }
check "host against the shared library builds" "yes" "$([ -x "$tmp/host_shared" ] && echo yes || echo no)"
check "readelf: the host needs neither LLVM nor Lua" "" "$(bad_needed "$tmp/host_shared")"
check "the host runs (shared)" "0 failed" "$("$tmp/host_shared" | tail -1)"
$CC -std=c17 -Wall -Wextra -Werror ${LT_HOST_CFLAGS:-} $inc "$SRC/examples/host/rt_host.c" "$ar" -lpthread -lm -ldl \
  -o "$tmp/host_static" 2> "$tmp/cc2" || { cat "$tmp/cc2"; }
check "host against the static archive builds" "yes" "$([ -x "$tmp/host_static" ] && echo yes || echo no)"
check "readelf: the static host needs neither LLVM nor Lua" "" "$(bad_needed "$tmp/host_static")"
check "nm: the static host holds no LLVM or Lua symbol" "" "$(bad_symbols "$tmp/host_static")"
check "the host runs (static)" "0 failed" "$("$tmp/host_static" | tail -1)"
finish
