-- mpm_ref.lua -- the MLS-MPM step of examples/mpm88.lua (2-D) and
-- examples/mpm3d.lua (3-D) in plain Lua (scalars and tables, double
-- precision), the reference their --test compares the kernels with. The same
-- constants as the examples and, in 2-D, the same initial particles as
-- bench/mpm88.c (bench/mpm88_init.h).
local M = {}

M.SEED = 2463534242

-- xorshift32 of mpm88_init.h: returns the next state and a coordinate in [lo, lo + span)
function M.init_coord(s, lo, span)
  s = s ~ ((s << 13) & 0xffffffff)
  s = s ~ (s >> 17)
  s = s ~ ((s << 5) & 0xffffffff)
  return s, (lo or 0.2) + (span or 0.4) * (s >> 8) / 16777216.0
end

-- The initial particles: x[p] = {x, y[, z]} (p = 0 .. np-1), coordinates
-- drawn in order, each in [lo, lo + span).
function M.init_positions(np, dim, lo, span)
  local s, x = M.SEED, {}
  for p = 0, np - 1 do
    local xy = {}
    for d = 1, dim or 2 do s, xy[d] = M.init_coord(s, lo, span) end
    x[p] = xy
  end
  return x
end

-- Rounds to the nearest f32: the reference starts from the positions the
-- single-precision fields hold.
local function f32(v) return (string.unpack("f", string.pack("f", v))) end

-- The constants of a simulation with ng cells along each axis, in dim dimensions.
function M.params(ng, dim)
  local dx = 1 / ng
  local p_vol = (dx * 0.5) ^ dim
  return { ng = ng, dim = dim, dx = dx, inv_dx = ng, dt = dim == 2 and 2e-4 or 1e-4,
           p_vol = p_vol, p_mass = p_vol * 1, gravity = 9.8, bound = 3, E = 400 }
end

-- A state of np particles; `positions` as init_positions returns them.
function M.new(np, ng, dim, positions)
  local st = { np = np, k = M.params(ng, dim), x = {}, v = {}, C = {}, J = {} }
  for p = 0, np - 1 do
    local xp, vp, Cp = {}, {}, {}
    for d = 1, dim do xp[d], vp[d] = f32(positions[p][d]), 0 end
    vp[2] = -1
    for k = 1, dim * dim do Cp[k] = 0 end
    st.x[p], st.v[p], st.C[p], st.J[p] = xp, vp, Cp, 1
  end
  return st
end

local function weights(fx)
  return { 0.5 * (1.5 - fx) ^ 2, 0.75 - (fx - 1) ^ 2, 0.5 * (fx - 0.5) ^ 2 }
end

-- base cell (truncated like the kernels' integer cast), fractional position, weights
local function stencil(xp, k)
  local base, fx, w = {}, {}, {}
  for d = 1, k.dim do
    local X = xp[d] * k.inv_dx
    local b = X - 0.5
    base[d] = math.tointeger(b >= 0 and math.floor(b) or math.ceil(b))
    fx[d] = X - base[d]
    w[d] = weights(fx[d])
  end
  return base, fx, w
end

-- Calls f(offset, weight, dpos, cell) for the 3^dim cells around a particle.
local function each_cell(base, fx, w, k, f)
  local dim, ng = k.dim, k.ng
  for n = 0, 3 ^ dim - 1 do
    local off, weight, dpos, cell, rest = {}, 1, {}, 0, n
    for d = dim, 1, -1 do off[d] = rest % 3; rest = rest // 3 end
    for d = 1, dim do
      weight = weight * w[d][off[d] + 1]
      dpos[d] = (off[d] - fx[d]) * k.dx
      cell = cell * ng + base[d] + off[d]
    end
    f(weight, dpos, cell)
  end
end

-- One substep, in the order of the kernels: clear, P2G, grid update, G2P.
function M.substep(st)
  local k, np = st.k, st.np
  local dim, ng = k.dim, k.ng
  local gv, gm = {}, {}
  for c = 0, ng ^ dim - 1 do
    gv[c], gm[c] = {}, 0
    for d = 1, dim do gv[c][d] = 0 end
  end
  for p = 0, np - 1 do
    local base, fx, w = stencil(st.x[p], k)
    local stress = -k.dt * 4 * k.E * k.p_vol * (st.J[p] - 1) * k.inv_dx * k.inv_dx
    local Cp, vp = st.C[p], st.v[p]
    each_cell(base, fx, w, k, function(weight, dpos, cell)
      local g = gv[cell]
      for r = 1, dim do
        local a = 0
        for c = 1, dim do a = a + ((r == c and stress or 0) + k.p_mass * Cp[(r - 1) * dim + c]) * dpos[c] end
        g[r] = g[r] + weight * (k.p_mass * vp[r] + a)
      end
      gm[cell] = gm[cell] + weight * k.p_mass
    end)
  end
  for c = 0, ng ^ dim - 1 do
    local g, idx, rest = gv[c], {}, c
    for d = dim, 1, -1 do idx[d] = rest % ng; rest = rest // ng end
    if gm[c] > 0 then for d = 1, dim do g[d] = g[d] / gm[c] end end
    g[2] = g[2] - k.dt * k.gravity
    for d = 1, dim do
      if idx[d] < k.bound and g[d] < 0 then g[d] = 0 end
      if idx[d] > ng - k.bound and g[d] > 0 then g[d] = 0 end
    end
  end
  st.grid_v, st.grid_m = gv, gm
  for p = 0, np - 1 do
    local xp = st.x[p]
    local base, fx, w = stencil(xp, k)
    local nv, nC = {}, {}
    for d = 1, dim do nv[d] = 0 end
    for q = 1, dim * dim do nC[q] = 0 end
    each_cell(base, fx, w, k, function(weight, dpos, cell)
      local g = gv[cell]
      for r = 1, dim do
        nv[r] = nv[r] + weight * g[r]
        for c = 1, dim do
          nC[(r - 1) * dim + c] = nC[(r - 1) * dim + c] + 4 * weight * k.inv_dx * k.inv_dx * g[r] * dpos[c]
        end
      end
    end)
    local tr = 0
    for d = 1, dim do
      xp[d] = xp[d] + k.dt * nv[d]
      tr = tr + nC[(d - 1) * dim + d]
    end
    st.v[p], st.C[p] = nv, nC
    st.J[p] = st.J[p] * (1 + k.dt * tr)
  end
end

return M
