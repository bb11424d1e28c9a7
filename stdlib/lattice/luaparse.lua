-- lattice.luaparse: a Lua 5.4 lexer and recursive-descent parser for the
-- kernel-source rewriter (lattice.rewrite). It finds the function that starts
-- on one line and ends on another in a chunk's text and returns its syntax tree;
-- the tree keeps token indices, and the tokens keep their lines, so the
-- rewriter can copy them back onto the same lines (docs/internals.md).
--
--   luaparse.find_functions(text, linedefined, lastlinedefined)
--     -> candidates, tokens | nil, err
--   candidates = { {f = func_node, unsupported = ...}, ... }: every function that
--     starts on linedefined and ends on lastlinedefined, in source order (Lua's
--     debug information cannot tell several such functions apart: see
--     lattice.rewrite, which picks the right one by its bytecode)
--   tokens = { T = types, V = texts, L = first lines, E = last lines }
--   unsupported = nil or { line =, msg = } for the first goto/label in the function
--   err = { line =, msg = } (a syntax error) or nil (no such function)

local M = {}

local byte, sub, find, rep = string.byte, string.sub, string.find, string.rep

-- One error value for the lexer and the parser: caught by pcall in find_function.
local function fail(line, msg) error({ line = line, msg = msg }, 0) end

---------------------------------------------------------------------------
-- Lexer. Tokens live in four parallel arrays (faster than one table each):
-- T type ("name", "number", "string", "<eof>", or the keyword/operator text),
-- V raw source text, L line of the first character, E line of the last one
-- (they differ for long strings and strings with escaped newlines).
---------------------------------------------------------------------------

local KEYWORDS = {}
for w in ("and break do else elseif end false for function goto if in local nil not or "
          .. "repeat return then true until while"):gmatch("%a+") do
  KEYWORDS[w] = true
end

local OPS2 = { ["=="] = true, ["~="] = true, ["<="] = true, [">="] = true, ["<<"] = true,
               [">>"] = true, ["//"] = true, ["::"] = true, [".."] = true }
local OPS1 = {}
for c in ("+-*/%^#&~|<>=(){}[];:,."):gmatch(".") do OPS1[byte(c)] = c end

-- Line breaks in s[i..j], counted as Lua counts them (\r\n and \n\r are one).
local function count_lines(s, i, j)
  local n, p = 0, i
  while true do
    local q = find(s, "[\n\r]", p)
    if not q or q > j then return n end
    n = n + 1
    local c, d = byte(s, q, q + 1)
    if q < j and (d == 10 or d == 13) and d ~= c then p = q + 2 else p = q + 1 end
  end
end

-- Level of a long bracket "[==[" starting at p, or nil.
local function long_level(s, p)
  local _, b = find(s, "^%[=*%[", p)
  if b then return b - p - 1 end
end

-- Lexes s from byte pos (which starts line `line`) until the first line after
-- `lastline`, then appends an <eof> token. Returns the token count.
local function lex(s, pos, line, lastline, T, V, L, E)
  local n = 0
  if pos == 1 then
    if sub(s, 1, 3) == "\239\187\191" then pos = 4 end          -- UTF-8 BOM
    if byte(s, pos) == 35 then                                  -- '#!' line
      pos = find(s, "[\n\r]", pos) or #s + 1
    end
  end
  while true do
    local c = byte(s, pos)
    if c == nil then break end
    if c == 10 or c == 13 then
      local d = byte(s, pos + 1)
      if (d == 10 or d == 13) and d ~= c then pos = pos + 2 else pos = pos + 1 end
      line = line + 1
      if line > lastline then break end
    elseif c == 32 or c == 9 or c == 11 or c == 12 then
      pos = pos + 1
    elseif c == 45 and byte(s, pos + 1) == 45 then              -- comment
      local lvl = long_level(s, pos + 2)
      if lvl then
        local _, b = find(s, "]" .. rep("=", lvl) .. "]", pos + lvl + 4, true)
        if not b then fail(line, "unfinished long comment") end
        line = line + count_lines(s, pos, b)
        pos = b + 1
      else
        pos = find(s, "[\n\r]", pos + 2) or #s + 1
      end
    else
      local start, tline, ty = pos, line, nil
      if (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or c == 95 then
        local _, b = find(s, "^[%w_]*", pos + 1)
        local w = sub(s, pos, b)
        ty = KEYWORDS[w] and w or "name"
        pos = b + 1
      elseif (c >= 48 and c <= 57) or (c == 46 and find(s, "^%d", pos + 1)) then
        local _, b, b2
        if c == 48 and find(s, "^[xX]", pos + 1) then
          _, b = find(s, "^0[xX]%x*%.?%x*", pos)
          _, b2 = find(s, "^[pP][+-]?%d+", b + 1)
        else
          _, b = find(s, "^%d*%.?%d*", pos)
          _, b2 = find(s, "^[eE][+-]?%d+", b + 1)
        end
        b = b2 or b
        if find(s, "^[%w_.]", b + 1) then fail(line, "malformed number near '" .. sub(s, pos, b + 1) .. "'") end
        ty, pos = "number", b + 1
      elseif c == 34 or c == 39 then                            -- short string
        local pat = c == 34 and '["\\\n\r]' or "['\\\n\r]"
        local p = pos + 1
        while true do
          local a = find(s, pat, p)
          local ch = a and byte(s, a)
          if ch == c then p = a + 1; break
          elseif ch == 92 then                                  -- backslash escape
            local d = byte(s, a + 1)
            if d == 10 or d == 13 then
              local e = byte(s, a + 2)
              line = line + 1
              p = ((e == 10 or e == 13) and e ~= d) and a + 3 or a + 2
            elseif d == 122 then                                -- \z skips spaces and newlines
              local _, b = find(s, "^%s*", a + 2)
              line = line + count_lines(s, a + 2, b)
              p = b + 1
            else
              p = a + 2
            end
          else
            fail(tline, "unfinished string")
          end
        end
        ty, pos = "string", p
      elseif c == 91 and long_level(s, pos) then                -- long string
        local lvl = long_level(s, pos)
        local _, b = find(s, "]" .. rep("=", lvl) .. "]", pos + lvl + 2, true)
        if not b then fail(line, "unfinished long string") end
        line = line + count_lines(s, pos, b)
        ty, pos = "string", b + 1
      elseif sub(s, pos, pos + 2) == "..." then
        ty, pos = "...", pos + 3
      elseif OPS2[sub(s, pos, pos + 1)] then
        ty = sub(s, pos, pos + 1); pos = pos + 2
      elseif OPS1[c] then
        ty, pos = OPS1[c], pos + 1
      else
        fail(line, "unexpected symbol near '" .. sub(s, pos, pos) .. "'")
      end
      n = n + 1
      T[n], V[n], L[n], E[n] = ty, sub(s, start, pos - 1), tline, line
    end
  end
  n = n + 1
  T[n], V[n], L[n], E[n] = "<eof>", "<eof>", line, line
  return n
end

---------------------------------------------------------------------------
-- Parser: recursive descent over the Lua 5.4 grammar (same structure as
-- lparser.c). Every node records its first and last token (t1, t2); nodes that
-- the emitter copies verbatim list their sub-nodes, in source order, in `kids`.
-- The token arrays and the cursor are file-level locals: one rewrite at a time.
---------------------------------------------------------------------------

local T, V, L, E, p          -- token arrays and the current token index
local unsupported            -- first goto/label seen: { line, msg }

local function near() return T[p] == "<eof>" and "<eof>" or "'" .. V[p] .. "'" end
local function perr(msg) fail(L[p], msg .. " near " .. near()) end

local function check(ty)
  if T[p] ~= ty then perr("'" .. ty .. "' expected") end
  p = p + 1
  return p - 1
end

local function checkname()
  if T[p] ~= "name" then perr("<name> expected") end
  p = p + 1
  return p - 1
end

local BLOCK_END = { ["end"] = true, ["else"] = true, ["elseif"] = true, ["until"] = true,
                    ["<eof>"] = true }
-- binary operator priorities (left, right), from lparser.c
local LPRI = { ["or"] = 1, ["and"] = 2, ["<"] = 3, [">"] = 3, ["<="] = 3, [">="] = 3,
               ["~="] = 3, ["=="] = 3, ["|"] = 4, ["~"] = 5, ["&"] = 6, ["<<"] = 7,
               [">>"] = 7, [".."] = 9, ["+"] = 10, ["-"] = 10, ["*"] = 11, ["/"] = 11,
               ["//"] = 11, ["%"] = 11, ["^"] = 14 }
local RPRI = { [".."] = 8, ["^"] = 13 }
for op, l in pairs(LPRI) do RPRI[op] = RPRI[op] or l end
local UNARY = { ["not"] = true, ["-"] = true, ["#"] = true, ["~"] = true }
local UNARY_PRI = 12

local expr, block, funcbody

local function explist()
  local list = { expr() }
  while T[p] == "," do
    p = p + 1
    list[#list + 1] = expr()
  end
  return list
end

-- tablecons -> '{' [field {sep field} [sep]] '}'
local function tablecons()
  local t1 = check("{")
  local kids = {}
  while T[p] ~= "}" do
    if T[p] == "name" and T[p + 1] == "=" then
      p = p + 2
      kids[#kids + 1] = expr()
    elseif T[p] == "[" then
      p = p + 1
      kids[#kids + 1] = expr()
      check("]"); check("=")
      kids[#kids + 1] = expr()
    else
      kids[#kids + 1] = expr()
    end
    if T[p] == "," or T[p] == ";" then p = p + 1 else break end
  end
  check("}")
  return { k = "Table", t1 = t1, t2 = p - 1, kids = kids }
end

-- funcargs -> '(' [explist] ')' | tablecons | STRING ; appended to kids
local function funcargs(kids)
  local t = T[p]
  if t == "(" then
    p = p + 1
    if T[p] ~= ")" then
      for _, e in ipairs(explist()) do kids[#kids + 1] = e end
    end
    check(")")
  elseif t == "{" then
    kids[#kids + 1] = tablecons()
  elseif t == "string" then
    p = p + 1
  else
    perr("function arguments expected")
  end
end

-- primaryexp -> NAME | '(' expr ')'
local function primaryexp()
  local t1 = p
  if T[p] == "name" then
    p = p + 1
    return { k = "Name", t1 = t1, t2 = t1 }
  elseif T[p] == "(" then
    p = p + 1
    local e = expr()
    check(")")
    return { k = "Paren", t1 = t1, t2 = p - 1, kids = { e } }
  end
  perr("unexpected symbol")
end

-- suffixedexp -> primaryexp { '.' NAME | '[' exp ']' | ':' NAME funcargs | funcargs }
local function suffixedexp()
  local t1 = p
  local e = primaryexp()
  while true do
    local t = T[p]
    if t == "." then
      p = p + 1
      local nm = checkname()
      e = { k = "Index", t1 = t1, t2 = p - 1, obj = e, name = nm, kids = { e } }
    elseif t == "[" then
      p = p + 1
      local key = expr()
      check("]")
      e = { k = "Index", t1 = t1, t2 = p - 1, obj = e, key = key, kids = { e, key } }
    elseif t == ":" then
      p = p + 1
      checkname()
      local kids = { e }
      funcargs(kids)
      e = { k = "Call", t1 = t1, t2 = p - 1, kids = kids }
    elseif t == "(" or t == "string" or t == "{" then
      local kids = { e }
      funcargs(kids)
      e = { k = "Call", t1 = t1, t2 = p - 1, kids = kids }
    else
      return e
    end
  end
end

-- simpleexp -> NUMBER | STRING | nil | true | false | ... | tablecons | FUNCTION body | suffixedexp
local SIMPLE = { number = true, string = true, ["nil"] = true, ["true"] = true, ["false"] = true }
local function simpleexp()
  local t = T[p]
  if SIMPLE[t] then
    p = p + 1
    return { k = "Const", t1 = p - 1, t2 = p - 1 }
  elseif t == "..." then
    p = p + 1
    return { k = "Vararg", t1 = p - 1, t2 = p - 1 }
  elseif t == "{" then
    return tablecons()
  elseif t == "function" then
    p = p + 1
    return funcbody(p - 1, false)
  end
  return suffixedexp()
end

-- subexpr -> (simpleexp | unop subexpr) { binop subexpr }, binop priority > limit
local function subexpr(limit)
  local t1 = p
  local e
  if UNARY[T[p]] then
    local op = T[p]
    p = p + 1
    local a = subexpr(UNARY_PRI)
    e = { k = "Un", op = op, t1 = t1, t2 = p - 1, e = a, kids = { a } }
  else
    e = simpleexp()
  end
  local op = T[p]
  while LPRI[op] and LPRI[op] > limit do
    p = p + 1
    local r = subexpr(RPRI[op])
    e = { k = "Bin", op = op, t1 = t1, t2 = p - 1, l = e, r = r, kids = { e, r } }
    op = T[p]
  end
  return e
end

expr = function() return subexpr(0) end

-- body -> '(' parlist ')' block END ; t1 is the 'function' keyword
funcbody = function(t1, method)
  local pt1 = check("(")
  local nparams, vararg = 0, false
  if T[p] ~= ")" then
    while true do
      if T[p] == "..." then
        p = p + 1
        vararg = true
        break
      end
      checkname()
      nparams = nparams + 1
      if T[p] ~= "," then break end
      p = p + 1
    end
  end
  local pt2 = check(")")
  local body = block()
  local t2 = check("end")
  return { k = "Func", t1 = t1, t2 = t2, pt1 = pt1, pt2 = pt2, method = method,
           nparams = nparams, vararg = vararg, body = body }
end

-- funcname body, after the 'function' keyword at t1:  NAME {'.' NAME} [':' NAME]
local function funcstat_body(t1)
  checkname()
  while T[p] == "." do p = p + 1; checkname() end
  local method = false
  if T[p] == ":" then p = p + 1; checkname(); method = true end
  return funcbody(t1, method)
end

local function note_unsupported(msg)
  if not unsupported then unsupported = { line = L[p], msg = msg } end
end

-- localstat -> LOCAL NAME attrib {',' NAME attrib} ['=' explist]
local function localstat(t1)
  local count = 0
  while true do
    checkname()
    count = count + 1
    if T[p] == "<" then
      p = p + 1
      local a = checkname()
      if V[a] ~= "const" and V[a] ~= "close" then
        p = a
        perr("unknown attribute '" .. V[a] .. "'")
      end
      check(">")
    end
    if T[p] ~= "," then break end
    p = p + 1
  end
  local s = { k = "Local", t1 = t1, nt2 = p - 1, count = count }
  if T[p] == "=" then
    p = p + 1
    s.exprs = explist()
  end
  s.t2 = p - 1
  return s
end

-- ifstat -> IF cond THEN block {ELSEIF cond THEN block} [ELSE block] END
local function ifstat(t1)
  local s = { k = "If", t1 = t1, conds = {}, blocks = {}, elseif_t = {} }
  p = p + 1
  s.conds[1] = expr()
  check("then")
  s.blocks[1] = block()
  while T[p] == "elseif" do
    s.elseif_t[#s.elseif_t + 1] = p
    p = p + 1
    s.conds[#s.conds + 1] = expr()
    check("then")
    s.blocks[#s.blocks + 1] = block()
  end
  if T[p] == "else" then
    s.else_t = p
    p = p + 1
    s.else_b = block()
  end
  s.t2 = check("end")
  return s
end

-- forstat -> FOR (NAME '=' exp ',' exp [',' exp] | NAME {',' NAME} IN explist) DO block END
local function forstat(t1)
  p = p + 1
  local n1 = checkname()
  if T[p] == "=" then
    p = p + 1
    local s = { k = "ForNum", t1 = t1, var = n1 }
    s.a = expr()
    check(",")
    s.b = expr()
    if T[p] == "," then
      p = p + 1
      s.s = expr()
    end
    check("do")
    s.body = block()
    s.t2 = check("end")
    return s
  elseif T[p] == "," or T[p] == "in" then
    local names = { n1 }
    while T[p] == "," do
      p = p + 1
      names[#names + 1] = checkname()
    end
    check("in")
    local s = { k = "ForIn", t1 = t1, names = names, exprs = explist() }
    check("do")
    s.body = block()
    s.t2 = check("end")
    return s
  end
  perr("'=' or 'in' expected")
end

-- exprstat -> func | assignment
local function exprstat(t1)
  local e = suffixedexp()
  if T[p] == "=" or T[p] == "," then
    local targets = { e }
    while T[p] == "," do
      p = p + 1
      targets[#targets + 1] = suffixedexp()
    end
    for _, t in ipairs(targets) do
      if t.k ~= "Name" and t.k ~= "Index" then
        p = t.t2 + 1
        perr("syntax error")
      end
    end
    local eq = check("=")
    local s = { k = "Assign", t1 = t1, eq = eq, targets = targets, exprs = explist() }
    s.t2 = p - 1
    return s
  end
  if e.k ~= "Call" then perr("syntax error") end
  return { k = "Verbatim", t1 = t1, t2 = p - 1, kids = { e } }
end

local function statement()
  local t1, t = p, T[p]
  if t == ";" then
    p = p + 1
    return { k = "Verbatim", t1 = t1, t2 = t1 }
  elseif t == "if" then
    return ifstat(t1)
  elseif t == "while" then
    p = p + 1
    local s = { k = "While", t1 = t1, cond = expr() }
    check("do")
    s.body = block()
    s.t2 = check("end")
    return s
  elseif t == "do" then
    p = p + 1
    local s = { k = "Do", t1 = t1, body = block() }
    s.t2 = check("end")
    return s
  elseif t == "for" then
    return forstat(t1)
  elseif t == "repeat" then
    p = p + 1
    local s = { k = "Repeat", t1 = t1, body = block() }
    s.ut = check("until")
    s.cond = expr()
    s.t2 = p - 1
    return s
  elseif t == "function" then
    p = p + 1
    local f = funcstat_body(t1)
    return { k = "Verbatim", t1 = t1, t2 = f.t2, kids = { f } }
  elseif t == "local" then
    p = p + 1
    if T[p] == "function" then
      p = p + 1
      checkname()
      local f = funcbody(t1 + 1, false)
      return { k = "Verbatim", t1 = t1, t2 = f.t2, kids = { f } }
    end
    return localstat(t1)
  elseif t == "::" then
    note_unsupported("labels (::name::) are not supported in kernels; use break or restructure the loop")
    p = p + 1
    checkname()
    check("::")
    return { k = "Verbatim", t1 = t1, t2 = p - 1 }
  elseif t == "return" then
    p = p + 1
    local s = { k = "Return", t1 = t1, exprs = {} }
    if not BLOCK_END[T[p]] and T[p] ~= ";" then s.exprs = explist() end
    if T[p] == ";" then p = p + 1 end
    s.t2, s.kids = p - 1, s.exprs
    return s
  elseif t == "break" then
    p = p + 1
    return { k = "Break", t1 = t1, t2 = t1 }
  elseif t == "goto" then
    note_unsupported("goto is not supported in kernels; use break or restructure the loop")
    p = p + 1
    checkname()
    return { k = "Verbatim", t1 = t1, t2 = p - 1 }
  end
  return exprstat(t1)
end

block = function()
  local stats = {}
  while not BLOCK_END[T[p]] do
    local ret = T[p] == "return"
    stats[#stats + 1] = statement()
    if ret then break end
  end
  return stats
end


-- Byte position where line n starts, or nil.
local function line_start(s, n)
  local pos, line = 1, 1
  while line < n do
    local a = find(s, "[\n\r]", pos)
    if not a then return nil end
    local c, d = byte(s, a, a + 1)
    pos = ((d == 10 or d == 13) and d ~= c) and a + 2 or a + 1
    line = line + 1
  end
  return pos
end

-- Parses the function whose 'function' keyword is token i.
local function parse_at(i)
  p = i + 1
  unsupported = nil
  if T[p] == "(" then return funcbody(i, false) end
  return funcstat_body(i)          -- `function a.b:c()` and `local function f()`
end

-- Index of the '(' opening the parameters of the function whose keyword is
-- token i. Lua's linedefined is that token's line for `function` expressions
-- and `local function` (the keyword's line for `function a.b()` statements).
local function params_at(i)
  local j = i + 1
  while T[j] == "name" or T[j] == "." or T[j] == ":" do j = j + 1 end
  return j
end

-- Lexes text from `pos` (the start of line `line`) and returns the parsed
-- functions on `first` whose 'end' is on `last` (each with its first
-- goto/label) and the tokens, or nil and the first syntax error.
local function find_in(text, pos, line, first, last)
  T, V, L, E = {}, {}, {}, {}
  local ok, n = pcall(lex, text, pos, line, last, T, V, L, E)
  if not ok then return nil, n end
  local firsterr, found = nil, nil
  for i = 1, n do
    if L[i] > first then break end
    if T[i] == "function" and (L[i] == first or L[params_at(i)] == first) then
      local ok2, f = pcall(parse_at, i)
      if ok2 then
        if L[f.t2] == last then
          found = found or {}
          found[#found + 1] = { f = f, unsupported = unsupported }
        end
      elseif not firsterr then
        firsterr = f
      end
    end
  end
  if found then return found, { T = T, V = V, L = L, E = E } end
  return nil, firsterr
end

function M.find_functions(text, first, last)
  -- Fast path: lex only from the function's first line. If that line starts
  -- inside a long string or comment, this may fail: then lex the whole chunk.
  local found, toks
  local pos = line_start(text, first)
  if pos then found, toks = find_in(text, pos, first, first, last) end
  if not found and first > 1 then found, toks = find_in(text, 1, 1, first, last) end
  T, V, L, E = nil, nil, nil, nil
  if not found then return nil, toks end
  return found, toks
end

return M
