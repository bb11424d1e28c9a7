# bench/rows/overview.sh -- the page's summary against Taichi: one line per
# workload with Lattice's figure, Taichi's, their ratio and each side's maths
# mode, from the figures the other rows measured (their sections have the
# details). Ratios are Lattice's throughput over Taichi's (Taichi's time over
# Lattice's): above 1, Lattice is faster.

overview_line() {   # overview_line WORKLOAD LT_MS TI_MS [MATHS]
  echo "| $1 | $(ti_cell "$2" " ms") | $(ti_cell "$3" " ms") | $(ti_ratio "$3" "$2") | ${4:-default / off} |"
}

overview_page() {
  local p name ms tims n
  echo "## Against Taichi"
  echo
  if have_taichi; then
    echo "Taichi $TAICHI_VERSION (bench/taichi/*.py: the same algorithms, sizes, data and"
    echo "checksums as the Lattice rows, CPU backend, \`cpu_max_num_threads=$THREADS\`, offline cache"
    echo "off), run alternately with Lattice and C in this same run. Taichi's CPU backend"
    echo "defaults to \`fast_math=True\`; every row here but the fast-maths one runs it with"
    echo "\`fast_math=False\`, which rounds every operation as Lattice does by default, so both"
    echo "sides compute the same numbers. The sections below have the details. The"
    echo "maths column: Lattice's mode (default, or \`--fast-math\`) / Taichi's \`fast_math\`."
  else
    echo "The Taichi column was not measured in this run ($TAICHI_WHY); its cells read n/a."
  fi
  echo
  echo "| workload | Lattice | Taichi | Lattice / Taichi | maths (Lattice / Taichi) |"
  echo "|---|---|---|---|---|"
  overview_line "triad, 2^24 f32" "$lt_ms" "$ti_ms"
  for p in $PCTS; do overview_line "sparse Laplacian, $p% blocks" "$(lap_lt "$p")" "$(lap_ti "$p")"; done
  overview_line "sparse activation" "$act_lt_ms" "$act_ti_ms"
  overview_line "dynamic lists: append, $THREADS threads" "$dyn_ltT_app" "$dyn_tiT_app"
  overview_line "dynamic lists: struct-for, $THREADS threads" "$dyn_ltT_sum" "$dyn_tiT_sum"
  overview_line "mpm88, a frame" "$mpm_lt_ms" "$mpm_ti_ms"
  overview_line "mpm88, a frame, fast maths" "$fm_lt_ms" "$fm_ti_ms" "fast maths / on"
  overview_line "mpm88, first frame from the script's start (Taichi: its import too)" "$ff_split" "$ff_ti"
  jit_best | while read -r name ms tims; do overview_line "JIT latency, $name" "$ms" "$tims"; done
  for n in $TI_COMPILE_NS; do overview_line "compile, kernel writing $n fields" "$(compile_ms "$n")" "$(compile_ti_ms "$n")"; done
  overview_line "start-up to a first kernel" "$start_k_ms" "$start_ti_ms"
}
