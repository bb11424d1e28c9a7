# bench/rows/dynamic.sh -- dynamic lists: a particle-in-cell bucket fill of
# 262144 particle ids into the lists of 32x32 pointer cells, then a struct-for
# over the lists (bench/dynamic.lua; bench/dynamic.c by hand; Taichi:
# bench/taichi/dynamic.py), each at one thread and at $THREADS; three rounds,
# alternately; the checksums must agree.

dynamic_measure() {
  local run f
  echo "dynamic lists: C, Lattice and Taichi, 1 and $THREADS threads, three rounds..." >&2
  for run in 1 2 3; do
    OMP_NUM_THREADS=1 "$tmp/dynamic" $REPS > "$tmp/dc1_$run.txt"
    OMP_NUM_THREADS=$THREADS "$tmp/dynamic" $REPS > "$tmp/dcT_$run.txt"
    "$LATTICE" bench/dynamic.lua --threads 1 --reps $REPS > "$tmp/dl1_$run.txt"
    "$LATTICE" bench/dynamic.lua --threads "$THREADS" --reps $REPS > "$tmp/dlT_$run.txt"
    taichi_run dynamic --threads 1 --reps $REPS --fast-math off > "$tmp/dti1_$run.txt"
    taichi_run dynamic --threads "$THREADS" --reps $REPS --fast-math off > "$tmp/dtiT_$run.txt"
  done
  for f in "$tmp"/dl*_?.txt; do
    same "dynamic lists: checksum" "$(val "$f" dynamic_lt_sum)" "$(val "$tmp/dcT_1.txt" dynamic_c_sum)"
    same "dynamic lists: elements" "$(val "$f" dynamic_lt_count)" "$(val "$tmp/dcT_1.txt" dynamic_c_count)"
  done
  for f in "$tmp"/dc1_?.txt; do
    same "dynamic lists: checksum" "$(val "$f" dynamic_c_sum)" "$(val "$tmp/dcT_1.txt" dynamic_c_sum)" "C at 1 thread" "at $THREADS"
  done
  if have_taichi; then
    for f in "$tmp"/dti*_?.txt; do
      same "dynamic lists: checksum" "$(val "$f" dynamic_ti_sum)" "$(val "$tmp/dcT_1.txt" dynamic_c_sum)" Taichi
      same "dynamic lists: elements" "$(val "$f" dynamic_ti_count)" "$(val "$tmp/dcT_1.txt" dynamic_c_count)" Taichi
    done
  fi
  dyn_c1_app=$(best dynamic_c_append_ms "$tmp"/dc1_?.txt); dyn_c1_sum=$(best dynamic_c_sum_ms "$tmp"/dc1_?.txt)
  dyn_c_app=$(best dynamic_c_append_ms "$tmp"/dcT_?.txt); dyn_c_sum=$(best dynamic_c_sum_ms "$tmp"/dcT_?.txt)
  dyn_lt1_app=$(best dynamic_lt_append_ms "$tmp"/dl1_?.txt); dyn_lt1_sum=$(best dynamic_lt_sum_ms "$tmp"/dl1_?.txt)
  dyn_ltT_app=$(best dynamic_lt_append_ms "$tmp"/dlT_?.txt); dyn_ltT_sum=$(best dynamic_lt_sum_ms "$tmp"/dlT_?.txt)
  dyn_ti1_app=$(best dynamic_ti_append_ms "$tmp"/dti1_?.txt); dyn_ti1_sum=$(best dynamic_ti_sum_ms "$tmp"/dti1_?.txt)
  dyn_tiT_app=$(best dynamic_ti_append_ms "$tmp"/dtiT_?.txt); dyn_tiT_sum=$(best dynamic_ti_sum_ms "$tmp"/dtiT_?.txt)
  dyn_r_ti=$(ratio "$dyn_tiT_app" "$dyn_ltT_app")
  dyn_r_thr=$(ratio "$dyn_lt1_app" "$dyn_ltT_app")
  dyn_max=$(val "$tmp/dcT_1.txt" dynamic_c_max)
}

dynamic_page() {
  echo "## Dynamic lists: particle-in-cell buckets"
  echo
  echo "262 144 particles at fixed pseudo-random positions in the unit square"
  echo "(MurmurHash3's finaliser of the particle's number: the same cells on every side)"
  echo "are appended, by id, to the list of the cell they fall in,"
  echo "\`for p in lt.ndrange(n) do lt.append(l, cell(p), p) end\`, on"
  echo "\`lt.root:pointer(lt.ij, 32):dynamic(lt.k, 1024, { chunk = 64 })\` (1024 lists, the"
  echo "longest $dyn_max ids); the pointer level's \`deactivate_all()\` empties them between calls"
  echo "(not timed). Then a struct-for over the lists sums each cell's ids into a dense"
  echo "field (\`for i, j, k in l do lt.atomic_add(s[i][j], l[i][j][k]) end\`). Median of $REPS calls"
  echo "after a warm-up, the best of three runs (bench/dynamic.lua). Taichi: bench/taichi/dynamic.py,"
  echo "\`ti.root.pointer(ti.ij, 32).dynamic(ti.k, 1024, chunk_size=64)\`, \`ti.append\` and the"
  echo "same struct-for. C: bench/dynamic.c, a list of fixed capacity per cell, allocated"
  echo "once, and an atomic count on a cache line of its own (an append is one atomic add and a store: no chunks"
  echo "to allocate, no pointer level; the floor for the row), and a plain parallel loop"
  echo "over the cells for the sums. The sums and the element counts of all three agree."
  echo
  echo "| | append, 1 thread | append, $THREADS threads | struct-for, 1 thread | struct-for, $THREADS threads |"
  echo "|---|---|---|---|---|"
  echo "| Lattice | $dyn_lt1_app ms | $dyn_ltT_app ms | $dyn_lt1_sum ms | $dyn_ltT_sum ms |"
  echo "| Taichi | $(ti_cell "$dyn_ti1_app" " ms") | $(ti_cell "$dyn_tiT_app" " ms") | $(ti_cell "$dyn_ti1_sum" " ms") | $(ti_cell "$dyn_tiT_sum" " ms") |"
  echo "| C + OpenMP (fixed capacity) | $dyn_c1_app ms | $dyn_c_app ms | $dyn_c1_sum ms | $dyn_c_sum ms |"
  echo
  echo "Append throughput at $THREADS threads, Lattice / Taichi: $(ti_ratio "$dyn_tiT_app" "$dyn_ltT_app") (target ≥ 1.5×: $(verdict "$dyn_r_ti" 1.5 ge));"
  echo "Lattice at $THREADS threads / 1 thread: **${dyn_r_thr}×** (target > 1: $(verdict "$dyn_r_thr" 1.0001 ge));"
  echo "Lattice / C: **$(ratio "$dyn_c_app" "$dyn_ltT_app")×**. Struct-for, Lattice / Taichi at $THREADS threads:"
  echo "$(ti_ratio "$dyn_tiT_sum" "$dyn_ltT_sum")."
}

dynamic_summary() {
  echo "dynamic lists, append: Lattice $dyn_lt1_app ms (1 thread), $dyn_ltT_app ms ($THREADS) -> ${dyn_r_thr}x (target > 1); Taichi $(ti_cell "$dyn_tiT_app" " ms") -> $(ti_cell "$dyn_r_ti" x) (target >= 1.5); C $dyn_c_app ms; struct-for Lattice $dyn_ltT_sum ms, Taichi $(ti_cell "$dyn_tiT_sum" " ms")"
}
