#!/bin/bash
# The environment, read in one place (src/program/env.c) and seen by Lua as
# core.env(): every variable arrives as set, an empty one as unset; and the
# settings still do what docs/language.md ("Environment variables") says:
# LT_ARCH and LT_MEMORY_LIMIT checked by lt.init, LT_DUMP_LLVM printing the
# kernels' LLVM IR, LT_CUDA_DRIVER naming the driver library.
# Usage: env.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
has() {  # has NAME TEXT FILE
  if grep -qF -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: no [$2] in:"; cat "$3"; fails=$((fails + 1)); fi
}
VARS="LT_ARCH LT_MEMORY_LIMIT LT_CUDA_DRIVER LT_LIBDEVICE CUDA_HOME CUDA_PATH LT_CHECK_PTX TMPDIR LT_DUMP_LLVM LT_DUMP_PTX
      LT_CACHE LT_CACHE_MAX XDG_CACHE_HOME HOME"
clean() { env $(for v in $VARS; do printf -- '-u %s ' "$v"; done) "$@"; }

cat > "$tmp/env.lua" <<'LUA'
local env = require("lattice.core").env()
local keys = {}
for k, v in pairs(env) do keys[#keys + 1] = k .. "=" .. tostring(v) end
table.sort(keys)
print(table.concat(keys, " "))
LUA
check "nothing set" "dump_llvm=false dump_ptx=false" "$(clean "$LATTICE" "$tmp/env.lua")"
check "every variable" \
  "arch=cpu cache_dir=/k cache_max=99 check_ptx=/p/ptxas cuda_driver=/d/libcuda.so cuda_home=/h cuda_path=/c dump_llvm=true dump_ptx=true libdevice=/l/libdevice.10.bc memory_limit=123 tmpdir=/t" \
  "$(clean LT_ARCH=cpu LT_MEMORY_LIMIT=123 LT_CUDA_DRIVER=/d/libcuda.so LT_LIBDEVICE=/l/libdevice.10.bc \
     CUDA_HOME=/h CUDA_PATH=/c LT_CHECK_PTX=/p/ptxas TMPDIR=/t LT_DUMP_LLVM=1 LT_DUMP_PTX=1 LT_CACHE=/k \
     LT_CACHE_MAX=99 "$LATTICE" "$tmp/env.lua")"
# the kernel cache's directory: LT_CACHE (off: none), else XDG_CACHE_HOME, else HOME
check "cache under XDG_CACHE_HOME" "cache_dir=/x/lattice dump_llvm=false dump_ptx=false" \
  "$(clean XDG_CACHE_HOME=/x HOME=/h "$LATTICE" "$tmp/env.lua")"
check "cache under HOME" "cache_dir=/h/.cache/lattice dump_llvm=false dump_ptx=false" \
  "$(clean HOME=/h "$LATTICE" "$tmp/env.lua")"
check "cache off" "dump_llvm=false dump_ptx=false" "$(clean LT_CACHE=off HOME=/h "$LATTICE" "$tmp/env.lua")"
# empty strings are unset; the dump switches only need to be set
check "empty" "dump_llvm=true dump_ptx=false" \
  "$(clean LT_ARCH= LT_MEMORY_LIMIT= LT_CUDA_DRIVER= LT_LIBDEVICE= CUDA_HOME= LT_DUMP_LLVM= "$LATTICE" "$tmp/env.lua")"

cat > "$tmp/init.lua" <<'LUA'
local lt = require "lattice"
local ok, err = pcall(lt.init, {})
print(ok, err)
LUA
clean LT_ARCH=gpu "$LATTICE" "$tmp/init.lua" > "$tmp/arch" 2>&1
has "LT_ARCH checked" "unknown arch 'gpu' in LT_ARCH" "$tmp/arch"
clean LT_MEMORY_LIMIT=lots "$LATTICE" "$tmp/init.lua" > "$tmp/limit" 2>&1
has "LT_MEMORY_LIMIT checked" "LT_MEMORY_LIMIT must be a whole number of bytes > 0, got 'lots'" "$tmp/limit"
clean LT_ARCH=cuda LT_CUDA_DRIVER=/nonexistent/libcuda.so "$LATTICE" "$tmp/init.lua" > "$tmp/driver" 2>&1
check "LT_ARCH=cuda without the driver: skipped" 77 $?
has "LT_CUDA_DRIVER names the library" "/nonexistent/libcuda.so" "$tmp/driver"

cat > "$tmp/kernel.lua" <<'LUA'
local lt = require "lattice"
lt.init {}
local x = lt.field(lt.i32, 8)
lt.kernel(function() for i in x do x[i] = i end end)()
print("x[7]", x[7])
LUA
clean LT_DUMP_LLVM=1 "$LATTICE" "$tmp/kernel.lua" > "$tmp/dump" 2> "$tmp/dump_err"
has "LT_DUMP_LLVM: the kernel runs" "x[7]	7" "$tmp/dump"
has "LT_DUMP_LLVM: its LLVM IR on stderr" "define " "$tmp/dump_err"
clean "$LATTICE" "$tmp/kernel.lua" > /dev/null 2> "$tmp/quiet_err"
check "no dump unless asked" "" "$(cat "$tmp/quiet_err")"
finish
