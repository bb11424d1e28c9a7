-- profiler.lua -- lt.profiler: for every kernel and every offloaded task of
-- it, how many times it ran and how long that took (docs/profiler.md). The
-- records are C's (src/jit/profile.h, filled by the launcher while a program
-- holds the profile); this file switches it on and off and prints them.
-- One profile per Lua state, kept across lt.init: a new program gets it
-- while the profiler is on.
local core = require "lattice.core"
local state = require "lattice.state"

local M = {}
local profile        -- core.profile_new(), made by the first enable
local on = false

-- The current program profiles its launches exactly while the profiler is on.
local function attach()
  if state.prog and core.program_alive(state.prog) then
    core.profile_attach(state.prog, on and profile or nil)
  end
end

function M.enable()
  profile = profile or core.profile_new()
  on = true
  attach()
end

function M.disable()
  on = false
  attach()
end

function M.enabled() return on end

function M.clear()
  if profile then core.profile_clear(profile) end
end

-- lt.init: profile = true or false switches the profiler; nil leaves it as
-- it is (lattice --profile, an earlier lt.profiler.enable) for the new program.
function M.init(opt)
  if opt == true then M.enable() elseif opt == false then M.disable() else attach() end
end

-- The records, each kernel followed by its tasks: kernels by total time
-- (largest first), a kernel's tasks the same way; mean_ms and pct (the share
-- of all kernels' total time) added.
function M.get()
  if not profile then return {} end
  local recs = core.profile_records(profile)
  local all, kernels, tasks = 0, {}, {}
  for _, r in ipairs(recs) do
    r.mean_ms = r.calls > 0 and r.total_ms / r.calls or 0
    if r.kind == "kernel" then
      kernels[#kernels + 1] = r
      all = all + r.total_ms
    else
      local t = tasks[r.kernel] or {}
      tasks[r.kernel] = t
      t[#t + 1] = r
    end
  end
  local function by_total(a, b)
    if a.total_ms ~= b.total_ms then return a.total_ms > b.total_ms end
    if a.task and b.task then return a.task < b.task end
    return a.name < b.name
  end
  table.sort(kernels, by_total)
  local out = {}
  for _, k in ipairs(kernels) do
    k.pct = all > 0 and 100 * k.total_ms / all or 0
    out[#out + 1] = k
    local t = tasks[k.name] or {}
    table.sort(t, by_total)
    for _, r in ipairs(t) do
      r.pct = all > 0 and 100 * r.total_ms / all or 0
      out[#out + 1] = r
    end
  end
  return out
end

local RUNTIME_KINDS = { "clear_list", "listgen", "gc" }

-- The table as text: one line per kernel, its tasks indented under it, then
-- the time of the sparse runtime's tasks and the list reuse hits.
function M.report()
  local recs = M.get()
  if #recs == 0 then
    return "lt.profiler: no kernel launch recorded" ..
      (on and "\n" or " (it is off: lt.profiler.enable(), lt.init{profile = true} or lattice --profile)\n")
  end
  local width, total, launches, nkernels = 24, 0, 0, 0
  for _, r in ipairs(recs) do
    width = math.max(width, #r.name + (r.kind == "kernel" and 0 or 2))
    if r.kind == "kernel" then
      total, launches, nkernels = total + r.total_ms, launches + r.calls, nkernels + 1
    end
  end
  local arch = state.opts and state.opts.arch or "cpu"
  local lines = {
    ("lt.profiler: %d kernel%s, %d launch%s, %.3f ms (%s%s)"):format(nkernels, nkernels == 1 and "" or "s",
      launches, launches == 1 and "" or "es", total, arch,
      arch == "cuda" and "; kernels: host time of the launch, tasks: GPU time from CUDA events" or ""),
    ("%-" .. width .. "s %8s %12s %10s %10s %10s %6s %7s"):format("kernel / task", "calls", "total ms", "mean ms",
      "min ms", "max ms", "%", "reused"),
  }
  local rt = {}
  for _, k in ipairs(RUNTIME_KINDS) do rt[k] = { calls = 0, total_ms = 0 } end
  local reused = 0
  for _, r in ipairs(recs) do
    local name = r.kind == "kernel" and r.name or "  " .. r.name
    local line = ("%-" .. width .. "s %8d %12.3f %10.4f %10.4f %10.4f %6.1f %7s"):format(name, r.calls,
      r.total_ms, r.mean_ms, r.min_ms, r.max_ms, r.pct, (r.kind == "clear_list" or r.kind == "listgen") and
      tostring(r.reused) or "")
    lines[#lines + 1] = line:gsub("%s+$", "")
    local s = rt[r.kind]
    if s then s.calls, s.total_ms = s.calls + r.calls, s.total_ms + r.total_ms end
    if r.kind == "listgen" then reused = reused + r.reused end
  end
  local parts = {}
  for _, k in ipairs(RUNTIME_KINDS) do
    local s = rt[k]
    if s.calls > 0 then parts[#parts + 1] = ("%s %.3f ms (%d)"):format(k, s.total_ms, s.calls) end
  end
  if #parts > 0 or reused > 0 then
    lines[#lines + 1] = ("sparse runtime tasks: %s; lists reused %d time%s"):format(
      #parts > 0 and table.concat(parts, ", ") or "none ran", reused, reused == 1 and "" or "s")
  end
  return table.concat(lines, "\n") .. "\n"
end

-- Writes the report to f (a file, or anything with a write method; default io.stdout).
function M.print(f)
  f = f or io.stdout
  f:write(M.report())
  if f.flush then f:flush() end
end

return M
