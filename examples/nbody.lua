-- nbody.lua -- a rotating disc of 2048 stars under their own gravity
-- (direct summation, softened, symplectic Euler). Positions and velocities
-- are 3-vectors; the pairwise pull is an lt.func inlined into the force loop,
-- which runs serially inside the parallel loop over the stars; the disc is
-- drawn with lt.random in a kernel.
--
--   lattice examples/nbody.lua [--out DIR] [--test] [--window] [--frames N] [--quiet]
--
-- Writes DIR/nbody_<frame>.png (the stars seen from above) and, when ffmpeg
-- is installed, DIR/nbody.mp4. A pixel's colour is log(1 + the stars on it),
-- and white is where the 99th percentile of the lit pixels lies in that
-- frame (examples/lib/splat.lua): the dense centre would otherwise leave the
-- rest of the disc black. --window: the stars as dots in a window (space
-- pauses, r restarts, s saves a PNG, q quits). --test: 48 stars for a few steps, every
-- position and velocity compared with the same integrator in plain Lua, and
-- the total energy (computed by a kernel with a reduction, and in Lua) kept
-- within a tolerance.
local lt = require "lattice"
local image = require "lattice.image"
local example = require "lattice.example"

local opts = example.options("examples/nbody.lua")
local out, test = opts.out, opts.test

local N, FRAMES, STEPS = 2048, 90, 4
if test then N, FRAMES, STEPS = 48, 3, 5 end
FRAMES = opts.frames or FRAMES
local G, EPS, DT = 1.0, 0.02, 2e-4

lt.init { seed = 2024 }
local pos = lt.field(lt.vec3, N)
local vel = lt.field(lt.vec3, N)
local mass = lt.field(lt.f32, N)
local energy = lt.field(lt.f64, {})

-- a disc of radius 0.5 in z = 0, each star on a roughly circular orbit
local init = lt.kernel(function()
  for i in lt.ndrange(N) do
    local r = 0.05 + 0.45 * lt.sqrt(lt.random())
    local th = 2 * math.pi * lt.random()
    local p = lt.vec3(r * lt.cos(th), r * lt.sin(th), (lt.random() - 0.5) * 0.02)
    local speed = lt.sqrt(G * r * r / (r * r + EPS * EPS) / r) * 0.9   -- about the inner mass
    pos[i] = p
    vel[i] = speed * lt.vec3(-lt.sin(th), lt.cos(th), 0)
    mass[i] = 1.0 / N
  end
end)

-- the pull of a star of mass mj at pj on a star at pi (softened)
local pull = lt.func(function(pi, pj, mj)
  local d = pj - pi
  local r2 = d:norm_sqr() + EPS * EPS
  return (G * mj / (r2 * lt.sqrt(r2))) * d
end)

local step = lt.kernel(function()
  for i in lt.ndrange(N) do
    local p = pos[i]
    local a = lt.vec3(0)
    for j = 0, N - 1 do a = a + pull(p, pos[j], mass[j]) end   -- serial: inside the parallel loop
    vel[i] = vel[i] + DT * a
  end
  for i in lt.ndrange(N) do pos[i] = pos[i] + DT * vel[i] end
end)

-- kinetic plus potential energy, summed into one f64 with atomic adds
local measure = lt.kernel(function()
  energy.value = 0
  for i in lt.ndrange(N) do
    local e = 0.5 * mass[i] * vel[i]:norm_sqr()
    for j = 0, N - 1 do
      if j ~= i then e = e - 0.5 * G * mass[i] * mass[j] / lt.sqrt((pos[j] - pos[i]):norm_sqr() + EPS * EPS) end
    end
    lt.atomic_add(energy.value, lt.f64(e))
  end
end)

-- the stars seen from above: [-0.625, 0.625] onto the picture
local pixels, render, exposure = example.lib("splat").new(lt, pos, N, test and 32 or 400, 0.8, 0.5,
  { blur = test and 0 or 2, tone = "log" })

-- the same view for the window: positions in [0, 1]^2 and a colour by speed
local screen = lt.field(lt.vec2, N)
local speed = lt.field(lt.f32, N)
local project = lt.kernel(function()
  for i in lt.ndrange(N) do
    local p = pos[i]
    screen[i] = lt.vec2(p.x * 0.8 + 0.5, p.y * 0.8 + 0.5)
    speed[i] = vel[i]:norm()
  end
end)

-- trace every kernel now and compile them all at once, on all cores
lt.compile(init, step, measure, render, project)

-- ---- the plain-Lua reference of --test ------------------------------------------------

local ref
local function ref_step()
  local P, V, M = ref.p, ref.v, ref.m
  for i = 0, N - 1 do
    local a = { 0, 0, 0 }
    for j = 0, N - 1 do
      local d = { P[j][1] - P[i][1], P[j][2] - P[i][2], P[j][3] - P[i][3] }
      local r2 = d[1] ^ 2 + d[2] ^ 2 + d[3] ^ 2 + EPS * EPS
      local s = G * M[j] / (r2 * math.sqrt(r2))
      for c = 1, 3 do a[c] = a[c] + s * d[c] end
    end
    for c = 1, 3 do V[i][c] = V[i][c] + DT * a[c] end
  end
  for i = 0, N - 1 do for c = 1, 3 do P[i][c] = P[i][c] + DT * V[i][c] end end
end

local function ref_energy()
  local P, V, M, e = ref.p, ref.v, ref.m, 0
  for i = 0, N - 1 do
    e = e + 0.5 * M[i] * (V[i][1] ^ 2 + V[i][2] ^ 2 + V[i][3] ^ 2)
    for j = 0, N - 1 do
      if j ~= i then
        local r2 = (P[j][1] - P[i][1]) ^ 2 + (P[j][2] - P[i][2]) ^ 2 + (P[j][3] - P[i][3]) ^ 2 + EPS * EPS
        e = e - 0.5 * G * M[i] * M[j] / math.sqrt(r2)
      end
    end
  end
  return e
end

local function compare(when)
  local worst = 0
  for i = 0, N - 1 do
    local p, v = pos[i], vel[i]
    for c = 1, 3 do
      local dp, dv = math.abs(p[c] - ref.p[i][c]), math.abs(v[c] - ref.v[i][c])
      if not (dp <= 1e-5 and dv <= 1e-3) then
        error(("nbody: %s: star %d component %d: kernel x=%.9g v=%.9g, plain Lua x=%.9g v=%.9g")
          :format(when, i, c, p[c], v[c], ref.p[i][c], ref.v[i][c]))
      end
      worst = math.max(worst, dp)
    end
  end
  measure()
  local e, want = energy.value, ref_energy()
  if not (math.abs(e - want) <= 1e-4 * math.abs(want)) then
    error(("nbody: %s: energy %.9g, plain Lua %.9g"):format(when, e, want))
  end
  print(("nbody: %s: %d stars match plain Lua (largest position difference %.2g), energy %.6f")
    :format(when, N, worst, e))
  return e
end

-- ---- run ----------------------------------------------------------------------------------

init()
if opts.window then
  example.animate(opts, "nbody", { 640, 640 }, FRAMES, {
    reset = init,
    advance = function() for _ = 1, STEPS do step() end end,
    draw = function(win, frame)
      project()
      win:clear(0x000000)
      win:circles(screen, { radius = 1.5, color_field = speed, min = 0, max = 1.5, colormap = "inferno" })
      win:text(0.02, 0.95, ("%d stars  frame %d  %.0f fps"):format(N, frame, win.fps), { color = 0xcccccc })
    end })
  return
end
if test then   -- the reference starts from the drawn disc
  ref = { p = {}, v = {}, m = {} }
  for i = 0, N - 1 do ref.p[i], ref.v[i], ref.m[i] = pos[i], vel[i], mass[i] end
end
local e0 = test and compare("start")
local progress = example.progress(opts, "nbody", FRAMES, STEPS)
image.mkdirs(out)
for frame = 1, FRAMES do
  for _ = 1, STEPS do
    step()
    if test then ref_step() end
  end
  if test then
    local e = compare(("frame %d"):format(frame))
    if not (math.abs(e - e0) <= 1e-2 * math.abs(e0)) then
      error(("nbody: energy drifted from %.9g to %.9g"):format(e0, e))
    end
  end
  render()
  local path = ("%s/nbody_%05d.png"):format(out, frame)
  image.write_png(path, pixels, { min = 0, max = exposure(), colormap = "inferno" })
  if not test and (frame == 1 or frame % 30 == 0) then progress:print(path) end
  progress(frame)
end
progress:done()

if not test then
  local movie = example.movie(out, "nbody")
  if movie then print(movie) end
end
