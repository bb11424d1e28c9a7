-- splat.lua -- the pictures of the particle examples: how many points fall
-- on each pixel of a res x res image, seen along z.
--   local splat = example.lib("splat")
--   local pixels, render = splat.new(lt, pos, n, res, scale, offset)
-- pos: a field of vec2 or vec3 points (n of them); a point p lands on pixel
-- (p * scale + offset) * res (scale 1 and offset 0 map [0, 1) onto the
-- picture). render() is a kernel that redraws `pixels`.
local M = {}

function M.new(lt, pos, n, res, scale, offset)
  scale, offset = scale or 1, offset or 0
  local pixels = lt.field(lt.f32, { res, res })
  local render = lt.kernel(function()
    for i, j in lt.ndrange(res, res) do pixels[i][j] = 0 end
    for p in lt.ndrange(n) do
      local q = lt.i32((pos[p] * scale + offset) * res)
      if q.x >= 0 and q.x < res and q.y >= 0 and q.y < res then lt.atomic_add(pixels[q.x][q.y], 1) end
    end
  end)
  return pixels, render
end

return M
