#!/bin/bash
# lattice.gui's SDL2 window binding (src/lang/gui_sdl.c) on a real X server:
# starts an Xvfb on a free display (-displayfd) and runs gui_window.lua there
# (frames read back pixel for pixel, injected events, misuse, lattice.gui's
# window against its headless PNG), drawing into the window's framebuffer
# (vsync off), through SDL's default renderer and its software one (vsync
# on), and once with the ndarrays in (mock) device memory; then checks
# that without a display core.gui.open returns nil and a message.
# Skipped (77) only when Lattice was built without SDL2.
# Under AddressSanitizer this test alone runs without LeakSanitizer (ASan
# and UBSan still check every access): SDL dlopens the X11 and GL libraries
# and dlcloses them at SDL_VideoQuit, so the allocations they keep for the
# process's lifetime show up as leaks from "<unknown module>", which no
# suppression can name (and LSan's slow unwinder, which would reach SDL's
# frames, hangs in SDL's threads).
# Usage: gui_window.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
here=$(cd "$(dirname "$0")" && pwd)

if ! "$LATTICE" -e 'os.exit(require("lattice.core").gui and 0 or 77)'; then
  echo "skipped: Lattice was built without SDL2 (libsdl2-dev)"
  exit 77
fi
case "${LT_HOST_CFLAGS:-}" in
  # (last, so it wins over setup.sh's detect_leaks=1: ASan takes the last value)
  *sanitize*) export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" ;;
esac

XVFB=$(command -v Xvfb || true)
if [ -z "$XVFB" ]; then
  echo "FAIL Xvfb is not installed (Debian: xvfb; ./setup.sh installs it): the window test cannot run"
  exit 1
fi
xvfb_pid=
cleanup() {
  [ -z "$xvfb_pid" ] || kill "$xvfb_pid" 2> /dev/null
  [ -z "$xvfb_pid" ] || wait "$xvfb_pid" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# Xvfb picks a free display number itself and writes it to fd 3
"$XVFB" -displayfd 3 -screen 0 1280x1024x24 -nolisten tcp 3> "$tmp/display" 2> "$tmp/xvfb.log" &
xvfb_pid=$!
for _ in $(seq 100); do
  [ -s "$tmp/display" ] && break
  kill -0 "$xvfb_pid" 2> /dev/null || break
  sleep 0.1
done
if [ ! -s "$tmp/display" ]; then
  echo "FAIL Xvfb did not start:"
  cat "$tmp/xvfb.log"
  exit 1
fi
export DISPLAY=:$(head -1 "$tmp/display")
echo "Xvfb on $DISPLAY"

run() {  # run NAME [ENV...]: gui_window.lua under ENV must print "done"
  local name=$1
  shift
  mkdir -p "$tmp/$name"
  env GUI_TEST_OUT="$tmp/$name" "$@" "${EXE:-$LATTICE}" "$here/gui_window.lua" > "$tmp/$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && [ "$(tail -1 "$tmp/$name.log")" = "done" ]; then
    echo "ok   $name ($(grep -c '^ok' "$tmp/$name.log") checks)"
    grep '^note:' "$tmp/$name.log"
  else
    echo "FAIL $name (exit $rc):"
    cat "$tmp/$name.log"
    fails=$((fails + 1))
  fi
}
run "window, framebuffer (vsync off)"
run "window, SDL's default renderer (vsync on)" GUI_TEST_VSYNC=1
run "window, SDL's software renderer (vsync on)" GUI_TEST_VSYNC=1 SDL_RENDER_DRIVER=software
# lt.ndarray in device memory (present() stages one host copy): the CUDA
# backend against the mock driver, whose kernels lattice-mockgpu runs on the host
mockgpu=$(dirname "$LATTICE")/lattice-mockgpu
# (not under the sanitizers, as in tests.cmake's mockgpu/)
case "${LT_HOST_CFLAGS:-}" in *sanitize*) mockgpu= ;; esac
if [ -n "${LT_MOCK_CUDA_DRIVER:-}" ] && [ -f "$LT_MOCK_CUDA_DRIVER" ] && [ -n "$mockgpu" ] && [ -x "$mockgpu" ]; then
  EXE=$mockgpu run "window, ndarrays in (mock) device memory" LT_ARCH=cuda LT_CUDA_DRIVER="$LT_MOCK_CUDA_DRIVER" \
    LT_MOCK_CUDA_GUARD=1
fi

# libSDL2 is loaded when a window opens (dlopen): a broken or missing one is
# nil and why from core.gui.open, and lattice.gui draws headless, saying why
mkdir -p "$tmp/badsdl"
echo "not a library" > "$tmp/badsdl/libSDL2-2.0.so.0"
cat > "$tmp/badsdl.lua" <<'LUA'
local win, err = require("lattice.core").gui.open("t", 8, 8)
print(win, (err:gsub(":.*", "")))
local lt = require "lattice"
lt.init {}
local w = require("lattice.gui").window("t", { 8, 8 }, { out = os.getenv("OUT_DIR") })
print(w.mode)
LUA
check "a broken libSDL2: nil and why, then headless" \
  "nil	cannot load libSDL2-2.0.so.0 (Debian
headless" \
  "$(LD_LIBRARY_PATH="$tmp/badsdl" OUT_DIR="$tmp/badsdl" "$LATTICE" "$tmp/badsdl.lua" 2> "$tmp/badsdl.err")"
check "a broken libSDL2: the notice names it" "yes" \
  "$(grep -q "cannot load libSDL2-2.0.so.0" "$tmp/badsdl.err" && echo yes)"

cat > "$tmp/nodisplay.lua" <<'LUA'
local win, err = require("lattice.core").gui.open("t", 8, 8)
print(win, err)
LUA
check "no display: nil and why" \
  "nil	no display (SDL: x11,wayland not available); set DISPLAY, or run under Xvfb (xvfb-run -a lattice script.lua)" \
  "$(env -u DISPLAY -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER XDG_RUNTIME_DIR="$tmp" "$LATTICE" "$tmp/nodisplay.lua" 2>&1)"
finish
