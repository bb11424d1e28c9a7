#!/bin/bash
# `cmake --install` into a scratch prefix (docs/install.md), then use what
# was installed as a user would: the file list; examples/host/lua_host.c
# built against the prefix with pkg-config and with CMake's find_package(Lattice),
# both run; stock lua5.4 loading the Lua module through LUA_CPATH; the
# dynamic symbol tables of liblattice.so and the Lua module hold exactly the
# LT_API names of the installed headers (nothing leaks if -fvisibility=hidden
# is lost). Usage: install.sh LATTICE, with LT_BUILD_DIR (the build folder),
# LT_CC (the project's C compiler) and LT_HOST_CFLAGS (the sanitizer flags of
# the build, empty outside it) from tests.cmake. Exit 77 when a tool is missing.
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${LT_BUILD_DIR:?LT_BUILD_DIR must name the build folder}
cc=${LT_CC:-cc}
hostflags=${LT_HOST_CFLAGS:-}
for tool in cmake pkg-config lua5.4 nm readelf "$cc"; do
  command -v "$tool" > /dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done

v=$(sed -n 's/^project(lattice VERSION \([^ )]*\).*/\1/p' "$src/CMakeLists.txt")
IFS=. read -r major minor patch <<< "$v"
if [ "$major" -eq 0 ]; then so=0.$minor; else so=$major; fi

p=$tmp/prefix
lib=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")   # lib, unless configured for /usr
lib=${lib:-lib}
cmake --install "$build" --prefix "$p" > "$tmp/install.log" 2>&1
rc=$?
check "cmake --install" "0" "$rc"
[ "$rc" -eq 0 ] || cat "$tmp/install.log"

# ---- the file list (LatticeTargets-<config>.cmake is named after the build type)
(cd "$p" && find . \( -type f -o -type l \) | sed 's|^\./||; s|LatticeTargets-.*\.cmake|LatticeTargets-CONFIG.cmake|' | sort) > "$tmp/files"
sort > "$tmp/expected" <<LIST
bin/lattice
include/lattice.h
include/lattice_lua.h
include/lattice_version.h
$lib/cmake/Lattice/LatticeConfig.cmake
$lib/cmake/Lattice/LatticeConfigVersion.cmake
$lib/cmake/Lattice/LatticeTargets.cmake
$lib/cmake/Lattice/LatticeTargets-CONFIG.cmake
$lib/liblattice.so
$lib/liblattice.so.$so
$lib/liblattice.so.$v
$lib/lua/5.4/lattice.so
$lib/pkgconfig/lattice.pc
LIST
check "installed files" "$(cat "$tmp/expected")" "$(cat "$tmp/files")"
check "liblattice.so links" "liblattice.so.$so liblattice.so.$v" \
  "$(readlink "$p/$lib/liblattice.so") $(readlink "$p/$lib/liblattice.so.$so")"
check "SONAME" "liblattice.so.$so" "$(readelf -d "$p/$lib/liblattice.so.$v" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"

# ---- one version everywhere
check "installed lattice -v" "Lattice $v" "$("$p/bin/lattice" -v | cut -d' ' -f1-2)"
export PKG_CONFIG_PATH=$p/$lib/pkgconfig
check "pkg-config --modversion" "$v" "$(pkg-config --modversion lattice)"
check "LatticeConfigVersion.cmake" "$v" \
  "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$p/$lib/cmake/Lattice/LatticeConfigVersion.cmake")"
check "LT_VERSION in lattice_version.h" "$v" \
  "$(sed -n 's/^#define LT_VERSION "\(.*\)"/\1/p' "$p/include/lattice_version.h")"
# the package files name paths under the prefix only (it can be moved, or built elsewhere)
check "no source or build paths in the package files" "" \
  "$(grep -lF -e "$src" -e "$(cd "$build" && pwd)" "$p/$lib"/cmake/Lattice/*.cmake "$p/$lib/pkgconfig/lattice.pc" "$p"/include/*.h)"

# ---- exported symbols: exactly the LT_API declarations of the installed
# headers (and the three symbols the linker defines in every shared object)
sed -n 's/^LT_API [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$p"/include/*.h | sort > "$tmp/public"
check "public names in the headers" "yes" "$(grep -qx luaopen_lattice "$tmp/public" && grep -qx lt_register_source "$tmp/public" && echo yes)"
for so_file in $lib/liblattice.so.$v $lib/lua/5.4/lattice.so; do
  nm -D --defined-only "$p/$so_file" | awk '{print $3}' | grep -vxE '__bss_start|_edata|_end' | sort > "$tmp/exported"
  check "$so_file exports every public name" "" "$(comm -23 "$tmp/public" "$tmp/exported" | tr '\n' ' ')"
  check "$so_file exports nothing else" "" \
    "$(comm -13 "$tmp/public" "$tmp/exported" | awk 'NR <= 8 { printf "%s ", $0 } END { if (NR) printf "(%d names)", NR }')"
done

# ---- the host program, built with pkg-config
run_host() {  # run_host NAME EXE: runs it, checks its one line and that it uses the prefix's library
  local out
  out=$("$2" 200 2>&1)
  check "$1 runs" "lua_host: 200 elements match plain C (Lattice $v)" "$out"
  check "$1 loads the prefix's library" "$p/$lib/liblattice.so.$so" \
    "$(ldd "$2" | sed -n 's/.*liblattice\.so[^ ]* => \([^ ]*\) .*/\1/p' | xargs -r realpath -s)"
}
# shellcheck disable=SC2046,SC2086  # word splitting is wanted for the flags
"$cc" $hostflags -o "$tmp/host_pc" "$src/examples/host/lua_host.c" $(pkg-config --cflags --libs lattice) -lm \
  -Wl,-rpath,"$p/$lib" > "$tmp/cc.log" 2>&1
rc=$?
check "build with pkg-config" "0" "$rc"
[ "$rc" -eq 0 ] || cat "$tmp/cc.log"
[ -x "$tmp/host_pc" ] && run_host "pkg-config host" "$tmp/host_pc"

# ---- the host program, built with find_package(Lattice)
cmake -S "$src/examples/host" -B "$tmp/hb" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$hostflags" -DCMAKE_EXE_LINKER_FLAGS="$hostflags" > "$tmp/cmake.log" 2>&1 &&
  cmake --build "$tmp/hb" >> "$tmp/cmake.log" 2>&1
rc=$?
check "build with find_package" "0" "$rc"
[ "$rc" -eq 0 ] || cat "$tmp/cmake.log"
check "find_package found the prefix" "$p/$lib/cmake/Lattice" "$(sed -n 's/^Lattice_DIR:PATH=//p' "$tmp/hb/CMakeCache.txt")"
[ -x "$tmp/hb/lua_host" ] && run_host "find_package host" "$tmp/hb/lua_host"

# ---- stock lua5.4 with the module from the prefix only (LUA_CPATH without ;;)
cat > "$tmp/stock.lua" <<'LUA'
local lt = require "lattice"
assert(package.searchpath("lattice", package.cpath) == os.getenv("EXPECT_MODULE"))
lt.init {}
local n = 300
local x = lt.field(lt.i32, n)
local k = lt.kernel(function(s)
  for i in lt.ndrange(n) do x[i] = i * i % 101 + s end
end, { s = lt.i32 })
k(7)
local t = x:to_table()
for i = 0, n - 1 do
  assert(t[i + 1] == i * i % 101 + 7, ("x[%d] = %s, plain Lua gives %d"):format(i, t[i + 1], i * i % 101 + 7))
end
print("ok " .. lt.version)
LUA
preload=
case "$hostflags" in   # an instrumented module in an uninstrumented interpreter
  *sanitize=address*) preload=$("$cc" -print-file-name=libasan.so) ;;
esac
check "lua5.4 runs a kernel" "ok $v" \
  "$(cd "$tmp" && EXPECT_MODULE="$p/$lib/lua/5.4/lattice.so" LUA_CPATH="$p/$lib/lua/5.4/?.so" LD_PRELOAD=$preload \
     lua5.4 "$tmp/stock.lua" 2>&1)"

finish
