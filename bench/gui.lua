-- gui.lua -- lattice.gui's frame rate:
--   lattice bench/gui.lua image|circles [FRAMES] [--arch cpu|cuda] [--headless]
-- image: a 1024 x 1024 f32 field (changed each frame) drawn with win:image
-- into a 1024 x 1024 window, then win:show(); circles: 100k particles (moved
-- each frame) drawn with win:circles (radius 2) over a clear. Prints frames/s.
-- A real window (vsync off) when gui.available (run under Xvfb:
-- xvfb-run -a -s "-screen 0 1280x1024x24" lattice bench/gui.lua image);
-- otherwise headless = "null" (draws, writes nothing), timing the kernels
-- alone. --headless forces that.
local lt = require "lattice"
local gui = require "lattice.gui"
local core = require "lattice.core"

local what, frames, arch, headless = nil, 300, "cpu", false
local a = 1
while arg[a] do
  if arg[a] == "image" or arg[a] == "circles" then what = arg[a]
  elseif arg[a] == "--arch" then arch = arg[a + 1]; a = a + 1
  elseif arg[a] == "--headless" then headless = true
  elseif math.tointeger(tonumber(arg[a])) then frames = math.tointeger(tonumber(arg[a]))
  else what = nil; break end
  a = a + 1
end
if not what or frames < 1 then
  error("usage: lattice bench/gui.lua image|circles [FRAMES] [--arch cpu|cuda] [--headless]", 0)
end
lt.init { arch = arch }
local N = 1024
local mode = "null"                       -- (`c and false or "null"` would always be "null")
if gui.available and not headless then mode = false end
local win = gui.window("bench " .. what, { N, N }, { headless = mode, vsync = false })

local step
if what == "image" then
  local f = lt.field(lt.f32, { N, N })
  local paint = lt.kernel(function(t)
    for i, j in f do f[i][j] = lt.sin(i * 0.02 + t) * lt.cos(j * 0.03 - t) * 0.5 + 0.5 end
  end, { t = lt.f32 })
  step = function(k)
    if k % 10 == 0 then paint(k * 0.05) end    -- the field changes; drawing is what is timed
    win:image(f, { colormap = "inferno" })
  end
else
  local n = 100000
  local pos = lt.field(lt.vec2, n)
  local move = lt.kernel(function(t)
    for i in pos do
      local r = (i % 997) / 997 * 0.45
      local a0 = i * 0.618 * 6.283 + t * (1 + i % 7) * 0.1
      pos[i] = lt.vec2(0.5 + r * lt.cos(a0), 0.5 + r * lt.sin(a0))
    end
  end, { t = lt.f32 })
  step = function(k)
    move(k * 0.05)
    win:clear(0x101020)
    win:circles(pos, { radius = 2, color = 0x66ccff })
  end
end

step(0)                                   -- compile outside the timing
win:show()
local t0 = core.now()
for k = 1, frames do
  step(k)
  win:show()
  if not win:running() then break end
end
local dt = core.now() - t0
print(("gui %s: %d frames in %.3f s: %.1f frames/s (%s, %s, last-second fps %.1f)"):format(what, frames, dt,
  frames / dt, win.mode, arch, win.fps))
win:close()
