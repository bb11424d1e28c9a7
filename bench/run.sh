#!/bin/bash
# bench/run.sh [BUILD_DIR] -- Lattice against references measured in the same
# run (hand-written C, and Taichi 1.7.4 when a Python with it is found); prints
# the ratios and rewrites docs/performance.md. Each row is a file of
# bench/rows/ with the same four parts: NAME_measure (runs the sides
# alternately, checks that they computed the same thing, or stops), NAME_page
# (its section of the page), NAME_summary (its lines on stdout):
#   triad.sh        triad a[i] = b[i] + s*c[i], 2^24 f32 (bench/triad.c,
#                   bench/bench.lua), and the JIT latency of the examples' kernels
#   sparse.sh       5-point Laplacian struct-for on a pointer->dense(16x16)
#                   4096^2 grid at 1%, 10%, 50% active blocks (sparse_laplace.c,
#                   bench/sparse.lua), pool bytes, activation (sparse_activate.c)
#   dynamic.sh      particle-in-cell bucket fill into dynamic lists and a
#                   struct-for over them (bench/dynamic.c, bench/dynamic.lua)
#   mpm88.sh        examples/mpm88.lua --bench vs bench/mpm88.c, default maths
#                   and fast maths; its time to the first frame
#   busy.sh         mpm88 beside a spinning process: throughput kept
#   first_frame.sh  mpm88's first frame / a steady one, five kernels and one
#                   (bench/mpm88_one.lua), cache off
#   cache.sh        the offline kernel cache: mpm88's first frame cold and warm
#   diff_mpm.sh     differentiable MPM: gradient pass vs forward pass
#   aot.sh          an AOT module's load to first launch, sizes
#   compile.sh      compile time of a kernel writing N fields (bench/compile.lua)
#   startup.sh      `lattice -e ""`, and up to a first kernel (bench/startup.lua)
#   profile.sh      the kernel profiler's overhead, from bench/profile_overhead.sh
#                   when it exists (a hook until then)
#   gui.sh          lattice.gui's frames/s in an SDL2 window on Xvfb (bench/gui.lua):
#                   a 1024^2 field image and 100k circles, vsync off
#   overview.sh     the summary table against Taichi
# bench/rows/lib.sh holds the shared helpers, bench/rows/taichi.sh the Taichi
# side: bench/taichi/*.py, run by the Python in LT_TAICHI_PYTHON or
# bench/taichi/.venv (bench/taichi/setup.sh makes it); without one the page
# says that the Taichi column was not measured.
# Every row but the kernel cache's runs with LT_CACHE=off, so it measures the
# compiler. BUILD_DIR defaults to ./build (what ./setup.sh builds);
# LT_BENCH_THREADS overrides the thread count (default: nproc). Takes about
# 2 minutes without Taichi, 4 to 5 with it (each row's time goes to stderr).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
if [ ! -x "$BUILD/lattice" ]; then
  echo "bench/run.sh: no lattice executable in '$BUILD' (build first: ./setup.sh example, or pass BUILD_DIR)" >&2
  exit 1
fi
BUILD=$(cd "$BUILD" && pwd)
LATTICE=$BUILD/lattice
THREADS=${LT_BENCH_THREADS:-$(nproc)}
REPS=25
tmp=$(mktemp -d)
cd "$ROOT"
export LT_CACHE=off

ROWS="triad sparse dynamic mpm88 busy first_frame cache diff_mpm aot compile startup profile gui"
. bench/rows/lib.sh
. bench/rows/taichi.sh
for row in $ROWS overview; do . "bench/rows/$row.sh"; done
# whatever happens, the busy process of busy.sh does not outlive run.sh
cleanup() { busy_stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
taichi_find
have_taichi || echo "bench/run.sh: the Taichi column is not measured: $TAICHI_WHY" >&2

C_FLAGS="-O3 -march=native -ffp-contract=off -fopenmp"
for ref in triad sparse_laplace sparse_activate mpm88 dynamic; do
  gcc $C_FLAGS "bench/$ref.c" -o "$tmp/$ref" -lm
done
gcc -O3 -march=native -ffast-math -fopenmp bench/mpm88.c -o "$tmp/mpm88_fast" -lm
gcc -O2 bench/startup.c -o "$tmp/startup"

for row in $ROWS; do
  t0=$SECONDS
  "${row}_measure"
  echo "  ($row: $((SECONDS - t0)) s)" >&2
done

model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
cores=$(nproc)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null | grep -v '^??' || true)" ]; then commit="$commit (with local changes)"; fi
when=$(date -u '+%Y-%m-%d %H:%M UTC')

{
  echo "# Performance"
  echo
  echo "Measured by \`bench/run.sh\` (which rewrites this page). Every number is a"
  echo "median; references are measured in the same run on the same machine."
  echo
  echo "- machine: $model, $cores cores"
  echo "- date: $when"
  echo "- commit: $commit"
  echo "- build: $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null | head -1)"
  echo "- Taichi: $(if have_taichi; then echo "$TAICHI_VERSION"; else echo "not measured ($TAICHI_WHY)"; fi)"
  echo
  echo "The C references are compiled with \`-ffp-contract=off\`: by default GCC fuses a"
  echo "multiply and an add into one FMA (one rounding instead of two), which changes"
  echo "results; Lattice rounds every operation (docs/arithmetic.md) unless a script"
  echo "asks for fusing with \`lt.init{fma = true}\`. So both sides compute the same"
  echo "numbers. (Fusing makes the sparse Laplacian of this page 10-15% faster on"
  echo "either side: \`sum - 4*u\` becomes one instruction.) Taichi runs with"
  echo "\`fast_math=False\` for the same reason (its CPU default is \`fast_math=True\`); the"
  echo "mpm88 section also compares the three sides with fast maths on each."
  echo
  for section in overview triad sparse dynamic mpm88 busy first_frame cache diff_mpm aot jit compile startup profile gui; do
    "${section}_page"
    echo
  done
  echo "## GPU"
  echo
  echo "The CUDA backend's figures (triad against the GPU's copy bandwidth, the sparse"
  echo "Laplacian and mpm88 against the CPU backend) come from \`bench/gpu.sh\` on a"
  echo "machine with an NVIDIA GPU: see [performance_gpu.md](performance_gpu.md)."
  echo
  echo "## Before and after"
  echo
  echo "Changes that could move performance are measured against the build before"
  echo "them with \`bench/ab.sh\` (alternating rounds, medians): see"
  echo "[performance_changes.md](performance_changes.md)."
} > docs/performance.md

echo
for row in $ROWS; do "${row}_summary"; done
echo "wrote docs/performance.md"
