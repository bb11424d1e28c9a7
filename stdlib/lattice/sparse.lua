-- sparse.lua -- the language side of sparse SNodes: activation operations
-- (lt.activate, lt.deactivate, lt.is_active, lt.append, lt.length,
-- deactivate_all) in Lua scope and in kernels, tree types (lt.tree and
-- instances), lt.grouped and the pool's counters (lt.stats).
--
-- An operation names a field or an SNode handle. On a field it acts on the
-- nearest sparse level above the field and takes the field's indices; on a
-- handle it acts on that level and takes the level's indices. A dynamic's
-- whole-list operations (append, length, deactivate) leave out the dynamic's
-- own axis: they take the indices of the list's parent cell.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local fieldm = require "lattice.field"
local T = require "lattice.tracer"

local M = {}
local raise = state.raise
local I32 = types.by_name.i32
local SPARSE = { bitmasked = true, pointer = true, dynamic = true }

-- SNode descriptions of the current program (trees never change once laid out).
local function info(id)
  local cache = state.snode_cache
  if not cache or cache.gen ~= state.gen then
    cache = { gen = state.gen }
    state.snode_cache = cache
  end
  local i = cache[id]
  if not i then
    i = core.snode_info(state.prog, id)
    cache[id] = i
  end
  return i
end
M.info = info

-- Raises at the user's line (Lua scope) or fails the trace (kernel).
local function err(msg)
  if T.active() then T.fail(msg) end
  raise(msg)
end

local function is_handle(x) return getmetatable(x) == fieldm.Builder end

-- The level an operation acts on and how the user's indices map onto it:
-- {level = id, kind, ref = axes of the user's indices, want = the level's
-- (or the list parent's) axes, what = name for messages, inst = instance or nil}.
local function target(fname, x, whole)
  local level, ref, what, inst, f
  if fieldm.is_field(x) then
    f = x
    if T.active() then
      local ok, e = pcall(fieldm.ready, f)
      if not ok then T.fail((tostring(e):gsub("^[^:\n]*:%d+: ", ""))) end
    else
      fieldm.ready(f)
    end
    what = "field '" .. fieldm.guess_name(f) .. "'"
    local pi = info(f._snode)
    ref = pi.axes
    local id = pi.parent
    while id >= 0 and not SPARSE[info(id).kind] do id = info(id).parent end
    level = id >= 0 and id or nil
    inst = rawget(f, "_inst")
  elseif is_handle(x) then
    if x.gen ~= state.gen then err(fname .. ": this SNode belongs to a program that lt.init has reset") end
    if not info(x.root).materialized then
      fieldm.materialize_root(x.root)
      state.snode_cache = nil
    end
    level = x.id
    local li = info(level)
    if li.kind == "root" then err(fname .. ": lt.root is not a level; name a level or a field") end
    ref = li.axes
    what = li.label
  else
    err(fname .. ": the first argument must be a field or an SNode (got a " .. type(x) .. ")")
  end
  local t = { level = level, what = what, inst = inst, ref = ref, field = f }
  if not level then return t end
  local li = info(level)
  t.kind = li.kind
  if whole and li.kind ~= "dynamic" and fname ~= "lt.deactivate" then
    err(fname .. ": " .. what .. " is not in a dynamic level (lt.root:dynamic(lt.j, n))")
  end
  if whole and li.kind == "dynamic" then
    -- the user's indices leave out the dynamic's own axis (the one its parent lacks)
    local pi = info(li.parent)
    local inparent, mine = {}, {}
    for _, a in ipairs(pi.axes) do inparent[a] = true end
    for _, a in ipairs(li.axes) do mine[a] = true end
    local r, rk = {}, {}
    for k, a in ipairs(ref) do
      if inparent[a] or not mine[a] then r[#r + 1], rk[#r + 1] = a, k end
    end
    t.ref, t.want, t.fk = r, pi.axes, rk
  else
    t.want = li.axes
  end
  return t
end

-- The user's indices (a list) mapped onto the level's; with the offset to
-- take from each (a field's indices run over [offset, offset + shape)), or
-- nil when there is none.
local function map_indices(fname, t, idx)
  if #idx ~= #t.ref then
    err(fname .. ": " .. t.what .. " takes " .. #t.ref .. " ind" .. (#t.ref == 1 and "ex" or "ices") ..
      " here, got " .. #idx)
  end
  local foff = t.field and rawget(t.field, "_offset")
  local out, off = {}, foff and {}
  for m, a in ipairs(t.want or {}) do
    for k, r in ipairs(t.ref) do
      if r == a then
        out[m] = idx[k]
        if foff then off[m] = foff[t.fk and t.fk[k] or k] end
      end
    end
  end
  -- Lua scope: the box is checked here, as the level's message would give the index less the offset
  if foff and not T.active() then
    for k, v in ipairs(idx) do
      local fk = t.fk and t.fk[k] or k
      if math.type(v) == "integer" and (v < foff[fk] or v >= foff[fk] + t.field._shape[fk]) then
        raise(fname .. ": index " .. v .. " out of range for axis " .. (fk - 1) .. " of " .. t.what .. " with " ..
          fieldm.box_text(t.field))
      end
    end
  end
  return out, off
end

-- Takes the offsets (map_indices) from the level's indices: kernel statements
-- (kidx's) or checked integers.
local function unshift(idx, off)
  if not off then return idx end
  for m, v in ipairs(idx) do
    if off[m] ~= 0 then
      if type(v) == "number" then idx[m] = v - off[m]
      else idx[m] = T.B():binary("sub", v, T.B():const_int(I32.id, off[m])) end
    end
  end
  return idx
end

local function inst_ud(t)
  local inst = t.inst
  if not inst then return nil end
  if inst._proxy then return nil end
  if not inst._ud then raise("this tree instance was destroyed (g:destroy()); instantiate a new one") end
  return inst._ud
end

-- Kernel side: indices as i32 statements.
local function kidx(fname, list)
  local out = {}
  for k, v in ipairs(list) do
    local s, t = T.lift(v)
    if not t.is_int or t.name == "i1" then
      T.fail(fname .. ": index " .. (k - 1) .. " must be an integer (got " .. t.name .. ")")
    end
    if t ~= I32 then s = T.B():cast(I32.id, s) end
    out[k] = s
  end
  return out
end

local function check_kernel_inst(fname, t)
  if t.inst and not t.inst._proxy then
    T.fail(fname .. ": " .. t.what .. " belongs to a tree instance that is not an argument of the kernel; "
      .. "pass the instance as an argument annotated with its tree type")
  end
end

-- One operation: "activate", "deactivate", "is_active", "length".
-- Changes of a tree's cells from Lua inside lt.tape are refused: the tape
-- records kernels only (autodiff.lua).
local function on_tape(fname, t)
  if state.tape then
    raise(fname .. " of " .. t.what .. " inside lt.tape: the tape records kernel calls only, so gradients would "
      .. "miss this change; do it before the tape starts, or in a kernel")
  end
end

local function op(fname, opname, x, ...)
  local whole = opname == "length" or opname == "deactivate"
  local t = target(fname, x, whole)
  local idx, off = map_indices(fname, t, { ... })
  if not t.level then                         -- a dense field: always active
    if opname == "is_active" then return true end
    if opname == "activate" then return nil end
    err(fname .. ": " .. t.what .. " has no sparse level above it (its cells are always active)")
  end
  if T.active() then
    check_kernel_inst(fname, t)
    local s = T.B():snode_op(opname, t.level, table.unpack(unshift(kidx(fname, idx), off)))
    if opname == "is_active" then return T.sym(s, types.by_name.i1) end
    if opname == "length" then return T.sym(s, I32) end
    return nil
  end
  for k, v in ipairs(idx) do
    if math.type(v) ~= "integer" then
      raise(fname .. ": index " .. (k - 1) .. " must be an integer (got " .. tostring(v) .. ")")
    end
  end
  if opname == "activate" or opname == "deactivate" then on_tape(fname, t) end
  unshift(idx, off)
  local ok, r = pcall(core.snode_op, state.prog, t.level, inst_ud(t), t.what, opname, table.unpack(idx))
  if not ok then raise((tostring(r):gsub("^lattice/[%w_]+%.lua:%d+: ", ""))) end
  if opname == "activate" or opname == "deactivate" then return nil end
  return r
end

function M.activate(x, ...) return op("lt.activate", "activate", x, ...) end
function M.deactivate(x, ...) return op("lt.deactivate", "deactivate", x, ...) end
function M.is_active(x, ...) return op("lt.is_active", "is_active", x, ...) end
function M.length(x, ...) return op("lt.length", "length", x, ...) end

-- ---- lt.append ---------------------------------------------------------------------
-- lt.append(l, i..., v): appends v to the list of the dynamic holding l;
-- returns the new element's index (-1 in a kernel when the list is full; a
-- Lua-scope append to a full list, or one in a debug-mode kernel, is an error).
-- l is a scalar field, a composite field (vector, matrix, struct: v a value
-- of its type) or a table of such fields placed in one dynamic level
-- (lt.append({a, b}, i, {va, vb})). The element gets one slot (one atomic on
-- the list's length) and its appender writes every component; the level's
-- places must all be given, except gradients and duals (left zero).

-- The scalar fields and values of an append: {{f = scalar field, v = value, what}, ...}.
local function append_parts(x, v)
  local cfield = require "lattice.cfield"
  local parts = {}
  local function add(f, val)
    if cfield.is(f) then
      cfield.ready(f)
      local what = "field '" .. fieldm.guess_name(f) .. "'"
      local ok, flat = pcall(T.active() and f._ct.to_flat or f._ct.from_lua, f._ct, val, what)
      if not ok then err("lt.append: " .. tostring(flat):gsub("^[^:\n]*:%d+: ", "")) end
      for k, c in ipairs(f._comps) do parts[#parts + 1] = { f = c, v = flat[k] } end
    elseif fieldm.is_field(f) then
      parts[#parts + 1] = { f = f, v = val }
    else
      err("lt.append: expects a field, a vector/matrix/struct field or a table of fields (got a " .. type(f) .. ")")
    end
  end
  if type(x) == "table" and getmetatable(x) == nil then
    if #x == 0 then err("lt.append: the table of fields is empty") end
    if type(v) ~= "table" or getmetatable(v) ~= nil or #v ~= #x then
      err("lt.append: with a table of " .. #x .. " fields the value must be a table of " .. #x
        .. " values, one per field in the same order, e.g. lt.append({a, b}, i, {va, vb})")
    end
    for k, f in ipairs(x) do add(f, v[k]) end
  else
    add(x, v)
  end
  for _, p in ipairs(parts) do
    p.what = "field '" .. fieldm.guess_name(p.f) .. "'"
    if T.active() then
      local ok, e = pcall(fieldm.ready, p.f)
      if not ok then T.fail((tostring(e):gsub("^[^:\n]*:%d+: ", ""))) end
    else
      fieldm.ready(p.f)
    end
  end
  return parts
end

-- The name of the field placed at SNode id (for messages).
local function place_name(id)
  for _, fields in pairs(state.trees or {}) do
    for f in pairs(fields) do
      if rawget(f, "_snode") == id and rawget(f, "_gen") == state.gen then return fieldm.guess_name(f) end
    end
  end
  return info(id).name or ("S" .. id)
end

-- Checks that parts cover the places of dynamic level t.level once each (gradients
-- and duals of given fields may be left out); the position of each part's place.
local function append_slots(t, parts)
  local li = info(t.level)
  local pos, optional, given = {}, {}, {}
  for k, c in ipairs(li.children) do pos[c] = k end
  for _, p in ipairs(parts) do
    local id = p.f._snode
    if not pos[id] then
      local where = info(id).parent == t.level and "" or " (it is not placed in that level)"
      err("lt.append: " .. p.what .. " is not in the dynamic level of the first field" .. where
        .. "; the fields of one append must be placed together, e.g. lt.root:dynamic(lt.i, n):place(a, b)")
    end
    if given[id] then err("lt.append: " .. p.what .. " is given twice") end
    given[id] = true
    p.slot = pos[id]
    for _, side in ipairs { "_grad", "_dual" } do
      local g = rawget(p.f, side)
      if g and rawget(g, "_snode") then optional[g._snode] = true end
    end
  end
  local missing = {}
  for _, c in ipairs(li.children) do
    if not given[c] and not optional[c] then missing[#missing + 1] = "'" .. place_name(c) .. "'" end
  end
  if #missing > 0 then
    local all = {}
    for _, p in ipairs(parts) do all[#all + 1] = p.what:match("'(.*)'") end
    for _, m in ipairs(missing) do all[#all + 1] = m:sub(2, -2) end
    err("lt.append: " .. parts[1].what .. " shares its dynamic level with field" .. (#missing > 1 and "s " or " ")
      .. table.concat(missing, ", ") .. "; an append writes every field of the element: lt.append({"
      .. table.concat(all, ", ") .. "}, i, {...})")
  end
end

-- The place indices of element k of the list whose parent cell is at ks (statements).
local function element_indices(t, place, ks, k)
  local by_axis = {}
  for m, a in ipairs(t.want) do by_axis[a] = ks[m] end
  local out = {}
  for m, a in ipairs(info(place).axes) do out[m] = by_axis[a] or k end
  return out
end

function M.append(x, ...)
  local n = select("#", ...)
  if n == 0 then err("lt.append: expects the list's indices and a value, e.g. lt.append(l, i, v)") end
  local args = { ... }
  local v = args[n]
  args[n] = nil
  local first = x
  if type(x) == "table" and getmetatable(x) == nil then first = x[1] end
  local cfield = require "lattice.cfield"
  if cfield.is(first) then first = cfield.first(first) end
  local t = target("lt.append", first, true)
  if not t.level or t.kind ~= "dynamic" then err("lt.append: " .. t.what .. " is not in a dynamic level") end
  local li = info(t.level)
  local parts
  if is_handle(x) then
    if #li.children ~= 1 then
      err("lt.append: " .. t.what .. " holds " .. #li.children .. " fields; name them to append to all at once: "
        .. "lt.append({a, b}, i, {va, vb})")
    end
    parts = { { slot = 1, v = v, what = "field '" .. place_name(li.children[1]) .. "'" } }
  else
    parts = append_parts(x, v)
    append_slots(t, parts)
  end
  local idx, off = map_indices("lt.append", t, args)
  local single = #parts == 1 and #li.children == 1
  if T.active() then
    check_kernel_inst("lt.append", t)
    local ks = unshift(kidx("lt.append", idx), off)
    local b = T.B()
    if single then
      local dtype = types.by_name[info(li.children[1]).dtype]
      -- (in debug mode the generated code raises an error when the list is full)
      return T.sym(b:snode_append(t.level, T.implicit(v, dtype, t.what), table.unpack(ks)), I32)
    end
    local vals = {}
    for k, p in ipairs(parts) do vals[k] = T.implicit(p.v, p.f.dtype, p.what) end
    local k = b:snode_op("reserve", t.level, table.unpack(ks))
    local st = b:if_(b:binary("cmp_ge", k, b:const_int(I32.id, 0)), false)
    local saved = b:block()
    b:set_block(b:child(st, 0))
    for j, p in ipairs(parts) do
      b:global_store(b:global_ptr(p.f._snode, table.unpack(element_indices(t, p.f._snode, ks, k))), vals[j])
    end
    b:set_block(saved)
    return T.sym(k, I32)
  end
  on_tape("lt.append", t)
  for k, iv in ipairs(idx) do
    if math.type(iv) ~= "integer" then
      raise("lt.append: index " .. (k - 1) .. " must be an integer (got " .. tostring(iv) .. ")")
    end
  end
  unshift(idx, off)
  local vals = {}
  if single then
    local dtype = types.by_name[info(li.children[1]).dtype]
    if type(v) ~= "number" then raise("lt.append: the value must be a number (got a " .. type(v) .. ")") end
    if dtype.is_int then
      local iv = math.tointeger(v)
      if not iv then raise("lt.append: cannot append the float " .. tostring(v) .. " to an integer field") end
      v = iv
    end
    vals[1] = v
  else
    for _, p in ipairs(parts) do
      local ok, cv = pcall(fieldm.check_value, p.f, p.v)
      if not ok then raise("lt.append: " .. tostring(cv):gsub("^[^:\n]*:%d+: ", "")) end
      vals[p.slot] = cv
    end
  end
  local ok, r, e = pcall(core.snode_append, state.prog, t.level, inst_ud(t), t.what, vals, table.unpack(idx))
  if not ok then raise((tostring(r):gsub("^lattice/[%w_]+%.lua:%d+: ", ""))) end
  if r == nil then raise(e) end
  return r
end

-- The sparse levels of the tree under root that no sparse level is above:
-- deactivating them deactivates every sparse cell of the tree.
local function top_sparse(root)
  local out = {}
  local function walk(id)
    local i = info(id)
    if SPARSE[i.kind] then
      out[#out + 1] = id
      return
    end
    for _, c in ipairs(i.children or {}) do walk(c) end
  end
  walk(root)
  return out
end

local function deactivate_tree(root, ud)
  local ok, e = pcall(core.deactivate_tree, state.prog, root, ud)
  if not ok then raise((tostring(e):gsub("^lattice/[%w_]+%.lua:%d+: ", ""))) end
end

-- Tree-wide forms: lt.deactivate_all() (every tree of the program: lt.root
-- trees and live tree instances), lt.root:deactivate_all() (every tree built
-- from lt.root) and g:deactivate_all() (one tree instance; also in kernels).
local function deactivate_trees(x)
  local tree = require "lattice.tree"
  if tree.is_instance(x) then
    if T.active() then
      if not x._proxy then
        T.fail("g:deactivate_all(): the tree instance is not an argument of the kernel; pass it as an argument "
          .. "annotated with its tree type")
      end
      for _, id in ipairs(top_sparse(x._type.root)) do T.B():deactivate_all(id) end
      return
    end
    if not x._ud then raise("g:deactivate_all(): this tree instance was destroyed (g:destroy())") end
    on_tape("deactivate_all", { what = "a tree instance" })
    return deactivate_tree(x._type.root, x._ud)
  end
  local what = x == nil and "lt.deactivate_all()" or "lt.root:deactivate_all()"
  if T.active() then
    T.fail(what .. " runs in Lua scope only; in a kernel name a level or a field (lt.deactivate_all(x), "
      .. "handle:deactivate_all()) or a tree instance argument (g:deactivate_all())")
  end
  on_tape("deactivate_all", { what = what == "lt.deactivate_all()" and "every tree" or "lt.root" })
  deactivate_tree(nil, nil)
  if x == nil then
    for inst in pairs(state.instances or {}) do
      if inst._ud then deactivate_tree(inst._type.root, inst._ud) end
    end
  end
end

-- x:deactivate_all() / handle:deactivate_all(), and the tree-wide forms above.
function M.deactivate_all(x)
  if x == nil or require("lattice.tree").is_instance(x) or (is_handle(x) and x.id == x.root) then
    if is_handle(x) and x.gen ~= state.gen then
      err("deactivate_all: this SNode belongs to a program that lt.init has reset")
    end
    return deactivate_trees(x)
  end
  local t = target("deactivate_all", x, false)
  if not t.level then err("deactivate_all: " .. t.what .. " has no sparse level above it") end
  if T.active() then
    check_kernel_inst("deactivate_all", t)
    T.B():deactivate_all(t.level)
    return
  end
  on_tape("deactivate_all", t)
  local ok, e = pcall(core.deactivate_all, state.prog, t.level, inst_ud(t))
  if not ok then raise((tostring(e):gsub("^lattice/[%w_]+%.lua:%d+: ", ""))) end
end

-- The level a struct-for over field f runs on (f's parent), or nil when no
-- sparse level is above f (then the loop is an ndrange over f's shape).
function M.struct_level(f)
  local pi = info(f._snode)
  if not pi.under_sparse then return nil end
  return pi.parent, pi.nidx
end

-- ---- lt.grouped ------------------------------------------------------------------

local Grouped = {}
M.Grouped = Grouped

-- lt.grouped(x): in a kernel, `for I in lt.grouped(x)` gives the index vector
-- I = {i, j, ...} of each active cell; in Lua scope, the same over x:active().
function M.grouped(x)
  if not fieldm.is_field(x) and not is_handle(x) then err("lt.grouped: expects a field or a level") end
  return setmetatable({ f = x }, Grouped)
end

Grouped.__call = function(g, _, _)
  if not g.list then
    g.list = g.f:active()
    g.pos = 0
  end
  g.pos = g.pos + 1
  return g.list[g.pos]
end

-- ---- counters ------------------------------------------------------------------

function M.stats()
  local s = core.stats(state.prog)
  s.active = {}
  for _, n in ipairs(s.snodes) do s.active[n.label] = n.active end
  return s
end

-- handle:stats(): one level's counters (lt.stats().snodes' entry for it):
-- {kind, label, active, allocated, bytes, reserved}.
function M.level_stats(h)
  if not is_handle(h) then raise("stats: call it on a level, e.g. lt.root:pointer(lt.i, 8):stats()") end
  if h.gen ~= state.gen then raise("stats: this SNode belongs to a program that lt.init has reset") end
  if h.id == h.root then raise("stats: lt.root is not a level; call it on a level, or see lt.stats()") end
  return core.level_stats(state.prog, h.id)
end

local function bytes(n)
  if n >= 1 << 30 then return ("%.2f GiB"):format(n / (1 << 30)) end
  if n >= 1 << 20 then return ("%.2f MiB"):format(n / (1 << 20)) end
  if n >= 1 << 10 then return ("%.1f KiB"):format(n / 1024) end
  return n .. " B"
end

function M.print_stats()
  local s = M.stats()
  print(("pool: %s used (high-water mark) of %s"):format(bytes(s.pool_used), bytes(s.pool_bytes)))
  print(("lists: %d built, %d reused; gc runs: %d"):format(s.lists_built, s.lists_reused, s.gc_runs))
  for _, n in ipairs(s.snodes) do
    if n.kind == "pointer" or n.kind == "dynamic" then
      print(("  %-20s tree %-3d %d active; %d %s allocated (%s), %d taken from the pool"):format(n.label, n.tree,
        n.active, n.allocated, n.kind == "dynamic" and "chunks" or "cells", bytes(n.bytes), n.reserved))
    elseif SPARSE[n.kind] then
      print(("  %-20s tree %-3d %d active"):format(n.label, n.tree, n.active))
    end
  end
end

return M
