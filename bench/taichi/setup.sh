#!/bin/bash
# bench/taichi/setup.sh -- a Python with taichi==1.7.4 for the Taichi column of
# bench/run.sh. Makes a virtual environment (default bench/taichi/.venv) and
# installs Taichi into it with pip; does nothing when it already imports
# taichi 1.7.4. LT_TAICHI_PYTHON=/path/to/python checks (and, in a venv it can
# write to, completes) that Python instead. Prints the python's path last.
# Needs a python3 with the venv module that Taichi 1.7.4 has wheels for (3.11
# works; PYTHON=/path/to/python3 picks one), and PyPI. The test suite never
# needs any of this; bench/run.sh without it leaves the Taichi column out.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WANT=1.7.4
has_taichi() { "$1" -c "import taichi, sys; sys.exit('.'.join(map(str, taichi.__version__)) != '$WANT')" >/dev/null 2>&1; }

if [ -n "${LT_TAICHI_PYTHON:-}" ]; then
  PY=$LT_TAICHI_PYTHON
else
  VENV=$HERE/.venv
  PY=$VENV/bin/python
  if [ ! -x "$PY" ]; then
    BASE=${PYTHON:-$(command -v python3 || true)}
    [ -n "$BASE" ] || { echo "bench/taichi/setup.sh: no python3 found (set PYTHON)" >&2; exit 1; }
    echo "bench/taichi/setup.sh: making $VENV with $("$BASE" --version 2>&1)" >&2
    "$BASE" -m venv "$VENV"
  fi
fi
if ! has_taichi "$PY"; then
  echo "bench/taichi/setup.sh: pip install taichi==$WANT into $PY" >&2
  "$PY" -m pip install --quiet --upgrade pip >&2
  "$PY" -m pip install --quiet "taichi==$WANT" >&2
fi
has_taichi "$PY" || { echo "bench/taichi/setup.sh: $PY does not import taichi $WANT" >&2; exit 1; }
echo "$PY"
