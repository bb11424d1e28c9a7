-- julia.lua -- a Julia-set fractal: one parallel kernel colours every pixel
-- by how many steps of z = z^2 + c it takes to escape; c turns with t.
--
--   lattice examples/julia.lua [--out DIR] [--test] [--window] [--frames N] [--quiet]
--
-- Writes DIR/julia_<frame>.png (default DIR: ./out) and prints their paths.
-- --test: a small image, checked pixel by pixel against the same algorithm
-- in plain Lua (rounded to f32 at every operation, like the kernel).
-- --window: the fractal in a window, t turning with time (space pauses, r
-- restarts, s saves a PNG to DIR, q or Escape quits; lattice.example).
local lt = require "lattice"
local image = require "lattice.image"

local example = require "lattice.example"
local opts = example.options("examples/julia.lua")
local out, test = opts.out, opts.test

local N = test and 32 or 320          -- the image is 2N x N pixels
local MAXIT = 50
local FRAMES = test and { 0.0, 1.3 } or { 0.0, 0.8, 1.6, 2.4 }
if opts.frames then                   -- --frames N: N values of t, 0.8 apart
  FRAMES = {}
  for k = 1, opts.frames do FRAMES[k] = (k - 1) * 0.8 end
end

lt.init {}
local iters = lt.field(lt.i32, { 2 * N, N })

local paint = lt.kernel(function(t)
  for i, j in lt.ndrange(2 * N, N) do
    local zr, zi = (i / N - 1) * 2, (j / N - 0.5) * 2
    local cr, ci = -0.8, lt.cos(t) * 0.2
    local n = 0
    while zr * zr + zi * zi < 4 and n < MAXIT do
      zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
      n = n + 1
    end
    iters[i][j] = n
  end
end, { t = lt.f32 })

-- The same computation in plain Lua; f() rounds to f32 as the kernel does.
local function f(x) return (string.unpack("f", string.pack("f", x))) end
local function reference(t, i, j)
  local zr, zi = f(f(f(i / N) - 1) * 2), f(f(f(j / N) - 0.5) * 2)
  local cr, ci = f(-0.8), f(f(math.cos(f(t))) * f(0.2))
  local n = 0
  while f(f(zr * zr) + f(zi * zi)) < 4 and n < MAXIT do
    zr, zi = f(f(f(zr * zr) - f(zi * zi)) + cr), f(f(2 * zr * zi) + ci)
    n = n + 1
  end
  return n
end

if opts.window then
  example.animate(opts, "julia", { 2 * N, N }, #FRAMES * 25, {
    reset = function() end,
    advance = function() end,
    draw = function(win, frame)
      local t = frame * 0.02
      paint(t)
      win:image(iters, { min = 0, max = MAXIT, colormap = "inferno" })
      win:text(0.02, 0.92, ("t = %.2f  %.0f fps"):format(t, win.fps), { color = 0xffffff })
    end })
  return
end

local progress = example.progress(opts, "julia", #FRAMES)
image.mkdirs(out)
for frame, t in ipairs(FRAMES) do
  paint(t)
  if test then
    -- f32 rounding of cos and a fused multiply-add may tip a pixel on the
    -- set's boundary by an iteration; anything more is a bug
    local bad, total = 0, 2 * N * N
    for i = 0, 2 * N - 1 do
      for j = 0, N - 1 do
        local got, want = iters[i][j], reference(t, i, j)
        if got ~= want then
          bad = bad + 1
          if bad > total // 100 then
            error(("julia: t=%g pixel (%d,%d): kernel %d iterations, plain Lua %d (%d pixels differ)")
              :format(t, i, j, got, want, bad))
          end
        end
      end
    end
    progress:print(("julia: t=%g: %d of %d pixels match plain Lua"):format(t, total - bad, total))
  end
  local path = ("%s/julia_%d.png"):format(out, frame - 1)
  image.write_png(path, iters, { min = 0, max = MAXIT, colormap = "inferno" })
  progress:print(path)
  progress(frame)
end
progress:done()
