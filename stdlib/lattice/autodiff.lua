-- autodiff.lua -- gradients of kernels (docs/autodiff.md): lt.tape records
-- kernel calls and tape:backward() runs their adjoints (k:grad, made by the
-- autodiff pass, src/ir/passes/autodiff.c) in reverse; lt.clear_grads.
local core = require "lattice.core"
local state = require "lattice.state"
local fieldm = require "lattice.field"

local M = {}
local Tape = {}
Tape.__index = Tape

local function raise(fmt, ...) state.raise(fmt:format(...)) end

-- lt.tape(fn): runs fn, recording every kernel it calls; returns the tape
function M.tape(fn)
  if type(fn) ~= "function" then raise("lt.tape: expects a function that runs the kernels to record") end
  if state.tape then raise("lt.tape: tapes do not nest (a tape is already recording)") end
  local t = setmetatable({ calls = {}, gen = state.gen }, Tape)
  state.tape = t
  local ok, err = pcall(fn)
  state.tape = nil
  if not ok then error(err, 0) end
  return t
end

-- (kernel.lua) one call: the kernel, its compiled primal and its arguments
function Tape:record(k, compiled, ...)
  self.calls[#self.calls + 1] = { k = k, compiled = compiled, args = table.pack(...) }
end

local function field_name(id)
  local info = core.snode_info(state.prog, id)
  return info and info.name or ("S" .. id)
end

-- The global data access rule across the tape: a call may not write a field
-- that an earlier call read (the adjoint of the earlier call would see the
-- later values). Refused before any adjoint runs, naming both.
local function check(self)
  local read_by = {}   -- place id -> {k = kernel, line = n}
  for _, c in ipairs(self.calls) do
    local reads, writes = core.kernel_fields(c.compiled)
    for id, line in pairs(writes) do
      local r = read_by[id]
      if r then
        raise("tape:backward: kernel %s writes field '%s' (line %d) after kernel %s read it (line %d), so the "
          .. "gradient of that read would use the new values; keep each step's state in a field of its own "
          .. "(e.g. x[s][i] for step s)", c.k.name, field_name(id), line, r.k.name, r.line)
      end
    end
    for id, line in pairs(reads) do
      if not read_by[id] then read_by[id] = { k = c.k, line = line } end
    end
  end
end

-- tape:backward([loss]): seeds loss.grad with 1 (every element) when given,
-- then runs the adjoint of every recorded call, last first. Without loss the
-- loss is the result of the last call (a kernel that returns one); other
-- calls' results are not the loss (their adjoints get 0).
function Tape:backward(loss)
  if self.gen ~= state.gen then raise("tape:backward: the tape belongs to a program that lt.init has reset") end
  if state.tape then raise("tape:backward inside lt.tape") end
  check(self)
  if loss ~= nil then
    if not fieldm.is_field(loss) then raise("tape:backward: loss must be a field with a gradient, got a %s", type(loss)) end
    loss.grad:fill(1)
  end
  local kernelm = require "lattice.kernel"
  for i = #self.calls, 1, -1 do
    local c = self.calls[i]
    local seed = (loss == nil and i == #self.calls) and 1 or 0
    kernelm.grad_seeded(c.k, seed, table.unpack(c.args, 1, c.args.n))
  end
end

Tape.__tostring = function(t) return ("tape (%d kernel calls)"):format(#t.calls) end

-- lt.clear_grads(x, y, ...): every element of each field's gradient to 0
function M.clear_grads(...)
  for i = 1, select("#", ...) do
    local f = select(i, ...)
    if not fieldm.is_field(f) then raise("lt.clear_grads: argument %d is not a field", i) end
    f.grad:fill(0)
  end
end

return M
