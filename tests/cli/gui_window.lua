-- gui_window.lua -- core.gui (src/lang/gui_sdl.c) in a real window on the X
-- server in DISPLAY (tests/cli/gui_window.sh starts an Xvfb for it): frames
-- presented from ndarrays come back pixel for pixel through read_pixels,
-- injected events come back in order, misuse is a clear error; then, when
-- lattice.gui has a window (stdlib/lattice/gui.lua), the same through
-- gui.window, and its headless PNG equals what the window shows.
-- Prints "ok NAME" per check and ends with "done"; any failure is an error.
local lt = require "lattice"
local core = require "lattice.core"
local sdl = assert(core.gui, "Lattice was built without SDL2")

local function check(name, cond, detail)
  if not cond then error("FAIL " .. name .. (detail and (": " .. tostring(detail)) or ""), 2) end
  print("ok   " .. name)
end
local function fails(name, want, f, ...)
  local ok, err = pcall(f, ...)
  check(name, not ok and string.find(tostring(err), want, 1, true), ok and "no error" or err)
  -- errors point at this file's line, not at the binding
  check(name .. " (at the user's line)", string.find(tostring(err), "gui_window.lua:", 1, true), err)
end

local W, H = 64, 48
-- vsync: a renderer and a texture; without it the window's framebuffer
local VSYNC = os.getenv("GUI_TEST_VSYNC") == "1"
-- a frame where every pixel differs from its neighbours: R from x, G from y,
-- B from both and the frame number
local function pattern(frame)
  return function(x, y) return 0xFF000000 | (x * 4) << 16 | (y * 5) << 8 | ((x * 7 + y * 3 + frame * 11) & 0xFF) end
end
local function ndarray_of(f)
  local rows = {}
  for y = 0, H - 1 do
    local row = {}
    for x = 0, W - 1 do row[x + 1] = f(x, y) end
    rows[y + 1] = row
  end
  return lt.ndarray(lt.u32, { H, W }, rows)
end
-- the first pixel where the window's frame differs from f, or nil
local function differs(px, f, w, h)
  w, h = w or W, h or H
  if #px ~= w * h * 4 then return "read_pixels gave " .. #px .. " bytes, not " .. w * h * 4 end
  for y = 0, h - 1 do
    for x = 0, w - 1 do
      local got = string.unpack("<I4", px, (y * w + x) * 4 + 1)
      local want = f(x, y) | 0xFF000000
      if got ~= want then return ("pixel (%d, %d): 0x%08X, drawn 0x%08X"):format(x, y, got, want) end
    end
  end
end

lt.init {}
local win, err = sdl.open("gui_window test", W, H, { vsync = VSYNC })
check("open a window", win, err)
local w, h = win:size()
check("size", w == W and h == H, w .. "x" .. h)
check("black before the first frame", not differs(win:read_pixels(), function() return 0 end))

for frame = 1, 3 do
  local f = pattern(frame)
  win:present(ndarray_of(f))
  check("frame " .. frame .. " read back pixel for pixel", not differs(win:read_pixels(), f),
    differs(win:read_pixels(), f))
end
-- the userdata inside an lt.ndarray is taken too, and alpha never shows
local g = function(x, y) return (x + y) % 2 == 0 and 0x00FFFFFF or 0x12345678 end
win:present(ndarray_of(g)._ud)
check("present the ndarray's userdata; alpha ignored", not differs(win:read_pixels(), g))

-- ---- events: injected ones come back in order, with their fields
win:events()   -- whatever the X server sent so far
local sent = {
  { type = "key_down", key = "space" },
  { type = "mouse_move", x = 10, y = 20 },
  { type = "mouse_down", button = 1, x = 11, y = 21 },
  { type = "mouse_up", button = 3, x = 12, y = 22 },
  { type = "key_down", key = "a" },
  { type = "key_up", key = "space" },
  { type = "key_down", key = "left" },
  { type = "key_down", key = "escape" },
  { type = "key_down", key = "return" },
  { type = "quit" },
}
for _, ev in ipairs(sent) do win:push_event(ev) end
local function show(ev)
  local keys = {}
  for k, v in pairs(ev) do keys[#keys + 1] = k .. "=" .. tostring(v) end
  table.sort(keys)
  return "{" .. table.concat(keys, ", ") .. "}"
end
-- The X server's own pointer motion (the window opens under Xvfb's pointer)
-- is left out: only what was sent is compared.
local function injected(list)
  local sent_text, out = {}, {}
  for _, ev in ipairs(sent) do sent_text[show(ev)] = true end
  for _, ev in ipairs(list) do
    if ev.type ~= "mouse_move" or sent_text[show(ev)] then out[#out + 1] = ev end
  end
  return out
end
local got = injected(win:events())
local same = #got == #sent
for i = 1, #sent do same = same and got[i] and show(got[i]) == show(sent[i]) end
local listing = {}
for i, ev in ipairs(got) do listing[i] = show(ev) end
check("events come back in order", same, table.concat(listing, " "))
check("events: then none", #injected(win:events()) == 0)
check("key_down: a held", win:key_down("a") == true)
check("key_down: space released", win:key_down("space") == false)
check("key_down: names in any case", win:key_down("A") == true and win:key_down("Escape") == true)
local mx, my = win:mouse()
check("mouse: the last position seen", mx == 12 and my == 22, mx .. ", " .. my)
win:push_event { type = "key_up", key = "a" }
check("key_down after a key_up", win:key_down("a") == false)

-- ---- misuse: clear errors, no crash
local f32 = lt.ndarray(lt.f32, { H, W })
fails("present: wrong dtype", "expected an lt.ndarray(lt.u32, {48, 64}) (height, width) of 0xAARRGGBB pixels, got an "
  .. "lt.ndarray(lt.f32, {48, 64})", win.present, win, f32)
fails("present: width and height swapped", "got an lt.ndarray(lt.u32, {64, 48})", win.present, win,
  lt.ndarray(lt.u32, { W, H }))
fails("present: one dimension", "got an lt.ndarray(lt.u32, {3072})", win.present, win, lt.ndarray(lt.u32, { W * H }))
fails("present: not an ndarray", "pixels, got table", win.present, win, {})
fails("present: nothing", "pixels, got no value", win.present, win)
fails("key_down: unknown key", "unknown key 'nokey'", win.key_down, win, "nokey")
fails("push_event: unknown type", "unknown event type wiggle", win.push_event, win, { type = "wiggle" })
fails("push_event: mouse without x", "a 'mouse_move' event needs an integer x, got nil", win.push_event, win,
  { type = "mouse_move", y = 1 })
fails("push_event: button 4", "the button must be 1, 2 or 3", win.push_event, win,
  { type = "mouse_down", button = 4, x = 1, y = 1 })
fails("open: width 0", "the width must be an integer from 1 to 16384, got 0", sdl.open, "x", 0, 10)
fails("open: unknown option", "unknown option 'vsinc' (vsync, hidden)", sdl.open, "x", 8, 8, { vsinc = true })
fails("open: hidden not a boolean", "option 'hidden' must be a boolean, got string", sdl.open, "x", 8, 8,
  { hidden = "yes" })
fails("a method on something else", "expected a window (from gui.open), got table", win.size, {})
win:close()
win:close()
check("close twice", true)
check("tostring of a closed window", tostring(win) == "gui window (closed)", tostring(win))
fails("present after close", "win:present: the window is closed", win.present, win, ndarray_of(g))
fails("read_pixels after close", "win:read_pixels: the window is closed", win.read_pixels, win)
fails("canvas after close", "win:canvas: the window is closed", win.canvas, win)
fails("events after close", "win:events: the window is closed", win.events, win)

-- ---- two windows: each gets its own events
local a = assert(sdl.open("a", 8, 8, { hidden = true, vsync = VSYNC }))
local b = assert(sdl.open("b", 16, 8, { vsync = VSYNC }))
a:push_event { type = "key_down", key = "x" }
b:push_event { type = "key_down", key = "y" }
local ea, eb = injected(a:events()), injected(b:events())
check("two windows: a's events", #ea == 1 and ea[1].key == "x", #ea)
check("two windows: b's events", #eb == 1 and eb[1].key == "y", #eb)
a:close()
b:present(lt.ndarray(lt.u32, { 8, 16 }))
check("one window closed, the other presents", not differs(b:read_pixels(), function() return 0 end, 16, 8))
b = nil
collectgarbage()   -- __gc closes it

-- ---- lattice.gui, once it draws through this binding
local ok, gui = pcall(require, "lattice.gui")
if ok and type(gui) == "table" and gui.window and gui.available then
  local N = 32
  local field = lt.field(lt.f32, { N, N })
  local fill = lt.kernel(function()
    for i, j in field do field[i][j] = (i + 2 * j) / (3 * (N - 1)) end
  end)
  fill()
  local pos = lt.field(lt.vec2, 3)
  pos:from_table { { 0.25, 0.25 }, { 0.5, 0.75 }, { 0.8, 0.4 } }
  local function draw(gw)
    gw:clear(0x102030)
    gw:image(field, { min = 0, max = 1 })
    gw:circles(pos, { radius = 3, color = 0xFF8000 })
    gw:show()
  end
  local gw = gui.window("gui_window lattice.gui", { N * 2, N * 2 }, { headless = false, vsync = VSYNC })
  check("gui.window opens a window", gw.mode == "window", gw.mode)
  draw(gw)
  local canvas = core.ndarray_to_list(gw.canvas._ud)   -- flat, row-major
  local function at(x, y) return canvas[y * N * 2 + x + 1] & 0xFFFFFF end   -- y from the top
  check("gui.window: a circle's centre is its colour", at(16, 64 - 16) == 0xFF8000, ("0x%06X"):format(at(16, 48)))
  -- the field's cell (20, 26) at (40, 10) from the top: gray (20 + 2*26) / 93
  local v, c = math.floor((20 + 52) / 93 * 255 + 0.5), at(40, 10)
  check("gui.window: the field in gray", c >> 16 == c & 0xFF and (c >> 8) & 0xFF == c & 0xFF and math.abs((c & 0xFF) - v) <= 2,
    ("0x%06X, want gray %d"):format(c, v))
  local px = gw._sdl:read_pixels()
  check("gui.window: the window shows the canvas", not differs(px, function(x, y) return canvas[y * N * 2 + x + 1] end,
    N * 2, N * 2))
  -- events: bottom-left [0,1] coordinates on the Lua side, q ends running()
  gw:push_event { type = "mouse_move", x = 0.5, y = 0.25 }
  local evs = gw:events()
  check("gui.window: a mouse event comes back", #evs >= 1 and evs[#evs].type == "mouse_move", #evs)
  check("gui.window: running before q", gw:running() == true)
  gw:push_event { type = "key_down", key = "q" }
  check("gui.window: q ends running()", gw:running() == false)
  local gw2 = gui.window("gui_window escape", { 8, 8 }, { headless = false, hidden = true })
  gw2:push_event { type = "key_down", key = "escape" }
  check("gui.window: Escape ends running()", gw2:running() == false)
  gw2:close()
  -- the headless frame is the window's frame
  local dir = os.getenv("GUI_TEST_OUT") or "out"
  local hw = gui.window("gui_window lattice.gui", { N * 2, N * 2 }, { headless = true, out = dir, name = "same" })
  draw(hw)
  hw:close()
  local image = require "lattice.image"
  local png = image.read_png(dir .. "/same_00001.png")
  check("headless PNG: the window's size", png.width == N * 2 and png.height == N * 2, png.width .. "x" .. png.height)
  local bad
  for y = 0, N * 2 - 1 do
    for x = 0, N * 2 - 1 do
      local r, g2, b2 = png.pixel(x, N * 2 - 1 - y)   -- read_png's y runs from the bottom
      local want = string.unpack("<I4", px, (y * N * 2 + x) * 4 + 1)
      local got = 0xFF000000 | r << 16 | g2 << 8 | b2   -- 0..255 each
      if got ~= want and not bad then bad = ("pixel (%d, %d): PNG 0x%08X, window 0x%08X"):format(x, y, got, want) end
    end
  end
  check("headless PNG equals the window's frame", not bad, bad)
  -- On the CPU without vsync the canvas is the window's own pixels (no copy
  -- per frame); closing the window leaves the canvas a copy of its last
  -- pixels in memory of its own, which kernels can still write.
  local cpu = require("lattice.state").opts.arch == "cpu"
  local own = gw._sdl:canvas()
  if cpu and not VSYNC then
    check("gui.window: the canvas is the window's framebuffer",
      own ~= nil and core.ndarray_address(own) == core.ndarray_address(gw.canvas._ud))
  else
    check("gui.window: the canvas is an array of its own (device memory or a renderer)",
      own == nil or core.ndarray_address(own) ~= core.ndarray_address(gw.canvas._ud))
  end
  local kept = gw.canvas
  local before = core.ndarray_to_list(kept._ud)
  gw:close()
  local after = core.ndarray_to_list(kept._ud)
  local same_px = #after == #before
  for i = 1, #before do same_px = same_px and after[i] == before[i] end
  check("after close the canvas keeps the last frame", same_px)
  local paint = lt.kernel(function(cv)
    for r, c in lt.ndrange(cv.shape[1], cv.shape[2]) do cv[r][c] = 0xFF00FF00 end
  end, { cv = lt.ndarray_type(lt.u32, 2) })
  paint(kept)
  check("after close kernels still draw into the canvas", core.ndarray_to_list(kept._ud)[N * 2 + 3] == 0xFF00FF00)
  -- a window collected while its canvas is held: the same
  local gw3 = gui.window("gui_window gc", { 16, 8 }, { headless = false, vsync = VSYNC })
  gw3:clear(0x123456)
  gw3:show()
  local held = gw3.canvas
  gw3 = nil
  collectgarbage()
  collectgarbage()
  check("a collected window's canvas keeps its pixels", core.ndarray_to_list(held._ud)[5] & 0xFFFFFF == 0x123456)
  paint(held)
  check("and kernels still draw into it", core.ndarray_to_list(held._ud)[128] == 0xFF00FF00)
  -- fps_limit: show() keeps frames at least 1 / fps_limit s apart
  local gw5 = gui.window("gui_window fps", { 16, 8 }, { headless = false, vsync = VSYNC, fps_limit = 25 })
  gw5:show()
  local t0 = core.now()
  for _ = 1, 5 do gw5:show() end
  local took = core.now() - t0
  check("fps_limit = 25: 5 frames take at least 0.2 s", took >= 0.2 - 1e-3, ("%.3f s"):format(took))
  gw5:close()
  -- a resize (SDL then replaces the surface): the canvas moves to memory of
  -- its own with its pixels, and frames are copied into the window again
  local gw4 = gui.window("gui_window resize", { 16, 8 }, { headless = false, vsync = VSYNC })
  gw4:clear(0x345678)
  gw4:show()
  gw4._sdl:push_event { type = "size_changed" }   -- (the binding's test event)
  gw4:events()
  local own4 = gw4._sdl:canvas()
  check("after a resize the canvas is not the framebuffer",
    own4 == nil or core.ndarray_address(own4) ~= core.ndarray_address(gw4.canvas._ud))
  check("after a resize the canvas keeps its pixels", core.ndarray_to_list(gw4.canvas._ud)[7] & 0xFFFFFF == 0x345678)
  gw4:clear(0x00AA55)
  gw4:show()
  check("after a resize the window shows the canvas",
    string.unpack("<I4", gw4._sdl:read_pixels(), 4 * 20 + 1) & 0xFFFFFF == 0x00AA55)
  gw4:close()
else
  print("note: lattice.gui has no window drawing yet; its checks were not run")
end
print("done")
