# bench/rows/lib.sh -- helpers every row of bench/run.sh uses (sourced by
# run.sh; the measurements are "key value" or "key param value" lines in
# files under $tmp).

# first value of KEY in FILE; with P, the value of the line "KEY P value"
val() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }
val2() { awk -v k="$2" -v p="$3" '$1 == k && $2 == p { print $3; exit }' "$1"; }
# the files that exist of FILES..., one after the other
cat_all() { local f; for f in "$@"; do [ ! -f "$f" ] || cat "$f"; done; }
# the smallest value of KEY (or of "KEY P") over FILES...: each side keeps its
# best median, so a burst of other load on the machine flatters neither
best() { local k=$1; shift; cat_all "$@" | awk -v k="$k" '$1 == k && (b == "" || $2 < b) { b = $2 } END { print b }'; }
best2() { local k=$1 p=$2; shift 2; cat_all "$@" | awk -v k="$k" -v p="$p" '$1 == k && $2 == p && (b == "" || $3 < b) { b = $3 } END { print b }'; }
# the median of every value of KEY in FILES...
med() { local k=$1; shift; cat_all "$@" | awk -v k="$k" '$1 == k { print $2 }' | sort -g |
  awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

# A / B to two decimals ("" when either is missing)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b + 0 != 0) printf "%.2f", a / b }'; }
verdict() { awk -v x="$1" -v t="$2" -v dir="$3" 'BEGIN { if (x == "") { print "n/a"; exit }
  ok = (dir == "ge") ? x >= t : x <= t; print ok ? "met" : "**missed**" }'; }
per_s() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.1f M", n / (ms * 1e3) }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
steps_s() { awk -v ms="$1" 'BEGIN { printf "%.0f", 50 * 1000 / ms }'; }

# same WHAT A B [WHO_A WHO_B]: a result two sides computed must be equal, or
# no timing is reported
same() {
  if [ -z "$2" ] || [ "$2" != "$3" ]; then
    echo "bench/run.sh: $1: ${4:-Lattice} gives '$2', ${5:-the C reference} '$3' -- the results differ, so no timing is reported" >&2
    exit 1
  fi
}
# close WHAT A B TOL [WHO_A WHO_B]: the same for floats, within TOL
close() {
  if ! awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; exit !(a != "" && b != "" && d < t && d > -t) }'; then
    echo "bench/run.sh: $1: ${5:-Lattice} '$2', ${6:-C} '$3' -- the results differ" >&2
    exit 1
  fi
}
# close_each WHAT KEY FILE REF TOL [WHO_A WHO_B]: close for every value of KEY
# in FILE (one per run appended to it); none at all fails too
close_each() {
  local what=$1 key=$2 file=$3 ref=$4 tol=$5 v n=0
  shift 5
  for v in $(awk -v k="$key" '$1 == k { print $2 }' "$file"); do
    close "$what" "$v" "$ref" "$tol" "$@"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || close "$what" "" "$ref" "$tol" "$@"
}
