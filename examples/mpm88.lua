-- mpm88.lua -- 2-D MLS-MPM (moving least squares material point method), the
-- classic 88-line simulation: 8192 particles of a weakly compressible fluid
-- fall in a box on a 128^2 grid. Each substep clears the grid, scatters the
-- particles' mass and momentum to it (P2G, atomic adds), applies gravity and
-- the walls on the grid, and gathers velocities and their gradient back (G2P).
--
--   lattice examples/mpm88.lua [--out DIR] [--test] [--bench FRAMES] [--scale K] [--threads T] [--fast-math]
--                              [--window] [--frames N] [--quiet]
--
-- Writes DIR/mpm88_<frame>.png (the particles' density) and, when ffmpeg is
-- installed, DIR/mpm88.mp4. --bench FRAMES (bench/run.sh): no images; prints
-- the time to the first frame (every kernel compiled), the median time of
-- FRAMES more frames, and the particles' mean position (bench/mpm88.c prints
-- the same after as many frames). --test: 512 particles on a 32^2 grid for a few
-- substeps; mass and momentum conservation of P2G, and every particle's
-- position, velocity, affine matrix and J compared with the same algorithm
-- in plain Lua (examples/lib/mpm_ref.lua, double precision: a tolerance).
-- --fast-math: lt.init{fast_math = true} (docs/arithmetic.md). --window: the
-- particles as dots in a window (space pauses, r restarts, s saves a PNG, q
-- quits).
local clock = require "lattice.clock"
local t_start = clock.now()
local lt = require "lattice"
local image = require "lattice.image"
local example = require "lattice.example"

local opts = example.options("examples/mpm88.lua")
local ref, check = example.lib("mpm_ref"), example.lib("mpm_check")
local out, test = opts.out, opts.test

-- --scale K: K^2 times the particles on a K times finer grid, with a K times
-- shorter time step (bench/gpu.sh: K = 12 is 1.2 million particles)
local K = opts.scale or 1
local n_particles, n_grid = 8192 * K * K, 128 * K
local FRAMES, SUBSTEPS = 120, 50
if test then n_particles, n_grid, FRAMES, SUBSTEPS, K = 512, 32, 3, 10, 1 end
FRAMES = opts.frames or FRAMES
local dx, inv_dx, dt = 1 / n_grid, n_grid, 2e-4 / K
local p_vol, p_rho = (dx * 0.5) ^ 2, 1
local p_mass = p_vol * p_rho
local gravity, bound, E = 9.8, 3, 400

lt.init { threads = opts.threads, fast_math = opts.fast_math }
local x = lt.field(lt.vec2, n_particles)   -- position
local v = lt.field(lt.vec2, n_particles)   -- velocity
local C = lt.field(lt.mat2, n_particles)   -- affine velocity field (APIC)
local J = lt.field(lt.f32, n_particles)    -- volume ratio
local grid_v = lt.field(lt.vec2, { n_grid, n_grid })   -- momentum, then velocity
local grid_m = lt.field(lt.f32, { n_grid, n_grid })

-- Quadratic B-spline weights of the 3x3 cells around a particle, per axis.
-- An lt.func is inlined where it is called; it returns the base cell, the
-- fractional position and the three weight vectors.
local stencil = lt.func(function(xp)
  local X = xp * inv_dx
  local base = lt.i32(X - 0.5)
  local fx = X - base
  return base, fx, 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2
end)

local clear = lt.kernel(function()
  for i, j in lt.ndrange(n_grid, n_grid) do
    grid_v[i][j] = lt.vec2(0)
    grid_m[i][j] = 0
  end
end)

local p2g = lt.kernel(function()
  for p in lt.ndrange(n_particles) do
    local base, fx, w0, w1, w2 = stencil(x[p])
    local w = { w0, w1, w2 }   -- a Lua table of vectors: indexed by Lua numbers below
    local stress = -dt * 4 * E * p_vol * (J[p] - 1) * inv_dx * inv_dx
    local affine = lt.mat2(stress, 0, 0, stress) + p_mass * C[p]
    local mv = p_mass * v[p]
    for i in lt.static_range(3) do
      for j in lt.static_range(3) do
        local dpos = (lt.vec2(i, j) - fx) * dx
        local weight = w[i + 1].x * w[j + 1].y
        lt.atomic_add(grid_v[base.x + i][base.y + j], weight * (mv + affine:mul(dpos)))
        lt.atomic_add(grid_m[base.x + i][base.y + j], weight * p_mass)
      end
    end
  end
end)

local grid_op = lt.kernel(function()
  for i, j in lt.ndrange(n_grid, n_grid) do
    local gv = grid_v[i][j]
    local m = grid_m[i][j]
    if m > 0 then gv = gv / m end
    gv.y = gv.y - dt * gravity
    if i < bound and gv.x < 0 then gv.x = 0 end
    if i > n_grid - bound and gv.x > 0 then gv.x = 0 end
    if j < bound and gv.y < 0 then gv.y = 0 end
    if j > n_grid - bound and gv.y > 0 then gv.y = 0 end
    grid_v[i][j] = gv
  end
end)

local g2p = lt.kernel(function()
  for p in lt.ndrange(n_particles) do
    local base, fx, w0, w1, w2 = stencil(x[p])
    local w = { w0, w1, w2 }
    local new_v, new_C = lt.vec2(0), lt.mat2(0)
    for i in lt.static_range(3) do
      for j in lt.static_range(3) do
        local dpos = (lt.vec2(i, j) - fx) * dx
        local weight = w[i + 1].x * w[j + 1].y
        local g = grid_v[base.x + i][base.y + j]
        new_v = new_v + weight * g
        new_C = new_C + (4 * weight * inv_dx * inv_dx) * g:outer(dpos)
      end
    end
    v[p] = new_v
    x[p] = x[p] + dt * new_v
    J[p] = J[p] * (1 + dt * new_C:trace())
    C[p] = new_C
  end
end)

-- the particles' density on a square picture
-- (log(1 + density), white at the 99th percentile of the lit pixels: examples/lib/splat.lua)
local pixels, render, exposure = example.lib("splat").new(lt, x, n_particles, test and 64 or 512, 1, 0,
  { blur = test and 0 or 1, tone = "log" })

-- trace every kernel now and compile them all at once, on all cores
lt.compile(clear, p2g, grid_op, g2p, render)

-- the initial block of particles (the same numbers as bench/mpm88.c)
local positions = ref.init_positions(n_particles, 2)
local function start()
  x:from_table(positions)   -- one call for all particles (x[p] = ... per particle is slower)
  v:fill({ 0, -1 })
  C:fill(0)
  J:fill(1)
end
start()

-- ---- run --------------------------------------------------------------------------------

local st = test and ref.new(n_particles, n_grid, 2, positions) or nil
local fields = { x = x, v = v, C = C, J = J, grid_v = grid_v, grid_m = grid_m }
local function substep(k)
  clear()
  p2g()
  if test and k == 1 then check.p2g("mpm88", fields, n_particles, n_grid, 2, p_mass) end
  grid_op()
  g2p()
  if test then ref.substep(st) end
end

local function frame(n)
  for s = 1, SUBSTEPS do substep(s) end
  if test then check.particles("mpm88", fields, st, ("frame %d"):format(n)) end
  render()
end

if opts.bench then
  frame(1)
  print(("mpm88_lt_first_frame_ms %.3f"):format((clock.now() - t_start) * 1e3))
  print(("mpm88_lt_code_ms %.3f"):format(lt.stats().code_ms))   -- the five kernels' machine code
  local times = {}
  for f = 1, opts.bench do
    local t0 = clock.now()
    for s = 1, SUBSTEPS do substep(s) end
    times[f] = (clock.now() - t0) * 1e3
  end
  table.sort(times)
  print(("mpm88_lt_ms %.4f"):format(times[(#times + 1) // 2]))
  local mx, my = 0, 0
  for p = 0, n_particles - 1 do
    local xp = x[p]
    mx, my = mx + xp[1], my + xp[2]
  end
  print(("mpm88_lt_mean_x %.6f\nmpm88_lt_mean_y %.6f"):format(mx / n_particles, my / n_particles))
  return
end

if opts.window then
  example.animate(opts, "mpm88", { 640, 640 }, FRAMES, {
    reset = start,
    advance = function() for _ = 1, SUBSTEPS do clear(); p2g(); grid_op(); g2p() end end,
    draw = function(win, f)
      win:clear(0x112f41)
      win:circles(x, { radius = 1.5, color = 0x068587 })
      win:text(0.02, 0.95, ("%d particles  frame %d  %.0f fps"):format(n_particles, f, win.fps))
    end })
  return
end

local progress = example.progress(opts, "mpm88", FRAMES, SUBSTEPS)
image.mkdirs(out)
for f = 1, FRAMES do
  frame(f)
  local path = ("%s/mpm88_%05d.png"):format(out, f)
  image.write_png(path, pixels, { min = 0, max = exposure(), colormap = "inferno" })
  if not test and (f == 1 or f % 30 == 0) then progress:print(path) end
  progress(f)
end
progress:done()

if not test then
  local movie = example.movie(out, "mpm88")
  if movie then print(movie) end
end
