# check.sh -- what the tests/cli scripts share; source it after `set -u`:
#   . "$(dirname "$0")/lib/check.sh" "$1"
# sets LATTICE (the executable under test), tmp (a scratch folder removed on
# exit) and fails, and defines
#   check NAME EXPECTED ACTUAL   counts a failure when ACTUAL differs
#   finish                       prints the count; exits 1 if any check failed
LATTICE=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
  if [ "$2" != "$3" ]; then
    echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
}
finish() {
  echo "$fails failed"
  [ "$fails" -eq 0 ] || exit 1
}
