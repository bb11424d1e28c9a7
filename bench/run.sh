#!/bin/bash
# bench/run.sh [BUILD_DIR] -- Lattice against references measured in the same
# run; prints the ratios and rewrites docs/performance.md.
#   (a) triad a[i] = b[i] + s*c[i], 2^24 f32: Lattice kernel vs triad.c
#       (gcc -O3 -march=native -fopenmp), same thread count, medians
#   (b) JIT latency of the examples' kernels (first call minus second call)
#   (c) start-up of `lattice -e ""` (lua5.4 -e "" alongside, for scale)
# BUILD_DIR defaults to ./build (what ./setup.sh builds); LT_BENCH_THREADS
# overrides the thread count (default: nproc). Takes well under a minute.
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
trap 'rm -rf "$tmp"' EXIT
cd "$ROOT"

gcc -O3 -march=native -fopenmp bench/triad.c -o "$tmp/triad"
gcc -O2 bench/startup.c -o "$tmp/startup"

# The C reference runs before and after Lattice and keeps its better median,
# so a burst of other load on the machine does not flatter Lattice.
echo "triad: C + OpenMP, $THREADS threads..." >&2
OMP_NUM_THREADS=$THREADS "$tmp/triad" $REPS > "$tmp/c1.txt"
echo "triad and JIT latency: Lattice, $THREADS threads..." >&2
"$LATTICE" bench/bench.lua --threads "$THREADS" --reps $REPS > "$tmp/lt.txt"
echo "triad: C + OpenMP again..." >&2
OMP_NUM_THREADS=$THREADS "$tmp/triad" $REPS > "$tmp/c2.txt"
OMP_NUM_THREADS=1 "$tmp/triad" $REPS > "$tmp/c_one.txt"
cat "$tmp/c1.txt" "$tmp/c2.txt" | awk '$1 == "triad_ms" && (best == "" || $2 < best) { best = $2 } END { print "triad_ms", best }' > "$tmp/c.txt"
echo "start-up..." >&2
"$tmp/startup" 20 "$LATTICE" -e "" > "$tmp/start.txt"
LUA=$(command -v lua5.4 || true)
if [ -n "$LUA" ]; then "$tmp/startup" 20 "$LUA" -e "" > "$tmp/lua.txt"; else echo "startup_ms -1" > "$tmp/lua.txt"; fi

val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
c_ms=$(val "$tmp/c.txt" triad_ms)
c1_ms=$(val "$tmp/c_one.txt" triad_ms)
lt_ms=$(val "$tmp/lt.txt" triad_lattice_ms)
start_ms=$(val "$tmp/start.txt" startup_ms)
lua_ms=$(val "$tmp/lua.txt" startup_ms)
gbs() { awk -v ms="$1" 'BEGIN { printf "%.1f", 3 * 4 * 16777216 / (ms * 1e6) }'; }
ratio=$(awk -v c="$c_ms" -v l="$lt_ms" 'BEGIN { printf "%.2f", c / l }')
verdict() { awk -v x="$1" -v t="$2" -v dir="$3" 'BEGIN { ok = (dir == "ge") ? x >= t : x <= t; print ok ? "met" : "**missed**" }'; }

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
  echo
  echo "## Dense triad"
  echo
  echo "\`a[i] = b[i] + s*c[i]\` over 2^24 f32 (192 MiB touched per call), $THREADS threads,"
  echo "median of $REPS calls after a warm-up. Reference: bench/triad.c,"
  echo "\`gcc -O3 -march=native -fopenmp\`, OMP_NUM_THREADS=$THREADS, run before and after"
  echo "Lattice (the better of its two medians is kept)."
  echo
  echo "| | time | bandwidth |"
  echo "|---|---|---|"
  echo "| Lattice kernel | $lt_ms ms | $(gbs "$lt_ms") GB/s |"
  echo "| C + OpenMP | $c_ms ms | $(gbs "$c_ms") GB/s |"
  echo "| C, 1 thread (for scale) | $c1_ms ms | $(gbs "$c1_ms") GB/s |"
  echo
  echo "Throughput ratio Lattice / C: **$ratio×** (target ≥ 0.95×: $(verdict "$ratio" 0.95 ge))."
  echo "The loop is memory-bound; on a machine shared with other work the static"
  echo "OpenMP schedule waits for its slowest thread, so repeat runs before"
  echo "reading much into a ratio far from 1."
  echo
  echo "## JIT latency"
  echo
  echo "Time from a kernel's first call to compiled code (trace, passes, LLVM"
  echo "optimisation and code generation), measured as the first call minus a"
  echo "second call of a fresh kernel, median of 9. Target ≤ 15 ms."
  echo
  echo "| kernel (from examples/) | latency | target |"
  echo "|---|---|---|"
  awk '$1 == "jit_ms" { print $2, $3 }' "$tmp/lt.txt" | while read -r name ms; do
    echo "| $name | $ms ms | $(verdict "$ms" 15 le) |"
  done
  echo
  echo "## Start-up"
  echo
  echo "\`lattice -e \"\"\`, median of 20 runs: **$start_ms ms** (target ≤ 20 ms: $(verdict "$start_ms" 20 le))."
  echo "For scale, \`lua5.4 -e \"\"\`: $lua_ms ms. Most of the difference is the dynamic"
  echo "loader relocating libLLVM.so, which \`lattice\` links; LLVM itself is only"
  echo "initialised when the first kernel compiles."
} > docs/performance.md

echo
echo "triad: Lattice $lt_ms ms, C+OpenMP $c_ms ms -> ratio ${ratio}x (target >= 0.95)"
awk '$1 == "jit_ms" { printf "JIT latency %s: %s ms (target <= 15)\n", $2, $3 }' "$tmp/lt.txt"
echo "start-up: lattice -e \"\" $start_ms ms (target <= 20), lua5.4 $lua_ms ms"
echo "wrote docs/performance.md"
