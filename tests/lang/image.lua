-- lattice.image: write PNGs, read them back, compare every pixel with the
-- mapping computed here in plain Lua (independently of image.c's tables).
local image = require "lattice.image"

-- the ptx/ variant of this test (LT_CHECK_PTX) runs at the same time: its own folder
local dir = (os.getenv("LT_BUILD_DIR") or os.tmpname() .. ".d") .. "/image_test" .. (os.getenv("LT_CHECK_PTX") and "_ptx" or "")
image.mkdirs(dir)

local function byte(c)
  c = math.max(0, math.min(1, c))
  return math.floor(c * 255 + 0.5)
end

-- reference colormaps
local ref = {
  gray = function(v) local b = byte(v); return b, b, b end,
  heat = function(v) -- black -> red -> yellow -> white in thirds
    v = math.max(0, math.min(1, v))
    return byte(3 * v), byte(3 * v - 1), byte(3 * v - 2)
  end,
}

local function check_pixels(path, w, h, expect)
  local img = image.read_png(path)
  assert(img.width == w and img.height == h,
    ("%s: size %dx%d, expected %dx%d"):format(path, img.width, img.height, w, h))
  for x = 0, w - 1 do
    for y = 0, h - 1 do
      local r, g, b = img.pixel(x, y)
      local er, eg, eb = expect(x, y)
      if math.abs(r - er) > 1 or math.abs(g - eg) > 1 or math.abs(b - eb) > 1 then
        error(("%s: pixel (%d,%d) = %d,%d,%d, expected %d,%d,%d"):format(path, x, y, r, g, b, er, eg, eb))
      end
    end
  end
end

-- a 0-based table data[x][y] (what field:to_table() gives), 7 wide, 5 high
local W, H = 7, 5
local function value(x, y) return (x * H + y) / (W * H - 1) * 2.5 - 0.5 end  -- spans beyond [0, 2]
local zero = {}
for x = 0, W - 1 do
  zero[x] = {}
  for y = 0, H - 1 do zero[x][y] = value(x, y) end
end
for _, cmap in ipairs { "gray", "heat" } do
  local path = dir .. "/zero_" .. cmap .. ".png"
  assert(image.write_png(path, zero, { min = 0, max = 2, colormap = cmap }) == path)
  check_pixels(path, W, H, function(x, y) return ref[cmap](value(x, y) / 2) end)
end

-- 1-based rows give the same picture: data[1][1] is the bottom-left pixel
local one = {}
for x = 1, W do
  one[x] = {}
  for y = 1, H do one[x][y] = zero[x - 1][y - 1] end
end
image.write_png(dir .. "/one.png", one, { min = 0, max = 2 })
check_pixels(dir .. "/one.png", W, H, function(x, y) return ref.gray(value(x, y) / 2) end)

-- orientation: only the bottom-left pixel is white
local corner = {}
for x = 0, 3 do corner[x] = { [0] = 0, 0, 0 } end
corner[0][0] = 1
image.write_png(dir .. "/corner.png", corner)
local img = image.read_png(dir .. "/corner.png")
assert(img.width == 4 and img.height == 3)
assert(select(1, img.pixel(0, 0)) == 255 and select(1, img.pixel(0, 2)) == 0 and select(1, img.pixel(3, 0)) == 0,
  "data[0][0] must be the bottom-left pixel")

-- {r, g, b} triples in 0..1
local rgb = {}
for x = 1, 3 do
  rgb[x] = {}
  for y = 1, 2 do rgb[x][y] = { x / 3, y / 2, 0.25 } end
end
image.write_png(dir .. "/rgb.png", rgb)
check_pixels(dir .. "/rgb.png", 3, 2, function(x, y) return byte((x + 1) / 3), byte((y + 1) / 2), byte(0.25) end)

-- inferno: dark at 0, pale yellow at 1, brightness never decreases
image.write_png(dir .. "/inferno.png", { { 0, 0.25, 0.5, 0.75, 1 } }, { colormap = "inferno" })
local inf = image.read_png(dir .. "/inferno.png")
local last = -1
for y = 0, 4 do
  local r, g, b = inf.pixel(0, y)
  local lum = r + g + b
  assert(lum >= last, "inferno must brighten with the value")
  last = lum
end
assert(select(1, inf.pixel(0, 0)) < 10 and select(2, inf.pixel(0, 4)) > 240)

-- inferno's table: entry k is the colour at k / 1023 between its control
-- points (C floats, interpolated in doubles), computed here from the points
local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local inferno_stops = {
  { 0.000, 0.000, 0.000, 0.016 }, { 0.125, 0.122, 0.047, 0.282 }, { 0.250, 0.333, 0.059, 0.427 },
  { 0.375, 0.533, 0.133, 0.416 }, { 0.500, 0.729, 0.212, 0.333 }, { 0.625, 0.890, 0.349, 0.200 },
  { 0.750, 0.976, 0.549, 0.039 }, { 0.875, 0.976, 0.788, 0.196 }, { 1.000, 0.988, 1.000, 0.643 } }
local function inferno_at(v)
  local k = 2
  while k < #inferno_stops and v > f32(inferno_stops[k][1]) do k = k + 1 end
  local a, b = inferno_stops[k - 1], inferno_stops[k]
  local t = (v - f32(a[1])) / (f32(b[1]) - f32(a[1]))
  local c = {}
  for m = 2, 4 do c[m - 1] = byte(f32(a[m]) + t * (f32(b[m]) - f32(a[m]))) end
  return 0xFF000000 | c[1] << 16 | c[2] << 8 | c[3]
end
local tab = image.colormap_table("inferno")
assert(#tab == 1024, "inferno has 1024 colours, got " .. #tab)
for k = 0, 1023 do
  assert(tab[k + 1] == inferno_at(k / 1023),
    ("inferno entry %d: 0x%08X, the control points give 0x%08X"):format(k, tab[k + 1], inferno_at(k / 1023)))
  if k > 0 then
    for sh = 0, 16, 8 do
      assert(math.abs((tab[k + 1] >> sh & 255) - (tab[k] >> sh & 255)) <= 1, "neighbouring entries differ by > 1")
    end
  end
end
assert(image.colormap_table("gray") == nil and #image.colormap_table("heat") == 1024)
assert(not pcall(image.colormap_table, "viridis"))
-- write_png picks entry round(min((x - min) * (1023 / (max - min)), 1023)), 0 at or below min and for NaN
do
  local lo, hi, col = -0.5, 1.5, {}
  for y = 0, 2099 do col[y] = y == 2099 and 0 / 0 or (y - 50) / 1000 - 0.5 end
  image.write_png(dir .. "/lut.png", { [0] = col }, { min = lo, max = hi, colormap = "inferno" })
  local img = image.read_png(dir .. "/lut.png")
  for y = 0, 2099 do
    local s = (col[y] - lo) * (1023 / (hi - lo))
    local k = s > 0 and math.floor(math.min(s, 1023) + 0.5) or 0
    local r, g, b = img.pixel(0, y)
    local want = tab[k + 1]
    assert((0xFF000000 | r << 16 | g << 8 | b) == want,
      ("lut.png pixel %d (value %g): 0x%02X%02X%02X, want entry %d 0x%06X"):format(y, col[y], r, g, b, k, want & 0xFFFFFF))
  end
end

-- a field: drawn through its to_table method, same orientation
do
  local lt = require "lattice"
  lt.init {}
  local f = lt.field(lt.f32, { 4, 3 })
  f:fill(0.25)
  f[3][2] = 1.0   -- top-right corner
  image.write_png(dir .. "/field.png", f)
  check_pixels(dir .. "/field.png", 4, 3, function(x, y) return ref.gray((x == 3 and y == 2) and 1 or 0.25) end)
end

-- errors name the path and the problem
local function fails(expect, ...)
  local ok2, msg = pcall(image.write_png, ...)
  assert(not ok2, "expected an error containing: " .. expect)
  assert(msg:find(expect, 1, true), ("error %q does not contain %q"):format(msg, expect))
end
fails("/nonexistent/dir/x.png): cannot open", "/nonexistent/dir/x.png", zero)
fails("bad.png): bad value at data[1][2]", dir .. "/bad.png", { { 1, "x" } })
fails("ragged data: data[2] has 1 values, data[1] has 2", dir .. "/bad.png", { { 1, 2 }, { 1 } })
fails("data[2] is indexed from 0, data[1] from 1", dir .. "/bad.png", { { 1, 2 }, { [0] = 1, 2 } })
fails("unknown colormap 'viridis'", dir .. "/bad.png", zero, { colormap = "viridis" })
fails("must be greater than opts.min", dir .. "/bad.png", zero, { min = 1, max = 1 })
fails("the image is empty", dir .. "/bad.png", {})
fails("data must be a field or a table", dir .. "/bad.png", 42)
local rok, rmsg = pcall(image.read_png, dir .. "/missing.png")
assert(not rok and rmsg:find("missing.png", 1, true))
print("image: ok")
