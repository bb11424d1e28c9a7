-- sparse_heat.lua -- the kernels and tree type of a sparse heat simulation,
-- saved as an AOT module that examples/aot/heat_host.c runs with the
-- runtime library alone (no LLVM, no Lua); or, with --run, the same
-- simulation run here by the JIT, writing the same output files, so the two
-- can be compared bit for bit (tests/cli/aot.sh).
--
--   lattice examples/aot/sparse_heat.lua --save heat.ltm [--cpu x86-64-v3] [--cuda] [--sm sm_80,...] [--no-cpu]
--
-- --cuda adds PTX for sm_70 and sm_90 (--sm: for these SMs instead); --no-cpu
-- leaves the CPU's machine code out.
--   lattice examples/aot/sparse_heat.lua --run OUT_PREFIX [--steps N]
--
-- The grid is a pointer level of 16 x 16 blocks of 8 x 8 cells (128 x 128
-- cells); only the blocks inside a disc are active. Heat spreads inside the
-- active blocks (inactive cells read as zero: a cold, absorbing border).
local lt = require "lattice"

local mode, arg1, cpu, steps, cuda, sms, no_cpu = nil, nil, nil, 200, false, { "sm_70", "sm_90" }, false
local i = 1
while arg[i] do
  local a = arg[i]
  if a == "--save" or a == "--run" then mode, arg1 = a:sub(3), arg[i + 1]; i = i + 2
  elseif a == "--cpu" then cpu = arg[i + 1]; i = i + 2
  elseif a == "--cuda" then cuda = true; i = i + 1   -- PTX for GPUs too
  elseif a == "--sm" then
    cuda, sms = true, {}
    for sm in arg[i + 1]:gmatch("[^,]+") do sms[#sms + 1] = sm end
    i = i + 2
  elseif a == "--no-cpu" then no_cpu = true; i = i + 1
  elseif a == "--steps" then steps = math.tointeger(tonumber(arg[i + 1])); i = i + 2
  else error("unknown argument " .. a) end
end
if not mode or not arg1 then
  io.stderr:write("usage: lattice sparse_heat.lua --save FILE.ltm [--cpu x86-64-v3] [--cuda] | --run OUT_PREFIX [--steps N]\n")
  os.exit(2)
end

lt.init { threads = mode == "run" and 1 or nil }

local N = 128
local Grid = lt.tree {
  fields = { u = lt.f32, v = lt.f32, flux = lt.vec2 },
  lt.pointer(lt.ij, 16) { lt.dense(lt.ij, 8) { "u", "v", "flux" } },
}

-- activates the blocks of a disc and sets a hot spot in its middle
local init = lt.kernel(function(g, cx, cy, r, hot)
  for i, j in lt.ndrange(N, N) do
    local dx, dy = i - cx, j - cy
    if dx * dx + dy * dy < r * r then
      local t = 0.0
      if dx * dx + dy * dy < (r // 4) * (r // 4) then t = hot end
      g.u[i][j] = t
    end
  end
end, { g = Grid, cx = lt.i32, cy = lt.i32, r = lt.i32, hot = lt.f32 })

-- one explicit step into v (and the flux, a vector field), over the active cells
local step = lt.kernel(function(g, k)
  for i, j in g.u do
    local c = g.u[i][j]
    local l, r, d, t = 0.0, 0.0, 0.0, 0.0
    if i > 0 then l = g.u[i - 1][j] end
    if i < N - 1 then r = g.u[i + 1][j] end
    if j > 0 then d = g.u[i][j - 1] end
    if j < N - 1 then t = g.u[i][j + 1] end
    g.v[i][j] = c + k * (l + r + d + t - 4.0 * c)
    g.flux[i][j] = lt.vec2(r - l, t - d)
  end
end, { g = Grid, k = lt.f32 })

-- v back into u; returns the total heat
local commit = lt.kernel(function(g)
  local total = 0.0
  for i, j in g.v do
    g.u[i][j] = g.v[i][j]
    total = total + g.v[i][j]
  end
  return total
end, { g = Grid })

if mode == "save" then
  local arch = no_cpu and { "cuda" } or cuda and { "cpu", "cuda" } or "cpu"
  local m = lt.aot.module { arch = arch, cpu = cpu, sm = cuda and sms or nil }
  m:add_tree_type("grid", Grid)
  m:add_kernel("init", init)
  m:add_kernel("step", step)
  m:add_kernel("commit", commit)
  m:save(arg1)
  print("saved " .. arg1)
  return
end

-- --run: the same frames as heat_host.c, the same files
local g = Grid:instantiate()
init(g, 64, 64, 50, 100.0)
local totals = {}
for s = 1, steps do
  step(g, 0.2)
  totals[#totals + 1] = commit(g)
end
-- u as raw little-endian f32, row-major (i, j), the same bytes heat_host.c writes
local f = assert(io.open(arg1 .. ".u.raw", "wb"))
local parts = {}
for i = 0, N - 1 do
  for j = 0, N - 1 do parts[#parts + 1] = string.pack("<f", g.u[i][j]) end
  f:write(table.concat(parts)); parts = {}
end
for i = 0, N - 1 do
  for j = 0, N - 1 do parts[#parts + 1] = string.pack("<f", g.flux[i][j][1]) end
  f:write(table.concat(parts)); parts = {}
end
f:close()
local t = assert(io.open(arg1 .. ".totals.txt", "w"))
for s, v in ipairs(totals) do t:write(string.format("%d %.9g\n", s, v)) end
t:close()
print(("ran %d steps: total heat %.9g"):format(steps, totals[#totals]))
