# bench/rows/cache.sh -- the offline kernel cache: mpm88's first frame with an
# empty cache (cold) and with the entries the cold run left (warm), three rounds.

cache_measure() {
  local run
  echo "kernel cache: mpm88 cold and warm, three rounds..." >&2
  for run in 1 2 3; do
    rm -rf "$tmp/kcache"
    LT_CACHE=$tmp/kcache "$LATTICE" examples/mpm88.lua --bench 2 --threads "$THREADS" | sed 's/^mpm88_lt/cold/' >> "$tmp/cache.txt"
    LT_CACHE=$tmp/kcache "$LATTICE" examples/mpm88.lua --bench 2 --threads "$THREADS" | sed 's/^mpm88_lt/warm/' >> "$tmp/cache.txt"
  done
  cold_ms=$(best cold_first_frame_ms "$tmp/cache.txt")
  warm_ms=$(best warm_first_frame_ms "$tmp/cache.txt")
  warm_frame=$(best warm_ms "$tmp/cache.txt")
  cold_code=$(best cold_code_ms "$tmp/cache.txt")
  warm_code=$(best warm_code_ms "$tmp/cache.txt")
}

cache_page() {
  echo "## The offline kernel cache"
  echo
  echo "mpm88's time to the first frame (as above, 2 frames a run) with an empty kernel"
  echo "cache and again with the entries that run left (docs/cache.md), the best of three"
  echo "rounds: cold **$cold_ms ms**, warm **$warm_ms ms** (a steady frame: $warm_frame ms;"
  echo "target: warm ≤ steady frame + 10 ms: $(verdict "$warm_ms" "$(awk -v f="$warm_frame" 'BEGIN { print f + 10 }')" le))."
  echo "The machine code of the five kernels (\`lt.stats().code_ms\`: LLVM's work, or"
  echo "reading the cache, and linking): cold **$cold_code ms**, warm **$warm_code ms**"
  echo "(target warm ≤ 5 ms: $(verdict "$warm_code" 5 le))."
  echo "A hit skips LLVM (optimisation, code generation); tracing and the IR passes"
  echo "still run, since the key is the final IR: tracing mpm88's kernels in Lua takes"
  echo "about 20 ms of the warm first frame's excess, the passes about 5."
}

cache_summary() {
  echo "kernel cache: mpm88 first frame cold $cold_ms ms, warm $warm_ms ms (steady frame $warm_frame ms); code cold $cold_code ms, warm $warm_code ms (target <= 5)"
}
