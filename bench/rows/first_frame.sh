# bench/rows/first_frame.sh -- mpm88's first frame against a steady one, with
# the kernel cache off (LT_CACHE=off: every kernel traced and compiled), for
# two forms of the same algorithm: examples/mpm88.lua (four kernels and the
# rendering one, compiled together by lt.compile; its runs are the mpm88
# row's) and bench/mpm88_one.lua (one kernel of four top-level loops, three
# runs here). Taichi's mpm88 (one kernel too) from the mpm88 row's runs.

first_frame_measure() {
  local run d f
  echo "first frame: mpm88 as one kernel, three runs..." >&2
  for run in 1 2 3; do
    # as many frames as mpm88.sh's runs: the mean of its C run is the check
    LT_CACHE=off "$LATTICE" bench/mpm88_one.lua --bench $MPM_FRAMES --threads "$THREADS" > "$tmp/one$run.txt"
  done
  for d in x y; do
    for f in "$tmp"/one[123].txt; do
      close "mpm88 as one kernel: mean $d of the particles" "$(val "$f" "mpm88_one_mean_$d")" \
        "$(val "$tmp/mc.txt" "mpm88_c_mean_$d")" 1e-3
    done
  done
  ff_split=$(best mpm88_lt_first_frame_ms "$tmp"/ml[123].txt); st_split=$(best mpm88_lt_ms "$tmp"/ml[123].txt)
  ff_one=$(best mpm88_one_first_frame_ms "$tmp"/one[123].txt); st_one=$(best mpm88_one_ms "$tmp"/one[123].txt)
  ff_ti=$(best mpm88_ti_first_frame_ms "$tmp"/mti[123].txt); st_ti=$(best mpm88_ti_ms "$tmp"/mti[123].txt)
  imp_ti=$(best mpm88_ti_import_ms "$tmp"/mti[123].txt)
  ffr_split=$(ratio "$ff_split" "$st_split"); ffr_one=$(ratio "$ff_one" "$st_one"); ffr_ti=$(ratio "$ff_ti" "$st_ti")
}

first_frame_page() {
  echo "## First frame against a steady one"
  echo
  echo "mpm88 with the kernel cache off (\`LT_CACHE=off\`), $THREADS threads: the time to the"
  echo "first frame (from the script's start, before \`lt.init\`, every kernel traced and"
  echo "compiled on the way) over a steady frame (the median of the frames after it), the"
  echo "best of three runs each, for two forms of the same algorithm: examples/mpm88.lua"
  echo "(clear, P2G, grid update and G2P as four kernels, plus the rendering kernel,"
  echo "compiled together by \`lt.compile\`: the runs of the mpm88 row) and bench/mpm88_one.lua"
  echo "(one kernel whose four top-level loops are the four steps; no rendering). Taichi:"
  echo "bench/taichi/mpm88.py (one kernel) from the mpm88 row's runs, offline cache off,"
  echo "timed from before \`import taichi\` (the import alone: $(ti_cell "$imp_ti" " ms"))."
  echo
  echo "| form | first frame | steady frame | first / steady | target ≤ 2.5 |"
  echo "|---|---|---|---|---|"
  echo "| Lattice, examples/mpm88.lua (5 kernels) | $ff_split ms | $st_split ms | **$ffr_split** | $(verdict "$ffr_split" 2.5 le) |"
  echo "| Lattice, bench/mpm88_one.lua (1 kernel) | $ff_one ms | $st_one ms | **$ffr_one** | $(verdict "$ffr_one" 2.5 le) |"
  echo "| Taichi, bench/taichi/mpm88.py (1 kernel) | $(ti_cell "$ff_ti" " ms") | $(ti_cell "$st_ti" " ms") | $(ti_cell "$ffr_ti") | |"
  echo "| Lattice, examples/mpm88.lua, kernel cache warm (the cache row below) | ${warm_ms:-n/a} ms | ${warm_frame:-n/a} ms | $(ratio "${warm_ms:-}" "${warm_frame:-}") | (not the target's case) |"
  echo
  echo "The cold rows miss the target, and cannot meet it on this machine with LLVM"
  echo "making the code. The warm row is the same first frame with every kernel's"
  echo "machine code taken from the offline cache (the default from a script's second"
  echo "run): start-up, tracing, the IR passes, the script's own set-up and a first"
  echo "frame already take about 2× a steady frame. That leaves about half a steady"
  echo "frame (15-20 ms) for LLVM to optimise and generate five kernels on two cores,"
  echo "where it takes 150-220 ms of CPU time (docs/performance_changes.md, its section on"
  echo "the cold first frame: with no optimisation passes at all, -O0 code generation still"
  echo "takes 33-40 ms and the frames run twice as slow)."
}

first_frame_summary() {
  echo "mpm88 first / steady frame (cache off): 5 kernels $ff_split / $st_split ms -> $ffr_split, one kernel $ff_one / $st_one ms -> $ffr_one (target <= 2.5); Taichi $(ti_cell "$ffr_ti")"
}
