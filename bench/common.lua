-- common.lua -- what the Lattice halves of the benchmarks share: their
-- command line (--threads T, --reps R) and timing helpers.
--   package.path = (arg[0]:match("^(.*/)") or "./") .. "?.lua;" .. package.path
--   local B = require "common"
local clock = require "lattice.clock"
local M = {}

-- Reads the global `arg`; returns threads (0: one per core) and reps.
function M.options(script)
  local threads, reps = 0, 15
  local a = 1
  while arg[a] do
    if arg[a] == "--threads" then threads = math.tointeger(tonumber(arg[a + 1])); a = a + 1
    elseif arg[a] == "--reps" then reps = math.tointeger(tonumber(arg[a + 1])); a = a + 1
    else error(("usage: lattice %s [--threads T] [--reps R]"):format(script)) end
    a = a + 1
  end
  assert(threads and threads >= 0 and reps and reps >= 1, "bad --threads or --reps")
  return threads, reps
end

function M.median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- Milliseconds one call of f(...) takes.
function M.ms(f, ...)
  local t0 = clock.now()
  f(...)
  return (clock.now() - t0) * 1e3
end

return M
