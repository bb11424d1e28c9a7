-- Property test for stdlib/lattice/rewrite.lua: every sample function below is
-- rewritten, loaded with a "plain Lua" hook table (each hook does what the Lua
-- construct it replaces does), and must return exactly what the original
-- returns (values, count, integer/float subtype, error messages) on many inputs.
-- The original functions are the reference.

local ok_req, R = pcall(require, "lattice.rewrite")
if not ok_req then
  local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
  local root = os.getenv("LT_SOURCE_DIR") or (here .. "/../..")
  package.path = root .. "/stdlib/?.lua;" .. package.path
  R = require "lattice.rewrite"
end

local pack, unpack = table.pack, table.unpack

---------------------------------------------------------------------------
-- Plain-Lua hooks
---------------------------------------------------------------------------
local used = {}
local H = { BREAK = "<break>", RETURN = "<return>", UNTIL = "<until>" }
local BREAK, RETURN, UNTIL = H.BREAK, H.RETURN, H.UNTIL

local function count(name) used[name] = (used[name] or 0) + 1 end

-- Runs one loop iteration's result: returns "stop", "return" (+values) or nil.
local function loop_step(r)
  local c = r[1]
  if c == nil then return nil end
  if c == BREAK then return "stop" end
  if c == RETURN then return "return" end
  error("bad control code from a loop body: " .. tostring(c), 0)
end

function H.if_(c, a, b)
  count("if_")
  if c then return a() elseif b then return b() end
end

function H.while_(cond, body)
  count("while_")
  local guard = 0
  while cond() do
    guard = guard + 1
    if guard > 100000 then error("runaway while loop (a lost BREAK?)", 0) end
    local r = pack(body())
    local s = loop_step(r)
    if s == "stop" then break elseif s == "return" then return unpack(r, 1, r.n) end
  end
end

function H.repeat_(body)
  count("repeat_")
  local guard = 0
  while true do
    guard = guard + 1
    if guard > 100000 then error("runaway repeat loop (a lost BREAK?)", 0) end
    local r = pack(body())
    if r[1] == UNTIL then
      assert(r.n == 2, "repeat_ body must return UNTIL and exactly one condition")
      if r[2] then break end
    else
      local s = loop_step(r)
      if s == "stop" then break elseif s == "return" then return unpack(r, 1, r.n) end
      error("repeat_ body fell off without UNTIL", 0)
    end
  end
end

function H.for_(a, b, s, body)
  count("for_")
  local function step(i)
    local r = pack(body(i))
    return loop_step(r), r
  end
  if s == nil then
    for i = a, b do
      local st, r = step(i)
      if st == "stop" then break elseif st == "return" then return unpack(r, 1, r.n) end
    end
  else
    for i = a, b, s do
      local st, r = step(i)
      if st == "stop" then break elseif st == "return" then return unpack(r, 1, r.n) end
    end
  end
end

function H.gfor(body, f, s, ctl, closing)
  count("gfor")
  local _ <close> = closing
  while true do
    local v = pack(f(s, ctl))
    if v[1] == nil then break end
    ctl = v[1]
    local r = pack(body(unpack(v, 1, v.n)))
    local st = loop_step(r)
    if st == "stop" then break elseif st == "return" then return unpack(r, 1, r.n) end
  end
end

function H.and_(a, b) count("and_"); if a then return b() end return a end
function H.or_(a, b) count("or_"); if a then return a end return b() end
function H.not_(a) count("not_"); return not a end
function H.lt(a, b) count("cmp"); return a < b end
function H.le(a, b) count("cmp"); return a <= b end
function H.gt(a, b) count("cmp"); return a > b end
function H.ge(a, b) count("cmp"); return a >= b end
function H.eq(a, b) count("cmp"); return a == b end
function H.ne(a, b) count("cmp"); return a ~= b end
function H.pack(...) count("pack"); return pack(...) end
-- a function defined inside the rewritten one: the value closed when it returns
function H.enter(line, params)
  count("enter")
  assert(math.type(line) == "integer", "enter: the line must be an integer")
  assert(params == "" or params:match("^[%a_][%w_]*$") or params:match("^[%a_][%w_]*,[%a_][%w_,]*$"),
    "enter: bad parameter names " .. tostring(params))
  return nil
end

-- decl returns exactly one value per name, so a wrong count in the rewrite shows up.
function H.decl(names, ...)
  count("decl")
  assert(names:match("^[%a_][%w_]*$") or names:match("^[%a_][%w_]*,[%a_][%w_,]*$"), "decl: bad names " .. names)
  local n = select(2, names:gsub(",", ",")) + 1
  local v = pack(...)
  return unpack(v, 1, n)
end

-- t[k] = v and table constructors, as plain Lua does them
function H.setindex(t, k, v) count("setindex"); t[k] = v end
function H.newtable(t) count("newtable"); return t end

function H.assign(names, ...)
  count("assign")
  assert(names:match("^[%a_][%w_]*$") or names:match("^[%a_][%w_]*,[%a_][%w_,]*$"), "assign: bad names " .. names)
  local k = select(2, names:gsub(",", ",")) + 1
  local v = pack(...)
  assert(v.n >= k, "assign: current values missing")
  return unpack(v, k + 1, k + k)
end

---------------------------------------------------------------------------
-- Rewriting a function of this file
---------------------------------------------------------------------------
local sources = {}
local function source_of(info)
  local path = info.source:sub(2)
  if not sources[path] then
    local f = assert(io.open(path, "rb"))
    sources[path] = f:read("a")
    f:close()
  end
  return sources[path]
end

local function rewrite(fn)
  local info = debug.getinfo(fn, "S")
  local names, values = {}, {}
  for i = 1, math.huge do
    local n, v = debug.getupvalue(fn, i)
    if not n then break end
    names[i], values[i] = n, v
  end
  local text, err = R.function_chunk(source_of(info), info.linedefined, info.lastlinedefined, names, info.source)
  assert(text, err)
  local loader, lerr = load(text, info.source, "t")
  if not loader then error("rewritten chunk does not load: " .. lerr .. "\n" .. text, 0) end
  local newfn = loader(H, unpack(values, 1, #names))
  assert(type(newfn) == "function")
  local ni = debug.getinfo(newfn, "S")
  assert(ni.linedefined == info.linedefined and ni.lastlinedefined == info.lastlinedefined,
         "rewritten function spans other lines")
  return newfn, text
end

---------------------------------------------------------------------------
-- Comparing results
---------------------------------------------------------------------------
local function show(v)
  if math.type(v) == "float" then return string.format("%.17g(float)", v) end
  if type(v) == "table" then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = tostring(k) .. "=" .. show(x) end
    table.sort(parts)
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "number" then
    if math.type(a) ~= math.type(b) then return false end
    return a == b or (a ~= a and b ~= b)
  end
  if type(a) == "table" then return show(a) == show(b) end
  if type(a) == "function" then return true end  -- closures differ by identity
  return a == b
end

local function call(fn, args)
  -- functions in results are called with no argument, to compare what they capture
  local r = pack(pcall(fn, unpack(args, 1, args.n)))
  for i = 2, r.n do
    if type(r[i]) == "function" then r[i] = pack(pcall(r[i])) end
  end
  return r
end

local failures, checks = 0, 0
local function compare(name, orig, new, args)
  local a, b = call(orig, args), call(new, args)
  checks = checks + 1
  local okay = a.n == b.n
  for i = 1, math.max(a.n, b.n) do
    if not same(a[i], b[i]) then okay = false end
  end
  if not okay then
    failures = failures + 1
    local sa, sb = {}, {}
    for i = 1, a.n do sa[i] = show(a[i]) end
    for i = 1, b.n do sb[i] = show(b[i]) end
    local sargs = {}
    for i = 1, args.n do sargs[i] = show(args[i]) end
    print(string.format("FAIL %s(%s):\n  original:  %s\n  rewritten: %s", name,
          table.concat(sargs, ", "), table.concat(sa, ", "), table.concat(sb, ", ")))
  end
end

---------------------------------------------------------------------------
-- Samples. Each entry: name, function, list of argument lists.
---------------------------------------------------------------------------
local samples = {}
local function sample(name, fn, inputs) samples[#samples + 1] = { name, fn, inputs } end

local NUMS = { pack(1, 2), pack(2, 1), pack(3, 3), pack(-1, 0.5), pack(2.0, 2), pack(0, -7), pack(10, 3) }

sample("if_elseif_else", function(a, b)
  local r
  if a < b then
    r = "lt"
  elseif a == b then
    r = "eq"
  elseif a > b + 5 then r = "far"
  else
    r = "gt"
  end
  return r
end, NUMS)

sample("if_no_else_early_return", function(a, b)
  if a > b then return a - b, "first" end
  if a == b then return end
  return b - a
end, NUMS)

sample("nested_if_return_multi", function(a, b)
  if a >= 0 then
    if b >= 0 then
      return a, b, a + b
    else
      if a ~= 0 then return a * b end
    end
  end
  return nil, "neg"
end, NUMS)

sample("precedence", function(a, b)
  local c = 3
  local t = {}
  t[1] = a < b == (c > 2)
  t[2] = not a == b
  t[3] = -a ^ 2
  t[4] = 2 ^ -b
  t[5] = a .. b .. c
  t[6] = (a or b) < c
  t[7] = a < b and b or a
  t[8] = not (a <= b) or b >= c and a ~= c
  t[9] = a + b * c - a / 2 // 1 % 3
  t[10] = 1 << 3 | 5 & 3 ~ 1 >> 1
  t[11] = ~5 + #"abc"
  t[12] = 2 ^ 3 ^ 2
  t[13] = a == b == false
  t[14] = "x" .. 1 + 2 .. "y"
  return t
end, NUMS)

sample("integer_float", function(a, b)
  local x, y = a // 1, a / 1
  local z = 7 // 2
  local w = 7.0 // 2
  local m = 3 % -2
  return x, y, z, w, m, math.type(x), a * b, 2^2, 1e2, 0x10, 0x1p4, .5
end, NUMS)

sample("and_or_values", function(a, b)
  local u = a > 1 and "big" or "small"
  local v = nil and a
  local w = false or nil
  local x = b and a
  local y = (a < 0) or b
  return u, v, w, x, y
end, NUMS)

local function two() return 1, 2 end
local function three() return "a", "b", "c" end

sample("multiple_results", function(a)
  local p, q, r = two()
  local s, t = (two())
  local u, v = a, two()
  local w, x = two(), a
  local y, z = a and two()
  local tt = { two(), three() }
  local n = select("#", three())
  return p, q, r, s, t, u, v, w, x, y, z, #tt, n, three()
end, { pack(1), pack(false), pack(nil) })

sample("assignments", function(a, b)
  local x, y = a, b
  x, y = y, x
  local t = { 1, 2, 3 }
  t[1], t[2] = t[2], t[1]
  local i = 1
  i, t[i] = i + 1, 20
  local g = {}
  g.a, g.b, x = two()
  x = three()
  local u, v
  u, v = three()
  t.k = a
  t[#t + 1] = b
  local d = {}
  d[1], d[1], u = "first", "second", u
  d.z, d[2], v, v = 1, 2, "v1", "v2"
  return x, y, t, g, u, v, i, d
end, NUMS)

sample("local_attribs", function(a)
  local k <const> = 10
  local log = {}
  do
    local c <close> = setmetatable({}, { __close = function() log[#log + 1] = "closed" end })
    log[#log + 1] = "body"
  end
  local n <const>, m = a, 2
  return k + n + m, table.concat(log, ",")
end, { pack(1), pack(2.5) })

sample("numeric_for", function(n, step)
  local s, c = 0, 0
  for i = 1, n do s = s + i end
  for i = n, 1, -1 do c = c * 10 + i end
  for i = 1.0, 2 do s = s + i end
  for i = 1, 10, step do c = c + i end
  for i = 3, 1 do s = s + 1000 end
  return s, c
end, { pack(3, 2), pack(0, 1), pack(5, 3), pack(4, 0.5) })

sample("loop_var_capture", function(n)
  local fs = {}
  for i = 1, n do fs[#fs + 1] = function() return i * 10 end end
  for k, v in ipairs({ "a", "b" }) do fs[#fs + 1] = function() return k .. v end end
  local j = 0
  while j < n do
    j = j + 1
    local jj = j
    fs[#fs + 1] = function() return -jj end
  end
  local out = {}
  for i = 1, #fs do out[i] = fs[i]() end
  return table.concat(out, " ")
end, { pack(0), pack(3) })

sample("break_nested", function(n)
  local hits = 0
  for i = 1, n do
    for j = 1, n do
      if j > i then break end
      hits = hits + 1
    end
    if hits > 10 then break end
  end
  local k = 0
  while true do
    k = k + 1
    repeat
      if k % 2 == 0 then break end
      hits = hits + 100
    until true
    if k >= n then break end
  end
  return hits, k
end, { pack(1), pack(3), pack(6) })

sample("early_return_from_nested_loops", function(n, target)
  for i = 1, n do
    for j = 1, n do
      while true do
        if i * j == target then return i, j, "found" end
        break
      end
    end
  end
  return nil, nil, "none"
end, { pack(4, 6), pack(4, 5), pack(3, 9), pack(0, 0) })

sample("repeat_until_sees_locals", function(n)
  local i, acc = 0, {}
  repeat
    i = i + 1
    local done = i >= n
    acc[#acc + 1] = i
  until done
  repeat local x = i; i = i - 1 until x < 2 or i < -5
  return table.concat(acc, ","), i
end, { pack(1), pack(4) })

sample("repeat_return", function(n)
  local i = 0
  repeat
    i = i + 1
    if i == n then return "hit", i end
  until i > 5
  return "miss", i
end, { pack(3), pack(9) })

sample("generic_for", function(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  local s = 0
  for _, v in ipairs(t) do s = s + v end
  local cnt = 0
  for a, b, c in function(st, ctl) if ctl < st then return ctl + 1, ctl * 2, "x" end end, 3, 0 do
    cnt = cnt + a + b + #c
  end
  local r = {}
  for w in string.gmatch("one two three", "%a+") do r[#r + 1] = w:upper() end
  for k, v in next, { 5 } do s = s + k + v end
  return table.concat(keys, ","), s, cnt, table.concat(r, "-")
end, { pack({ 1, 2, 3 }), pack({ 4, x = 1 }), pack({}) })

local function iter3() return function(st, ctl) if ctl < 2 then return ctl + 1 end end, nil, 0 end
sample("generic_for_call_returning_three", function()
  local s = 0
  for i in iter3() do s = s + i end
  local log = {}
  local closing = setmetatable({}, { __close = function() log[#log + 1] = "closed" end })
  for i in function(_, c) if c < 3 then return c + 1 end end, nil, 0, closing do
    if i == 2 then break end
    log[#log + 1] = i
  end
  return s, table.concat(log, ",")
end, { pack() })

sample("varargs", function(...)
  local n = select("#", ...)
  local a, b = ...
  local t = { ... }
  local out = {}
  if n > 0 then
    out[1] = select("#", ...)
    local x, y = ...
    out[2] = x
    out[3] = y
  end
  for i = 1, n do out[#out + 1] = (select(i, ...)) end
  local firsts = n > 1 and ... or "none"
  while #out < 3 do out[#out + 1] = (...) or 0 end
  if n == 2 then return ... end
  return n, a, b, #t, table.concat(out, ","), firsts
end, { pack(), pack(1), pack(1, 2), pack(1, nil), pack("a", "b", "c"), pack(nil, nil, 3) })

sample("vararg_fixed_params", function(a, ...)
  if a then
    return a, ...
  end
  local f = function(...) if select("#", ...) > 0 then return ... end return "inner" end
  return f(), f(...)
end, { pack(1, 2, 3), pack(false, "x"), pack(nil) })

sample("string_methods_and_call_sugar", function(s)
  local u = s:upper()
  local n = #s
  local t = string.format("%s:%d", s, n)
  local f = tostring { 1 }
  local g = ("%d-%d"):format(n, n * 2)
  local parts = {}
  for c in s:gmatch "." do parts[#parts + 1] = c:byte() end
  if s:find "b" then u = u .. "!" end
  return u, t, type(f), g, table.concat(parts, "."), s:rep(2, "|"), ("x"):byte()
end, { pack("abc"), pack(""), pack("zzz") })

sample("local_function_recursion", function(n)
  local function fib(k)
    if k < 2 then return k end
    return fib(k - 1) + fib(k - 2)
  end
  local function even(k) if k == 0 then return true end return not even(k - 1) end
  return fib(n), even(n)
end, { pack(0), pack(1), pack(7), pack(10) })

sample("nested_functions_and_methods", function(a)
  local obj = { v = a }
  function obj:get(d) if self.v > d then return self.v end return d end
  function obj.twice(x) return x * 2 end
  local acc = {}
  local function add(...) for _, v in ipairs({ ... }) do acc[#acc + 1] = v end end
  add(obj:get(2), obj.twice(a))
  local mk = function(k) return function() if k then return k else return "nil" end end end
  return table.concat(acc, ","), mk(a)(), mk(nil)()
end, { pack(1), pack(5) })

sample("closures_mutating_outer_locals", function(n)
  local total = 0
  local function bump(k) total = total + k end
  for i = 1, n do
    if i % 2 == 1 then bump(i) else total = total - 1 end
  end
  local x
  x = n > 2 and 1 or 2
  return total, x
end, { pack(0), pack(5), pack(6) })

sample("while_with_complex_cond", function(a, b)
  local i, s = 0, 0
  while i < 10 and (a > 0 or b > 0) and not (i == 7) do
    i = i + 1
    s = s + i
  end
  return i, s
end, NUMS)

sample("errors_propagate", function(a, b)
  if a > b then
    local t = nil
    return t.x
  end
  if a == b then error("same " .. a) end
  for i = 1, 3 do
    if i == 2 and a < 0 then error({ code = i }) end
  end
  return "fine"
end, NUMS)

sample("do_blocks_and_semicolons", function(a)
  local x = 1;
  do local x = 2; a = a + x end;
  ;;
  local f = print
  local r = a
  ;(function() r = r + 1 end)()
  return a + x, r
end, { pack(1), pack(1.5) })

sample("long_strings_and_comments", function(a)
  local s = [[
line one
line two]] --[[ a comment
spanning lines ]] local t = [==[
]] still inside ]==]
  local u = "esc\
aped" .. '\z
         joined'
  -- if a < 0 then return "commented" end
  if #s > a then return s, t, u end
  return #s
end, { pack(1), pack(1000) })

sample("upvalues_and_globals", function(a)
  local r = math.floor(a * 2.5)
  if r > 3 then
    r = tostring(r) .. tostring(two())
  end
  return r, type(three)
end, { pack(1), pack(2), pack(3.3) })

sample("comparisons_everywhere", function(a, b)
  local t = { a < b, a <= b, a > b, a >= b, a == b, a ~= b, not (a < b) }
  local f = function(x) return x < a end
  local s = 0
  for i = 1, #t do if t[i] then s = s + 2 ^ i end end
  return s, f(b), t[1] == t[2]
end, NUMS)

sample("table_constructor_fields", function(a, b)
  local k = "key"
  local t = { a, b, [k] = a < b, x = a or b, [a > b and 1 or 2] = "i", nested = { a == b }; 9 }
  return t
end, NUMS)

sample("deep_elseif_chain", function(n)
  if n == 1 then return "one"
  elseif n == 2 then return "two"
  elseif n == 3 then return "three"
  elseif n == 4 then return "four"
  elseif n == 5 then return "five"
  elseif n == 6 then return "six"
  elseif n == 7 then return "seven"
  elseif n == 8 then return "eight"
  else return "many" end
end, { pack(1), pack(4), pack(8), pack(9), pack(0) })

sample("lexer_edge_cases", function(a)
  local nums = { 0x1p-4, 1e+10, 3., 0xA.8p1, 0XFF, 1E2, .5e1, 7 // 2, 7.5 // 2, 0x.1, 3 % 2.0,
                 math.maxinteger, 9007199254740993, 0xffffffffffffffff }
  local strs = { "\u{48}\u{20AC}", "\x41\65\066", 'it\'s', "q\"q", "tab\tnl\n", "\\",
                 [==[a]]b]=]c]==], [[
first newline skipped]], "\z
                          z" }
  local t = { a = { b = { c = { d = function(self, x) return x .. "!" end } } } }
  local r = t.a.b.c:d"x" .. t.a.b.c:d[[y]] .. #strs
  local x = a~=1 and a<=2 and a>=0 and -a^-2 or ~a<<1>>1
  return nums, strs, r, x
end, { pack(1), pack(2), pack(0) }) -- trailing comment on the last line

local big_sample = function(n, m)
  -- the largest sample: also timed below
  local grid = {}
  for i = 1, n do
    grid[i] = {}
    for j = 1, m do
      local v = (i * 31 + j * 17) % 11
      if v < 3 then
        grid[i][j] = 0
      elseif v < 7 and i ~= j then
        grid[i][j] = v // 2
      else
        grid[i][j] = v / 2
      end
    end
  end
  local total, maxv, cnt = 0, -math.huge, 0
  for i = 1, n do
    local row = grid[i]
    for j = 1, m do
      local v = row[j]
      total = total + v
      if v > maxv then maxv = v end
      if v == 0 then
        cnt = cnt + 1
      end
    end
  end
  local k = 0
  while k < n * m and total > 0 do
    k = k + 1
    total = total - k
    if total < 0 then break end
  end
  local steps = 0
  repeat
    steps = steps + 1
    local done = steps * steps >= n + m
  until done or steps > 100
  local words = {}
  for w in ("alpha beta gamma delta"):gmatch("%a+") do
    if #w > 4 and w ~= "gamma" then
      words[#words + 1] = w:sub(1, 2)
    elseif w == "gamma" then
      words[#words + 1] = w:upper()
    end
  end
  local function sum(t, lo, hi)
    local s = 0
    for i = lo or 1, hi or #t do s = s + t[i] end
    return s
  end
  local parity = {}
  for i = 1, n do
    parity[i] = sum(grid[i]) % 2 == 0 and "e" or "o"
  end
  local a, b = 1, 1
  for _ = 1, m do a, b = b, a + b end
  local x, y = n > m and n or m, not (n == m)
  local z = n < m and m - n or n - m
  if n == 0 then
    return nil
  elseif m == 0 then
    return false, "no columns"
  end
  return total, maxv, cnt, k, steps, table.concat(words, ","), table.concat(parity), a, b, x, y, z
end
sample("big", big_sample, { pack(3, 4), pack(0, 2), pack(2, 0), pack(5, 5), pack(7, 3) })

---------------------------------------------------------------------------
-- Run
---------------------------------------------------------------------------
for _, s in ipairs(samples) do
  local name, fn, inputs = s[1], s[2], s[3]
  local ok, newfn = pcall(rewrite, fn)
  if not ok then
    failures = failures + 1
    print("FAIL " .. name .. ": " .. tostring(newfn))
  else
    for _, args in ipairs(inputs) do compare(name, fn, newfn, args) end
  end
end

-- Functions defined in string chunks: located by line even when several share
-- a line, when a line starts inside a long string, with \r\n line ends, as
-- methods (implicit self), `local function`, `function a.b.c()`, on line 1.
local chunks = {
  { "return function(a, b) if a < b then return b end return a end", 1, pack(1, 2), pack(3, 2) },
  { "local t = {}\nfunction t:m(x, ...)\n  if x then return self.k, x, ... end\n  return select('#', ...)\nend\n"
    .. "t.k = 'K'\nreturn function(...) return t:m(...) end, t.m", 2, pack({ k = 1 }, 1, 2), pack({ k = 2 }), pack({}, false, 3) },
  { "local s = [[\nfunction() return 'wrong' end\nxx]] local f = function(a) if a then return 1 end return 2 end\nreturn f", 3, pack(true), pack(nil) },
  { "local a, b = function(x) return x and 1 end, function(x)\n  if x then return 2 end\n  return 3 end\nreturn b", 1, pack(true), pack(false) },
  { "local u = 5\r\nlocal function f(n)\r\n  local s = 0\r\n  for i = 1, n do\r\n    s = s + i * u\r\n  end\r\n  return s\r\nend\r\nreturn f", 2, pack(3), pack(0) },
  { "a = { b = {} }\nfunction a.b.c(x)\n  while x > 0 do x = x - 2 end\n  return x\nend\nreturn a.b.c", 2, pack(5), pack(6) },
  { "local s = [[\nit's]] local f = function(a) if a then return 1 end return 2 end\nreturn f", 2, pack(true), pack(nil) },
  { "local f = function\n  (x) if x then return 'yes' end return 'no' end\nreturn f", 2, pack(true), pack(false) },
  { "local function\ng\n(x, y) return x < y end\nreturn g", 3, pack(1, 2), pack(2, 1) },
  { "--[==[ comment\n]==] return function(x) return not x, x == 1 end", 2, pack(1), pack(false) },
  { "local k = 2\nlocal _ENV = { tostring = tostring }\nreturn function(x)\n  if x > k then y = tostring(x) end\n  return y\nend", 3, pack(1), pack(3) },
}
for ci, c in ipairs(chunks) do
  local text, line = c[1], c[2]
  local name = "=chunk" .. ci
  local results = pack(assert(load(text, name))())
  local fn = results[results.n]
  local info = debug.getinfo(fn, "S")
  local names, values = {}, {}
  for i = 1, math.huge do
    local n, v = debug.getupvalue(fn, i)
    if not n then break end
    names[i], values[i] = n, v
  end
  checks = checks + 1
  local out, err = R.function_chunk(text, info.linedefined, info.lastlinedefined, names, info.source)
  if info.linedefined ~= line then
    failures = failures + 1
    print("FAIL chunk " .. ci .. ": test expects the function on line " .. line)
  elseif not out then
    failures = failures + 1
    print("FAIL chunk " .. ci .. ": " .. tostring(err))
  else
    local newfn = assert(load(out, name))(H, unpack(values, 1, #names))
    for k = 3, #c do compare("chunk" .. ci, fn, newfn, c[k]) end
  end
end

-- The hooks must actually have been used: a rewriter that returned the
-- function unchanged would otherwise pass.
for _, h in ipairs { "if_", "while_", "repeat_", "for_", "gfor", "and_", "or_", "not_", "cmp", "decl", "assign" } do
  if not used[h] then
    failures = failures + 1
    print("FAIL hook " .. h .. " was never called")
  end
end

-- goto and labels are rejected with the chunk name and line.
local function with_goto(n)
  for i = 1, n do
    if i == 2 then goto continue end
    ::continue::
  end
end
do
  local info = debug.getinfo(with_goto, "S")
  local text, err = R.function_chunk(source_of(info), info.linedefined, info.lastlinedefined, {}, info.source)
  local expect = info.source:sub(2) .. ":" .. (info.linedefined + 2) .. ": goto is not supported in kernels"
  checks = checks + 1
  if text or not err:find(expect, 1, true) then
    failures = failures + 1
    print("FAIL goto: expected '" .. expect .. "', got " .. tostring(err))
  end
end

-- Functions that cannot be found are reported, not crashed on.
do
  local text, err = R.function_chunk("local x = 1\nreturn x\n", 1, 2, {}, "@nowhere.lua")
  checks = checks + 1
  if text or not err:find("^nowhere.lua:1: cannot find the function") then
    failures = failures + 1
    print("FAIL missing function: " .. tostring(err))
  end
  text, err = R.function_chunk("local f = function() return x end", 1, 1, { "(no name)" }, "=stdin")
  checks = checks + 1
  if text or not err:find("^stdin:1: the function's upvalue names are unavailable") then
    failures = failures + 1
    print("FAIL stripped upvalue names: " .. tostring(err))
  end
  text, err = R.function_chunk("local f = function() return 1 end", 1, 1, {}, "=stdin")
  checks = checks + 1
  if not text or not load(text)(H)() == 1 then
    failures = failures + 1
    print("FAIL one-line chunk: " .. tostring(err))
  end
end

-- Random expressions over every operator (deterministic seed): precedence,
-- associativity, short-circuit values and errors must match the original.
do
  local BIN = { "+", "-", "*", "/", "//", "%", "^", "..", "==", "~=", "<", "<=", ">", ">=",
                "and", "or", "&", "|", "~", "<<", ">>" }
  local UN = { "-", "not", "~" }
  local LEAF = { "a", "b", "c", "1", "2", "0", "3.5", "-2", "true", "false", "nil", "(a)" }
  local seed = 12345
  local function rnd(n)                    -- own generator: same sequence everywhere
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n + 1
  end
  local function gen(d)
    if d == 0 or rnd(5) == 1 then return LEAF[rnd(#LEAF)] end
    local k = rnd(10)
    if k == 1 then return UN[rnd(#UN)] .. " " .. gen(d - 1) end
    if k == 2 then return "(" .. gen(d - 1) .. ")" end
    return gen(d - 1) .. " " .. BIN[rnd(#BIN)] .. " " .. gen(d - 1)
  end
  local function norm(ok, ...)
    if ok then return pack(true, ...) end
    -- positions and variable notes ("(local 'a')", "(upvalue 'a')", none for a
    -- hook result) differ: a lazy operand is a closure, `a and b` a call
    local e = tostring((...)):gsub("^[^:]*:%d+: ", ""):gsub(" %(%a+ '[^']*'%)", "")
    return pack(false, e)
  end
  local INPUTS = { pack(1, 2, 3), pack(2.5, 2, 0), pack(-1, 1, 4), pack(3, 3, 3.0), pack(0, 5, 2),
                   pack(true, 1, 2), pack(nil, false, 1) }
  local bad = 0
  for n = 1, 300 do
    local text = "return function(a, b, c)\n  return " .. gen(4) .. "\nend"
    local fn = assert(load(text, "=fuzz"))()
    local out, err = R.function_chunk(text, 1, 3, {}, "=fuzz")
    checks = checks + 1
    local newfn = out and load(out, "=fuzz")
    if not newfn then
      failures, bad = failures + 1, bad + 1
      print("FAIL fuzz rewrite: " .. text .. "\n  " .. tostring(err or out))
    else
      newfn = newfn(H)
      for _, args in ipairs(INPUTS) do
        local r1 = norm(pcall(fn, unpack(args, 1, 3)))
        local r2 = norm(pcall(newfn, unpack(args, 1, 3)))
        local same_r = r1.n == r2.n
        for i = 1, math.max(r1.n, r2.n) do same_r = same_r and same(r1[i], r2[i]) end
        if not same_r and bad < 5 then
          failures, bad = failures + 1, bad + 1
          print("FAIL fuzz: " .. text:match("\n  return (.-)\nend") .. " with " .. show(args) ..
                "\n  original: " .. show(r1) .. "\n  rewritten: " .. show(r2))
        end
      end
    end
  end
end

-- Random statements (deterministic seed): nested if/elseif/else, all loop
-- kinds, break, early returns with several values, locals declared in blocks
-- and read by `until`, closures capturing loop variables.
do
  local seed = 777
  local function rnd(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n + 1
  end
  local vars                                    -- readable numeric variables in scope
  local function cond()
    local v = vars[rnd(#vars)]
    local ops = { "<", "<=", ">", ">=", "==", "~=" }
    local c = v .. " " .. ops[rnd(#ops)] .. " " .. rnd(6)
    local k = rnd(6)
    if k == 1 then return "not (" .. c .. ")" end
    if k == 2 then return c .. " and " .. vars[rnd(#vars)] .. " % 2 == 0" end
    if k == 3 then return c .. " or x > " .. rnd(20) end
    return c
  end
  local block
  local function stat(d, inloop)
    local k = rnd(d > 3 and 3 or 13)
    if k <= 2 then return "x = x + " .. vars[rnd(#vars)] .. "; acc[#acc + 1] = x" end
    if k == 3 then return "acc[#acc + 1] = " .. vars[rnd(#vars)] end
    if k == 4 then
      local s = "if " .. cond() .. " then " .. block(d + 1, inloop)
      if rnd(2) == 1 then s = s .. " elseif " .. cond() .. " then " .. block(d + 1, inloop) end
      if rnd(2) == 1 then s = s .. " else " .. block(d + 1, inloop) end
      return s .. " end"
    end
    if k == 5 then
      local i = "i" .. d
      local saved = #vars
      vars[#vars + 1] = i
      local s = "for " .. i .. " = " .. rnd(3) .. ", " .. rnd(5) .. (rnd(3) == 1 and ", 2" or "") ..
                " do fs[#fs + 1] = function() return " .. i .. " end; " .. block(d + 1, true) .. " end"
      vars[saved + 1] = nil
      return s
    end
    if k == 6 then
      local w = "w" .. d
      local saved = #vars
      vars[#vars + 1] = w
      local s = "local " .. w .. " = 0 while " .. w .. " < " .. rnd(4) .. " do " .. w .. " = " .. w ..
                " + 1; " .. block(d + 1, true) .. " end"
      vars[saved + 1] = nil
      return s
    end
    if k == 7 then
      local r = "r" .. d
      local saved = #vars
      vars[#vars + 1] = r
      local s = "local " .. r .. " = 0 repeat " .. r .. " = " .. r .. " + 1; local u" .. d .. " = " .. r ..
                " * 2; " .. block(d + 1, true) .. " until u" .. d .. " >= " .. rnd(6) .. " or " .. cond()
      vars[saved + 1] = nil
      return s
    end
    if k == 8 then
      local kk, vv = "k" .. d, "v" .. d
      local saved = #vars
      vars[#vars + 1] = kk
      vars[#vars + 1] = vv
      local s = "for " .. kk .. ", " .. vv .. " in ipairs({ " .. rnd(5) .. ", " .. rnd(5) .. ", x % 7 }) do " ..
                block(d + 1, true) .. " end"
      vars[saved + 1], vars[saved + 2] = nil, nil
      return s
    end
    if k == 9 and inloop then return "if " .. cond() .. " then break end" end
    if k == 10 then return "if " .. cond() .. " then return x, #acc, " .. vars[rnd(#vars)] .. " end" end
    if k == 11 then return "do local y = x; x = y + 1 end" end
    if k == 12 and inloop and rnd(3) == 1 then return "break" end
    return "x = x - 1"
  end
  function block(d, inloop)
    local parts = {}
    for j = 1, rnd(3) do
      local st = stat(d, inloop)
      parts[#parts + 1] = st
      if st == "break" then break end
    end
    return table.concat(parts, "; ")
  end
  local bad = 0
  for n = 1, 150 do
    vars = { "a", "x" }
    local body = block(0, false)
    local text = "return function(a)\n  local x, acc, fs = a, {}, {}\n  " .. body ..
                 "\n  local c = {}\n  for i = 1, #fs do c[i] = fs[i]() end\n" ..
                 "  return x, table.concat(acc, ','), table.concat(c, ',')\nend"
    local fn = assert(load(text, "=stmts"))()
    local out, err = R.function_chunk(text, 1, 7, { "_ENV" }, "=stmts")
    local newfn = out and load(out, "=stmts")
    checks = checks + 1
    if not newfn then
      failures, bad = failures + 1, bad + 1
      print("FAIL statement fuzz rewrite: " .. text .. "\n  " .. tostring(err or out))
    else
      newfn = newfn(H, _ENV)
      for a = -1, 4 do
        local r1, r2 = pack(pcall(fn, a)), pack(pcall(newfn, a))
        local ok = r1.n == r2.n
        for i = 1, math.max(r1.n, r2.n) do ok = ok and same(r1[i], r2[i]) end
        if not ok and bad < 5 then
          failures, bad = failures + 1, bad + 1
          print("FAIL statement fuzz with a = " .. a .. ":\n" .. text .. "\n  original: " .. show(r1) ..
                "\n  rewritten: " .. show(r2))
        end
      end
    end
  end
end

-- Nesting deeper than Lua's parser accepts is reported with a line, not left
-- to fail in load() with a bare "C stack overflow".
do
  local parts = { "return function(x)\n  if x == 0 then return 0\n" }
  for i = 1, 80 do parts[#parts + 1] = "  elseif x == " .. i .. " then return " .. i .. "\n" end
  parts[#parts + 1] = "  end\nend\n"
  local text, err = R.function_chunk(table.concat(parts), 1, 84, {}, "@deep.lua")
  checks = checks + 1
  if text or not err:find("^deep.lua:%d+: this code nests too deeply") then
    failures = failures + 1
    print("FAIL deep nesting: " .. tostring(err))
  end
end

-- Micro-benchmark: rewriting the largest sample (in a file of this size).
do
  local info = debug.getinfo(big_sample, "S")
  local src = source_of(info)
  local names = {}
  for i = 1, math.huge do
    local n = debug.getupvalue(big_sample, i)
    if not n then break end
    names[i] = n
  end
  local reps = 50
  local t0 = os.clock()
  for _ = 1, reps do
    assert(R.function_chunk(src, info.linedefined, info.lastlinedefined, names, info.source))
  end
  local ms = (os.clock() - t0) * 1000 / reps
  print(string.format("rewrite of the %d-line sample: %.3f ms", info.lastlinedefined - info.linedefined + 1, ms))
end

print(string.format("%d checks, %d failures", checks, failures))
if failures > 0 then os.exit(1) end
