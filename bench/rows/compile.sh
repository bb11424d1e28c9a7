# bench/rows/compile.sh -- compile time against kernel size: a kernel writing
# N fields in one loop (bench/compile.lua), CPU time of its first call, the
# best of three runs for N = 250 .. 2000; Taichi (bench/taichi/compile.py) once
# for the N its SNode limit allows (1024 SNodes in a tree, two per field).
COMPILE_NS="250 500 1000 2000"
TI_COMPILE_NS="250 500"

compile_measure() {
  local round n
  echo "compile time of a kernel writing N fields, three rounds (Taichi: one)..." >&2
  for round in 1 2 3; do
    for n in $COMPILE_NS; do "$LATTICE" bench/compile.lua "$n" >> "$tmp/compile.txt"; done
    if [ "$round" = 1 ]; then
      for n in $TI_COMPILE_NS; do taichi_run compile "$n" >> "$tmp/compile_ti.txt"; done
    fi
  done
}

compile_ms() { best2 compile_ms "$1" "$tmp/compile.txt"; }
compile_ti_ms() { best2 compile_ti_ms "$1" "$tmp/compile_ti.txt"; }
compile_ratio() { ratio "$(compile_ms "$1")" "$(compile_ms "$2")"; }

compile_page() {
  local n prev="" t tcell
  echo "## Compile time against kernel size"
  echo
  echo "One kernel writing N fields of 64 f32 in one parallel loop (the fields"
  echo "unrolled by a Lua loop while tracing, bench/compile.lua): CPU time of its first"
  echo "call (trace, IR passes, LLVM, link; the run itself is negligible), the best of"
  echo "three runs, each in a fresh process. Tasks this large are compiled as several"
  echo "functions of at most 200 field addresses each (docs/internals.md, *Very large"
  echo "tasks*), so the time grows linearly with N. Targets: t(2000) / t(1000) ≤ 2.2,"
  echo "t(1000) ≤ 1000 ms. Taichi: bench/taichi/compile.py, the same kernel (\`ti.static\`"
  echo "unrolls the fields), the CPU time of its first call, one run each; a Taichi tree"
  echo "holds at most 1024 SNodes (two per field), so it stops at N = 500."
  echo
  echo "| N | compile time | ratio to the row above | Taichi | Lattice / Taichi |"
  echo "|---|---|---|---|---|"
  for n in $COMPILE_NS; do
    t=$(compile_ti_ms "$n"); tcell=$(ti_cell "$t" " ms")
    case " $TI_COMPILE_NS " in *" $n "*) ;; *) tcell="over Taichi's SNode limit" ;; esac
    echo "| $n | $(compile_ms "$n") ms | $([ -n "$prev" ] && compile_ratio "$n" "$prev" || echo "") | $tcell | $(ti_ratio "$t" "$(compile_ms "$n")") |"
    prev=$n
  done
  echo
  echo "t(2000) / t(1000) = **$(compile_ratio 2000 1000)** ($(verdict "$(compile_ratio 2000 1000)" 2.2 le)); t(1000) = **$(compile_ms 1000) ms** ($(verdict "$(compile_ms 1000)" 1000 le))."
}

compile_summary() {
  local n
  echo "compile time, kernel writing N fields: $(for n in $COMPILE_NS; do printf '%s: %s ms  ' "$n" "$(compile_ms "$n")"; done)-> t(2000)/t(1000) $(compile_ratio 2000 1000) (target <= 2.2), t(1000) $(compile_ms 1000) ms (target <= 1000); Taichi $(for n in $TI_COMPILE_NS; do printf '%s: %s  ' "$n" "$(ti_cell "$(compile_ti_ms "$n")" " ms")"; done)"
}
