-- levels.lua -- SNode levels as values (x:parent(), level:parent(),
-- level:active()) and the struct-fors that are not one parallel struct_for
-- over a field's own level:
--
--   for i, j in level          a struct-for over a level handle: its active
--                              cells, the indices those of the cell's first
--                              element (raw: no field offset applies)
--   for ... in a nested loop   inside a struct-for over level S, a struct-for
--                              over a level or field C at or below S visits
--                              the active cells of C inside S's current cell,
--                              serially: one flat loop over the cells of the
--                              levels between S and C (an `if` on the
--                              deepest sparse one), and for a dynamic C a
--                              loop over the list's length
--   for _ in s (0-D)           the body once (a loop of one iteration)
--
-- hooks.lua's struct_loop pushes each struct-for's level and indices (by
-- physical axis) on the trace's sf_levels stack while its body is traced.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local fieldm = require "lattice.field"
local T = require "lattice.tracer"

local M = {}
local raise = state.raise
local I1, I32 = types.by_name.i1, types.by_name.i32
local SPARSE = { bitmasked = true, pointer = true, dynamic = true }
local Builder = fieldm.Builder

local function info(id) return require("lattice.sparse").info(id) end

local function err(msg)
  if T.active() then T.fail(msg) end
  raise(msg)
end

function M.is_level(x) return getmetatable(x) == Builder end

-- "level pointer [ij: 16, 16] #3" (its axes and extents, its SNode id);
-- a level got from x:parent() or a tree type shows the extents that its
-- cells add to its parent's along each axis.
local AXIS_LETTERS = "ijklmnop"
function M.level_text(b)
  local kind = rawget(b, "kind")
  if not kind then return "level root #" .. b.id end
  local axes, extents = rawget(b, "_axes"), rawget(b, "_extents")
  if type(extents) == "number" then
    local e = {}
    for k = 1, #axes do e[k] = extents end
    extents = e
  end
  if not axes and b.gen == state.gen and state.prog then     -- from the levels' shapes
    local ok, info = pcall(core.snode_info, state.prog, b.id)
    local pok, pinfo = false, nil
    if ok and info.parent >= 0 then pok, pinfo = pcall(core.snode_info, state.prog, info.parent) end
    if ok then
      axes, extents = {}, {}
      for k, n in ipairs(info.shape) do
        local above = pok and pinfo.shape[k] or 1
        if n ~= above then axes[#axes + 1], extents[#extents + 1] = k - 1, n // above end
      end
    end
  end
  if not axes then return "level " .. kind .. " #" .. b.id end
  local letters, ext = {}, {}
  for k, a in ipairs(axes) do
    letters[k] = AXIS_LETTERS:sub(a + 1, a + 1)
    ext[k] = tostring(extents[k])
  end
  return "level " .. kind .. " [" .. table.concat(letters) .. ": " .. table.concat(ext, ", ") .. "] #" .. b.id
end

-- A handle for SNode id, of the same tree (and instance) as `from`.
local function handle(id, gen, root, tok, inst)
  local i = info(id)
  return setmetatable({ id = id, gen = gen, root = root, kind = i.kind ~= "root" and i.kind or nil, tok = tok,
    inst = inst }, Builder)
end

-- x:parent(): the level that holds field f.
function M.field_parent(f)
  if T.active() then
    local ok, e = pcall(fieldm.ready, f)
    if not ok then T.fail((tostring(e):gsub("^[^:\n]*:%d+: ", ""))) end
  else
    fieldm.ready(f)
  end
  local inst = rawget(f, "_inst")
  local tok = rawget(f, "_tree") or (inst and inst._type.tok)
  return handle(info(f._snode).parent, f._gen, f._root, tok, inst)
end

-- Checks a level handle before use; materialises its tree. Returns the
-- level's info (never the root's).
local function check(h, what)
  if h.gen ~= state.gen then err(what .. ": this SNode belongs to a program that lt.init has reset") end
  if not info(h.root).materialized then
    fieldm.materialize_root(h.root)
    state.snode_cache = nil
  end
  local li = info(h.id)
  if li.kind == "root" then err(what .. ": lt.root is not a level; name a level (what :dense(...) returns) or a field") end
  return li
end

-- level:parent(): the level above (lt.root's handle at the top), nil for the root.
function M.level_parent(h)
  if getmetatable(h) ~= Builder then raise("level:parent is a method: call it with a colon, level:parent()") end
  if h.gen ~= state.gen then err("level:parent(): this SNode belongs to a program that lt.init has reset") end
  local p = info(h.id).parent
  if p < 0 then return nil end
  return handle(p, h.gen, h.root, h.tok, h.inst)
end

-- The first place under level id (depth first), or nil when it holds no field.
local function first_place(id)
  local i = info(id)
  if i.kind == "place" then return i end
  for _, c in ipairs(i.children or {}) do
    local p = first_place(c)
    if p then return p end
  end
  return nil
end

-- Per physical axis a of level li: its own extent (cells along a in one
-- container) and below[a] (field indices one cell spans), from the place p.
local function geometry(li, p)
  local ptot, pt = {}, {}
  for k, a in ipairs(p.axes) do ptot[a] = p.shape[k] end
  local par = li.parent >= 0 and info(li.parent) or nil
  if par then for k, a in ipairs(par.axes) do pt[a] = par.shape[k] end end
  local own, below = {}, {}
  for k, a in ipairs(li.axes) do
    own[a] = li.shape[k] // (pt[a] or 1)
    below[a] = ptot[a] // li.shape[k]
  end
  return own, below
end

local function label(li) return li.label end

-- The axis a dynamic level splits (the one its parent does not use).
local function dyn_axis(li)
  local inpar = {}
  for _, a in ipairs(info(li.parent).axes) do inpar[a] = true end
  for _, a in ipairs(li.axes) do if not inpar[a] then return a end end
  return li.axes[#li.axes]
end

-- The levels from below `top` (an SNode id; nil: the root) down to id, as
-- {id, i = info}; nil when top is not above id.
function M.path_from(id, top)
  local path = {}
  while id >= 0 and id ~= top do
    local i = info(id)
    if i.kind == "root" and top == nil then return path end
    table.insert(path, 1, { id = id, i = i })
    id = i.parent
  end
  if id < 0 then return nil end
  return path
end

-- The place under level li, or an error naming it.
local function place_of(id, li, what)
  local p = first_place(id)
  if not p then err(what .. " over " .. label(li) .. ": the level holds no fields (place a field under it)") end
  return p
end

-- ---- Lua scope: level:active() ---------------------------------------------------

local function inst_ud(inst)
  if not inst then return nil end
  if inst._proxy then return nil end
  if not inst._ud then raise("this tree instance was destroyed (g:destroy()); instantiate a new one") end
  return inst._ud
end

local function snode_call(level, ud, what, op, idx)
  local core = require "lattice.core"
  local ok, r = pcall(core.snode_op, state.prog, level, ud, what, op, table.unpack(idx))
  if not ok then raise((tostring(r):gsub("^lattice/[%w_]+%.lua:%d+: ", ""))) end
  return r
end

-- The indices (by li's virtual order) of cur (by physical axis).
local function pick(li, cur)
  local out = {}
  for k, a in ipairs(li.axes) do out[k] = cur[a] or 0 end
  return out
end

-- level:active() -> {{i, j}, ...}: the coordinates of the first element of
-- each active cell of the level, in the order of the cells.
function M.level_active(h)
  if getmetatable(h) ~= Builder then raise("level:active is a method: call it with a colon, level:active()") end
  if T.active() then T.fail("level:active() inside a kernel is not supported; use for i, j in level") end
  local li = check(h, "level:active()")
  local p = place_of(h.id, li, "level:active()")
  local ud = inst_ud(h.inst)
  local path = M.path_from(h.id, nil)
  local out = {}
  local function walk(d, cur)
    if d > #path then
      out[#out + 1] = pick(li, cur)
      return
    end
    local L = path[d]
    local own, below = geometry(L.i, p)
    if L.i.kind == "dynamic" then
      local a = dyn_axis(L.i)
      local n = snode_call(L.id, ud, L.i.label, "length", pick(info(L.i.parent), cur))
      for k = 0, n - 1 do
        local nxt = table.move(cur, 0, 8, 0, {})
        nxt[a] = (cur[a] or 0) + k
        walk(d + 1, nxt)
      end
      return
    end
    local axes = L.i.axes
    local function cells(k, c)
      if k > #axes then
        if SPARSE[L.i.kind] and not snode_call(L.id, ud, L.i.label, "is_active", pick(L.i, c)) then return end
        return walk(d + 1, c)
      end
      local a = axes[k]
      for q = 0, own[a] - 1 do
        local nxt = table.move(c, 0, 8, 0, {})
        nxt[a] = (c[a] or 0) + q * below[a]
        cells(k + 1, nxt)
      end
    end
    cells(1, cur)
  end
  walk(1, {})
  return out
end

-- ---- kernels ---------------------------------------------------------------------

local function stack()
  local S = T.current()
  S.sf_levels = S.sf_levels or {}
  return S.sf_levels
end

-- Runs fn(...) with struct-for level `level` and its indices idx (a list by
-- the level's virtual order) as the innermost enclosing struct-for.
function M.within(level, idx, fn, ...)
  local li = info(level)
  local by = {}
  for k, a in ipairs(li.axes) do by[a] = idx[k] end
  local st = stack()
  st[#st + 1] = { level = level, idx = by, label = li.label }
  local r = table.pack(pcall(fn, ...))
  st[#st] = nil
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- i32 statements of the indices (kernel values or Lua integers) of li at cur.
local function kidx(li, cur)
  local out = {}
  for k, a in ipairs(li.axes) do
    local s, t = T.lift(cur[a] or 0)
    if t ~= I32 then s = T.B():cast(I32.id, s) end
    out[k] = s
  end
  return out
end

local function indices(li, cur)
  local out = {}
  for k, a in ipairs(li.axes) do out[k] = cur[a] or 0 end
  return out
end

local BREAK_MSG = "break cannot leave a nested struct-for over a dynamic level below other levels (it is two "
  .. "loops); use a flag, or iterate the dynamic level's parent and the list yourself"

-- The body of a nested struct-for over C (info ci, place p) below the outer
-- loop o, along path (the levels from o's child down to C). Struct-fors in
-- its body nest inside C's current cell.
local function nested(o, C, ci, p, path, body)
  local H = require "lattice.hooks"
  local dyn = #path > 0 and path[#path].i.kind == "dynamic" and table.remove(path) or nil
  local dims, steps, deepest = {}, {}, nil
  for _, L in ipairs(path) do
    local own, below = geometry(L.i, p)
    for _, a in ipairs(L.i.axes) do
      if own[a] > 1 then
        dims[#dims + 1] = { 0, own[a] }
        steps[#dims] = { a = a, below = below[a] }
      end
    end
    if SPARSE[L.i.kind] then deepest = L end
  end
  if #dims == 0 then dims[1] = { 0, 1 } end
  local two = dyn and #path > 0
  local function run(cur)
    local idx = indices(ci, cur)
    if not two then return M.within(C, idx, body, table.unpack(idx, 1, #ci.axes)) end
    local l = T.current().loops
    l[#l + 1] = "levels"
    local r = table.pack(pcall(M.within, C, idx, body, table.unpack(idx, 1, #ci.axes)))
    l[#l] = nil
    if not r[1] then error(r[2], 0) end
    if r[2] == H.BREAK then T.fail(BREAK_MSG) end
    return table.unpack(r, 2, r.n)
  end
  local function leaf(cur)
    if not dyn then return run(cur) end
    local di = dyn.i
    local a = dyn_axis(di)
    local n = T.sym(T.B():snode_op("length", dyn.id, table.unpack(kidx(info(di.parent), cur))), I32)
    return H.ndrange_loop({ dims = { { 0, n } } }, function(k)
      local c = table.move(cur, 0, 8, 0, {})
      c[a] = (cur[a] or 0) + k
      return run(c)
    end)
  end
  return H.ndrange_loop({ dims = dims }, function(...)
    local cur = table.move(o.idx, 0, 8, 0, {})
    for k = 1, #steps do
      local c = select(k, ...)
      local s = steps[k]
      cur[s.a] = (cur[s.a] or 0) + (s.below == 1 and c or c * s.below)
    end
    if deepest then
      local on = T.sym(T.B():snode_op("is_active", deepest.id, table.unpack(kidx(deepest.i, cur))), I1)
      return H.if_(on, function() return leaf(cur) end)
    end
    return leaf(cur)
  end)
end

-- A struct-for over level C (what: its label, or the field f whose level it
-- is) inside another struct-for: emits it and returns true when C is at or
-- below the enclosing loop's level; false when there is no enclosing
-- struct-for, or C is not below it and no sparse level is above C (then it is
-- the loop over all of C's cells, as before); otherwise an error.
function M.inner(C, body, what)
  local st = T.current().sf_levels
  local o = st and st[#st]
  if not o then return false end
  local ci = info(C)
  if fieldm.is_field(what) then
    local off = rawget(what, "_offset")   -- a field's indices run over [offset, offset + shape)
    if off then
      local raw = body
      body = function(...)
        local ix = table.pack(...)
        for k = 1, ix.n do if off[k] ~= 0 then ix[k] = ix[k] + off[k] end end
        return raw(table.unpack(ix, 1, ix.n))
      end
    end
    what = "field '" .. fieldm.guess_name(what) .. "'"
  end
  local path = M.path_from(C, o.level)
  if not path then
    if not ci.under_sparse then return false end
    T.fail("a struct-for over " .. what .. " inside a struct-for over " .. o.label .. ": an inner struct-for "
      .. "visits the cells inside the outer loop's current cell, so it must be over a level or field below "
      .. o.label .. " (this one is not)")
  end
  nested(o, C, ci, place_of(C, ci, "a struct-for"), path, body)
  return true
end

-- for ... in level / lt.grouped(level) in a kernel.
function M.loop(h, body, grouped)
  local H = require "lattice.hooks"
  local li = check(h, "a struct-for")
  local inst = h.inst
  if inst and not inst._proxy then
    T.fail("a struct-for over a level of a tree instance that is not a kernel argument; pass the instance "
      .. "as an argument annotated with its tree type and take the level from its field (g.rho:parent())")
  end
  local p = place_of(h.id, li, "a struct-for")
  local b = body
  if grouped then b = function(...) return body(H.index_vector(...)) end end
  if M.inner(h.id, b, li.label) then return end
  if not T.at_top() then
    if li.under_sparse then
      T.fail("a struct-for over the sparse level " .. li.label .. " must be a top-level loop of the kernel (or "
        .. "nested in a struct-for over a level above it): its cells are visited in parallel")
    end
    -- every level above is dense: the loop over all its cells, serially, from the root
    return nested({ idx = {} }, h.id, li, p, M.path_from(h.id, nil), b)
  end
  local ptot, extents = {}, {}
  for k, a in ipairs(p.axes) do ptot[a] = p.shape[k] end
  for k, a in ipairs(li.axes) do extents[k] = ptot[a] end
  return H.struct_loop(h.id, li.nidx, b, extents)
end

-- for _ in s (a 0-D field), for _ in lt.ndrange(): the body once, as a loop
-- of one iteration (top level: a parallel loop of one iteration); grouped:
-- with an empty index vector.
function M.once(body, grouped)
  local H = require "lattice.hooks"
  return H.ndrange_loop({ dims = { { 0, 1 } } }, function()
    if grouped then return body(H.index_vector()) end
    return body()
  end)
end

return M
