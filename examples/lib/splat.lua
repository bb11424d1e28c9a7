-- splat.lua -- the pictures of the particle examples: how many points fall
-- on each pixel of a res x res image, seen along z.
--   local splat = example.lib("splat")
--   local pixels, render, exposure = splat.new(lt, pos, n, res, scale, offset[, look])
-- pos: a field of vec2 or vec3 points (n of them); a point p lands on pixel
-- (p * scale + offset) * res (scale 1 and offset 0 map [0, 1) onto the
-- picture). render() is a kernel that redraws `pixels`: the count per pixel.
-- look (nbody.lua, mpm3d.lua: pictures where a few pixels hold many points
-- and most one or none): { blur = R } spreads each point over the
-- (2R+1)^2 pixels around it (a Gaussian of width R/2, total 1); { tone =
-- "log" } draws log(1 + count). exposure() then says what to draw as white:
-- the value of the 99th percentile of the pixels that hold something (from
-- a histogram that render() makes), so the picture is exposed by its data.
local M = {}

local BINS, PER = 2048, 16   -- the histogram: bin b holds counts in [b, b + 1) / PER (the last: more)

function M.new(lt, pos, n, res, scale, offset, look)
  scale, offset, look = scale or 1, offset or 0, look or {}
  local pixels = lt.field(lt.f32, { res, res })
  local hist = lt.field(lt.i32, BINS)
  local log, R = look.tone == "log", look.blur or 0
  local weights, sum = {}, 0                      -- Lua numbers: constants of the kernel
  for di = -R, R do
    weights[di] = {}
    for dj = -R, R do
      local w = R == 0 and 1 or math.exp(-(di * di + dj * dj) / (2 * (R / 2) ^ 2))
      weights[di][dj], sum = w, sum + w
    end
  end
  local render = lt.kernel(function()
    for i, j in lt.ndrange(res, res) do pixels[i][j] = 0 end
    for b in lt.ndrange(BINS) do hist[b] = 0 end
    for p in lt.ndrange(n) do
      local q = lt.i32((pos[p] * scale + offset) * res)
      for di in lt.static(-R, R) do
        for dj in lt.static(-R, R) do
          local x, y = q.x + di, q.y + dj
          if x >= 0 and x < res and y >= 0 and y < res then lt.atomic_add(pixels[x][y], weights[di][dj] / sum) end
        end
      end
    end
    for i, j in lt.ndrange(res, res) do
      local c = pixels[i][j]
      if c > 0 then lt.atomic_add(hist[lt.min(lt.i32(c * PER), BINS - 1)], 1) end
      if log then pixels[i][j] = lt.log(1 + c) end
    end
  end)
  local function exposure()
    local h, total = hist:to_table(), 0
    for b = 1, BINS do total = total + h[b] end
    local seen, want, count = 0, 0.99 * total, 1
    for b = 1, BINS do
      seen = seen + h[b]
      if seen >= want then
        count = b / PER                           -- the top of bin b - 1
        break
      end
    end
    return log and math.log(1 + count) or count
  end
  return pixels, render, exposure
end

return M
