-- lattice.rewrite: rewrites the source of a kernel function so that control flow,
-- comparisons, logical operators and local assignments call the tracer's hooks.
-- The rules are the contract in docs/internals.md ("The rewriter contract"); the
-- way it is built (lexer -> parser -> emitter, line keeping) is described there too.
--
--   rewrite.function_chunk(text, linedefined, lastlinedefined, upvalue_names, chunkname, fn)
--     -> text of a new chunk | nil, "chunk:line: message"
--   fn (optional): the function itself. Several functions can start and end on
--   the same lines; then the one whose bytecode equals fn's is rewritten, and
--   without fn, or when none or several different ones match, it is an error:
--   the wrong body is never traced.

local M = {}

local rep, format = string.rep, string.format
local concat = table.concat

local luaparse = require "lattice.luaparse"

-- Errors raised while emitting (caught by pcall in function_chunk).
local function fail(line, msg) error({ line = line, msg = msg }, 0) end

local T, V, L, E             -- the function's tokens (see lattice.luaparse)

---------------------------------------------------------------------------
-- Emitter. Original tokens are copied with `tok`, which first adds newlines
-- until the output is on the token's line; synthetic code goes through `syn`
-- and never contains a newline, so it stays on the current line. Before the
-- synthetic head of a rewritten statement or expression, `sync` moves to the
-- line of its first token, so a hook call is on the line of the code it
-- replaces (errors raised by a hook at level 2 name that line).
---------------------------------------------------------------------------

local out, nout, cur         -- output pieces, their count, current output line
local F                      -- function being emitted: { vararg, depth, va }
                             -- depth > 0: inside a block or expression that became a closure
local nest                   -- closures and functions open around the current point

-- Lua's parser allows ~200 C levels of nesting and each closure costs about
-- three (function, return, call), so a chain of ~60 elseif fails to load with
-- a bare "C stack overflow". Report it here with a line and a way out instead.
local MAX_NEST = 45
local function enter()
  nest = nest + 1
  if nest > MAX_NEST then
    fail(cur, "this code nests too deeply to be traced (" .. MAX_NEST .. " levels of if/elseif, loops, "
         .. "and/or and functions); split long elseif chains or move code into helper functions")
  end
end

local function sync(line)
  if line > cur then
    nout = nout + 1
    out[nout] = rep("\n", line - cur)
    cur = line
  end
end

local function tok(i)
  local l = L[i]
  if l > cur then
    nout = nout + 1
    out[nout] = rep("\n", l - cur)
  end
  out[nout + 1] = " "
  out[nout + 2] = V[i]
  nout = nout + 2
  cur = E[i]
end

local function syn(s)
  nout = nout + 1
  out[nout] = s
end

local CMP = { ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge", ["=="] = "eq", ["~="] = "ne" }

local emit, emit_block, identify

-- Copies a node's tokens, emitting its kids (in source order) through `emit`.
local function verbatim(n)
  local i, kids = n.t1, n.kids
  if kids then
    for j = 1, #kids do
      local c = kids[j]
      for q = i, c.t1 - 1 do tok(q) end
      emit(c)
      i = c.t2 + 1
    end
  end
  for q = i, n.t2 do tok(q) end
end

local function emit_list(list)
  for j = 1, #list do
    if j > 1 then syn(",") end
    emit(list[j])
  end
end

-- The body of a function (after its ')') up to and including 'end': a fresh
-- top level. `local __va` is filled in at the start once we know a closure used `...`.
-- A function defined inside the kernel counts how deeply it is called
-- (`__lt.enter`): recursion on kernel values never ends at trace time.
local function emit_body(f, inner)
  local saved = F
  F = { vararg = f.vararg, depth = 0, va = false }
  enter()
  if inner then
    local params = {}
    for q = f.pt1 + 1, f.pt2 - 1 do if T[q] == "name" then params[#params + 1] = V[q] end end
    if f.method then table.insert(params, 1, "self") end
    syn(format(" local __depth <close> = __lt.enter(%d, %q);", L[f.t1], concat(params, ",")))
  end
  nout = nout + 1
  local slot = nout
  out[slot] = ""
  emit_block(f.body)
  if F.va then out[slot] = " local __va = __lt_pack(...);" end
  F = saved
  nest = nest - 1
  tok(f.t2)
end

-- Code for a closure block: `fn` emits the inside at depth + 1.
local function closure(head, fn, arg, endline)
  syn(head)
  F.depth = F.depth + 1
  enter()
  fn(arg)
  nest = nest - 1
  F.depth = F.depth - 1
  if endline then sync(endline) end
  syn(" end")
end

-- Statements that run their closures through a hook: `local __r = pack(hook(...))`,
-- then propagate the control code and all values the hook returned.
local function hook_head(s)
  sync(L[s.t1])
  syn(" do local __r = __lt_pack(")
end

local function hook_tail()
  if F.depth > 0 then
    syn("); if __r[1] then return __lt_unpack(__r, 1, __r.n) end end;")
  else
    syn("); if __r[1] then return __lt_unpack(__r, 2, __r.n) end end;")
  end
end

-- closure() passes one argument; elseif chains need two, so carry the index in a table.
local emit_if
local function emit_if_from(arg) emit_if(arg[1], arg[2]) end
function emit_if(s, i)
  syn(" __lt.if_(")
  emit(s.conds[i])
  closure(", function()", emit_block, s.blocks[i], L[s.elseif_t[i] or s.else_t or s.t2])
  if i < #s.conds then
    closure(", function() return", emit_if_from, { s, i + 1 })
  elseif s.else_b then
    closure(", function()", emit_block, s.else_b, L[s.t2])
  end
  syn(")")
end

local function emit_assign(s)
  local targets, all_names = s.targets, true
  for _, t in ipairs(targets) do
    if t.k ~= "Name" then all_names = false end
  end
  if all_names then
    local names = {}
    for j, t in ipairs(targets) do names[j] = V[t.t1] end
    for q = s.t1, s.eq - 1 do tok(q) end
    syn(format(" = __lt.assign(%q, %s,", concat(names, ","), concat(names, ", ")))
    emit_list(s.exprs)
    syn(");")
    return
  end
  if #targets == 1 then                       -- t[k] = e: __lt.setindex(t, k, e)
    local t = targets[1]
    sync(L[s.t1])
    syn(" __lt.setindex(")
    emit(t.obj)
    syn(",")
    if t.name then syn(format(" %q", V[t.name])) else emit(t.key) end
    syn(",")
    emit_list(s.exprs)
    syn(");")
    return
  end
  -- Several targets, some indexed: evaluate the tables and keys first, then the
  -- values, then store right to left, as Lua does.
  sync(L[s.t1])
  local temps = {}
  for j, t in ipairs(targets) do
    if t.k == "Index" then temps[#temps + 1] = format("__o%d, __k%d", j, j) end
  end
  syn(" do local " .. concat(temps, ", ") .. " =")
  local first = true
  for _, t in ipairs(targets) do
    if t.k == "Index" then
      if not first then syn(",") end
      first = false
      emit(t.obj)
      syn(",")
      if t.name then syn(format(" %q", V[t.name])) else emit(t.key) end
    end
  end
  syn("; local __t = __lt_pack(")
  emit_list(s.exprs)
  syn(");")
  for j = #targets, 1, -1 do
    local t = targets[j]
    if t.k == "Index" then
      syn(format(" __lt.setindex(__o%d, __k%d, __t[%d]);", j, j, j))
    else
      local nm = V[t.t1]
      syn(format(" %s = __lt.assign(%q, %s, __t[%d]);", nm, nm, nm, j))
    end
  end
  syn(" end;")
end

local function emit_fornum_body(s)
  emit_block(s.body)
end

local function emit_repeat_body(s)
  emit_block(s.body)
  sync(L[s.ut])
  syn(" return __lt.UNTIL, (")
  emit(s.cond)
  syn(")")
end

local function emit_while_cond(s)
  syn(" return (")
  emit(s.cond)
  syn(")")
end

local SPECIAL = {}

-- The names a `local` statement declares (not its <attribs>), comma-separated.
local function local_names(s)
  local names = {}
  for q = s.t1 + 1, s.nt2 do
    if T[q] == "name" and T[q - 1] ~= "<" then names[#names + 1] = V[q] end
  end
  return concat(names, ",")
end

SPECIAL.Local = function(s)
  for q = s.t1, s.nt2 do tok(q) end
  syn(" = __lt.decl(" .. format("%q", local_names(s)))
  if s.exprs then
    syn(",")
    emit_list(s.exprs)
  end
  syn(");")
end

SPECIAL.Assign = emit_assign

SPECIAL.If = function(s)
  hook_head(s)
  emit_if(s, 1)
  hook_tail()
end

SPECIAL.While = function(s)
  hook_head(s)
  syn(" __lt.while_(")
  closure("function()", emit_while_cond, s)
  closure(", function()", emit_block, s.body, L[s.t2])
  syn(")")
  hook_tail()
end

SPECIAL.Repeat = function(s)
  hook_head(s)
  syn(" __lt.repeat_(")
  closure("function()", emit_repeat_body, s)
  syn(")")
  hook_tail()
end

SPECIAL.ForNum = function(s)
  hook_head(s)
  syn(" __lt.for_(")
  emit(s.a)
  syn(",")
  emit(s.b)
  syn(",")
  if s.s then emit(s.s) else syn(" nil") end
  syn(", function(")
  tok(s.var)
  closure(")", emit_fornum_body, s, L[s.t2])
  syn(")")
  hook_tail()
end

SPECIAL.ForIn = function(s)
  -- the explist is evaluated first (packed) so its tokens keep their lines
  sync(L[s.t1])
  syn(" do local __g = __lt_pack(")
  emit_list(s.exprs)
  syn("); local __r = __lt_pack(__lt.gfor(function(")
  for j, q in ipairs(s.names) do
    if j > 1 then syn(",") end
    tok(q)
  end
  closure(")", emit_fornum_body, s, L[s.t2])
  syn(", __lt_unpack(__g, 1, __g.n))")
  hook_tail()
end

SPECIAL.Do = function(s)
  tok(s.t1)
  emit_block(s.body)
  tok(s.t2)
end

SPECIAL.Break = function(s)
  if F.depth > 0 then
    sync(L[s.t1])
    syn(" do return __lt.BREAK end;")
  else
    tok(s.t1)
  end
end

SPECIAL.Return = function(s)
  if F.depth > 0 then
    sync(L[s.t1])
    syn(" do return __lt.RETURN")
    if #s.exprs > 0 then
      syn(",")
      emit_list(s.exprs)
    end
    syn(" end;")
  else
    verbatim(s)
  end
end

-- A table constructor: the tracer notes where the table was made (a Lua
-- table written under a condition on kernel values must have been made there).
SPECIAL.Table = function(e)
  sync(L[e.t1])
  syn(" (__lt.newtable(")                -- parenthesized: `f{...}` becomes `f (...)`, still a call
  verbatim(e)
  syn("))")
end

SPECIAL.Func = function(f)
  for q = f.t1, f.pt2 do tok(q) end
  emit_body(f, true)
end

-- `a and b`: the right operand becomes `function() return (b) end` (parenthesized:
-- `a and f()` yields one value).
local function emit_lazy_operand(e)
  emit(e)
  syn(")")
end
SPECIAL.Bin = function(e)
  local op = e.op
  local h = CMP[op]
  if h then
    sync(L[e.t1])
    syn(" (__lt." .. h .. "(")
    emit(e.l)
    syn(",")
    emit(e.r)
    syn("))")
  elseif op == "and" or op == "or" then
    sync(L[e.t1])
    syn(" (__lt." .. op .. "_(")
    emit(e.l)
    closure(", function() return (", emit_lazy_operand, e.r)
    syn("))")
  else
    verbatim(e)
  end
end

SPECIAL.Un = function(e)
  if e.op == "not" then
    sync(L[e.t1])
    syn(" (__lt.not_(")
    emit(e.e)
    syn("))")
  else
    verbatim(e)
  end
end

SPECIAL.Vararg = function(e)
  if F.depth > 0 and F.vararg then       -- a closure cannot see its parent's `...`
    F.va = true
    sync(L[e.t1])
    syn(" __lt_unpack(__va, 1, __va.n)")
  else
    tok(e.t1)
  end
end

emit = function(n)
  local f = SPECIAL[n.k]
  if f then f(n) else verbatim(n) end
end

emit_block = function(stats)
  for j = 1, #stats do emit(stats[j]) end
end

---------------------------------------------------------------------------
-- Building the chunk.
---------------------------------------------------------------------------

local function message(chunk, e)
  if type(e) == "table" then return format("%s:%d: %s", chunk, e.line, e.msg) end
  return chunk .. ": " .. tostring(e)          -- an internal error: still no crash
end

-- The head of a chunk that declares the upvalues and the function's
-- parameter list, with the output on line `linedefined`.
local function chunk_head(f, upvalue_names, linedefined)
  syn("local __lt_pack, __lt_unpack = table.pack, table.unpack; local __lt")
  for _, name in ipairs(upvalue_names or {}) do syn(", " .. name) end
  syn(" = ...;")
  sync(linedefined)
  syn(" return function(")
  if f.method then syn((f.nparams > 0 or f.vararg) and "self," or "self") end
  for q = f.pt1 + 1, f.pt2 - 1 do tok(q) end
  syn(")")
end

-- The candidate among several functions on the same lines that compiles to
-- fn's bytecode: each is compiled unchanged, on its own lines, inside a chunk
-- that declares fn's upvalues in their order, so its code refers to them as
-- fn's code does (lattice.bytecode). Returns it, or nil and an error.
function identify(found, fn, upvalue_names, linedefined, lastlinedefined, chunkname, chunk)
  local function ambiguous(why)
    return nil, format("%s:%d: cannot tell apart the %d functions defined on line%s %d%s (Lua records only the "
      .. "lines where a function starts and ends)%s; put this function on a line of its own", chunk, linedefined,
      #found, linedefined == lastlinedefined and "" or "s", linedefined,
      linedefined == lastlinedefined and "" or ("-" .. lastlinedefined), why)
  end
  if type(fn) ~= "function" then return ambiguous("") end
  local bytecode = require "lattice.bytecode"
  for _, cand in ipairs(found) do     -- two that compile to the same code trace the same: take the first
    out, nout, cur, nest = {}, 0, 1, 0
    chunk_head(cand.f, upvalue_names, linedefined)
    for q = cand.f.pt2 + 1, cand.f.t2 do tok(q) end
    local text = concat(out, "", 1, nout)
    out = nil
    local loaded = load(text, chunkname, "t")
    local g = loaded and loaded()
    if g and bytecode.same_code(fn, g) then return cand end
  end
  return ambiguous(" (none of them compiles to the function's code)")
end

function M.function_chunk(text, linedefined, lastlinedefined, upvalue_names, chunkname, fn)
  local chunk = tostring(chunkname or "?"):gsub("^[@=]", "")
  if type(text) ~= "string" or math.type(linedefined) ~= "integer"
     or math.type(lastlinedefined) ~= "integer" or linedefined < 1 or lastlinedefined < linedefined then
    return nil, format("%s: rewrite.function_chunk: expected (text, linedefined, lastlinedefined, "
                       .. "upvalue_names, chunkname) with 1 <= linedefined <= lastlinedefined", chunk)
  end
  for _, name in ipairs(upvalue_names or {}) do
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
      return nil, format("%s:%d: the function's upvalue names are unavailable (got %q); "
                         .. "was it loaded from stripped bytecode?", chunk, linedefined, tostring(name))
    end
  end
  local found, toks = luaparse.find_functions(text, linedefined, lastlinedefined)
  if not found then
    local err = toks                                -- nil, syntax error (or nil: not found)
    if err then return nil, message(chunk, err) end
    return nil, format("%s:%d: cannot find the function defined at lines %d-%d in its source "
                       .. "(was the file changed after it was loaded?)",
                       chunk, linedefined, linedefined, lastlinedefined)
  end
  T, V, L, E = toks.T, toks.V, toks.L, toks.E
  local pick, err = found[1], nil
  if #found > 1 then pick, err = identify(found, fn, upvalue_names, linedefined, lastlinedefined, chunkname, chunk) end
  if not pick then
    T, V, L, E = nil, nil, nil, nil
    return nil, err
  end
  local f, unsupported = pick.f, pick.unsupported
  if unsupported then return nil, message(chunk, unsupported) end

  out, nout, cur, nest = {}, 0, 1, 0
  local ok, e = pcall(function()
    chunk_head(f, upvalue_names, linedefined)
    emit_body(f)
  end)
  local result = ok and concat(out, "", 1, nout) or nil
  out, T, V, L, E, F = nil, nil, nil, nil, nil, nil
  if not ok then return nil, message(chunk, e) end
  return result
end

return M
