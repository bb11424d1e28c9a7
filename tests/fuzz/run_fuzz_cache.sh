#!/bin/bash
# run_fuzz_cache.sh FUZZ_CACHE LATTICE WORKDIR -- the ctest entry fuzz/cache
# (docs/fuzzing.md): seeds are real cache entries, written by LATTICE running
# a small script with the cache in WORKDIR/seeds, and their payloads; then a deterministic run
# (-seed=1, LT_FUZZ_RUNS inputs, default 100000: about 30 s here). Fails on any finding.
set -u
FUZZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
LATTICE=$2
WORK=$3
RUNS=${LT_FUZZ_RUNS:-100000}
rm -rf "$WORK"
mkdir -p "$WORK/seeds" "$WORK/corpus"
cat > "$WORK/seed.lua" <<'LUA'
local lt = require "lattice"
lt.init {}
local x = lt.field(lt.f32, { 16 })
lt.kernel(function() for i in lt.ndrange(16) do x[i] = i * 0.5 end end)()
LUA
LT_CACHE=$WORK/seeds "$LATTICE" "$WORK/seed.lua" || { echo "could not write the seed entries"; exit 1; }
ls "$WORK"/seeds/*.ltk > /dev/null || { echo "no seed entry was written"; exit 1; }
# the entries' payloads alone (bytes 32 + K .. 32 + K + P) as seeds too: the
# harness parses every input as a CPU kernel's payload (cpu_payload.c)
mkdir -p "$WORK/payloads"
for e in "$WORK"/seeds/*.ltk; do
  k=$(od -An -t u8 -j16 -N8 "$e" | tr -d ' ')
  p=$(od -An -t u8 -j24 -N8 "$e" | tr -d ' ')
  tail -c +$((33 + k)) "$e" | head -c "$p" > "$WORK/payloads/$(basename "$e" .ltk).pl"
done
cd "$WORK" && "$FUZZ" -seed=1 -runs="$RUNS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  "$WORK/corpus" "$WORK/seeds" "$WORK/payloads" 2>&1 | tail -15
rc=${PIPESTATUS[0]}
rm -rf /tmp/lt-fuzz-cache-*
exit "$rc"
