-- shrink.lua -- lattice docs/gallery/shrink.lua IN.png OUT.png [WIDTH]: the
-- picture scaled down to WIDTH pixels wide (default 256; never up), each
-- pixel the mean of the box of pixels it covers (lattice.image reads and writes).
local image = require "lattice.image"
local src, dst, width = arg[1], arg[2], tonumber(arg[3] or 256)
if not (src and dst) then error("usage: lattice docs/gallery/shrink.lua IN.png OUT.png [WIDTH]", 0) end
local img = image.read_png(src)
local W = math.min(width, img.width)
local H = math.max(1, math.floor(img.height * W / img.width + 0.5))
local px = {}
for x = 0, W - 1 do
  local col, x0, x1 = {}, x * img.width // W, math.max(x * img.width // W + 1, (x + 1) * img.width // W)
  for y = 0, H - 1 do
    local y0, y1 = y * img.height // H, math.max(y * img.height // H + 1, (y + 1) * img.height // H)
    local r, g, b, n = 0, 0, 0, 0
    for i = x0, x1 - 1 do
      for j = y0, y1 - 1 do
        local pr, pg, pb = img.pixel(i, j)
        r, g, b, n = r + pr, g + pg, b + pb, n + 1
      end
    end
    col[y] = { r / n / 255, g / n / 255, b / n / 255 }
  end
  px[x] = col
end
print(image.write_png(dst, px))
