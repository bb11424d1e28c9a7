#!/bin/bash
# `cmake --install` into a scratch prefix (docs/install.md), then use what
# was installed as a user would: the file list; the programs of examples/host/
# (host.c and host.cpp on the C API, lua_host.c with its own lua_State) built
# against the prefix with pkg-config (cc and c++) and with CMake's
# find_package(Lattice), all run; stock lua5.4 loading the Lua module through
# LUA_CPATH; the dynamic symbol tables of liblattice.so and the Lua module hold
# exactly the LT_API names of the installed headers (nothing leaks if
# -fvisibility=hidden is lost). Usage: install.sh LATTICE, with LT_BUILD_DIR
# (the build folder), LT_CC and LT_CXX (the C and C++ compilers) and
# LT_HOST_CFLAGS (the sanitizer flags of the build, empty outside it) from
# tests.cmake. Exit 77 when a tool is missing.
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${LT_BUILD_DIR:?LT_BUILD_DIR must name the build folder}
cc=${LT_CC:-cc}
cxx=${LT_CXX:-c++}
hostflags=${LT_HOST_CFLAGS:-}
for tool in cmake pkg-config lua5.4 nm readelf "$cc" "$cxx"; do
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
$lib/liblattice_rt.a
$lib/liblattice_rt.so
$lib/liblattice_rt.so.$so
$lib/liblattice_rt.so.$v
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
check "public names in the headers" "yes" "$(grep -qx luaopen_lattice "$tmp/public" && grep -qx lt_register_source "$tmp/public" &&
  grep -qx lt_runtime_create "$tmp/public" && grep -qx lt_kernel_launch "$tmp/public" && echo yes)"
# every declaration starting with LT_API gave a name (one written otherwise would be missed above)
check "one name per LT_API declaration" "$(cat "$p"/include/*.h | grep -c '^LT_API ')" "$(sort -u "$tmp/public" | wc -l)"
for so_file in $lib/liblattice.so.$v $lib/lua/5.4/lattice.so; do
  nm -D --defined-only "$p/$so_file" | awk '{print $3}' | grep -vxE '__bss_start|_edata|_end' | sort > "$tmp/exported"
  check "$so_file exports every public name" "" "$(comm -23 "$tmp/public" "$tmp/exported" | tr '\n' ' ')"
  check "$so_file exports nothing else" "" \
    "$(comm -13 "$tmp/public" "$tmp/exported" | awk 'NR <= 8 { printf "%s ", $0 } END { if (NR) printf "(%d names)", NR }')"
done

# ---- the host programs, built with pkg-config; each prints one line when its
# results match the same arithmetic in plain C / C++
declare -A line=(
  [host]="host: saxpy, dot and step over 200 elements match plain C (Lattice $v)"
  [host_cpp]="host_cpp: saxpy_sum over 200 elements and 25 diffusion steps match plain C++ (Lattice $v)"
  [lua_host]="lua_host: 200 elements match plain C (Lattice $v)"
)
run_host() {  # run_host HOW DIR NAME: runs DIR/NAME, checks its line and that it uses the prefix's library
  local exe=$2/$3
  [ -x "$exe" ] || { check "$1 $3 was built" "yes" "no"; return; }
  check "$1 $3 runs" "${line[$3]}" "$("$exe" 200 2>&1)"
  check "$1 $3 loads the prefix's library" "$p/$lib/liblattice.so.$so" \
    "$(ldd "$exe" | sed -n 's/.*liblattice\.so[^ ]* => \([^ ]*\) .*/\1/p' | xargs -r realpath -s)"
}
mkdir -p "$tmp/pc"
# shellcheck disable=SC2046,SC2086  # word splitting is wanted for the flags
{
  "$cc" $hostflags -o "$tmp/pc/host" "$src/examples/host/host.c" $(pkg-config --cflags --libs lattice) \
    -Wl,-rpath,"$p/$lib" &&
  "$cxx" -std=c++17 $hostflags -o "$tmp/pc/host_cpp" "$src/examples/host/host.cpp" \
    $(pkg-config --cflags --libs lattice) -Wl,-rpath,"$p/$lib" &&
  "$cc" $hostflags -o "$tmp/pc/lua_host" "$src/examples/host/lua_host.c" $(pkg-config --cflags --libs lattice) -lm \
    -Wl,-rpath,"$p/$lib"
} > "$tmp/cc.log" 2>&1
rc=$?
check "build with pkg-config (cc and c++)" "0" "$rc"
[ "$rc" -eq 0 ] || cat "$tmp/cc.log"
for h in host host_cpp lua_host; do run_host pkg-config "$tmp/pc" "$h"; done

# ---- the host programs, built with find_package(Lattice)
cmake -S "$src/examples/host" -B "$tmp/hb" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_FLAGS="$hostflags" -DCMAKE_CXX_FLAGS="$hostflags" \
  -DCMAKE_EXE_LINKER_FLAGS="$hostflags" > "$tmp/cmake.log" 2>&1 &&
  cmake --build "$tmp/hb" >> "$tmp/cmake.log" 2>&1
rc=$?
check "build with find_package" "0" "$rc"
[ "$rc" -eq 0 ] || cat "$tmp/cmake.log"
check "find_package found the prefix" "$p/$lib/cmake/Lattice" "$(sed -n 's/^Lattice_DIR:PATH=//p' "$tmp/hb/CMakeCache.txt")"
for h in host host_cpp lua_host; do run_host find_package "$tmp/hb" "$h"; done

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
