-- mpm88_one.lua -- examples/mpm88.lua's algorithm written as ONE kernel: the
-- four loops of a substep (clear the grid, P2G with atomic adds, grid update,
-- G2P) are four top-level loops of `step`, one launch a substep (the form of
-- Taichi's own mpm88). Same constants, same initial particles
-- (examples/lib/mpm_ref.lua, bench/mpm88_init.h), no pictures. bench/run.sh
-- compares its first frame with a steady one, with the kernel cache off.
--   lattice bench/mpm88_one.lua --bench FRAMES [--threads T]
-- Prints, like examples/mpm88.lua --bench:
--   mpm88_one_first_frame_ms MS   from the script's start, before lt.init, to the
--                                 end of the first frame (the kernel traced and
--                                 compiled on the way)
--   mpm88_one_code_ms MS          lt.stats().code_ms: the kernel's machine code
--   mpm88_one_ms MS               the median of FRAMES more frames
--   mpm88_one_mean_x / _y         the particles' mean position (bench/mpm88.c's)
local clock = require "lattice.clock"
local t_start = clock.now()
local lt = require "lattice"
local example = require "lattice.example"

local opts = example.options("bench/mpm88_one.lua")
assert(opts.bench and opts.bench >= 1, "usage: lattice bench/mpm88_one.lua --bench FRAMES [--threads T]")
local dir = arg[0]:match("^(.*)/") or "."
local ref = assert(loadfile(dir .. "/../examples/lib/mpm_ref.lua"))()

local n_particles, n_grid = 8192, 128
local SUBSTEPS = 50
local dx, inv_dx, dt = 1 / n_grid, n_grid, 2e-4
local p_vol, p_rho = (dx * 0.5) ^ 2, 1
local p_mass = p_vol * p_rho
local gravity, bound, E = 9.8, 3, 400

-- fast_math: the examples' --fast-math, once lattice.example has it (nil today)
lt.init { threads = opts.threads, fast_math = opts.fast_math }
local x = lt.field(lt.vec2, n_particles)
local v = lt.field(lt.vec2, n_particles)
local C = lt.field(lt.mat2, n_particles)
local J = lt.field(lt.f32, n_particles)
local grid_v = lt.field(lt.vec2, { n_grid, n_grid })
local grid_m = lt.field(lt.f32, { n_grid, n_grid })

local stencil = lt.func(function(xp)
  local X = xp * inv_dx
  local base = lt.i32(X - 0.5)
  local fx = X - base
  return base, fx, 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2
end)

local step = lt.kernel(function()
  for i, j in lt.ndrange(n_grid, n_grid) do
    grid_v[i][j] = lt.vec2(0)
    grid_m[i][j] = 0
  end
  for p in lt.ndrange(n_particles) do
    local base, fx, w0, w1, w2 = stencil(x[p])
    local w = { w0, w1, w2 }
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

x:from_table(ref.init_positions(n_particles, 2))
v:fill({ 0, -1 })
J:fill(1)

local function frame()
  for _ = 1, SUBSTEPS do step() end
end

frame()
print(("mpm88_one_first_frame_ms %.3f"):format((clock.now() - t_start) * 1e3))
print(("mpm88_one_code_ms %.3f"):format(lt.stats().code_ms))
local times = {}
for f = 1, opts.bench do
  local t0 = clock.now()
  frame()
  times[f] = (clock.now() - t0) * 1e3
end
table.sort(times)
print(("mpm88_one_ms %.4f"):format(times[(#times + 1) // 2]))
local mx, my = 0, 0
for p = 0, n_particles - 1 do
  local xp = x[p]
  mx, my = mx + xp[1], my + xp[2]
end
print(("mpm88_one_mean_x %.6f\nmpm88_one_mean_y %.6f"):format(mx / n_particles, my / n_particles))
