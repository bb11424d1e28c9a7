#!/bin/bash
# AOT modules end to end (docs/aot.md): examples/aot/sparse_heat.lua saves a
# module; examples/aot/heat_host.c, linked against liblattice_rt only (shared
# and static), runs it; the results must be bitwise equal to the same
# kernels run by the JIT with threads = 1 (the fields, and the total heat
# each step). With 2 threads the fields have no atomics, so they stay
# bitwise equal; the totals are a float sum (an atomic add) and may differ in
# their last digits, so they are compared within 1e-5 relative.
# Usage: aot.sh LATTICE (the build directory is LT_BUILD_DIR)
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
B=${LT_BUILD_DIR:?}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CC=${LT_CC:-cc}
STEPS=40

"$LATTICE" "$SRC/examples/aot/sparse_heat.lua" --save "$tmp/heat.ltm" > "$tmp/save.out" 2>&1
check "the module is saved" "saved $tmp/heat.ltm" "$(cat "$tmp/save.out")"
check "it starts with the magic" "LTMODULE" "$(head -c 8 "$tmp/heat.ltm")"

inc="-I$SRC/include -I$B/generated"
$CC -std=c17 -O2 -Wall -Wextra -Werror ${LT_HOST_CFLAGS:-} $inc "$SRC/examples/aot/heat_host.c" -L"$B" -llattice_rt \
  -Wl,-rpath,"$B" -o "$tmp/host" 2> "$tmp/cc1" || cat "$tmp/cc1"
check "the host builds against liblattice_rt.so" "yes" "$([ -x "$tmp/host" ] && echo yes || echo no)"
check "readelf: the host needs neither LLVM nor Lua" "" \
  "$(readelf -d "$tmp/host" | grep NEEDED | grep -Ei 'llvm|lua')"
$CC -std=c17 -O2 -Wall -Wextra -Werror ${LT_HOST_CFLAGS:-} $inc "$SRC/examples/aot/heat_host.c" "$B/liblattice_rt.a" \
  -lpthread -lm -ldl -o "$tmp/host_static" 2> "$tmp/cc2" || cat "$tmp/cc2"
check "the host builds against liblattice_rt.a" "yes" "$([ -x "$tmp/host_static" ] && echo yes || echo no)"

"$LATTICE" "$SRC/examples/aot/sparse_heat.lua" --run "$tmp/jit" --steps $STEPS > /dev/null 2>&1
check "the JIT run wrote its fields" "yes" "$([ -s "$tmp/jit.u.raw" ] && echo yes || echo no)"
"$tmp/host" "$tmp/heat.ltm" "$tmp/aot1" $STEPS 1 > "$tmp/aot1.out" 2>&1
check "the host runs the module" "yes" "$(grep -q '^ran 40 steps' "$tmp/aot1.out" && echo yes || cat "$tmp/aot1.out")"
check "fields bitwise equal to the JIT (1 thread)" "same" "$(cmp "$tmp/aot1.u.raw" "$tmp/jit.u.raw" && echo same)"
check "totals bitwise equal to the JIT (1 thread)" "same" "$(cmp "$tmp/aot1.totals.txt" "$tmp/jit.totals.txt" && echo same)"
"$tmp/host_static" "$tmp/heat.ltm" "$tmp/aots" $STEPS 1 > /dev/null 2>&1
check "the static host gives the same fields" "same" "$(cmp "$tmp/aots.u.raw" "$tmp/jit.u.raw" && echo same)"
"$tmp/host" "$tmp/heat.ltm" "$tmp/aot2" $STEPS 2 > /dev/null 2>&1
check "fields bitwise equal with 2 threads" "same" "$(cmp "$tmp/aot2.u.raw" "$tmp/jit.u.raw" && echo same)"
check "totals within 1e-5 with 2 threads" "ok" "$(paste "$tmp/aot2.totals.txt" "$tmp/jit.totals.txt" | awk '
  { d = $2 - $4; if (d < 0) d = -d; m = $4 < 0 ? -$4 : $4; if (d > 1e-5 * m) bad++ } END { print bad ? "off" : "ok" }')"
check "the totals are not all zero" "yes" "$(awk '$2 != 0 { n++ } END { print (n > 0 ? "yes" : "no") }' "$tmp/aot1.totals.txt")"

HEAT_HOST_MEMORY=16 "$tmp/host" "$tmp/heat.ltm" "$tmp/aoth" $STEPS 1 > /dev/null 2>&1
check "pool and tree in the host's memory: the same fields" "same" "$(cmp "$tmp/aoth.u.raw" "$tmp/jit.u.raw" && echo same)"
check "... and totals" "same" "$(cmp "$tmp/aoth.totals.txt" "$tmp/jit.totals.txt" && echo same)"

# GPU: the module's PTX (checked by ptxas when there is one) loaded by the
# CUDA backend of liblattice and run by the mock driver (heat_host_mockgpu:
# heat_host.c with tests/cuda/cuda_emulate.c, which runs a host build of each
# PTX entry); the mock is an sm_80, so the sm_70 PTX is chosen
gpu_host=$B/heat_host_mockgpu
if [ -x "$gpu_host" ] && [ -n "${LT_MOCK_CUDA_DRIVER:-}" ] && [ -n "${LT_LIBDEVICE_PATH:-}" ]; then
  export LT_CUDA_DRIVER=$LT_MOCK_CUDA_DRIVER LT_LIBDEVICE=$LT_LIBDEVICE_PATH
  LT_CHECK_PTX=${LT_PTXAS:-} "$LATTICE" "$SRC/examples/aot/sparse_heat.lua" --save "$tmp/gpu.ltm" --cuda > "$tmp/gsave.out" 2>&1
  check "a module with PTX for sm_70 and sm_90 is saved (ptxas: ${LT_PTXAS:-none})" "saved $tmp/gpu.ltm" "$(cat "$tmp/gsave.out")"
  HEAT_HOST_ARCH=cuda "$gpu_host" "$tmp/gpu.ltm" "$tmp/g" $STEPS > "$tmp/g.out" 2>&1
  check "the CUDA backend runs the module's PTX" "yes" "$(grep -q '^ran 40 steps' "$tmp/g.out" && echo yes || cat "$tmp/g.out")"
  check "... fields bitwise equal to the JIT on the CPU" "same" "$(cmp "$tmp/g.u.raw" "$tmp/jit.u.raw" && echo same)"
  check "... totals within 1e-5" "ok" "$(paste "$tmp/g.totals.txt" "$tmp/jit.totals.txt" | awk '
    { d = $2 - $4; if (d < 0) d = -d; m = $4 < 0 ? -$4 : $4; if (d > 1e-5 * m) bad++ } END { print bad ? "off" : "ok" }')"
  "$tmp/host" "$tmp/gpu.ltm" "$tmp/gc" $STEPS 1 > /dev/null 2>&1
  check "the same module on the CPU (liblattice_rt skips its PTX)" "same" "$(cmp "$tmp/gc.u.raw" "$tmp/jit.u.raw" && echo same)"
  "$LATTICE" "$SRC/examples/aot/sparse_heat.lua" --save "$tmp/sm90.ltm" --sm sm_90 --no-cpu > /dev/null 2>&1
  HEAT_HOST_ARCH=cuda "$gpu_host" "$tmp/sm90.ltm" "$tmp/g90" 1 > "$tmp/g90.out" 2>&1
  check "PTX for a newer GPU only is refused" "yes" \
    "$(grep -q 'its PTX is for newer GPUs; this GPU is sm_80.*it has PTX for sm_90' "$tmp/g90.out" && echo yes || cat "$tmp/g90.out")"
  "$tmp/host" "$tmp/sm90.ltm" "$tmp/c90" 1 > "$tmp/c90.out" 2>&1
  check "a module without CPU code is refused on the CPU" "yes" \
    "$(grep -q 'it holds no CPU code' "$tmp/c90.out" && echo yes || cat "$tmp/c90.out")"
  HEAT_HOST_ARCH=cuda "$gpu_host" "$tmp/heat.ltm" "$tmp/gcpu" 1 > "$tmp/gcpu.out" 2>&1
  check "a module without PTX is refused on a GPU" "yes" \
    "$(grep -q 'it holds no PTX' "$tmp/gcpu.out" && echo yes || cat "$tmp/gcpu.out")"
  # the runtime library's own CUDA backend (no compiler; its request kernel
  # is PTX made at build time) loads the module's PTX on the mock too; the
  # mock runs only the kernels a test harness built for the host, so this
  # host's launches run nothing there: what is checked is the loading
  HEAT_HOST_ARCH=cuda "$tmp/host" "$tmp/gpu.ltm" "$tmp/grt" 2 > "$tmp/grt.out" 2>&1
  check "liblattice_rt's CUDA backend loads the module and launches" "yes" \
    "$(grep -q '^ran 2 steps' "$tmp/grt.out" && echo yes || cat "$tmp/grt.out")"
  unset LT_CUDA_DRIVER LT_LIBDEVICE
fi

# a module for a newer CPU than this one is refused, naming what is missing
if ! grep -qw avx512f /proc/cpuinfo; then
  "$LATTICE" "$SRC/examples/aot/sparse_heat.lua" --save "$tmp/v4.ltm" --cpu x86-64-v4 > /dev/null 2>&1
  "$tmp/host" "$tmp/v4.ltm" "$tmp/v4" 1 1 > "$tmp/v4.out" 2>&1
  check "an x86-64-v4 module is refused here" "yes" \
    "$(grep -q 'needs .*avx512f.*which this CPU lacks' "$tmp/v4.out" && echo yes || cat "$tmp/v4.out")"
fi
# a truncated module: a clear error, no crash
head -c 1000 "$tmp/heat.ltm" > "$tmp/cut.ltm"
"$tmp/host" "$tmp/cut.ltm" "$tmp/cut" 1 1 > "$tmp/cut.out" 2>&1
check "a truncated module is refused (exit 1)" "1" "$?"
check "... saying so" "yes" "$(grep -q 'cut.ltm: the header says .* bytes, the file has 1000' "$tmp/cut.out" && echo yes || cat "$tmp/cut.out")"
finish
