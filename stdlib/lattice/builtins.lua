-- builtins.lua -- lt.random, print and lt.assert in kernels (and in Lua scope).
--
-- lt.random is counter-based (docs/runtime.md, "Random numbers"): draw number
-- n of iteration `stream` of parallel loop `site` is a hash of (seed, launch,
-- site, stream, n). The tracer keeps, per parallel loop body and for the
-- kernel's serial code, a draw counter: a local declared at the front of the
-- body (so it restarts at 0 in every iteration) that each lt.random reads and
-- increments. Which worker runs an iteration, and in which order, changes
-- nothing.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local T = require "lattice.tracer"

local M = {}
local I1, I32 = types.by_name.i1, types.by_name.i32

-- ---- draw counters ---------------------------------------------------------------------

-- Puts the new statement s after the frame's mark (the front of its block).
local function front(f, s)
  T.current().b:move_after(s, f.mark, f.base)
  f.mark = s
  return s
end

-- Called by hooks.lua at the start of the body of a top-level (parallel)
-- loop, with the builder at that point: idx are the loop's index values, and
-- extents (for struct-fors) the field's shape to number the cells by.
function M.parallel_iteration(idx, extents)
  local S = T.current()
  S.rng_sites = (S.rng_sites or 0) + 1
  S.rng_par = { base = S.b:block(), mark = S.b:last(), site = S.rng_sites, idx = idx, extents = extents }
end

local function in_parallel(S)
  for _, kind in ipairs(S.loops) do if kind == "parallel" then return true end end
  return false
end

-- The frame whose counter a draw here uses; declares the counter on first use.
local function frame()
  local S = T.current()
  local f
  if in_parallel(S) and S.rng_par then
    f = S.rng_par
  else
    S.rng_top = S.rng_top or { base = S.top, mark = nil, site = 0 }
    f = S.rng_top
  end
  if not f.counter then
    local b = S.b
    f.counter = front(f, b:alloca(I32.id))
    front(f, b:store(f.counter, front(f, b:const_int(I32.id, 0))))
  end
  return f
end

-- The i32 stream of frame f: the loop's index (the cell number for a
-- struct-for), computed once at the front of the body; 0 for serial code.
local function stream(f)
  if f.stream then return f.stream end
  local b = T.current().b
  if not f.idx then
    f.stream = front(f, b:const_int(I32.id, 0))
  elseif #f.idx == 1 then
    f.stream = (T.lift(f.idx[1]))
  else
    local s = (T.lift(f.idx[1]))
    for k = 2, #f.idx do
      local n = front(f, b:const_int(I32.id, types.convert(f.extents[k], I32)))
      s = front(f, b:binary("add", front(f, b:binary("mul", s, n)), (T.lift(f.idx[k]))))
    end
    f.stream = s
  end
  return f.stream
end

-- ---- lt.random ---------------------------------------------------------------------------

function M.random(dtype)
  if dtype ~= nil and (not types.is_type(dtype) or dtype.name == "i1") then
    if T.active() then T.fail("lt.random: the argument must be a number type such as lt.f32 or lt.i32") end
    state.raise("lt.random: the argument must be a number type such as lt.f32 or lt.i32")
  end
  if not T.active() then
    dtype = dtype or types.by_name.f32
    return core.random_host(state.prog, dtype.id)
  end
  dtype = dtype or T.current().fp
  local f = frame()
  local b = T.B()
  local n = b:load(f.counter)
  local r = b:op("random", dtype.id, stream(f), n)
  b:set_aux(r, 0, f.site)
  b:store(f.counter, b:binary("add", n, b:const_int(I32.id, 1)))
  return T.sym(r, dtype)
end

-- ---- print in kernels ------------------------------------------------------------------------

local MAX_OPS = 10            -- IR_MAX_OPS: operands of one statement
local MAX_VALUES = 65536      -- IR_MAX_PRINT_VALUES: values of one print record

-- print(...) inside a kernel: Lua values become text now, kernel values are
-- printed when the kernel runs; the arguments are separated by tabs, as
-- Lua's print does. '%' in the format stands for a value, "%%" for '%'.
-- Up to 10 kernel values make one print statement; more make a print typed
-- u64 (the record, room for all of them) and print_more statements that
-- write the rest into it, so the line is still one record (docs/ir.md).
function M.kernel_print(...)
  local parts, ops = {}, {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if T.is_kv(v) or getmetatable(v) == T.Pending then   -- (`c and x` alone: lift says what is wrong)
      if #ops == MAX_VALUES then
        T.fail("print in a kernel takes at most " .. MAX_VALUES .. " kernel values; split it into several prints")
      end
      ops[#ops + 1] = (T.lift(v))
      parts[i] = "%"
    else
      parts[i] = (tostring(v):gsub("%%", "%%%%"))
    end
  end
  local b = T.B()
  local fmt = b:add_string(table.concat(parts, "\t"))
  if #ops <= MAX_OPS then
    b:set_aux(b:op("print", core.type_id("void"), table.unpack(ops)), fmt, 0)
    return
  end
  local record = b:op("print", core.type_id("u64"), table.unpack(ops, 1, MAX_OPS))
  b:set_aux(record, fmt, #ops)
  for first = MAX_OPS + 1, #ops, MAX_OPS - 1 do
    local more = b:op("print_more", core.type_id("void"), record,
      table.unpack(ops, first, math.min(first + MAX_OPS - 2, #ops)))
    b:set_aux(more, 0, first - 1)
  end
end

-- ---- lt.assert ---------------------------------------------------------------------------------

-- lt.assert(cond, message): in a kernel compiled with lt.init{debug = true}, a
-- false cond stops the kernel and raises "assertion failed: message" with the
-- line; without debug it compiles to nothing. In Lua scope, a plain check.
function M.assert(cond, message)
  if message ~= nil and type(message) ~= "string" then
    if T.active() then T.fail("lt.assert: the message must be a string") end
    state.raise("lt.assert: the message must be a string")
  end
  message = message or "assertion failed"
  if not T.active() then
    if not cond then state.raise("assertion failed: " .. message) end
    return cond
  end
  local S = T.current()
  if not S.debug then return end
  local c
  if T.is_kv(cond) then
    c = T.cond(cond)
  elseif type(cond) == "number" then
    T.fail("lt.assert: the condition must be a comparison (got the number " .. tostring(cond) .. ")")
  else
    c = T.B():const_int(I1.id, cond and 1 or 0)   -- checked where it runs
  end
  local b = T.B()
  local s = b:op("assert", core.type_id("void"), c)
  b:set_aux(s, b:add_string(message), 0)
end

return M
