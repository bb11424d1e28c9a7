-- noactivate.lua -- lt.no_activate(x, ...) in a kernel: the kernel's writes to
-- the fields named (a field, every component of a vector field, or every
-- field under a level handle) activate no cells. Each such write and atomic
-- is emitted under `if lt.is_active(x, ...)`, so it happens where the cell is
-- active and is dropped elsewhere (an atomic there returns 0).
--
-- Per trace (tracer.lua's state S): S.no_activate holds the SNode ids named;
-- S.written the fields written so far, with the line, so a declaration that
-- comes after a write (which has already activated) is refused, not ignored.
local fieldm = require "lattice.field"

local M = {}
local T                      -- lattice.tracer (it requires this module)

local function tracer()
  T = T or require "lattice.tracer"
  return T
end

-- Whether writes to field f must not activate.
function M.applies(f)
  local S = tracer().current()
  local na = S.no_activate
  if not na then return false end
  local info = require("lattice.sparse").info
  local id = f._snode
  while id and id >= 0 do
    if na[id] then return true end
    id = info(id).parent
  end
  return false
end

-- Records the first write to f in this trace, with its line.
function M.note_write(f)
  local S = tracer().current()
  S.written = S.written or {}
  if S.written[f] == nil then
    local _, line = T.user_loc()
    S.written[f] = line
  end
end

-- Runs emit() where f's cell at idx is active (debug mode checks the indices
-- first, so an index out of range still stops the kernel).
local function when_active(f, idx, emit)
  local S, B = T.current(), T.B
  if S.debug then T.field_ptr(f, idx) end
  local act = require("lattice.sparse").is_active(f, table.unpack(idx))
  if act == true then return emit() end      -- no sparse level above f
  local b = B()
  local st = b:if_(T.cond(act), false)
  local saved = b:block()
  b:set_block(b:child(st, 0))
  emit()
  b:set_block(saved)
end

-- x[idx] = val (val an IR value of x's type), only where the cell is active.
function M.store(f, idx, val)
  tracer()
  when_active(f, idx, function() T.B():global_store(T.field_ptr(f, idx), val) end)
end

-- lt.atomic_<op>(x[idx], s) only where the cell is active; returns the IR
-- value of the old element (0 where inactive).
function M.atomic(op, f, idx, s, t)
  tracer()
  local b = T.B()
  local old = b:alloca(t.id)
  b:store(old, t.is_int and b:const_int(t.id, 0) or b:const_float(t.id, 0.0))
  when_active(f, idx, function() T.B():store(old, T.B():atomic("atomic_" .. op, T.field_ptr(f, idx), s)) end)
  return T.B():load(old)
end

-- lt.no_activate(x, ...)
function M.declare(...)
  local S = tracer().current()
  if not S then error("lt.no_activate is a declaration inside a kernel (writes there then activate no cells)", 3) end
  local fail = T.fail
  local n = select("#", ...)
  if n == 0 then fail("lt.no_activate: name the fields or levels whose cells the kernel's writes must not activate") end
  S.no_activate = S.no_activate or {}
  for k = 1, n do
    local x = select(k, ...)
    local ids = {}
    if T.cfield and T.cfield.is(x) then
      for _, c in ipairs(T.cfield.components(x)) do ids[#ids + 1] = T.prepare_field(c)._snode end
    elseif fieldm.is_field(x) then
      ids[1] = T.prepare_field(x)._snode
    elseif getmetatable(x) == fieldm.Builder then
      ids[1] = x.id
    else
      fail("lt.no_activate: argument " .. k .. " is a " .. type(x) .. ", not a field or an SNode level")
    end
    for _, id in ipairs(ids) do S.no_activate[id] = true end
  end
  for f, line in pairs(S.written or {}) do
    if M.applies(f) then
      fail("lt.no_activate must come before the kernel's first write to field '" .. fieldm.guess_name(f) ..
        "' (line " .. line .. "), which may already have activated cells")
    end
  end
end

return M
