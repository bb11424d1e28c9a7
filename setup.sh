#!/bin/bash
# setup.sh -- install what is missing, build, and run Lattice.
#
#   ./setup.sh example   build (./build), run examples/julia.lua, say where the images are
#   ./setup.sh test      build (./build and ./build-asan), run the whole test suite twice:
#                        Release (with the fuzz/ harnesses) and AddressSanitizer+UndefinedBehaviorSanitizer
#
# Debian 12 packages are checked first; as root the missing ones are
# installed, otherwise the exact command to install them is printed.
# LT_BUILD / LT_BUILD_ASAN name other build folders (default build, build-asan).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")" && pwd)
cd "$ROOT"
JOBS=$(nproc 2>/dev/null || echo 2)
BUILD=${LT_BUILD:-build}
BUILD_ASAN=${LT_BUILD_ASAN:-build-asan}
PACKAGES=(cmake gcc g++ pkg-config llvm-19-dev clang-19 llvm-19-tools libclang-rt-19-dev liblua5.4-dev lua5.4 libedit-dev libpng-dev
  libsdl2-dev xvfb xauth)   # SDL2: lattice.gui's windows; Xvfb: the window test (tests/cli/gui_window.sh)

usage() {
  echo "usage: ./setup.sh example   build, run examples/julia.lua, say where the images are"
  echo "       ./setup.sh test      build, run the whole test suite (also under ASan+UBSan)"
  exit 2
}

check_packages() {
  if ! command -v dpkg-query > /dev/null; then
    echo "setup.sh: not a Debian system; make sure these (or their equivalents) are installed:"
    echo "  ${PACKAGES[*]}"
    return 0
  fi
  local missing=()
  for p in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2> /dev/null)" != "install ok installed" ]; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup.sh: missing packages: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update && apt-get install -y "${missing[@]}"
  else
    echo "Install them with:"
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
    echo "then run this command again."
    exit 1
  fi
}

# ptxas and libdevice for the PTX checks (ctest ptx/, tests/README.md): the
# CUDA toolkit's when it is installed, else NVIDIA's nvcc wheel from PyPI
# unpacked into .tools/cuda (no GPU or driver needed for either). Without
# them the PTX checks are left out and the rest of the suite runs.
ensure_ptxas() {
  if command -v ptxas > /dev/null || [ -x /usr/local/cuda/bin/ptxas ] || [ -x .tools/cuda/bin/ptxas ]; then
    return 0
  fi
  echo "== fetching ptxas and libdevice (NVIDIA's nvcc wheel, PyPI) into .tools/cuda"
  if ! python3 -m pip --version > /dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null; then
    apt-get install -y python3-pip > /dev/null || true
  fi
  local tmp
  tmp=$(mktemp -d)
  if python3 -m pip download --no-deps --quiet -d "$tmp" nvidia-cuda-nvcc-cu12 &&
     python3 - "$tmp" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
prefix = "nvidia/cuda_nvcc/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and (name.endswith("bin/ptxas") or name.endswith("libdevice.10.bc")):
            dst = os.path.join(".tools/cuda", name[len(prefix):])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with z.open(name) as src, open(dst, "wb") as out:
                out.write(src.read())
os.chmod(".tools/cuda/bin/ptxas", 0o755)
PY
  then
    echo "   .tools/cuda/bin/ptxas, .tools/cuda/nvvm/libdevice/libdevice.10.bc"
  else
    echo "setup.sh: could not fetch ptxas; the PTX checks (ctest ptx/) are left out"
  fi
  rm -rf "$tmp"
}

# build DIR [cmake options...]
build() {
  local dir=$1
  shift
  echo "== building in $dir"
  mkdir -p "$dir"
  cmake -S "$ROOT" -B "$dir" -DLT_WERROR=ON "$@" > "$dir/cmake.log" 2>&1 || {
    cat "$dir/cmake.log"
    echo "setup.sh: cmake failed (log above, also in $dir/cmake.log)"
    exit 1
  }
  make -C "$dir" -j"$JOBS" --no-print-directory
}

# run_ctest DIR: runs the suite, adds its counts to PASSED/FAILED/SKIPPED
PASSED=0 FAILED=0 SKIPPED=0
run_ctest() {
  local dir=$1 junit rc=0
  case "$dir" in /*) junit="$dir/ctest-results.xml" ;; *) junit="$ROOT/$dir/ctest-results.xml" ;; esac
  rm -f "$junit"
  echo "== testing $dir"
  ctest --test-dir "$dir" --output-on-failure -j"$JOBS" --output-junit "$junit" || rc=$?
  if [ ! -f "$junit" ]; then
    echo "setup.sh: ctest wrote no results in $dir"
    FAILED=$((FAILED + 1))
    return
  fi
  # one <testcase ... status="run|fail|notrun|disabled"> per test
  local p f s
  p=$(grep -c '<testcase[^>]*status="run"' "$junit" || true)
  f=$(grep -c '<testcase[^>]*status="fail"' "$junit" || true)
  s=$(grep -Ec '<testcase[^>]*status="(notrun|disabled)"' "$junit" || true)
  echo "== $dir: $p passed, $f failed, $s skipped"
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi # ctest failed without a failing test
  PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) SKIPPED=$((SKIPPED + s))
}

mode=${1:-}
case "$mode" in
  example)
    check_packages
    build "$BUILD" -DCMAKE_BUILD_TYPE=Release
    out="$ROOT/out"
    echo "== running examples/julia.lua"
    "./$BUILD/lattice" examples/julia.lua --out "$out"
    echo "The Julia-set images are in $out/ (julia_*.png)."
    echo "More: ./$BUILD/lattice examples/heat.lua --out $out   or start the REPL with ./$BUILD/lattice"
    ;;
  test)
    check_packages
    ensure_ptxas
    # LT_FUZZ: the libFuzzer harnesses (libclang-rt-19-dev), run as fuzz/* entries
    build "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLT_FUZZ=ON
    run_ctest "$BUILD"
    # RelWithDebInfo: sanitizer reports with line numbers, at a bearable speed
    build "$BUILD_ASAN" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLT_SANITIZE=ON
    # Leak checking stays on: every program and compiled kernel is freed at
    # lua_close, and libLLVM's own process-lifetime allocations have not
    # needed suppressions. A sanitizer report fails the test that caused it.
    export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    run_ctest "$BUILD_ASAN"
    echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
    [ "$FAILED" -eq 0 ]
    ;;
  *)
    usage
    ;;
esac
