-- lattice.gui headless: every draw call's canvas against a plain-Lua model
-- (image against image.write_png of the same field, circles, lines, text),
-- show() writing PNGs equal to the canvas, events, fps and the errors.
local lt = require "lattice"
local gui = require "lattice.gui"
local image = require "lattice.image"
local font = require "lattice.gui_font"
lt.init {}

local dir = os.tmpname()
os.remove(dir)
image.mkdirs(dir)

local function hex(v) return ("0x%08x"):format(v) end
local function canvas_of(win) return win.canvas:to_table() end   -- t[r + 1][c + 1], row 0 on top

local function same_canvas(win, model, what)
  local t = canvas_of(win)
  for r = 0, win.h - 1 do
    for c = 0, win.w - 1 do
      local want = model(c, r)
      if t[r + 1][c + 1] ~= want then
        error(("%s: pixel (col %d, row %d) is %s, the model says %s"):format(what, c, r, hex(t[r + 1][c + 1]), hex(want)), 2)
      end
    end
  end
end

-- the PNG at path equals the canvas (alpha dropped)
local function png_is_canvas(path, win, what)
  local img = image.read_png(path)
  assert(img.width == win.w and img.height == win.h, what .. ": size")
  local t = canvas_of(win)
  for r = 0, win.h - 1 do
    for c = 0, win.w - 1 do
      local p = t[r + 1][c + 1]
      local R, G, B = img.pixel(c, win.h - 1 - r)
      assert(R == (p >> 16) & 255 and G == (p >> 8) & 255 and B == p & 255,
        what .. ": png pixel " .. c .. "," .. r .. " differs from the canvas " .. hex(p))
    end
  end
end

assert(type(gui.available) == "boolean")
assert(gui.available or type(gui.why) == "string")

local W, H = 40, 30
local win = gui.window("Headless Test", { W, H }, { headless = true, out = dir })
assert(win.mode == "headless" and win.name == "headless_test")
assert(win.canvas.shape[1] == H and win.canvas.shape[2] == W and win.canvas.dtype == lt.u32)

-- image of a scalar field: the same bytes as image.write_png of it, for every colormap
local f = lt.field(lt.f32, { W, H })
local fill = lt.kernel(function()
  for i, j in f do f[i][j] = (i * 7 + j * 13) % 50 / 40 - 0.1 end   -- below 0 and above 1 too
end)
fill()
f[3][4] = 0 / 0                              -- NaN is drawn as min
for _, cmap in ipairs { "gray", "inferno", "heat" } do
  win:image(f, { colormap = cmap, min = 0, max = 1 })
  local ref = dir .. "/ref_" .. cmap .. ".png"
  image.write_png(ref, f, { colormap = cmap, min = 0, max = 1 })
  png_is_canvas(ref, win, "image " .. cmap)
end
win:image(f, { min = -0.5, max = 2, colormap = "inferno" })
image.write_png(dir .. "/ref_range.png", f, { min = -0.5, max = 2, colormap = "inferno" })
png_is_canvas(dir .. "/ref_range.png", win, "image min/max")

-- nearest sampling onto a larger and a smaller window (f[x][y]: x to the right, y up)
local ft = f:to_table()
for _, size in ipairs { { 80, 60 }, { 13, 7 } } do
  local w2 = gui.window("scaled", size, { headless = "null" })
  local ref = lt.field(lt.f32, { size[1], size[2] })
  for x = 0, size[1] - 1 do
    for y = 0, size[2] - 1 do ref[x][y] = ft[x * W // size[1] + 1][y * H // size[2] + 1] end
  end
  w2:image(f, { colormap = "heat" })
  image.write_png(dir .. "/ref_scaled.png", ref, { colormap = "heat" })
  png_is_canvas(dir .. "/ref_scaled.png", w2, "scaled image " .. size[1] .. "x" .. size[2])
end

-- vec3 fields are RGB in 0..1; vec4 blends over the canvas
local function byte(c)
  if not (c > 0) then return 0 elseif c >= 1 then return 255 end
  return math.floor(c * 255 + 0.5)
end
local rgbf = lt.field(lt.vec3, { W, H })
for x = 0, W - 1 do for y = 0, H - 1 do rgbf[x][y] = { x / W, y / H, (x + y) % 3 / 2 } end end
local rgbt = rgbf:to_table()
win:image(rgbf)
same_canvas(win, function(c, r)
  local v = rgbt[c + 1][H - r]
  return 0xFF000000 | byte(v[1]) << 16 | byte(v[2]) << 8 | byte(v[3])
end, "vec3 image")
local rgba = lt.field(lt.vec4, { W, H })
for x = 0, W - 1 do for y = 0, H - 1 do rgba[x][y] = { 1, 0, 0, (x % 2 == 0) and 1 or 0 } end end
win:clear(0x0000ff)
win:image(rgba)
same_canvas(win, function(c) return c % 2 == 0 and 0xFFFF0000 or 0xFF0000FF end, "vec4 blend")

-- clear
win:clear(0x123456)
same_canvas(win, function() return 0xFF123456 end, "clear")

-- circles: every pixel whose centre is within the radius of the position
local C = 64
local cw = gui.window("circles", { C, C }, { headless = "null" })
local pts = { { 10.5, 20.5 }, { 40.5, 40.5 }, { 0.5, 63.5 }, { 63, 1 } }   -- pixels, from the bottom-left
local pos = lt.field(lt.vec2, #pts)
for k, p in ipairs(pts) do pos[k - 1] = { p[1] / C, p[2] / C } end
local function disc_model(rad, color_of)
  return function(c, r)
    local out = 0xFF000000
    for k, p in ipairs(pts) do
      local cx, cy = p[1], C - p[2]
      local dx, dy = c + 0.5 - cx, r + 0.5 - cy
      if dx * dx + dy * dy <= rad * rad then out = color_of(k) end
    end
    return out
  end
end
for _, rad in ipairs { 0.5, 3, 5.5 } do
  cw:clear(0)
  cw:circles(pos, { radius = rad, color = 0xff8000 })
  same_canvas(cw, disc_model(rad, function() return 0xFFFF8000 end), "circles radius " .. rad)
end
-- per-particle colours from an integer field, and positions from an {n, 2} ndarray
local col = lt.field(lt.u32, #pts)
for k = 0, #pts - 1 do col[k] = 0x100000 * (k + 1) + k end
cw:clear(0)
cw:circles(pos, { radius = 3, color_field = col })
same_canvas(cw, disc_model(3, function(k) return 0xFF000000 | (0x100000 * k + k - 1) end), "circles color_field")
local nd = lt.ndarray(lt.f32, { #pts, 2 })
for k, p in ipairs(pts) do nd[k - 1][0], nd[k - 1][1] = p[1] / C, p[2] / C end
cw:clear(0)
cw:circles(nd, { radius = 4, color = 0x00ff00 })
same_canvas(cw, disc_model(4, function() return 0xFF00FF00 end), "circles from an ndarray")
-- a float color_field goes through the colormap (a one-particle check against write_png's colours)
local one, v = lt.field(lt.vec2, 1), lt.field(lt.f32, 1)
one[0] = { 0.5, 0.5 }
v[0] = 0.3
cw:clear(0)
cw:circles(one, { radius = 2, color_field = v, colormap = "inferno" })
image.write_png(dir .. "/one.png", { { 0.3 } }, { colormap = "inferno" })
local R, G, B = image.read_png(dir .. "/one.png").pixel(0, 0)
assert(cw.canvas[32][32] == 0xFF000000 | R << 16 | G << 8 | B, "float color_field: " .. hex(cw.canvas[32][32]))

-- lines: a horizontal, a vertical and a diagonal line, width 1 and 3
local a, b = lt.field(lt.vec2, 3), lt.field(lt.vec2, 3)
a[0], b[0] = { 0 / C, 10.5 / C }, { 32 / C, 10.5 / C }       -- row C - 11 = 53, columns 0..32
a[1], b[1] = { 50.5 / C, 8 / C }, { 50.5 / C, 40 / C }        -- column 50, rows 24..56
a[2], b[2] = { 0, 1 }, { 32 / C, 32 / C }                     -- (0, 0) to (32, 32) in rows from the top
local function line_model(width)
  local lo, hi = (width - 1) // 2, width // 2
  local function near(v, p) return v >= p - lo and v <= p + hi end
  return function(c, r)
    if near(r, 53) and c >= -hi and c <= 32 + hi then return 0xFFFFFFFF end
    if near(c, 50) and r >= 24 - lo and r <= 56 + hi then return 0xFFFFFFFF end
    for s = 0, 32 do
      if near(c, s) and near(r, s) then return 0xFFFFFFFF end
    end
    return 0xFF000000
  end
end
for _, width in ipairs { 1, 3 } do
  cw:clear(0)
  cw:lines(a, b, { width = width })
  same_canvas(cw, line_model(width), "lines width " .. width)
end

-- text: glyphs of gui_font, top-left corner at (x, y), one font pixel between glyphs
local tw = gui.window("text", { 40, 20 }, { headless = "null" })
tw:clear(0)
tw:text(2 / 40, 1 - 3 / 20, "A1\ng", { color = 0x00ffff, scale = 2 })
same_canvas(tw, function(c, r)
  local lines = { "A1", "g" }
  for l, s in ipairs(lines) do
    for k = 1, #s do
      local rows = font.rows(s:byte(k))
      local gx, gy = (c - 2) // 2 - (k - 1) * 6, (r - 3 - (l - 1) * 18) // 2
      if c >= 2 and r >= 3 + (l - 1) * 18 and gx >= 0 and gx < 5 and gy >= 0 and gy < 7 then
        if (rows[gy + 1] >> (4 - gx)) & 1 == 1 then return 0xFF00FFFF end
      end
    end
  end
  return 0xFF000000
end, "text")
for b = 32, 126 do assert(#font.rows(b) == 7) end

-- show(): one PNG per frame equal to the canvas; save(); fps; close
win:image(f, { colormap = "inferno" })
for _ = 1, 3 do win:show() end
assert(win.frame == 3)
png_is_canvas(dir .. "/headless_test_00003.png", win, "show")
win:save(dir .. "/saved.png")
png_is_canvas(dir .. "/saved.png", win, "save")
assert(win.fps > 0, "fps after three frames: " .. win.fps)
local null = gui.window("null", { 8, 8 }, { headless = "null", out = dir })
for _ = 1, 5 do null:show() end
assert(io.open(dir .. "/null_00001.png") == nil, "headless = \"null\" writes nothing")
assert(null.fps > 0)

-- events (headless: pushed events), keys, mouse, running
assert(#win:events() == 0 and win:running())
win:push_event { type = "mouse_move", x = 0.25, y = 0.75 }
win:push_event { type = "key_down", key = "space" }
assert(win:key_down("space") and not win:key_down("a"))
local mx, my = win:mouse()
assert(mx == 0.25 and my == 0.75)
local evs = win:events()
assert(#evs == 2 and evs[1].type == "mouse_move" and evs[2].key == "space")
assert(#win:events() == 0 and win:running())
win:push_event { type = "key_up", key = "space" }
assert(not win:key_down("space"))
win:push_event { type = "key_down", key = "escape" }
assert(not win:running(), "Escape ends running()")

-- errors
local function fails(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error matching " .. pattern)
  assert(tostring(err):find(pattern, 1, true), "wrong error: " .. tostring(err) .. " (expected " .. pattern .. ")")
end
fails("expects a 2-D field", win.image, win, 42)
local core = require "lattice.core"
fails("core.sleep: expected 0 to 10 seconds", core.sleep, -1)
fails("core.sleep: expected 0 to 10 seconds", core.sleep, 11)
fails("number expected", core.sleep, "soon")
fails("must have 2 indices", win.image, win, lt.field(lt.f32, 5))
fails("for one component pass f.x", win.image, win, lt.field(lt.vec2, { 4, 4 }))
fails("unknown colormap 'jet'", win.image, win, f, { colormap = "jet" })
fails("must be greater than opts.min", win.image, win, f, { min = 1, max = 1 })
fails("unknown option 'colour'", win.image, win, f, { colour = 1 })
fails("expects positions as a vec2 field", win.circles, win, f)
fails("opts.radius must be >= 0", win.circles, win, pos, { radius = -1 })
fails("a colour is an integer 0xRRGGBB", win.circles, win, pos, { color = "red" })
fails("must have the shape of", win.circles, win, pos, { color_field = lt.field(lt.u32, 9) })
fails("two vec2 fields", win.lines, win, a, f)
fails("must have one shape", win.lines, win, a, lt.field(lt.vec2, 5))
fails("opts.width is a whole number", win.lines, win, a, b, { width = 0 })
fails("x and y are numbers", win.text, win, "a", 0, "hi")
fails("a colour is an integer", win.clear, win, 0x1000000)
fails("the size is {w, h}", gui.window, "bad", { 0, 10 })
fails("unknown option 'fullscreen'", gui.window, "bad", { 10, 10 }, { fullscreen = true })
fails("opts.fps_limit must be a number of frames per second > 0, got 0", gui.window, "bad", { 10, 10 }, { fps_limit = 0 })
fails("opts.fps_limit must be a number of frames per second > 0, got fast", gui.window, "bad", { 10, 10 },
  { fps_limit = "fast" })
fails("opts.headless is true, false", gui.window, "bad", { 10, 10 }, { headless = "yes" })
fails("push_event(ev): ev is a table", win.push_event, win, { type = "wheel" })
if not gui.available then
  fails("no window (headless = false)", gui.window, "bad", { 10, 10 }, { headless = false })
end
win:close()
win:close()                                  -- idempotent
assert(not win:running())
fails("is closed", win.show, win)
fails("is closed", win.image, win, f)

print("gui_headless: ok")
