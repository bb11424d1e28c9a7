-- diff_mpm.lua -- differentiable MPM (as in DiffTaichi's diffmpm): a block of
-- weakly compressible material is thrown with an initial velocity; gradient
-- descent through all the simulation steps finds the velocity that lands the
-- block's centre of mass on a target. Every step's state is kept (x[s][p],
-- grids per step), as reverse mode needs (docs/autodiff.md): a tape records
-- the steps and tape:backward() runs their adjoints.
--
--   lattice examples/diff_mpm.lua [--out DIR] [--test] [--bench N] [--threads T] [--fast-math]
--                                 [--window] [--frames N] [--quiet]
--
-- Writes DIR/diff_mpm_loss.png (the loss per iteration, log scale),
-- DIR/diff_mpm_before.png and DIR/diff_mpm_after.png (the particles' paths
-- with the first and the last velocity, the target in red). --test: a small
-- problem; checks that the loss falls by 10x and that the gradient of the
-- loss by the initial velocity matches central finite differences.
-- --bench N (bench/run.sh): times N forward passes and N gradient passes
-- (forward on a tape + backward), and the compile time of both. --frames N:
-- N iterations of gradient descent. --window: each iteration's throw played
-- in a window, the target in red, then the next iteration (space pauses, r
-- restarts from the first velocity, s saves a PNG, q quits).
local clock = require "lattice.clock"
local lt = require "lattice"
local image = require "lattice.image"
local example = require "lattice.example"

local opts = example.options("examples/diff_mpm.lua")
local test, out = opts.test, opts.out

local side = test and 8 or 24                  -- particles per side of the block
local n, n_grid, steps = side * side, test and 24 or 48, test and 24 or 64
local iterations = opts.frames or (test and 12 or 30)
local dx, inv_dx, dt = 1 / n_grid, n_grid, 2e-3
local p_vol = (dx * 0.5) ^ 2
local p_mass = p_vol
local gravity, E, bound = 9.8, 40, 3
-- the target: where a point thrown from the block's centre with velocity
-- (2, 1.5) would be after the simulated time (the block is not a point: the
-- best velocity is near that, not at it)
local T = (steps - 1) * dt
local target = lt.dvec2(0.2 + 2 * T, 0.2 + 1.5 * T - 0.5 * gravity * T * T)

lt.init { threads = opts.threads, default_fp = lt.f64, fast_math = opts.fast_math }
local G = { needs_grad = true }
local x = lt.field(lt.dvec2, { steps, n }, G)      -- position per step
local v = lt.field(lt.dvec2, { steps, n }, G)      -- velocity
local C = lt.field(lt.dmat2, { steps, n }, G)      -- affine velocity field (APIC)
local J = lt.field(lt.f64, { steps, n }, G)        -- volume ratio
local grid_p = lt.field(lt.dvec2, { steps, n_grid, n_grid }, G)   -- momentum after P2G
local grid_m = lt.field(lt.f64, { steps, n_grid, n_grid }, G)
local grid_v = lt.field(lt.dvec2, { steps, n_grid, n_grid }, G)   -- velocity after the grid step
local init_v = lt.field(lt.dvec2, {}, G)           -- what is optimised
local mean = lt.field(lt.dvec2, {}, G)             -- centre of mass at the end
local loss = lt.field(lt.f64, {}, G)

-- quadratic B-spline weights of the 3x3 cells around a particle
local stencil = lt.func(function(xp)
  local X = xp * inv_dx
  local base = lt.i32(X - 0.5)
  local fx = X - base
  return base, fx, 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2
end)

local launch = lt.kernel(function()
  for p in lt.ndrange(n) do v[0][p] = init_v.value end
end)

local p2g = lt.kernel(function(s)
  for p in lt.ndrange(n) do
    local base, fx, w0, w1, w2 = stencil(x[s][p])
    local w = { w0, w1, w2 }
    local stress = -dt * 4 * E * p_vol * (J[s][p] - 1) * inv_dx * inv_dx
    local affine = lt.dmat2(stress, 0, 0, stress) + p_mass * C[s][p]
    local mv = p_mass * v[s][p]
    for i in lt.static_range(3) do
      for j in lt.static_range(3) do
        local dpos = (lt.dvec2(i, j) - fx) * dx
        local weight = w[i + 1].x * w[j + 1].y
        lt.atomic_add(grid_p[s][base.x + i][base.y + j], weight * (mv + affine:mul(dpos)))
        lt.atomic_add(grid_m[s][base.x + i][base.y + j], weight * p_mass)
      end
    end
  end
end, { s = lt.i32 })

local grid_op = lt.kernel(function(s)
  for i, j in lt.ndrange(n_grid, n_grid) do
    local gv = grid_p[s][i][j]
    local m = grid_m[s][i][j]
    if m > 0 then gv = gv / m end
    gv.y = gv.y - dt * gravity
    if i < bound and gv.x < 0 then gv.x = 0 end
    if i > n_grid - bound and gv.x > 0 then gv.x = 0 end
    if j < bound and gv.y < 0 then gv.y = 0 end
    if j > n_grid - bound and gv.y > 0 then gv.y = 0 end
    grid_v[s][i][j] = gv
  end
end, { s = lt.i32 })

local g2p = lt.kernel(function(s)
  for p in lt.ndrange(n) do
    local base, fx, w0, w1, w2 = stencil(x[s][p])
    local w = { w0, w1, w2 }
    local new_v, new_C = lt.dvec2(0), lt.dmat2(0)
    for i in lt.static_range(3) do
      for j in lt.static_range(3) do
        local dpos = (lt.dvec2(i, j) - fx) * dx
        local weight = w[i + 1].x * w[j + 1].y
        local g = grid_v[s][base.x + i][base.y + j]
        new_v = new_v + weight * g
        new_C = new_C + (4 * weight * inv_dx * inv_dx) * g:outer(dpos)
      end
    end
    v[s + 1][p] = new_v
    x[s + 1][p] = x[s][p] + dt * new_v
    J[s + 1][p] = J[s][p] * (1 + dt * new_C:trace())
    C[s + 1][p] = new_C
  end
end, { s = lt.i32 })

local centre = lt.kernel(function(s)
  for p in lt.ndrange(n) do lt.atomic_add(mean.value, x[s][p] * (1 / n)) end
end, { s = lt.i32 })

local distance = lt.kernel(function()
  local d = mean.value - target
  loss.value = d:dot(d)
end)

local t0 = clock.now()
lt.compile(launch, p2g, grid_op, g2p, centre, distance)
local compile_forward = clock.now() - t0

-- the block at rest in the lower left; every step's other state starts at 0
local start = {}
for i = 0, side - 1 do
  for j = 0, side - 1 do start[#start + 1] = { 0.1 + (i + 0.5) * 0.2 / side, 0.1 + (j + 0.5) * 0.2 / side } end
end
local function reset()
  for _, f in ipairs { x, v, C, J, grid_p, grid_m, grid_v } do f:fill(0) end
  for p = 0, n - 1 do
    x[0][p] = start[p + 1]
    J[0][p] = 1
  end
  mean.value = { 0, 0 }
end

local function simulate()
  launch()
  for s = 0, steps - 2 do
    p2g(s)
    grid_op(s)
    g2p(s)
  end
  centre(steps - 1)
  distance()
end

-- the loss with initial velocity (vx, vy), no gradients
local function forward(vx, vy)
  reset()
  init_v.value = { vx, vy }
  simulate()
  return loss.value
end

-- the loss and its gradient by the initial velocity
local function gradient(vx, vy)
  reset()
  init_v.value = { vx, vy }
  lt.clear_grads(x, v, C, J, grid_p, grid_m, grid_v, init_v, mean, loss)
  local tape = lt.tape(simulate)
  tape:backward(loss)
  local g = init_v.grad.value
  return loss.value, g[1], g[2]
end

if opts.bench then
  -- each timing leaves out reset() (Lua-side setup, the same for both)
  local function prepare(vx, vy)
    reset()
    init_v.value = { vx, vy }
    lt.clear_grads(x, v, C, J, grid_p, grid_m, grid_v, init_v, mean, loss)
  end
  local function backward_pass()
    lt.tape(simulate):backward(loss)
  end
  prepare(1, 1)
  local t1 = clock.now()
  backward_pass()                                  -- compiles the adjoints on first use
  local first_grad = clock.now() - t1
  local function median(f)
    local times = {}
    for r = 1, opts.bench do
      prepare(1, 1)
      local t = clock.now()
      f()
      times[r] = (clock.now() - t) * 1e3
    end
    table.sort(times)
    return times[(#times + 1) // 2]
  end
  local fwd = median(simulate)
  local grad = median(backward_pass)
  print(("diff_mpm_forward_ms %.3f\ndiff_mpm_grad_ms %.3f\ndiff_mpm_grad_ratio %.3f"):format(fwd, grad, grad / fwd))
  -- the adjoints compile one by one when first called: the first gradient pass less a steady one
  print(("diff_mpm_compile_forward_ms %.1f\ndiff_mpm_compile_grad_ms %.1f"):format(compile_forward * 1e3,
    first_grad * 1e3 - grad))
  return
end

-- the particles' paths (every 4th step) on a picture, the target in red
local function picture(path)
  local res = 256
  local px = {}
  for i = 0, res - 1 do
    px[i] = {}
    for j = 0, res - 1 do px[i][j] = { 0.05, 0.05, 0.08 } end
  end
  local function dot(q, rgb, r)
    local ci, cj = math.floor(q[1] * res), math.floor(q[2] * res)
    for i = ci - r, ci + r do
      for j = cj - r, cj + r do
        if i >= 0 and i < res and j >= 0 and j < res then px[i][j] = rgb end
      end
    end
  end
  for s = 0, steps - 1, 4 do
    local shade = 0.3 + 0.7 * s / (steps - 1)
    for p = 0, n - 1, 3 do dot(x[s][p], { shade, shade, 1 }, 0) end
  end
  dot({ target.x, target.y }, { 1, 0.1, 0.1 }, 3)
  image.write_png(path, px)
  return path
end

-- ---- gradient descent ----------------------------------------------------------------
local vx, vy = 1.0, 1.0
local lr = 0.2 / (T * T)                        -- the loss is about |T v - d|^2: each step takes 40% of the way

if opts.window then
  local shown = lt.field(lt.vec2, n)             -- the particles at one step, for win:circles
  local goal = lt.field(lt.vec2, 1)
  goal[0] = { target.x, target.y }
  local at = lt.kernel(function(s)
    for p in lt.ndrange(n) do shown[p] = lt.vec2(x[s][p]) end
  end, { s = lt.i32 })
  local EVERY = 4                                  -- simulation steps a frame
  local view = example.window(opts, "diff_mpm", { 512, 512 }, iterations * (steps // EVERY))
  local it, s, l = 0, steps, 0
  while view:running() do
    if view:restarted() then vx, vy, it, s = 1.0, 1.0, 0, steps end
    if not view.paused then
      if s >= steps then                           -- the next iteration: its gradient, then play its throw
        local gx, gy
        l, gx, gy = gradient(vx, vy)
        it, s = it + 1, 0
        vx, vy = vx - lr * gx, vy - lr * gy
      end
      s = math.min(s + EVERY, steps - 1)
      if s == steps - 1 then s = steps end
    end
    at(math.min(s, steps - 1))
    view.win:clear(0x0d0d14)
    view.win:circles(goal, { radius = 6, color = 0xe02020 })
    view.win:circles(shown, { radius = 2, color = 0x8899ff })
    view.win:text(0.02, 0.95, ("iteration %d  loss %.3e  step %d"):format(it, l, math.min(s, steps - 1)))
    view:show()
  end
  view:close()
  return
end

local losses = {}
if not test then image.mkdirs(out) end
for it = 1, iterations do
  local l, gx, gy = gradient(vx, vy)
  losses[it] = l
  if it == 1 and not test then print(picture(out .. "/diff_mpm_before.png")) end
  if not test and (it == 1 or it % 5 == 0) or os.getenv("DIFF_MPM_VERBOSE") then
    print(("iteration %2d  loss %.4e  v0 = (%.4f, %.4f)"):format(it, l, vx, vy))
  end
  vx, vy = vx - lr * gx, vy - lr * gy
end
local final = forward(vx, vy)
losses[#losses + 1] = final

if test then
  -- the loss fell, and the gradient is the loss's derivative (central differences, f64)
  if not (final < losses[1] / 10) then
    error(("diff_mpm: the loss fell from %.6g to %.6g only (want 10x)"):format(losses[1], final))
  end
  local l, gx, gy = gradient(0.8, 1.3)
  local h = 1e-6
  local fx = (forward(0.8 + h, 1.3) - forward(0.8 - h, 1.3)) / (2 * h)
  local fy = (forward(0.8, 1.3 + h) - forward(0.8, 1.3 - h)) / (2 * h)
  local worst = 0
  for _, c in ipairs { { "x", gx, fx }, { "y", gy, fy } } do
    local err = math.abs(c[2] - c[3]) / math.max(1e-3, math.abs(c[3]))
    if err > 1e-5 then
      error(("diff_mpm: d loss / d v0.%s = %.10g, finite differences %.10g"):format(c[1], c[2], c[3]))
    end
    worst = math.max(worst, err)
  end
  print(("diff_mpm: loss %.3g -> %.3g in %d iterations; gradient (%.6g, %.6g) matches finite differences to "
    .. "%.1e (relative)"):format(losses[1], final, iterations, gx, gy, worst))
  return
end

print(picture(out .. "/diff_mpm_after.png"))
-- the loss curve, log scale
local w, h = 256, 128
local lo, hi = math.log(math.min(table.unpack(losses))), math.log(math.max(table.unpack(losses)))
local px = {}
for i = 0, w - 1 do
  px[i] = {}
  for j = 0, h - 1 do px[i][j] = { 1, 1, 1 } end
end
for k, l in ipairs(losses) do
  local i = math.floor((k - 1) / math.max(1, #losses - 1) * (w - 1))
  local j = math.floor((math.log(l) - lo) / math.max(1e-12, hi - lo) * (h - 5)) + 2
  for di = -1, 1 do for dj = -1, 1 do
    local a, b = i + di, j + dj
    if a >= 0 and a < w and b >= 0 and b < h then px[a][b] = { 0.8, 0.1, 0.1 } end
  end end
end
print(image.write_png(out .. "/diff_mpm_loss.png", px))
print(("loss %.4e -> %.4e after %d iterations, v0 = (%.4f, %.4f)"):format(losses[1], final, iterations, vx, vy))
