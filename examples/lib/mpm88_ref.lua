-- mpm88_ref.lua -- the 2-D MLS-MPM step of examples/mpm88.lua in plain Lua
-- (scalars and tables, double precision), the reference its --test and the
-- MPM tests compare Lattice's kernels with. Same constants and the same
-- initial particles as bench/mpm88.c (bench/mpm88_init.h).
local M = {}

M.SEED = 2463534242

-- xorshift32 of mpm88_init.h: returns the next state and a coordinate in [0.2, 0.6)
function M.init_coord(s)
  s = s ~ ((s << 13) & 0xffffffff)
  s = s ~ (s >> 17)
  s = s ~ ((s << 5) & 0xffffffff)
  return s, 0.2 + 0.4 * (s >> 8) / 16777216.0
end

-- The initial particles: x[p] = {x, y} (p = 0 .. np-1) drawn in order x, y.
function M.init_positions(np)
  local s, x = M.SEED, {}
  for p = 0, np - 1 do
    local a, b
    s, a = M.init_coord(s)
    s, b = M.init_coord(s)
    x[p] = { a, b }
  end
  return x
end

-- Rounds to the nearest f32 (so the reference follows the single-precision
-- fields it is compared with, step by step).
local function f32(v) return string.unpack("f", string.pack("f", v)) end
M.f32 = f32

-- A state: np particles, an ng^2 grid. x[p] from init_positions.
function M.new(np, ng)
  local st = { np = np, ng = ng, x = {}, v = {}, C = {}, J = {} }
  for p, xy in pairs(M.init_positions(np)) do
    st.x[p] = { f32(xy[1]), f32(xy[2]) }
    st.v[p] = { 0, -1 }
    st.C[p] = { 0, 0, 0, 0 }
    st.J[p] = 1
  end
  return st
end

local function weights(fx)
  return { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
end

-- One substep, in the order of the kernels: clear, P2G, grid update, G2P.
function M.substep(st)
  local np, ng = st.np, st.ng
  local dx, inv_dx, dt = 1 / ng, ng, 2e-4
  local p_vol, p_rho, gravity, E, bound = (dx * 0.5) ^ 2, 1, 9.8, 400, 3
  local p_mass = p_vol * p_rho
  local gv, gm = {}, {}
  for i = 0, ng * ng - 1 do gv[i], gm[i] = { 0, 0 }, 0 end
  local function cell(i, j) return i * ng + j end
  for p = 0, np - 1 do
    local x, v, C = st.x[p], st.v[p], st.C[p]
    local base, fx, w = {}, {}, {}
    for d = 1, 2 do
      local X = x[d] * inv_dx
      base[d] = math.tointeger(X - 0.5 >= 0 and math.floor(X - 0.5) or math.ceil(X - 0.5))
      fx[d] = X - base[d]
      w[d] = weights(fx[d])
    end
    local stress = -dt * 4 * E * p_vol * (st.J[p] - 1) * inv_dx * inv_dx
    local a00, a01 = stress + p_mass * C[1], p_mass * C[2]
    local a10, a11 = p_mass * C[3], stress + p_mass * C[4]
    for i = 0, 2 do
      for j = 0, 2 do
        local dp0, dp1 = (i - fx[1]) * dx, (j - fx[2]) * dx
        local weight = w[1][i + 1] * w[2][j + 1]
        local k = cell(base[1] + i, base[2] + j)
        local g = gv[k]
        g[1] = g[1] + weight * (p_mass * v[1] + a00 * dp0 + a01 * dp1)
        g[2] = g[2] + weight * (p_mass * v[2] + a10 * dp0 + a11 * dp1)
        gm[k] = gm[k] + weight * p_mass
      end
    end
  end
  for i = 0, ng - 1 do
    for j = 0, ng - 1 do
      local k = cell(i, j)
      local g = gv[k]
      if gm[k] > 0 then g[1], g[2] = g[1] / gm[k], g[2] / gm[k] end
      g[2] = g[2] - dt * gravity
      if i < bound and g[1] < 0 then g[1] = 0 end
      if i > ng - bound and g[1] > 0 then g[1] = 0 end
      if j < bound and g[2] < 0 then g[2] = 0 end
      if j > ng - bound and g[2] > 0 then g[2] = 0 end
    end
  end
  st.grid_v, st.grid_m = gv, gm
  for p = 0, np - 1 do
    local x = st.x[p]
    local base, fx, w = {}, {}, {}
    for d = 1, 2 do
      local X = x[d] * inv_dx
      base[d] = math.tointeger(X - 0.5 >= 0 and math.floor(X - 0.5) or math.ceil(X - 0.5))
      fx[d] = X - base[d]
      w[d] = weights(fx[d])
    end
    local nv0, nv1, c00, c01, c10, c11 = 0, 0, 0, 0, 0, 0
    for i = 0, 2 do
      for j = 0, 2 do
        local dp0, dp1 = (i - fx[1]) * dx, (j - fx[2]) * dx
        local weight = w[1][i + 1] * w[2][j + 1]
        local g = gv[cell(base[1] + i, base[2] + j)]
        nv0, nv1 = nv0 + weight * g[1], nv1 + weight * g[2]
        local k = 4 * weight * inv_dx * inv_dx
        c00, c01 = c00 + k * g[1] * dp0, c01 + k * g[1] * dp1
        c10, c11 = c10 + k * g[2] * dp0, c11 + k * g[2] * dp1
      end
    end
    st.v[p] = { nv0, nv1 }
    x[1], x[2] = x[1] + dt * nv0, x[2] + dt * nv1
    st.J[p] = st.J[p] * (1 + dt * (c00 + c11))
    st.C[p] = { c00, c01, c10, c11 }
  end
end

return M
