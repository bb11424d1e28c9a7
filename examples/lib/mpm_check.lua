-- mpm_check.lua -- the --test checks shared by examples/mpm88.lua and
-- examples/mpm3d.lua: P2G conserves mass and momentum, and the particles
-- match the plain-Lua reference (examples/lib/mpm_ref.lua) within tolerances
-- (the kernels compute in f32, the reference in f64).
--
-- f = { x, v, C, J, grid_v, grid_m } are the example's fields; n particles,
-- ng cells per axis, dim 2 or 3.
local M = {}

local function close(what, got, want, tol)
  if not (math.abs(got - want) <= tol) then
    error(("%s: kernel %.9g, plain Lua %.9g (tolerance %g)"):format(what, got, want, tol), 3)
  end
end

-- Every grid cell's value of field g (a Lua-scope read), in any dimension.
local function each_cell(g, ng, dim, fn)
  if dim == 2 then
    for i = 0, ng - 1 do for j = 0, ng - 1 do fn(g[i][j]) end end
  else
    for i = 0, ng - 1 do for j = 0, ng - 1 do for k = 0, ng - 1 do fn(g[i][j][k]) end end end
  end
end

-- After P2G: the grid holds all the particles' mass (exactly, up to f32
-- rounding) and momentum (the affine term's weighted offsets sum to zero for
-- the quadratic B-spline).
function M.p2g(name, f, n, ng, dim, p_mass)
  local mom, gmom, gmass = {}, {}, 0
  for d = 1, dim do mom[d], gmom[d] = 0, 0 end
  for p = 0, n - 1 do
    local vp = f.v[p]
    for d = 1, dim do mom[d] = mom[d] + p_mass * vp[d] end
  end
  each_cell(f.grid_m, ng, dim, function(m) gmass = gmass + m end)
  each_cell(f.grid_v, ng, dim, function(g) for d = 1, dim do gmom[d] = gmom[d] + g[d] end end)
  local mass, scale = n * p_mass, 0
  close(name .. ": grid mass after P2G", gmass, mass, 1e-5 * mass)
  for d = 1, dim do scale = scale + math.abs(mom[d]) end
  for d = 1, dim do close(("%s: grid momentum[%d] after P2G"):format(name, d), gmom[d], mom[d], 1e-4 * scale) end
end

-- Every particle's position, velocity, J and affine matrix against the
-- reference state st. Returns the largest difference of a position.
function M.particles(name, f, st, when)
  local worst, dim = 0, st.k.dim
  for p = 0, st.np - 1 do
    local xp, vp, Cp, Jp = f.x[p], f.v[p], f.C[p], f.J[p]
    local where = ("%s: %s: particle %d "):format(name, when, p)
    for d = 1, dim do
      close(where .. "x[" .. d .. "]", xp[d], st.x[p][d], 1e-5)
      close(where .. "v[" .. d .. "]", vp[d], st.v[p][d], 1e-3)
      worst = math.max(worst, math.abs(xp[d] - st.x[p][d]))
      for c = 1, dim do
        local want = st.C[p][(d - 1) * dim + c]
        close(where .. "C[" .. d .. "][" .. c .. "]", Cp[d][c], want, 1e-3 * (1 + math.abs(want)))
      end
    end
    close(where .. "J", Jp, st.J[p], 1e-4)
  end
  print(("%s: %s: %d particles match plain Lua (largest position difference %.2g)"):format(name, when, st.np, worst))
end

return M
