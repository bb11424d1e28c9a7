-- ndrange_lowering.lua -- a 2-D lt.ndrange with enough rows is lowered per
-- arch (docs/internals.md, "ndrange loops"): on the CPU a parallel loop over
-- the rows with a serial loop along the last axis; on CUDA one thread per
-- cell (a row per GPU thread left neighbouring threads a row apart in memory:
-- a thirtieth of the bandwidth on an H200). The results are the same.
local lt = require "lattice"
lt.init {}
local arch = require("lattice.state").opts.arch
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N, M = 100, 40
local u, lap = lt.field(lt.f32, { N, M }), lt.field(lt.f32, { N, M })
local fill = lt.kernel(function()
  for i, j in lt.ndrange(N, M) do u[i][j] = (i * 7 + j * 3) % 11 end
end)
local laplace = lt.kernel(function()
  for i, j in lt.ndrange({ 1, N - 1 }, { 1, M - 1 }) do
    lap[i][j] = u[i + 1][j] + u[i - 1][j] + u[i][j + 1] + u[i][j - 1] - 4 * u[i][j]
  end
end)
fill()
laplace()

local text = laplace:ir()
local final = text:sub((text:match(".*()# after ")))   -- the last pass's section
local inner = final:find("= range_for", 1, true) ~= nil
C.check(arch .. ": a serial loop along the last axis", inner, arch == "cpu")
C.check(arch .. ": one parallel task", select(2, final:gsub("task_range_for", "")), 1)

local bad = 0
local function uv(i, j) return (i * 7 + j * 3) % 11 end
for i = 1, N - 2 do
  for j = 1, M - 2 do
    local want = uv(i + 1, j) + uv(i - 1, j) + uv(i, j + 1) + uv(i, j - 1) - 4 * uv(i, j)
    if lap[i][j] ~= want then bad = bad + 1 end
  end
end
C.check(arch .. ": cells computed wrongly", bad, 0)
C.finish("ndrange_lowering")
