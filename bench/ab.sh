#!/bin/bash
# bench/ab.sh BUILD_A BUILD_B [ROUNDS] -- a before/after comparison of two
# builds of Lattice on this machine: the Lattice halves of the benchmarks
# (bench.lua: triad and JIT latency; sparse.lua; dynamic.lua at 1 and 2
# threads; mpm88 --bench; compile.lua)
# run alternately, A then B, ROUNDS times (default 5), so that the machine's
# slow and fast phases fall on both. Prints, for every time measured, the
# median of each side and B/A; a median of B more than 5% above A's is
# marked **slower**. The results the two builds compute (checksums) must be
# equal, or the script fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
ROUNDS=${3:-5}
THREADS=${LT_BENCH_THREADS:-$(nproc)}
tmp=$(mktemp -d)
trap '[ -n "${LT_AB_KEEP:-}" ] || rm -rf "$tmp"' EXIT
cd "$ROOT"
run() {   # run BUILD OUT: one round of every benchmark, "key [param] value" lines
  "$1/lattice" bench/bench.lua --threads "$THREADS" --reps 9 >> "$2"
  "$1/lattice" bench/sparse.lua --threads "$THREADS" --reps 9 >> "$2"
  "$1/lattice" bench/dynamic.lua --threads 1 --reps 9 | sed 's/^dynamic_lt_\([a-z]*\)_ms/dynamic_lt_\1_1t_ms/' >> "$2"
  "$1/lattice" bench/dynamic.lua --threads "$THREADS" --reps 9 >> "$2"
  "$1/lattice" examples/mpm88.lua --bench 10 --threads "$THREADS" >> "$2"
  "$1/lattice" bench/compile.lua 500 >> "$2"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r of $ROUNDS: A, then B..." >&2
  run "$A" "$tmp/a.txt"
  run "$B" "$tmp/b.txt"
done
# checksums and counts: every line that is not a time must be the same in A and B
grep -v '_ms' "$tmp/a.txt" | grep -E '_sum|_writes|_blocks|mean' | sort -u > "$tmp/a.res" || true
grep -v '_ms' "$tmp/b.txt" | grep -E '_sum|_writes|_blocks|mean' | sort -u > "$tmp/b.res" || true
if ! cmp -s "$tmp/a.res" "$tmp/b.res"; then
  echo "bench/ab.sh: the two builds compute different results:" >&2
  diff "$tmp/a.res" "$tmp/b.res" >&2 || true
  exit 1
fi
echo "| measurement | A median | B median | B/A |"
echo "|---|---:|---:|---:|"
awk '
  FNR == 1 { side++ }
  $0 ~ /_ms/ {
    key = $1; for (i = 2; i < NF; i++) key = key " " $i
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    v[side, key, ++cnt[side, key]] = $NF
  }
  function median(s, k,   m, i, j, t, a) {
    m = cnt[s, k]; for (i = 1; i <= m; i++) a[i] = v[s, k, i]
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  END {
    for (i = 0; i < n; i++) {
      k = order[i]; if (!cnt[1, k] || !cnt[2, k]) continue
      a = median(1, k); b = median(2, k); r = a > 0 ? b / a : 0
      printf "| %s | %.4g | %.4g | %.3f%s |\n", k, a, b, r, (r > 1.05 ? " **slower**" : "")
    }
  }' "$tmp/a.txt" "$tmp/b.txt"
