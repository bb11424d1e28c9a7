#!/bin/bash
# run_fuzz_ir.sh FUZZ_IR WORKDIR -- the ctest entry fuzz/ir (docs/fuzzing.md):
#   1. tests/fuzz/ir.dict is what make_dict.sh writes (ops.def and the rest);
#   2. every input in tests/fuzz/regressions/ runs once (earlier findings);
#   3. a deterministic run: -seed=1, LT_FUZZ_RUNS inputs (default 300000,
#      about a minute on two cores) mutated from the seeds -- the inputs of
#      the IR snapshot tests (tests/ir/*.ir without their "# expect:" part) --
#      and the regressions.
# Fails on any finding; libFuzzer then names the input it saved in WORKDIR.
# New inputs go to WORKDIR/corpus, never into the source tree.
set -u
FUZZ=$1
WORK=$2
RUNS=${LT_FUZZ_RUNS:-300000}
SRC=$(cd "$(dirname "$0")/../.." && pwd)

if ! diff <(bash "$SRC/tests/fuzz/make_dict.sh") "$SRC/tests/fuzz/ir.dict" > /dev/null; then
  echo "tests/fuzz/ir.dict is out of date: run tests/fuzz/make_dict.sh > tests/fuzz/ir.dict"
  exit 1
fi

rm -rf "$WORK"
mkdir -p "$WORK/seeds" "$WORK/corpus"
for f in "$SRC"/tests/ir/*.ir; do
  sed '/^# expect:/,$d' "$f" > "$WORK/seeds/$(basename "$f")"
done

# the files of regressions/ itself: its folders belong to other harnesses
# (module/: fuzz_module), and libFuzzer would read them as corpus folders
dirs=("$WORK/corpus" "$WORK/seeds")
regressions=()
for f in "$SRC"/tests/fuzz/regressions/*; do [ -f "$f" ] && regressions+=("$f"); done
if [ "${#regressions[@]}" -gt 0 ]; then
  echo "== ${#regressions[@]} regression inputs"
  if ! "$FUZZ" -artifact_prefix="$WORK/" "${regressions[@]}" > "$WORK/regressions.log" 2>&1; then
    grep -v '^Running:\|^Executed' "$WORK/regressions.log" | tail -60
    echo "FAIL: a regression input fails again (above)"
    exit 1
  fi
  mkdir -p "$WORK/regressions"
  cp "${regressions[@]}" "$WORK/regressions/"
  dirs+=("$WORK/regressions")
fi

echo "== fuzzing: -seed=1 -runs=$RUNS"
"$FUZZ" -seed=1 -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
  -dict="$SRC/tests/fuzz/ir.dict" -artifact_prefix="$WORK/" \
  "${dirs[@]}" > "$WORK/fuzz.log" 2>&1
rc=$?
grep -E '^(INFO: (Loaded|seed)|#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$WORK/fuzz.log"
if [ "$rc" -ne 0 ]; then
  tail -60 "$WORK/fuzz.log"
  echo "FAIL: a finding (the input is saved in $WORK; copy it to tests/fuzz/regressions/ with the fix)"
  exit 1
fi
echo "no finding"
