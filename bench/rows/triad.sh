# bench/rows/triad.sh -- the dense triad a[i] = b[i] + s*c[i] over 2^24 f32
# (bench/triad.c, bench/bench.lua, bench/taichi/bench.py) and, from the same
# processes, the JIT latency of the examples' kernels (first call minus
# second call of a fresh kernel). C, Lattice and Taichi alternate, three rounds.

triad_measure() {
  local round
  for round in 1 2 3; do
    echo "triad and JIT latency: C + OpenMP, Lattice and Taichi, $THREADS threads, round $round of 3..." >&2
    OMP_NUM_THREADS=$THREADS "$tmp/triad" $REPS > "$tmp/c$round.txt"
    "$LATTICE" bench/bench.lua --threads "$THREADS" --reps $REPS > "$tmp/lt$round.txt"
    taichi_run bench --threads "$THREADS" --reps $REPS --fast-math off > "$tmp/ti$round.txt"
  done
  OMP_NUM_THREADS=1 "$tmp/triad" $REPS > "$tmp/c_one.txt"
  c_ms=$(best triad_ms "$tmp"/c[123].txt)
  c1_ms=$(val "$tmp/c_one.txt" triad_ms)
  lt_ms=$(best triad_lattice_ms "$tmp"/lt[123].txt)
  ti_ms=$(best triad_ti_ms "$tmp"/ti[123].txt)
  triad_ratio=$(ratio "$c_ms" "$lt_ms")
}

gbs() { awk -v ms="$1" 'BEGIN { printf "%.1f", 3 * 4 * 16777216 / (ms * 1e6) }'; }

# each kernel's best JIT latency over the three rounds, in the order bench.lua
# prints them: "name lattice_ms taichi_ms" (taichi_ms empty without Taichi)
jit_best() {
  cat "$tmp"/lt[123].txt "$tmp"/ti[123].txt | awk '
    $1 == "jit_ms" { if (!($2 in b)) { order[n++] = $2; b[$2] = $3 } else if ($3 < b[$2]) b[$2] = $3 }
    $1 == "jit_ti_ms" { if (!($2 in t) || $3 < t[$2]) t[$2] = $3 }
    END { for (i = 0; i < n; i++) print order[i], b[order[i]], t[order[i]] }'
}

triad_page() {
  echo "## Dense triad"
  echo
  echo "\`a[i] = b[i] + s*c[i]\` over 2^24 f32 (192 MiB touched per call), $THREADS threads,"
  echo "median of $REPS calls after a warm-up. Reference: bench/triad.c,"
  echo "\`gcc -O3 -march=native -ffp-contract=off -fopenmp\`, OMP_NUM_THREADS=$THREADS; Taichi: bench/taichi/bench.py,"
  echo "the same loop (\`fast_math=False\`). C, Lattice and Taichi run"
  echo "alternately, three times each, and each keeps the best of its medians."
  echo
  echo "| | time | bandwidth |"
  echo "|---|---|---|"
  echo "| Lattice kernel | $lt_ms ms | $(gbs "$lt_ms") GB/s |"
  echo "| C + OpenMP | $c_ms ms | $(gbs "$c_ms") GB/s |"
  echo "| Taichi | $(ti_cell "$ti_ms" " ms") | $([ -n "$ti_ms" ] && echo "$(gbs "$ti_ms") GB/s" || echo n/a) |"
  echo "| C, 1 thread (for scale) | $c1_ms ms | $(gbs "$c1_ms") GB/s |"
  echo
  echo "Throughput ratio Lattice / C: **$triad_ratio×** (target ≥ 0.95×: $(verdict "$triad_ratio" 0.95 ge));"
  echo "Lattice / Taichi: $(ti_ratio "$ti_ms" "$lt_ms")."
  echo "The loop is memory-bound; on a machine shared with other work the static"
  echo "OpenMP schedule waits for its slowest thread, so repeat runs before"
  echo "reading much into a ratio far from 1."
}

jit_page() {
  echo "## JIT latency"
  echo
  echo "Time from a kernel's first call to compiled code (trace, passes, LLVM"
  echo "optimisation and code generation), measured as the first call minus a"
  echo "second call of a fresh kernel, median of 9, the best of three runs. Target ≤ 15 ms."
  echo "Taichi: the same kernels in bench/taichi/bench.py (its Python AST transform, IR"
  echo "passes and LLVM). Taichi keeps every kernel it compiled in memory, keyed by the"
  echo "kernel's IR, even with its offline cache off; each of its fresh kernels differs by"
  echo "an \`n - n\` in an index, so that it is compiled and not found."
  echo
  echo "| kernel (from examples/) | latency | target | Taichi | Lattice / Taichi |"
  echo "|---|---|---|---|---|"
  jit_best | while read -r name ms tims; do
    echo "| $name | $ms ms | $(verdict "$ms" 15 le) | $(ti_cell "$tims" " ms") | $(ti_ratio "$tims" "$ms") |"
  done
}

triad_summary() {
  echo "triad: Lattice $lt_ms ms, C+OpenMP $c_ms ms -> ratio ${triad_ratio}x (target >= 0.95); Taichi $(ti_cell "$ti_ms" " ms")"
  jit_best | awk '{ printf "JIT latency %s: %s ms (target <= 15); Taichi %s\n", $1, $2, ($3 == "" ? "n/a" : $3 " ms") }'
}
