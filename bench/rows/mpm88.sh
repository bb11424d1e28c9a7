# bench/rows/mpm88.sh -- mpm88 (examples/mpm88.lua --bench: 8192 particles,
# 128^2 grid, 50 substeps a frame) against bench/mpm88.c and Taichi's mpm88
# (bench/taichi/mpm88.py), ms per frame and Lattice's time to the first frame,
# in two maths modes:
#   default    Lattice as is, C with -ffp-contract=off, Taichi fast_math=False
#   fast-math  Lattice --fast-math, the same C with -ffast-math, Taichi
#              fast_math=True (its default); "n/a" for Lattice until the build
#              takes --fast-math
# Three rounds of C, Lattice, Taichi each; the particles' mean positions must
# agree with C's within 1e-3.
MPM_FRAMES=10

mpm88_measure() {
  local run d f
  echo "mpm88: C, Lattice and Taichi, three rounds..." >&2
  for run in 1 2 3; do
    OMP_NUM_THREADS=$THREADS "$tmp/mpm88" $MPM_FRAMES >> "$tmp/mc.txt"
    "$LATTICE" examples/mpm88.lua --bench $MPM_FRAMES --threads "$THREADS" > "$tmp/ml$run.txt"
    taichi_run mpm88 --bench $MPM_FRAMES --threads "$THREADS" --fast-math off > "$tmp/mti$run.txt"
  done
  for d in x y; do
    for f in "$tmp"/ml[123].txt; do
      close "mpm88: mean $d of the particles" "$(val "$f" "mpm88_lt_mean_$d")" "$(val "$tmp/mc.txt" "mpm88_c_mean_$d")" 1e-3
    done
    if have_taichi; then
      for f in "$tmp"/mti[123].txt; do
        close "mpm88: mean $d of the particles" "$(val "$f" "mpm88_ti_mean_$d")" \
          "$(val "$tmp/mc.txt" "mpm88_c_mean_$d")" 1e-3 Taichi
      done
    fi
  done
  mpm_c_ms=$(best mpm88_c_ms "$tmp/mc.txt")
  mpm_lt_ms=$(best mpm88_lt_ms "$tmp"/ml[123].txt)
  mpm_ti_ms=$(best mpm88_ti_ms "$tmp"/mti[123].txt)
  mpm_first_ms=$(best mpm88_lt_first_frame_ms "$tmp"/ml[123].txt)
  mpm_ratio=$(ratio "$mpm_c_ms" "$mpm_lt_ms")

  echo "mpm88 with fast maths: C -ffast-math, Lattice --fast-math and Taichi, three rounds..." >&2
  FM_LT=""
  if "$LATTICE" examples/mpm88.lua --fast-math --bench 1 --threads "$THREADS" > /dev/null 2>&1; then FM_LT=yes; fi
  for run in 1 2 3; do
    OMP_NUM_THREADS=$THREADS "$tmp/mpm88_fast" $MPM_FRAMES >> "$tmp/fmc.txt"
    if [ -n "$FM_LT" ]; then "$LATTICE" examples/mpm88.lua --fast-math --bench $MPM_FRAMES --threads "$THREADS" >> "$tmp/fml.txt"; fi
    taichi_run mpm88 --bench $MPM_FRAMES --threads "$THREADS" --fast-math on >> "$tmp/fmti.txt"
  done
  for d in x y; do
    close_each "mpm88 -ffast-math: mean $d of the particles" "mpm88_c_mean_$d" "$tmp/fmc.txt" \
      "$(val "$tmp/mc.txt" "mpm88_c_mean_$d")" 1e-3 "C -ffast-math" "C"
    if [ -n "$FM_LT" ]; then
      close_each "mpm88 --fast-math: mean $d of the particles" "mpm88_lt_mean_$d" "$tmp/fml.txt" \
        "$(val "$tmp/fmc.txt" "mpm88_c_mean_$d")" 1e-3 "Lattice" "C -ffast-math"
    fi
    if have_taichi; then
      close_each "mpm88 fast_math=True: mean $d of the particles" "mpm88_ti_mean_$d" "$tmp/fmti.txt" \
        "$(val "$tmp/fmc.txt" "mpm88_c_mean_$d")" 1e-3 "Taichi" "C -ffast-math"
    fi
  done
  fm_c_ms=$(best mpm88_c_ms "$tmp/fmc.txt")
  fm_lt_ms=$(best mpm88_lt_ms "$tmp/fml.txt")
  fm_ti_ms=$(best mpm88_ti_ms "$tmp/fmti.txt")
}

# a "ms | substeps/s" pair of cells, or n/a
mpm_cells() { if [ -n "$1" ]; then echo "$1 | $(steps_s "$1")"; else echo "${2:-n/a} | n/a"; fi; }

mpm88_page() {
  local na="n/a (not available in this build)"
  local r_ti r_fc r_ft
  r_ti=$(ratio "$mpm_ti_ms" "$mpm_lt_ms"); r_fc=$(ratio "$fm_c_ms" "$fm_lt_ms"); r_ft=$(ratio "$fm_ti_ms" "$fm_lt_ms")
  echo "## MLS-MPM (mpm88)"
  echo
  echo "examples/mpm88.lua as users run it (\`--bench $MPM_FRAMES\`: no images): 8192 particles"
  echo "on a 128² grid, 50 substeps a frame of four kernels (clear the grid, P2G with"
  echo "atomic adds, grid update, G2P), $THREADS threads, median of $MPM_FRAMES frames after a first"
  echo "one. Reference: bench/mpm88.c, the same algorithm, constants and initial particles"
  echo "by hand, \`gcc -O3 -march=native -ffp-contract=off -fopenmp\` (\`#pragma omp atomic\` for the"
  echo "scatter), OMP_NUM_THREADS=$THREADS. Taichi: bench/taichi/mpm88.py, Taichi's own mpm88"
  echo "(one kernel of four top-level loops, one launch a substep) with the same constants"
  echo "and particles, \`cpu_max_num_threads=$THREADS\`. All three run three times, alternately; each keeps its"
  echo "best median (and Lattice its best first frame). The particles' mean positions after the run agree within 1e-3 (run.sh"
  echo "stops otherwise; atomic float adds make the last digits vary)."
  echo
  echo "Two maths modes, each side in the same one: *default*, every operation"
  echo "rounded (Lattice as is, C with \`-ffp-contract=off\`, Taichi \`fast_math=False\`);"
  echo "*fast maths*, reassociation and fused multiply-adds allowed (Lattice \`--fast-math\`,"
  echo "that is \`lt.init{fast_math = true}\`; the same C source with \`-ffast-math\`; Taichi"
  echo "\`fast_math=True\`, Taichi's default on the CPU)."
  echo
  echo "| | default: ms per frame | substeps/s | fast maths: ms per frame | substeps/s |"
  echo "|---|---|---|---|---|"
  echo "| Lattice | $(mpm_cells "$mpm_lt_ms") | $(mpm_cells "$fm_lt_ms" "$na") |"
  echo "| C + OpenMP | $(mpm_cells "$mpm_c_ms") | $(mpm_cells "$fm_c_ms") |"
  echo "| Taichi | $(mpm_cells "$mpm_ti_ms") | $(mpm_cells "$fm_ti_ms") |"
  echo
  echo "Throughput ratio Lattice / C: **$mpm_ratio×** (target ≥ 0.9×: $(verdict "$mpm_ratio" 0.9 ge));"
  echo "Lattice / Taichi: $(ti_ratio "$mpm_ti_ms" "$mpm_lt_ms")."
  echo "With fast maths: Lattice / C $([ -n "$r_fc" ] && echo "**$r_fc×**" || echo n/a) (target ≥ 1.1×: $(verdict "$r_fc" 1.1 ge)),"
  echo "Lattice / Taichi $([ -n "$r_ft" ] && echo "**$r_ft×**" || echo n/a) (target ≥ 1.5×: $(verdict "$r_ft" 1.5 ge))."
  echo
  echo "Time to the first frame (from the script's start, before \`lt.init\`, to the end"
  echo "of the first frame's 50 substeps and its rendering kernel; every kernel is traced"
  echo "and compiled on the way): **$mpm_first_ms ms** (target ≤ 100 ms: $(verdict "$mpm_first_ms" 100 le))."
}

mpm88_summary() {
  echo "mpm88: Lattice $mpm_lt_ms ms, C $mpm_c_ms ms per frame -> ratio ${mpm_ratio}x (target >= 0.9); Taichi $(ti_cell "$mpm_ti_ms" " ms") -> $(ti_cell "$(ratio "$mpm_ti_ms" "$mpm_lt_ms")" x); first frame $mpm_first_ms ms (target <= 100)"
  echo "mpm88, fast maths: Lattice $(ti_cell "$fm_lt_ms" " ms"), C -ffast-math $fm_c_ms ms, Taichi $(ti_cell "$fm_ti_ms" " ms") -> Lattice/C $(ti_cell "$(ratio "$fm_c_ms" "$fm_lt_ms")" x) (target >= 1.1), Lattice/Taichi $(ti_cell "$(ratio "$fm_ti_ms" "$fm_lt_ms")" x) (target >= 1.5)"
}
