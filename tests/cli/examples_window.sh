#!/bin/bash
# The examples' --window mode, headless (LT_GUI=headless: every frame a PNG),
# with --test: each exits 0 and writes its frames; keys pushed into the
# window's queue (space, s, r, q) take effect (space and r judged from the frames). Also the exposure of nbody's
# pictures (mean brightness above 8 of 255; it was 2 with a fixed exposure) and the progress lines when
# stdout is not a terminal. Usage: examples_window.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
src=$(cd "$(dirname "$0")/../.." && pwd)
export LT_GUI=headless

for e in julia heat sparse_life nbody mpm88 mpm3d diff_mpm; do
  "$LATTICE" "$src/examples/$e.lua" --window --test --out "$tmp/$e" > "$tmp/$e.log" 2>&1
  rc=$?
  check "$e --window exits 0" "0" "$rc"
  [ "$rc" -eq 0 ] || tail -5 "$tmp/$e.log"
  check "$e writes frames" "yes" "$([ -f "$tmp/$e/${e}_window_00001.png" ] && echo yes)"
done

# keys: the window's queue is fed before each frame by a wrapper script
cat > "$tmp/keys.lua" <<'LUA'
local gui = require "lattice.gui"
local window = gui.window
local n = 0
gui.window = function(...)
  local w = window(...)
  local show = w.show
  w.show = function(self)
    n = n + 1
    local key = ({ [1] = "space", [2] = "s", [3] = "space", [4] = "r" })[n]
    if key then self:push_event({ type = "key_down", key = key }) end
    if n == 6 then self:push_event({ type = "key_down", key = "q" }) end
    return show(self)
  end
  return w
end
arg = { [0] = arg[1], table.unpack(arg, 2) }
dofile(arg[0])
LUA
"$LATTICE" "$tmp/keys.lua" "$src/examples/julia.lua" --window --out "$tmp/keys" > "$tmp/keys.log" 2>&1
check "keys: exits 0" "0" "$?"
check "keys: s saved a PNG" "yes" "$(grep -q "julia_save_00001.png" "$tmp/keys.log" && [ -f "$tmp/keys/julia_save_00001.png" ] && echo yes)"
check "keys: q quit after 6 frames" "6" "$(ls "$tmp/keys" | grep -c '^julia_window_')"
# what space and r did, from the frames' fractal (the rows between the text
# lines): space before frame 1 paused t at 0.02 until space again before
# frame 3; r before frame 4 restarted at t = 0.02 for frame 5; so frames
# 1, 2, 3 and 5 show t = 0.02, and 4 and 6 show t = 0.04.
cat > "$tmp/same.lua" <<'LUA'
local image = require "lattice.image"
local function rows(path)
  local img, t = image.read_png(path), {}
  for y = math.floor(img.height * 0.15), math.floor(img.height * 0.85) do
    for x = 0, img.width - 1 do t[#t + 1] = table.concat({ img.pixel(x, y) }, ",") end
  end
  return table.concat(t, " ")
end
local f = {}
for k = 1, 6 do f[k] = rows(("%s/julia_window_%05d.png"):format(arg[1], k)) end
local same = {}
for k = 2, 6 do same[#same + 1] = (f[k] == f[1] and "=1" or f[k] == f[4] and "=4" or "new") end
print(table.concat(same, " "))
LUA
check "keys: space paused (2, 3 = 1), r restarted (5 = 1), t moved on (4 differs from 1, 6 = 4)" "=1 =1 =4 =1 =4" \
  "$("$LATTICE" "$tmp/same.lua" "$tmp/keys" 2>&1)"

# nbody's pictures are exposed from their data: not near black
"$LATTICE" "$src/examples/nbody.lua" --frames 2 --quiet --out "$tmp/nb" > /dev/null 2>&1
check "nbody --frames 2" "yes" "$([ -f "$tmp/nb/nbody_00002.png" ] && echo yes)"
cat > "$tmp/mean.lua" <<'LUA'
local img = require("lattice.image").read_png(arg[1])
local sum = 0
for x = 0, img.width - 1 do for y = 0, img.height - 1 do
  local r, g, b = img.pixel(x, y); sum = sum + (r + g + b) / 3
end end
print(sum / (img.width * img.height) > 8 and "bright enough" or ("too dark: " .. sum / (img.width * img.height)))
LUA
mean=$("$LATTICE" "$tmp/mean.lua" "$tmp/nb/nbody_00002.png")
check "nbody frame brightness" "bright enough" "$mean"

# progress when stdout is a file: plain lines, the last one the total
"$LATTICE" "$src/examples/julia.lua" --out "$tmp/pr" > "$tmp/pr.log" 2>&1
check "progress lines" "julia: frame 4/4" "$(grep -o 'julia: frame 4/4' "$tmp/pr.log")"
check "progress total" "yes" "$(tail -1 "$tmp/pr.log" | grep -q '^julia: 4 frames in' && echo yes)"
"$LATTICE" "$src/examples/julia.lua" --quiet --out "$tmp/pr" > "$tmp/q.log" 2>&1
check "--quiet: no progress" "0" "$(grep -c 'frame' "$tmp/q.log")"
finish
