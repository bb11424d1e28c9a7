# bench/rows/gui.sh -- lattice.gui's frame rate in a real SDL2 window on an
# Xvfb this row starts (vsync off), from bench/gui.lua: `image` (a 1024x1024
# f32 field through win:image, then win:show) and `circles` (100k particles
# through win:circles over a clear, then win:show), 200 frames each, the best
# of three runs; and the same drawing with no window (headless "null": the
# kernels alone), for what presenting costs. Targets: image >= 200 frames/s,
# circles >= 60. Without SDL2 or Xvfb the row says it was not measured.
# Run alone: bash bench/rows/gui.sh [BUILD_DIR]   (prints the page section)
GUI_FRAMES=200

gui_measure() {
  gui_state="ok"
  : > "$tmp/gui.txt"
  if ! "$LATTICE" -e 'os.exit(require("lattice.core").gui and 0 or 1)'; then
    gui_state="no SDL2 in this build"; return 0
  fi
  local xvfb
  xvfb=$(command -v Xvfb || true)
  if [ -z "$xvfb" ]; then gui_state="no Xvfb (Debian: xvfb)"; return 0; fi
  echo "gui: starting Xvfb..." >&2
  "$xvfb" -displayfd 3 -screen 0 1280x1024x24 -nolisten tcp 3> "$tmp/gui_display" 2> /dev/null &
  local pid=$! i what run mode
  for i in $(seq 100); do [ -s "$tmp/gui_display" ] && break; sleep 0.1; done
  if [ ! -s "$tmp/gui_display" ]; then
    kill "$pid" 2> /dev/null || true
    gui_state="Xvfb did not start"; return 0
  fi
  for what in image circles; do
    for mode in window headless; do
      for run in 1 2 3; do
        [ "$mode" = window ] || [ "$run" = 1 ] || continue
        echo "gui: $what, $mode, run $run..." >&2
        DISPLAY=:$(head -1 "$tmp/gui_display") "$LATTICE" bench/gui.lua "$what" "$GUI_FRAMES" \
          $([ "$mode" = headless ] && echo --headless) > "$tmp/gui_run.txt" 2>&1 || {
          gui_state="bench/gui.lua $what failed: $(head -1 "$tmp/gui_run.txt")"
          kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true
          return 0
        }
        # "gui image: 200 frames in 0.812 s: 246.3 frames/s (window, cpu, ...)"
        sed -n 's/.*: \([0-9.]*\) frames\/s (\([a-z]*\),.*/\1 \2/p' "$tmp/gui_run.txt" |
          awk -v w="$what" -v m="$mode" '{ print "gui_fps_" w "_" m, $1; print "gui_mode_" w "_" m, $2 }' >> "$tmp/gui.txt"
      done
    done
  done
  kill "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  # the best run: frames/s is higher-is-better, so the largest
  gui_img=$(awk '$1 == "gui_fps_image_window" && $2 > b { b = $2 } END { print b }' "$tmp/gui.txt")
  gui_cir=$(awk '$1 == "gui_fps_circles_window" && $2 > b { b = $2 } END { print b }' "$tmp/gui.txt")
  gui_img_k=$(val "$tmp/gui.txt" gui_fps_image_headless)
  gui_cir_k=$(val "$tmp/gui.txt" gui_fps_circles_headless)
  if [ "$(val "$tmp/gui.txt" gui_mode_image_window)" != window ]; then
    gui_state="bench/gui.lua drew headless, not in a window"
  fi
}

gui_page() {
  echo "## lattice.gui frame rate"
  echo
  if [ "$gui_state" != ok ]; then
    echo "Not measured: $gui_state."
    return 0
  fi
  echo "\`bench/gui.lua\` in an SDL2 window (1024 x 1024, vsync off) on Xvfb, $GUI_FRAMES frames, the"
  echo "best of three runs; CPU backend. A frame is the drawing kernels (into the canvas,"
  echo "which on the CPU is the window's framebuffer) and the present (MIT-SHM to the X"
  echo "server). \"Kernels alone\": the same drawing with no window (\`--headless\`, one run)."
  echo
  echo "| frame | frames/s | target | kernels alone |"
  echo "|---|---|---|---|"
  echo "| \`win:image\` of a 1024 x 1024 f32 field + \`win:show\` | **$gui_img** | ≥ 200: $(verdict "$gui_img" 200 ge) | $gui_img_k |"
  echo "| \`win:circles\` of 100k particles + \`win:show\` | **$gui_cir** | ≥ 60: $(verdict "$gui_cir" 60 ge) | $gui_cir_k |"
}

gui_summary() {
  if [ "$gui_state" != ok ]; then echo "gui: not measured ($gui_state)"; return 0; fi
  echo "gui (SDL2 window on Xvfb, vsync off): image 1024^2 $gui_img frames/s (target >= 200: $(verdict "$gui_img" 200 ge)), circles 100k $gui_cir frames/s (target >= 60: $(verdict "$gui_cir" 60 ge)); kernels alone $gui_img_k / $gui_cir_k"
}

# bash bench/rows/gui.sh [BUILD_DIR]: this row alone
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  ROOT=$(cd "$(dirname "$0")/../.." && pwd)
  BUILD=$(cd "${1:-$ROOT/build}" && pwd)
  LATTICE=$BUILD/lattice
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cd "$ROOT"
  export LT_CACHE=off
  . bench/rows/lib.sh
  gui_measure
  gui_page
  echo
  gui_summary
fi
