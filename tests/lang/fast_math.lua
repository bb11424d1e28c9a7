-- lt.init{fast_math = true} (docs/arithmetic.md): float operations may be
-- regrouped, divide by a reciprocal, fuse and use approximate math, so results
-- differ from the default's in the last bits, not more: a small MPM (P2G with
-- atomics, a grid update dividing by the mass, G2P) for a few substeps and a
-- parallel sum agree with the default mode within a tolerance; NaN and the
-- infinities still compute as IEEE says (fast math never assumes them away);
-- `//` stays exact; and the option's checks. The ptx/ and mockgpu/ variants
-- run the same kernels through the PTX code generator (ptxas checks them).
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local n_particles, n_grid, steps = 512, 32, 8
local dx, inv_dx, dt = 1 / n_grid, n_grid, 2e-4
local p_vol = (dx * 0.5) ^ 2
local p_mass, E = p_vol, 400

local function mpm(opts)
  lt.init(opts)
  local x = lt.field(lt.vec2, n_particles)
  local v = lt.field(lt.vec2, n_particles)
  local Cm = lt.field(lt.mat2, n_particles)
  local J = lt.field(lt.f32, n_particles)
  local grid_v = lt.field(lt.vec2, { n_grid, n_grid })
  local grid_m = lt.field(lt.f32, { n_grid, n_grid })
  local substep = lt.kernel(function()
    for i, j in lt.ndrange(n_grid, n_grid) do
      grid_v[i][j] = lt.vec2(0)
      grid_m[i][j] = 0
    end
    for p in lt.ndrange(n_particles) do
      local X = x[p] * inv_dx
      local base = lt.i32(X - 0.5)
      local fx = X - base
      local w = { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
      local stress = -dt * 4 * E * p_vol * (J[p] - 1) * inv_dx * inv_dx
      local affine = lt.mat2(stress, 0, 0, stress) + p_mass * Cm[p]
      for i in lt.static_range(3) do
        for j in lt.static_range(3) do
          local dpos = (lt.vec2(i, j) - fx) * dx
          local weight = w[i + 1].x * w[j + 1].y
          lt.atomic_add(grid_v[base.x + i][base.y + j], weight * (p_mass * v[p] + affine:mul(dpos)))
          lt.atomic_add(grid_m[base.x + i][base.y + j], weight * p_mass)
        end
      end
    end
    for i, j in lt.ndrange(n_grid, n_grid) do
      local gv = grid_v[i][j]
      local m = grid_m[i][j]
      if m > 0 then gv = gv / m end
      gv.y = gv.y - dt * 9.8
      if i < 3 and gv.x < 0 then gv.x = 0 end
      if i > n_grid - 3 and gv.x > 0 then gv.x = 0 end
      if j < 3 and gv.y < 0 then gv.y = 0 end
      grid_v[i][j] = gv
    end
    for p in lt.ndrange(n_particles) do
      local X = x[p] * inv_dx
      local base = lt.i32(X - 0.5)
      local fx = X - base
      local w = { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
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
      Cm[p] = new_C
    end
  end)
  local pos = {}
  for p = 0, n_particles - 1 do
    pos[p + 1] = { 0.3 + (p * 37 % 512) / 512 * 0.3, 0.4 + (p * 101 % 509) / 509 * 0.3 }
  end
  x:from_table(pos)
  v:fill({ 0, -1 })
  J:fill(1)
  for _ = 1, steps do substep() end
  -- a parallel sum with a division by an argument, and what fast math must keep
  local s = lt.field(lt.f32, 1000)
  for i = 0, 999 do s[i] = (i * 37 % 1000) * 0.013 + 0.25 end
  local total = lt.kernel(function(d)
    local t = 0.0
    for i in lt.ndrange(1000) do t = t + s[i] * s[i] / d end
    return t
  end, { d = lt.f32 })
  local ieee = lt.kernel(function(a, b)
    local q = a / b                                -- 0 / 0: NaN; 1 / 0: inf
    local r = b / a
    return lt.select(q ~= q, 1, 0) + lt.select(r == r + 1, 10, 0) + lt.select(lt.min(q, 2.0) == 2.0, 100, 0)
      + lt.select(lt.sqrt(-a - 1) ~= lt.sqrt(-a - 1), 1000, 0)
  end, { a = lt.f32, b = lt.f32 })
  local floordiv = lt.kernel(function(a, b) return a // b end, { a = lt.f32, b = lt.f32 })
  local xs = x:to_table()
  return xs, J:to_table(), total(1.7), ieee(0, 0), ieee(1, 0), floordiv(6, 3), floordiv(0.3, 0.1)
end

local x0, J0, t0, n00, n10, f0, f1 = mpm {}
local x1, J1, t1, n01, n11, g0, g1 = mpm { fast_math = true }

-- a few substeps of MPM: positions within 1e-5 of the box, J within 1e-4
local dmax, jmax, moved = 0, 0, 0
for p = 1, n_particles do
  for d = 1, 2 do dmax = math.max(dmax, math.abs(x0[p][d] - x1[p][d])) end
  jmax = math.max(jmax, math.abs(J0[p] - J1[p]))
  moved = math.max(moved, math.abs(x0[p][2] - (0.4 + ((p - 1) * 101 % 509) / 509 * 0.3)))
end
C.check("the particles moved", moved > 1e-4, true)
C.check(("fast math: positions within 1e-5 of the default's (%.3g)"):format(dmax), dmax < 1e-5, true)
C.check(("fast math: J within 1e-4 of the default's (%.3g)"):format(jmax), jmax < 1e-4, true)
C.check(("fast math: the sum within 1e-5 of the default's (%.9g, %.9g)"):format(t0, t1),
  math.abs(t1 - t0) <= 1e-5 * math.abs(t0), true)
-- ieee(0, 0): q NaN (1), r NaN (no 10), min(NaN, 2) = 2 (100), sqrt(-1) NaN (1000)
C.check("default: NaN", n00, 1101)
C.check("fast math: NaN still NaN", n01, 1101)
-- ieee(1, 0): q = inf, r = 0 (no 1, no 10), min(inf, 2) = 2 (100), sqrt(-2) NaN (1000)
C.check("default: infinity", n10, 1100)
C.check("fast math: infinity still infinite", n11, 1100)
C.check("default: 6 // 3", f0, 2.0)
C.check("fast math: 6 // 3 exact", g0, 2.0)
C.check("fast math: 0.3 // 0.1 as the default", g1, f1)

C.check_error("fast_math must be a boolean", function() lt.init { fast_math = 1 } end, "fast_math must be a boolean")
C.check_error("fast_math with fma = false", function() lt.init { fast_math = true, fma = false } end,
  "fast_math = true implies fma = true")
lt.init { fast_math = true, fma = true }   -- the same thing said twice is fine

print(("fast_math: positions within %.2g, J within %.2g, sums %.9g and %.9g"):format(dmax, jmax, t0, t1))
C.finish("fast_math")
