# bench/rows/busy.sh -- mpm88 on a busy machine: one single-threaded busy
# process (a shell spinning, at the benchmark's own nice level, not pinned)
# runs while C, Lattice and Taichi run mpm88 alternately with one thread per
# core, three rounds; each side's throughput under load is reported as a
# fraction of its own quiet throughput (the mpm88 row's runs of this same
# run.sh). run.sh's exit trap kills the busy process whatever happens.
BUSY_FRAMES=4
BUSY_PID=""

busy_start() {
  sh -c 'while :; do :; done' &
  BUSY_PID=$!
}
busy_stop() {
  [ -n "$BUSY_PID" ] || return 0
  kill "$BUSY_PID" 2>/dev/null || true
  wait "$BUSY_PID" 2>/dev/null || true
  BUSY_PID=""
}

busy_measure() {
  local run
  echo "mpm88 on a busy machine: C, Lattice and Taichi beside a spinning process, three rounds..." >&2
  busy_start
  for run in 1 2 3; do
    OMP_NUM_THREADS=$THREADS "$tmp/mpm88" $BUSY_FRAMES >> "$tmp/bc.txt"
    "$LATTICE" examples/mpm88.lua --bench $BUSY_FRAMES --threads "$THREADS" >> "$tmp/bl.txt"
    taichi_run mpm88 --bench $BUSY_FRAMES --threads "$THREADS" --fast-math off >> "$tmp/bti.txt"
  done
  busy_stop
  # medians of the three runs' medians, quiet and busy alike
  busy_c=$(med mpm88_c_ms "$tmp/bc.txt"); quiet_c=$(med mpm88_c_ms "$tmp/mc.txt")
  busy_lt=$(med mpm88_lt_ms "$tmp/bl.txt"); quiet_lt=$(med mpm88_lt_ms "$tmp"/ml[123].txt)
  busy_ti=$(med mpm88_ti_ms "$tmp/bti.txt"); quiet_ti=$(med mpm88_ti_ms "$tmp"/mti[123].txt)
  # throughput under load / quiet throughput = quiet time / busy time
  frac_c=$(ratio "$quiet_c" "$busy_c"); frac_lt=$(ratio "$quiet_lt" "$busy_lt"); frac_ti=$(ratio "$quiet_ti" "$busy_ti")
}

busy_page() {
  # the issue's target: Lattice stays ahead of Taichi under the same load, that is
  # its busy frames are faster; the fractions say who lost more of their own speed
  local ahead="n/a" busy_ratio="n/a" frac_cmp="n/a"
  if [ -n "$busy_ti" ]; then
    busy_ratio=$(ratio "$busy_ti" "$busy_lt")
    ahead=$(awk -v r="$busy_ratio" 'BEGIN { print (r > 1) ? "met" : "**missed**" }')
    frac_cmp=$(awk -v l="$frac_lt" -v t="$frac_ti" 'BEGIN { print (l >= t) ? "as much or more than" : "less than" }')
  fi
  echo "### On a busy machine"
  echo
  echo "The mpm88 runs above, again with one more single-threaded process spinning"
  echo "(\`sh -c 'while :; do :; done'\`, the benchmark's nice level, not pinned): $THREADS"
  echo "threads (one per core) then share the cores with it. C, Lattice and Taichi"
  echo "(default maths) run alternately, three times each, $BUSY_FRAMES frames after a first one;"
  echo "each side's throughput under load as a fraction of its own quiet throughput"
  echo "(the median of its three runs' medians, busy and quiet alike; quiet: the runs above)."
  echo
  echo "| | quiet ms per frame | busy ms per frame | busy / quiet throughput |"
  echo "|---|---|---|---|"
  echo "| Lattice | $quiet_lt | $busy_lt | **$frac_lt** |"
  echo "| C + OpenMP | $quiet_c | $busy_c | **$frac_c** |"
  echo "| Taichi | $(ti_cell "$quiet_ti") | $(ti_cell "$busy_ti") | $([ -n "$frac_ti" ] && echo "**$frac_ti**" || echo n/a) |"
  echo
  echo "Lattice keeps **$frac_lt** of its throughput (target ≥ 0.6: $(verdict "$frac_lt" 0.6 ge)),"
  echo "and under the same load its throughput is **${busy_ratio}×** Taichi's (target: ahead,"
  echo "above 1: $ahead); it keeps $frac_cmp the fraction Taichi keeps of its own."
}

busy_summary() {
  echo "mpm88 on a busy machine, throughput kept: Lattice $frac_lt (target >= 0.6), C $frac_c, Taichi $(ti_cell "$frac_ti")"
}
