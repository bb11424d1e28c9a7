# bench/rows/taichi.sh -- the Taichi column of bench/run.sh. Taichi 1.7.4 runs
# when a Python that imports it is found: $LT_TAICHI_PYTHON, or the venv that
# bench/taichi/setup.sh makes (bench/taichi/.venv). Otherwise every Taichi
# cell of the page reads "n/a" and the page says the column was not measured.
# The Taichi scripts (bench/taichi/*.py) print "key value" lines as the
# Lattice halves do; Taichi runs with fast_math off (every operation rounded,
# as Lattice's default and the C references' -ffp-contract=off) except in
# the fast-math rows.
TAICHI_WANT=1.7.4
TAICHI_PY=""
TAICHI_VERSION=""
TAICHI_WHY="no Python with taichi==$TAICHI_WANT found: run bench/taichi/setup.sh, or set LT_TAICHI_PYTHON"

taichi_find() {
  local py=${LT_TAICHI_PYTHON:-}
  [ -n "$py" ] || { [ -x bench/taichi/.venv/bin/python ] && py=bench/taichi/.venv/bin/python; } || true
  [ -n "$py" ] || return 0
  if "$py" -c "import taichi, sys; sys.exit('.'.join(map(str, taichi.__version__)) != '$TAICHI_WANT')" >/dev/null 2>&1; then
    TAICHI_PY=$py
    TAICHI_VERSION="$TAICHI_WANT, $("$py" --version 2>&1)"
  else
    TAICHI_WHY="'$py' does not import taichi $TAICHI_WANT"
  fi
}

have_taichi() { [ -n "$TAICHI_PY" ]; }

# taichi_run SCRIPT ARGS... : runs bench/taichi/SCRIPT.py (nothing without
# Taichi); its stdout without Taichi's banner is the result, its stderr goes
# to a log, whose end is shown if the script fails
taichi_run() {
  have_taichi || return 0
  local script=$1; shift
  "$TAICHI_PY" "bench/taichi/$script.py" "$@" 2>> "$tmp/taichi.log" | grep -v '^\[Taichi\]' || {
    echo "bench/run.sh: bench/taichi/$script.py $* failed; the end of its log:" >&2
    tail -5 "$tmp/taichi.log" >&2
    exit 1
  }
}

# a page cell: the value, or "n/a"
ti_cell() { if [ -n "$1" ]; then echo "$1${2:-}"; else echo "n/a"; fi; }
# the Lattice / Taichi throughput ratio of two times: **r×**, or "n/a"
ti_ratio() { local r; r=$(ratio "$1" "$2"); if [ -n "$r" ]; then echo "**$r×**"; else echo "n/a"; fi; }
