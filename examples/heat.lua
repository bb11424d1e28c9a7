-- heat.lua -- 2-D heat diffusion on a dense grid: an explicit 5-point stencil
-- ping-pongs between two fields; the middle of the top edge is held hot, the
-- rest of the border cold.
--
--   lattice examples/heat.lua [--out DIR] [--test] [--window] [--frames N] [--quiet]
--
-- Writes DIR/heat_<step>.png (default DIR: ./out) and prints their paths.
-- --test: a small grid and few steps, every cell checked against the same
-- scheme in plain Lua (double precision, so within a tolerance). --frames N:
-- N pictures (EVERY steps apart). --window: the temperature in a window, 50
-- steps a frame (space pauses, r restarts, s saves a PNG, q quits).
local lt = require "lattice"
local image = require "lattice.image"

local example = require "lattice.example"
local opts = example.options("examples/heat.lua")
local out, test = opts.out, opts.test

local W, H = 200, 200
local STEPS, EVERY = 8000, 2000        -- total steps, steps between frames
if test then W, H, STEPS, EVERY = 24, 16, 60, 30 end
if opts.frames then STEPS = opts.frames * EVERY end
local ALPHA = 0.24                     -- diffusion number; stable below 0.25
local HOT_LO, HOT_HI = W // 3, W - W // 3

lt.init {}
local u, v = lt.field(lt.f32, { W, H }), lt.field(lt.f32, { W, H })

-- Kernels are made by Lua functions: each call traces a kernel with its own
-- fields captured as constants.
local function make_init(f)
  return lt.kernel(function()
    for i, j in lt.ndrange(W, H) do
      local t = 0.0
      if j == H - 1 and i >= HOT_LO and i < HOT_HI then t = 1.0 end
      f[i][j] = t
    end
  end)
end

-- the interior only: the border keeps its initial (boundary) values
local function make_step(src, dst)
  return lt.kernel(function()
    for i, j in lt.ndrange(W - 2, H - 2) do
      local x, y = i + 1, j + 1
      local c = src[x][y]
      dst[x][y] = c + ALPHA * (src[x - 1][y] + src[x + 1][y] + src[x][y - 1] + src[x][y + 1] - 4 * c)
    end
  end)
end

local init_u, init_v = make_init(u), make_init(v)
init_u()
init_v()
local u_to_v, v_to_u = make_step(u, v), make_step(v, u)

-- plain-Lua reference of the same scheme, grid r[x][y]
local r, r2
local function ref_init()
  local g = {}
  for x = 0, W - 1 do
    g[x] = {}
    for y = 0, H - 1 do g[x][y] = (y == H - 1 and x >= HOT_LO and x < HOT_HI) and 1.0 or 0.0 end
  end
  return g
end
local function ref_step(s, d)
  for x = 1, W - 2 do
    for y = 1, H - 2 do
      local c = s[x][y]
      d[x][y] = c + ALPHA * (s[x - 1][y] + s[x + 1][y] + s[x][y - 1] + s[x][y + 1] - 4 * c)
    end
  end
end
if test then r, r2 = ref_init(), ref_init() end

local cur = u
if opts.window then
  example.animate(opts, "heat", { 3 * W, 3 * H }, STEPS // 50, {
    reset = function()
      init_u()
      init_v()
      cur = u
    end,
    advance = function()
      for _ = 1, 50 do
        if cur == u then u_to_v() ; cur = v else v_to_u() ; cur = u end
      end
    end,
    draw = function(win, frame)
      win:image(cur, { min = 0, max = 1, colormap = "heat" })
      win:text(0.02, 0.95, ("step %d  %.0f fps"):format(50 * frame, win.fps), { color = 0x88ccff })
    end })
  return
end

local progress = example.progress(opts, "heat", STEPS // EVERY, EVERY)
image.mkdirs(out)
for step = 1, STEPS do
  if cur == u then u_to_v() ; cur = v else v_to_u() ; cur = u end
  if test then ref_step(r, r2); r, r2 = r2, r end
  if step % EVERY == 0 then
    if test then
      local worst = 0
      for x = 0, W - 1 do
        for y = 0, H - 1 do
          local got, want = cur[x][y], r[x][y]
          local err = math.abs(got - want)
          if not (err <= 1e-4) then
            error(("heat: step %d cell (%d,%d): kernel %.9g, plain Lua %.9g"):format(step, x, y, got, want))
          end
          worst = math.max(worst, err)
        end
      end
      progress:print(("heat: step %d: %d cells match plain Lua (largest difference %.2g)"):format(step, W * H, worst))
    end
    local path = ("%s/heat_%05d.png"):format(out, step)
    image.write_png(path, cur, { min = 0, max = 1, colormap = "heat" })
    progress:print(path)
    progress(step // EVERY)
  end
end
progress:done()
