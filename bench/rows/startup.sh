# bench/rows/startup.sh -- start-up: `lattice -e ""` (lua5.4 -e "" for scale),
# and against Taichi, a program up to its first result: bench/startup.lua
# (lt.init, a field, a first trivial kernel compiled and run) against
# bench/taichi/startup.py (import taichi, ti.init, the same). bench/startup.c
# times each, medians.

startup_measure() {
  echo "start-up..." >&2
  "$tmp/startup" 20 "$LATTICE" -e "" > "$tmp/start.txt"
  LUA=$(command -v lua5.4 || true)
  if [ -n "$LUA" ]; then "$tmp/startup" 20 "$LUA" -e "" > "$tmp/lua.txt"; else echo "startup_ms -1" > "$tmp/lua.txt"; fi
  "$tmp/startup" 10 "$LATTICE" bench/startup.lua > "$tmp/start_kernel.txt"
  : > "$tmp/start_ti.txt"
  if have_taichi; then "$tmp/startup" 5 "$TAICHI_PY" bench/taichi/startup.py > "$tmp/start_ti.txt"; fi
  start_ms=$(val "$tmp/start.txt" startup_ms)
  lua_ms=$(val "$tmp/lua.txt" startup_ms)
  start_k_ms=$(val "$tmp/start_kernel.txt" startup_ms)
  start_ti_ms=$(val "$tmp/start_ti.txt" startup_ms)
}

startup_page() {
  echo "## Start-up"
  echo
  echo "\`lattice -e \"\"\`, median of 20 runs: **$start_ms ms** (target ≤ 20 ms: $(verdict "$start_ms" 20 le))."
  echo "For scale, \`lua5.4 -e \"\"\`: $lua_ms ms. Most of the difference is the dynamic"
  echo "loader relocating libLLVM.so, which \`lattice\` links; LLVM itself is only"
  echo "initialised when the first kernel compiles."
  echo
  echo "Up to a first result: \`lattice bench/startup.lua\` (\`lt.init\`, a field, a first"
  echo "trivial kernel traced, compiled and run; cache off), median of 10 runs: **$start_k_ms ms**;"
  echo "Taichi, \`python bench/taichi/startup.py\` (\`import taichi\`, \`ti.init\`, the same kernel;"
  echo "offline cache off), median of 5: $(ti_cell "$start_ti_ms" " ms"). Lattice / Taichi: $(ti_ratio "$start_ti_ms" "$start_k_ms")."
}

startup_summary() {
  echo "start-up: lattice -e \"\" $start_ms ms (target <= 20), lua5.4 $lua_ms ms; to a first kernel: Lattice $start_k_ms ms, Taichi $(ti_cell "$start_ti_ms" " ms")"
}
