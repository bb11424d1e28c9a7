# bench/rows/profile.sh -- HOOK for the kernel profiler's overhead row.
# bench/profile_overhead.sh belongs to the kernel profiler's engineer; when it
# exists, run.sh runs it as
#     bench/profile_overhead.sh LATTICE          (LT_BENCH_THREADS=$THREADS)
# (its defaults: 7 rounds of mpm88, profiler off and on alternately) and puts
# every "key value" line it prints into a table of the page (the script's
# header says what each key is). Without the script the page says the row
# was not measured; if it fails, so does the row, not run.sh.
PROFILE_SCRIPT=bench/profile_overhead.sh

profile_measure() {
  profile_state="absent"
  : > "$tmp/profile.txt"
  [ -f "$PROFILE_SCRIPT" ] || return 0
  echo "kernel profiler overhead ($PROFILE_SCRIPT)..." >&2
  if LT_BENCH_THREADS=$THREADS bash "$PROFILE_SCRIPT" "$LATTICE" > "$tmp/profile.txt" 2> "$tmp/profile.err"; then
    profile_state="ok"
  else
    profile_state="failed"
    echo "bench/run.sh: $PROFILE_SCRIPT failed (the row says so):" >&2
    tail -5 "$tmp/profile.err" >&2
  fi
}

profile_page() {
  echo "## Kernel profiler overhead"
  echo
  case $profile_state in
    absent) echo "Not measured: this checkout has no \`$PROFILE_SCRIPT\`." ;;
    failed) echo "Not measured: \`$PROFILE_SCRIPT\` failed in this run." ;;
    ok)
      echo "From \`$PROFILE_SCRIPT\` (see the script for what each figure is):"
      echo
      echo "| measure | value |"
      echo "|---|---|"
      awk 'NF >= 2 && $1 !~ /^#/ { k = $1; $1 = ""; sub(/^ /, ""); printf "| %s | %s |\n", k, $0 }' "$tmp/profile.txt"
      ;;
  esac
}

profile_summary() {
  case $profile_state in
    ok) awk 'NF >= 2 && $1 !~ /^#/ { k = $1; $1 = ""; printf "profiler overhead %s:%s\n", k, $0 }' "$tmp/profile.txt" ;;
    *) echo "profiler overhead: not measured ($profile_state)" ;;
  esac
}
