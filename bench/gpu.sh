#!/bin/bash
# bench/gpu.sh [LATTICE] -- the GPU benchmarks, on a machine with an NVIDIA GPU
# (docs/cuda.md). LATTICE: the lattice executable (default build/lattice; on
# the device machine: "bash .device/run.sh lattice").
#   (a) dense triad on CUDA vs a device-to-device copy (bench/gpu.lua):
#       bandwidth ratio, target >= 0.85; where nvcc is found, hand-written
#       CUDA triads (bench/triad.cu) in the same run, for what the GPU gives
#       a scalar loop, one element per thread, and float4 accesses
#   (b) the sparse Laplacian of bench/sparse.lua on CUDA and on the CPU backend
#   (c) mpm88 (examples/mpm88.lua --bench --scale 12: 1.2M particles) on CUDA
#       and on the CPU backend
# Prints the figures; copy them into docs/performance.md with the machine and date.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LATTICE=${1:-$ROOT/build/lattice}
cd "$ROOT"
export LT_CACHE=off   # the CPU rows measure the compiler, not the kernel cache
echo "== (a) triad vs device copy"
$LATTICE bench/gpu.lua --reps 20 | tee /tmp/lt_gpu.txt
awk '$1 == "triad_gpu_gbs" { t = $2 } $1 == "copy_gpu_gbs" { c = $2 }
     END { printf "triad bandwidth / copy bandwidth: %.2f (target >= 0.85)\n", t / c }' /tmp/lt_gpu.txt
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$NVCC" ]; then
  "$NVCC" -O3 -arch=native -o /tmp/lt_triad_cuda bench/triad.cu && /tmp/lt_triad_cuda 20
else
  echo "(no nvcc: the hand-written CUDA triads of bench/triad.cu are not measured)"
fi
echo "== (b) sparse Laplacian: CUDA, then the CPU backend"
LT_ARCH=cuda $LATTICE bench/sparse.lua --reps 10
LT_ARCH=cpu $LATTICE bench/sparse.lua --reps 10
echo "== (c) mpm88 at 1.2 million particles (--scale 12): CUDA, then the CPU backend"
LT_ARCH=cuda $LATTICE examples/mpm88.lua --bench 5 --scale 12
LT_ARCH=cpu $LATTICE examples/mpm88.lua --bench 5 --scale 12
