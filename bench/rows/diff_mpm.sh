# bench/rows/diff_mpm.sh -- differentiable MPM (examples/diff_mpm.lua --bench):
# a forward pass against a gradient pass (forward on a tape + backward).

diff_mpm_measure() {
  local run
  echo "diff_mpm: forward and gradient passes, three rounds..." >&2
  for run in 1 2 3; do
    LT_CACHE=off "$LATTICE" examples/diff_mpm.lua --bench 7 --threads "$THREADS" >> "$tmp/dm.txt"
  done
  dm_fwd=$(best diff_mpm_forward_ms "$tmp/dm.txt")
  dm_grad=$(best diff_mpm_grad_ms "$tmp/dm.txt")
  dm_ratio=$(ratio "$dm_grad" "$dm_fwd")
  dm_cf=$(best diff_mpm_compile_forward_ms "$tmp/dm.txt")
  dm_cg=$(best diff_mpm_compile_grad_ms "$tmp/dm.txt")
}

diff_mpm_page() {
  echo "## Differentiable MPM (reverse mode)"
  echo
  echo "examples/diff_mpm.lua \`--bench 7\` (docs/autodiff.md): 576 particles, a 48² grid,"
  echo "64 steps whose state is kept per step (x[s][p], a grid per step), f64, $THREADS threads."
  echo "A forward pass is 190 launches (P2G, grid, G2P per step); a gradient pass records the"
  echo "same on a tape and runs the adjoints in reverse (\`tape:backward\`). Medians of 7, the"
  echo "best of three runs, kernel cache off."
  echo
  echo "| | forward | gradient (forward on a tape + backward) |"
  echo "|---|---|---|"
  echo "| time per pass | $dm_fwd ms | $dm_grad ms |"
  echo "| compile (no cache) | $dm_cf ms | $dm_cg ms |"
  echo
  echo "Gradient pass / forward pass: **${dm_ratio}×** (target ≤ 3: $(verdict "$dm_ratio" 3 le)). The compile"
  echo "times are the six primal kernels (\`lt.compile\`) and their six adjoints (traced when"
  echo "\`backward\` first runs, compiled at once)."
}

diff_mpm_summary() {
  echo "diff_mpm: forward $dm_fwd ms, gradient $dm_grad ms -> ${dm_ratio}x (target <= 3); compile $dm_cf ms / adjoints $dm_cg ms"
}
