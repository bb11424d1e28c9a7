#!/bin/bash
# tests/run_arch.sh ARCH LATTICE -- the language tests and the examples on one
# arch, without CMake: what ctest's cuda/ entries run, for a GPU machine that
# has the driver but no build tools (docs/cuda.md, "Testing").
#   bash tests/run_arch.sh cuda build/lattice
#   bash .device/run.sh bash tests/run_arch.sh cuda build/lattice   # bundled (device-bundle)
#   LT_JOBS=8 bash tests/run_arch.sh cuda build/lattice             # 8 scripts at a time
# Prints one line per script (ok / FAIL / skipped, with seconds), the last
# lines of each failure, and a summary; exits 1 when a script failed. With
# LT_JOBS > 1 the scripts run concurrently and are reported in order; a script
# running past LT_TEST_TIMEOUT seconds (default 300) counts as failed.
# LT_FAIL_LOGS=FILE appends the whole log of every failed script to FILE.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 ARCH LATTICE" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=$1
LATTICE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
JOBS=${LT_JOBS:-1}
LIMIT=${LT_TEST_TIMEOUT:-300}
export LT_ARCH=$ARCH LT_SOURCE_DIR=$ROOT LT_BUILD_DIR=$(dirname "$LATTICE")
export LT_CACHE=${LT_CACHE:-off}   # test the compiler, not the kernel cache
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# one script: its log in $out/N.log, "rc seconds" in $out/N.rc
run_one() {   # index, directory, command...
  local n=$1 dir=$2
  shift 2
  local t0=$(date +%s.%N)
  (cd "$dir" && timeout "$LIMIT" "$@") > "$out/$n.log" 2>&1
  local rc=$?
  echo "$rc $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" > "$out/$n.rc"
}

names=() dirs=() cmds=()
add() { names+=("$1"); dirs+=("$2"); cmds+=("$3"); }
for f in "$ROOT"/tests/lang/*.lua; do add "lang/$(basename "$f" .lua)" "$ROOT/tests/lang" "$f"; done
for f in "$ROOT"/examples/*.lua; do add "examples/$(basename "$f" .lua)" "$ROOT" "$f --test --out $out/examples"; done

for i in "${!names[@]}"; do
  # shellcheck disable=SC2086  # cmds[i] is a script and its options
  run_one "$i" "${dirs[$i]}" "$LATTICE" ${cmds[$i]} &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
wait

pass=0 fail=0 skip=0
for i in "${!names[@]}"; do
  read -r rc t < "$out/$i.rc"
  name=${names[$i]}
  if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); printf 'ok       %6.2fs %s\n' "$t" "$name"
  elif [ "$rc" -eq 77 ]; then skip=$((skip + 1)); printf 'skipped  %6.2fs %s: %s\n' "$t" "$name" "$(tail -1 "$out/$i.log")"
  else
    fail=$((fail + 1))
    [ "$rc" -eq 124 ] && why="timed out after ${LIMIT}s" || why="exit $rc"
    printf 'FAIL     %6.2fs %s (%s)\n' "$t" "$name" "$why"
    tail -5 "$out/$i.log" | sed 's/^/    /'
    if [ -n "${LT_FAIL_LOGS:-}" ]; then
      { echo "==== $name ($why)"; cat "$out/$i.log"; } >> "$LT_FAIL_LOGS"
    fi
  fi
done
echo "$ARCH: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
