-- mpm3d.lua -- 3-D MLS-MPM: a cube of weakly compressible fluid falls into a
-- box and splashes, 16384 particles on a 32^3 grid. The step is mpm88.lua's
-- in three dimensions: 3-vectors, 3x3 affine matrices, and 27 grid cells per
-- particle, unrolled at trace time with lt.static_range.
--
--   lattice examples/mpm3d.lua [--out DIR] [--test] [--window] [--frames N] [--quiet]
--
-- Writes DIR/mpm3d_<frame>.png (the particles seen along z: log(1 + how many
-- fall near each pixel), white at the 99th percentile of the lit pixels of
-- that frame, examples/lib/splat.lua) and, when ffmpeg is installed,
-- DIR/mpm3d.mp4. --window: the particles as dots seen along z, coloured by
-- depth (space pauses, r restarts, s saves a PNG, q quits). --test: 256
-- particles on a 16^3 grid for a few substeps, checked like mpm88.lua's
-- (conservation in P2G; every particle against examples/lib/mpm_ref.lua).
local lt = require "lattice"
local image = require "lattice.image"
local example = require "lattice.example"

local opts = example.options("examples/mpm3d.lua")
local ref, check = example.lib("mpm_ref"), example.lib("mpm_check")
local out, test = opts.out, opts.test

local n_particles, n_grid = 16384, 32
local FRAMES, SUBSTEPS = 90, 25
if test then n_particles, n_grid, FRAMES, SUBSTEPS = 256, 16, 2, 8 end
FRAMES = opts.frames or FRAMES
local k = ref.params(n_grid, 3)   -- dx, dt, p_vol, p_mass, gravity, bound, E
local dx, inv_dx, dt, p_vol, p_mass = k.dx, k.inv_dx, k.dt, k.p_vol, k.p_mass

lt.init {}
local x = lt.field(lt.vec3, n_particles)
local v = lt.field(lt.vec3, n_particles)
local C = lt.field(lt.mat3, n_particles)
local J = lt.field(lt.f32, n_particles)
local grid_v = lt.field(lt.vec3, { n_grid, n_grid, n_grid })
local grid_m = lt.field(lt.f32, { n_grid, n_grid, n_grid })

-- The 27 cells around a particle: calls body(offset, weight, dpos) for each,
-- unrolled while tracing (the offsets are Lua numbers).
local around = lt.func(function(xp, body)
  local X = xp * inv_dx
  local base = lt.i32(X - 0.5)
  local fx = X - base
  local w = { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
  for a in lt.static_range(3) do
    for b in lt.static_range(3) do
      for c in lt.static_range(3) do
        local offset = lt.vec3(a, b, c)
        body(base + lt.ivec3(a, b, c), w[a + 1].x * w[b + 1].y * w[c + 1].z, (offset - fx) * dx)
      end
    end
  end
end)

local clear = lt.kernel(function()
  for i, j, l in lt.ndrange(n_grid, n_grid, n_grid) do
    grid_v[i][j][l] = lt.vec3(0)
    grid_m[i][j][l] = 0
  end
end)

local p2g = lt.kernel(function()
  for p in lt.ndrange(n_particles) do
    local stress = -dt * 4 * k.E * p_vol * (J[p] - 1) * inv_dx * inv_dx
    local affine = stress * lt.mat3:identity() + p_mass * C[p]
    local mv = p_mass * v[p]
    around(x[p], function(cell, weight, dpos)
      lt.atomic_add(grid_v[cell], weight * (mv + affine:mul(dpos)))
      lt.atomic_add(grid_m[cell], weight * p_mass)
    end)
  end
end)

local grid_op = lt.kernel(function()
  for I in lt.grouped(lt.ndrange(n_grid, n_grid, n_grid)) do
    local gv = grid_v[I]
    local m = grid_m[I]
    if m > 0 then gv = gv / m end
    gv.y = gv.y - dt * k.gravity
    for d in lt.static_range(3) do
      if I[d] < k.bound and gv[d] < 0 then gv[d] = 0 end
      if I[d] > n_grid - k.bound and gv[d] > 0 then gv[d] = 0 end
    end
    grid_v[I] = gv
  end
end)

local g2p = lt.kernel(function()
  for p in lt.ndrange(n_particles) do
    local new_v, new_C = lt.vec3(0), lt.mat3(0)
    around(x[p], function(cell, weight, dpos)
      local g = grid_v[cell]
      new_v = new_v + weight * g
      new_C = new_C + (4 * weight * inv_dx * inv_dx) * g:outer(dpos)
    end)
    v[p] = new_v
    x[p] = x[p] + dt * new_v
    J[p] = J[p] * (1 + dt * new_C:trace())
    C[p] = new_C
  end
end)

-- the particles seen along z
local pixels, render, exposure = example.lib("splat").new(lt, x, n_particles, test and 32 or 384, 1, 0,
  { blur = test and 0 or 1, tone = "log" })

-- the window's view: positions along z in [0, 1]^2, and the depth
local screen = lt.field(lt.vec2, n_particles)
local depth = lt.field(lt.f32, n_particles)
local project = lt.kernel(function()
  for p in lt.ndrange(n_particles) do
    screen[p] = lt.vec2(x[p].x, x[p].y)
    depth[p] = x[p].z
  end
end)

-- trace every kernel now and compile them all at once, on all cores
lt.compile(clear, p2g, grid_op, g2p, render, project)

local positions = ref.init_positions(n_particles, 3, 0.3, 0.4)
local function start()
  x:from_table(positions)   -- one call for all particles (x[p] = ... per particle is slower)
  v:fill({ 0, -1, 0 })
  C:fill(0)
  J:fill(1)
end
start()

local st = test and ref.new(n_particles, n_grid, 3, positions) or nil
local fields = { x = x, v = v, C = C, J = J, grid_v = grid_v, grid_m = grid_m }
local function substep(s)
  clear()
  p2g()
  if test and s == 1 then check.p2g("mpm3d", fields, n_particles, n_grid, 3, p_mass) end
  grid_op()
  g2p()
  if test then ref.substep(st) end
end

if opts.window then
  example.animate(opts, "mpm3d", { 600, 600 }, FRAMES, {
    reset = start,
    advance = function() for _ = 1, SUBSTEPS do clear(); p2g(); grid_op(); g2p() end end,
    draw = function(win, frame)
      project()
      win:clear(0x101018)
      win:circles(screen, { radius = 2, color_field = depth, min = 0, max = 1, colormap = "inferno" })
      win:text(0.02, 0.95, ("%d particles  frame %d  %.0f fps"):format(n_particles, frame, win.fps))
    end })
  return
end

local progress = example.progress(opts, "mpm3d", FRAMES, SUBSTEPS)
image.mkdirs(out)
for frame = 1, FRAMES do
  for s = 1, SUBSTEPS do substep(s) end
  if test then check.particles("mpm3d", fields, st, ("frame %d"):format(frame)) end
  render()
  local path = ("%s/mpm3d_%05d.png"):format(out, frame)
  image.write_png(path, pixels, { min = 0, max = exposure(), colormap = "inferno" })
  if not test and (frame == 1 or frame % 30 == 0) then progress:print(path) end
  progress(frame)
end
progress:done()

if not test then
  local movie = example.movie(out, "mpm3d")
  if movie then print(movie) end
end
