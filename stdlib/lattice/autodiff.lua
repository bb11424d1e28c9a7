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

-- (kernel.lua) one call: the kernel, its compiled primal, the launch's flat
-- argument values (IR argument n is vals[n + 1]) and the user's arguments
function Tape:record(k, compiled, vals, ...)
  self.calls[#self.calls + 1] = { k = k, compiled = compiled, vals = vals, args = table.pack(...) }
end

local function field_name(id)
  if type(id) == "string" then return "an ndarray" end    -- "nd@address": one array across the calls
  local info = core.snode_info(state.prog, id)
  return info and info.name or ("S" .. id)
end

-- The elements a call's access reaches, as far as known: per axis an
-- integer, or false (any).
local function where(access, vals)
  local w = {}
  for i, ax in ipairs(access.axes) do
    local v = false
    if ax then
      if ax.arg == nil then v = ax.c
      else
        local a = vals[ax.arg + 1]
        v = math.type(a) == "integer" and a + ax.c or false
      end
    end
    w[i] = v
  end
  return w
end

-- Whether two accesses of one place may reach one element: no axis on which
-- both are known and differ.
local function may_overlap(a, b)
  for i = 1, math.max(#a, #b) do
    if a[i] and b[i] and a[i] ~= b[i] then return false end
  end
  return true
end

-- The global data access rule across the tape, element by element where the
-- indices are arguments plus constants (x[s][i] read, x[s + 1][i] written):
-- a call may not overwrite what an earlier call read (the adjoint of the
-- earlier call would see the later values) or wrote (its gradient would be
-- lost). Adding to what an earlier call added to is fine. Refused before any
-- adjoint runs, naming both.
local accesses_of = setmetatable({}, { __mode = "k" })   -- compiled -> core.kernel_fields

-- seen[id] holds earlier accesses in buckets by their first index (any:
-- "*"); the ones that may meet w are in these lists
local function candidates(buckets, w)
  local lists = {}
  if not buckets then return lists end
  if w[1] then
    lists[#lists + 1] = buckets[w[1]]
    lists[#lists + 1] = buckets["*"]
  else
    for _, l in pairs(buckets) do lists[#lists + 1] = l end
  end
  return lists
end

local function check(self)
  local seen = {}   -- place id -> buckets of {op, w, k, call, line}
  for ci, c in ipairs(self.calls) do
    local list = accesses_of[c.compiled]
    if not list then                 -- one entry per place, kind and index pattern (the first line)
      list = {}
      local seen_pattern = {}
      for _, a in ipairs(core.kernel_fields(c.compiled)) do
        local key = { a.id or ("nd" .. a.nd), a.op }
        for i, ax in ipairs(a.axes) do key[#key + 1] = ax and ((ax.arg or "c") .. ":" .. ax.c) or "*" end
        key = table.concat(key, "|")
        if not seen_pattern[key] then
          seen_pattern[key] = true
          list[#list + 1] = a
        end
      end
      accesses_of[c.compiled] = list
    end
    local mine = {}
    for _, a in ipairs(list) do
      local w = where(a, c.vals)
      if a.nd then a = { id = "nd@" .. tostring(c.vals[a.nd + 1]), op = a.op, line = a.line, nd = a.nd } end
      if a.op ~= "read" then
        for _, l in ipairs(candidates(seen[a.id], w)) do for _, e in ipairs(l) do
          if (e.op == "read" or a.op == "store") and may_overlap(e.w, w) then
            local was = e.op == "read" and "read" or "wrote"
            raise("tape:backward: call %d (kernel %s, line %d) writes %s where call %d (kernel %s) %s "
              .. "it at line %d, so the gradient of that %s would %s; keep each step's state in elements of its "
              .. "own (e.g. x[s + 1][i] from x[s][i])", ci, c.k.name, a.line,
              type(a.id) == "string" and "an ndarray" or ("field '" .. field_name(a.id) .. "'"), e.call, e.k.name,
              was, e.line, e.op == "read" and "read" or "write",
              e.op == "read" and "use the new values" or "be lost")
          end
        end end
      end
      mine[#mine + 1] = { id = a.id, op = a.op, w = w, k = c.k, call = ci, line = a.line }
    end
    for _, e in ipairs(mine) do   -- a kernel's own accesses are the autodiff pass's business
      local b = seen[e.id] or {}
      seen[e.id] = b
      local key = e.w[1] or "*"
      b[key] = b[key] or {}
      table.insert(b[key], e)
    end
  end
end

-- The calls as a string (kernels and argument values): an optimisation loop
-- records the same calls again and again, and they are checked once.
local compiled_id = setmetatable({}, { __mode = "k" })
local next_id, last_passed = 0, nil
local function signature(self)
  local parts = {}
  for i, c in ipairs(self.calls) do
    local id = compiled_id[c.compiled]
    if not id then
      next_id = next_id + 1
      id = next_id
      compiled_id[c.compiled] = id
    end
    local v = {}
    for j, x in ipairs(c.vals) do v[j] = tostring(x) end
    parts[i] = id .. "(" .. table.concat(v, ",") .. ")"
  end
  return table.concat(parts, ";")
end

-- tape:backward([loss]): seeds loss.grad with 1 (every element) when given,
-- then runs the adjoint of every recorded call, last first. Returns per call
-- (in recording order) the gradients of its float arguments by name. Without loss the
-- loss is the result of the last call (a kernel that returns one); other
-- calls' results are not the loss (their adjoints get 0).
function Tape:backward(loss)
  if self.gen ~= state.gen then raise("tape:backward: the tape belongs to a program that lt.init has reset") end
  if state.tape then raise("tape:backward inside lt.tape") end
  local sig = signature(self)
  if last_passed ~= sig then
    check(self)
    last_passed = sig
  end
  if loss ~= nil then
    if not fieldm.is_field(loss) and not require("lattice.cfield").is(loss) then
      raise("tape:backward: loss must be a field with a gradient, got a %s", type(loss))
    end
    loss.grad:fill(1)
  end
  local kernelm = require "lattice.kernel"
  for i = #self.calls, 1, -1 do         -- every adjoint compiles at once, on all cores
    local c = self.calls[i]
    kernelm.compile_grad(c.k, table.unpack(c.args, 1, c.args.n))
  end
  local grads = {}
  for i = #self.calls, 1, -1 do
    local c = self.calls[i]
    local seed = (loss == nil and i == #self.calls) and 1 or 0
    grads[i] = kernelm.grad_seeded(c.k, seed, table.unpack(c.args, 1, c.args.n))
  end
  return grads
end

Tape.__tostring = function(t) return ("tape (%d kernel calls)"):format(#t.calls) end

-- lt.clear_grads(x, y, ...): every element of each field's gradient to 0
function M.clear_grads(...)
  for i = 1, select("#", ...) do
    local f = select(i, ...)
    local cf = require "lattice.cfield"
    if not fieldm.is_field(f) and not cf.is(f) then raise("lt.clear_grads: argument %d is not a field", i) end
    f.grad:fill(0)
  end
end

return M
