#!/bin/bash
# tests/run_arch.sh ARCH LATTICE -- the language tests and the examples on one
# arch, without CMake: what ctest's cuda/ entries run, for a GPU machine that
# has the driver but no build tools (docs/cuda.md, "Testing").
#   bash tests/run_arch.sh cuda build/lattice
#   bash .device/run.sh bash tests/run_arch.sh cuda build/lattice   # bundled (device-bundle)
# Prints one line per script (ok / FAIL / skipped, with seconds), the last
# lines of each failure, and a summary; exits 1 when a script failed.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 ARCH LATTICE" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=$1
LATTICE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
export LT_ARCH=$ARCH LT_SOURCE_DIR=$ROOT LT_BUILD_DIR=$(dirname "$LATTICE")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pass=0 fail=0 skip=0
run() {   # name, directory, command...
  local name=$1 dir=$2
  shift 2
  local t0=$(date +%s.%N)
  (cd "$dir" && "$@") > "$out/log" 2>&1
  local rc=$? t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  if [ $rc -eq 0 ]; then pass=$((pass + 1)); printf 'ok       %6.2fs %s\n' "$t" "$name"
  elif [ $rc -eq 77 ]; then skip=$((skip + 1)); printf 'skipped  %6.2fs %s: %s\n' "$t" "$name" "$(tail -1 "$out/log")"
  else fail=$((fail + 1)); printf 'FAIL     %6.2fs %s (exit %d)\n' "$t" "$name" $rc; tail -5 "$out/log" | sed 's/^/    /'
  fi
}
for f in "$ROOT"/tests/lang/*.lua; do run "lang/$(basename "$f" .lua)" "$ROOT/tests/lang" "$LATTICE" "$f"; done
for f in "$ROOT"/examples/*.lua; do
  run "examples/$(basename "$f" .lua)" "$ROOT" "$LATTICE" "$f" --test --out "$out/examples"
done
echo "$ARCH: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
