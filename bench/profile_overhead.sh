#!/bin/bash
# bench/profile_overhead.sh [LATTICE] [ROUNDS] [FRAMES] -- what the kernel
# profiler costs (docs/profiler.md), on examples/mpm88.lua --bench FRAMES
# (each frame 200 kernel launches): ROUNDS rounds (default 7) of one run with
# the profiler off (LATTICE, default build/lattice, without --profile) and
# one with it on (`lattice --profile`), in alternating order, so that the
# machine's slow and fast phases fall on both. Each run reports the median
# frame time (mpm88_lt_ms). Prints on stdout
#   profile_off_ms X         median over the rounds, profiler off
#   profile_on_ms Y          median over the rounds, profiler on
#   profile_overhead_pct Z   median over the rounds of on/off - 1, in percent
# and, with LT_PROFILE_BASE=<a lattice built without the profiler>, also
# the cost of having it compiled in but off:
#   profile_base_ms B        median, that build
#   profile_off_overhead_pct median over the rounds of off/base - 1, in percent
# The spread (each run's time, min and max) goes to stderr. Both profiles run
# the same kernels, so their particles' mean positions must agree.
# On a busy machine a frame's time varies by more than the profiler costs, so
# the script also measures that cost directly, in one process: a kernel of
# one element launched in blocks of 2000, the profiler switched on and off
# between blocks (15 of each; the median block, per launch):
#   profile_launch_off_us L  profile_launch_on_us M  profile_launch_cost_us M-L
#   profile_mpm88_estimate_pct   that cost times mpm88's launches per frame,
#                                over profile_off_ms, in percent
# (with LT_PROFILE_BASE also profile_launch_base_us, that build's launch in
# processes alternating with this one's).
# LT_BENCH_THREADS sets the threads (default: every core).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LATTICE=$(realpath "${1:-$ROOT/build/lattice}")
ROUNDS=${2:-7}
FRAMES=${3:-20}
BASE=${LT_PROFILE_BASE:-}
if [ -n "$BASE" ]; then BASE=$(realpath "$BASE"); fi
THREADS=${LT_BENCH_THREADS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$ROOT"

run() {   # run NAME LATTICE [--profile]: one run; its frame time appended to $tmp/NAME
  local name=$1 exe=$2
  shift 2
  "$exe" "$@" examples/mpm88.lua --bench "$FRAMES" --threads "$THREADS" > "$tmp/out" 2> "$tmp/err" || {
    echo "bench/profile_overhead.sh: $name run failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  }
  awk '$1 == "mpm88_lt_ms" { print $2 }' "$tmp/out" >> "$tmp/$name"
  grep mean "$tmp/out" > "$tmp/$name.mean"
  if [ "$*" = "--profile" ]; then
    if ! grep -q '^lt.profiler: 5 kernels' "$tmp/err"; then
      echo "bench/profile_overhead.sh: --profile printed no table:" >&2
      cat "$tmp/err" >&2
      exit 1
    fi
    awk '/^lt.profiler:/ { print $4 }' "$tmp/err" > "$tmp/launches"
  fi
}

# one process: per-launch microseconds of a one-element kernel, profiler off
# and on in alternating blocks (only off where the build has no profiler)
cat > "$tmp/launch.lua" <<'LUA'
local lt = require "lattice"
local clock = require "lattice.clock"
lt.init { arch = "cpu", threads = tonumber(arg[1]) }
local x = lt.field(lt.f32, 1)
local k = lt.kernel(function() for i in lt.ndrange(1) do x[i] = x[i] + 1 end end)
k()
local B, R = 2000, 15
local modes = lt.profiler and { "off", "on" } or { "off" }
local t = { off = {}, on = {} }
for r = 1, R do
  for m = 1, #modes do
    local mode = modes[r % 2 == 1 and m or #modes + 1 - m]
    if lt.profiler then
      if mode == "on" then lt.profiler.enable() else lt.profiler.disable() end
    end
    local t0 = clock.now()
    for _ = 1, B do k() end
    t[mode][#t[mode] + 1] = (clock.now() - t0) / B * 1e6
  end
end
for _, mode in ipairs(modes) do
  table.sort(t[mode])
  print(("%s %.4f"):format(mode, t[mode][(R + 1) // 2]))
end
LUA

for r in $(seq "$ROUNDS"); do
  echo "round $r of $ROUNDS..." >&2
  if [ $((r % 2)) -eq 1 ]; then
    if [ -n "$BASE" ]; then run base "$BASE"; fi
    run off "$LATTICE"
    run on "$LATTICE" --profile
  else
    run on "$LATTICE" --profile
    run off "$LATTICE"
    if [ -n "$BASE" ]; then run base "$BASE"; fi
  fi
done
if ! cmp -s "$tmp/off.mean" "$tmp/on.mean"; then
  echo "bench/profile_overhead.sh: the particles differ with the profiler on:" >&2
  diff "$tmp/off.mean" "$tmp/on.mean" >&2 || true
  exit 1
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio_pct() {   # ratio_pct A B: per round, (B / A - 1) * 100
  paste "$tmp/$1" "$tmp/$2" | awk '{ printf "%.4f\n", ($2 / $1 - 1) * 100 }'
}
spread() {   # spread NAME: its runs, min and max, on stderr
  echo "$1 runs (ms): $(tr '\n' ' ' < "$tmp/$1")(min $(sort -g "$tmp/$1" | head -1), max $(sort -g "$tmp/$1" | tail -1))" >&2
}
spread off
spread on
echo "profile_off_ms $(median < "$tmp/off")"
echo "profile_on_ms $(median < "$tmp/on")"
echo "on/off - 1 per round (%): $(ratio_pct off on | tr '\n' ' ')" >&2
echo "profile_overhead_pct $(ratio_pct off on | median)"
"$LATTICE" "$tmp/launch.lua" "$THREADS" > "$tmp/launch"
loff=$(awk '$1 == "off" { print $2 }' "$tmp/launch")
lon=$(awk '$1 == "on" { print $2 }' "$tmp/launch")
echo "profile_launch_off_us $loff"
echo "profile_launch_on_us $lon"
echo "profile_launch_cost_us $(awk -v a="$loff" -v b="$lon" 'BEGIN { printf "%.4f", b - a }')"
per_frame=$(awk -v n="$(cat "$tmp/launches")" -v f="$FRAMES" 'BEGIN { printf "%d", (n - 1) / (f + 1) }')
echo "mpm88 launches per frame: $per_frame" >&2
echo "profile_mpm88_estimate_pct $(awk -v a="$loff" -v b="$lon" -v n="$per_frame" -v ms="$(median < "$tmp/off")" \
  'BEGIN { printf "%.4f", (b - a) * n / (ms * 1000) * 100 }')"
if [ -n "$BASE" ]; then
  for r in $(seq 5); do
    "$BASE" "$tmp/launch.lua" "$THREADS" | awk '$1 == "off" { print $2 }' >> "$tmp/lbase"
    "$LATTICE" "$tmp/launch.lua" "$THREADS" | awk '$1 == "off" { print $2 }' >> "$tmp/loff"
  done
  echo "launch (us), base: $(tr '\n' ' ' < "$tmp/lbase")off: $(tr '\n' ' ' < "$tmp/loff")" >&2
  echo "profile_launch_base_us $(median < "$tmp/lbase")"
  echo "profile_launch_off5_us $(median < "$tmp/loff")"
fi
if [ -n "$BASE" ]; then
  spread base
  echo "profile_base_ms $(median < "$tmp/base")"
  echo "off/base - 1 per round (%): $(ratio_pct base off | tr '\n' ' ')" >&2
  echo "profile_off_overhead_pct $(ratio_pct base off | median)"
fi
