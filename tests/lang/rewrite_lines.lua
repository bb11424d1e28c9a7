-- Line keeping of stdlib/lattice/rewrite.lua: a rewritten function loaded under
-- the original chunk name reports the same "chunk:line:" as the original, for
-- errors and for debug.getinfo(...).currentline, on many kinds of lines (after
-- long strings and comments, inside multi-line expressions and in loops and
-- branches that became closures). The original function is the reference.

local ok_req, R = pcall(require, "lattice.rewrite")
if not ok_req then
  local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
  local root = os.getenv("LT_SOURCE_DIR") or (here .. "/../..")
  package.path = root .. "/stdlib/?.lua;" .. package.path
  R = require "lattice.rewrite"
end

local pack, unpack = table.pack, table.unpack

-- Minimal plain-Lua hooks (rewrite_semantics.lua checks them in depth).
local H = { BREAK = {}, RETURN = {}, UNTIL = {} }
local function run_loop(r)
  if r[1] == H.BREAK then return "stop" end
  if r[1] == H.RETURN then return "return" end
end
-- A hook that rejects a value reports it at level 2, as the tracer does; the
-- value "bad" stands for such a value here.
local function reject(v) if v == "bad" then error("bad value for a hook", 3) end end
function H.if_(c, a, b) reject(c) if c then return a() elseif b then return b() end end
function H.while_(c, body)
  while true do
    local v = c()
    reject(v)
    if not v then break end
    local r = pack(body())
    local s = run_loop(r)
    if s == "stop" then break elseif s then return unpack(r, 1, r.n) end
  end
end
function H.repeat_(body)
  while true do
    local r = pack(body())
    if r[1] == H.UNTIL then
      if r[2] then break end
    else
      local s = run_loop(r)
      if s == "stop" then break elseif s then return unpack(r, 1, r.n) end
    end
  end
end
function H.for_(a, b, s, body)
  reject(b)
  for i = a, b, s or 1 do
    local r = pack(body(i))
    local st = run_loop(r)
    if st == "stop" then break elseif st then return unpack(r, 1, r.n) end
  end
end
function H.gfor(body, f, s, c)
  while true do
    local v = pack(f(s, c))
    if v[1] == nil then break end
    c = v[1]
    local r = pack(body(unpack(v, 1, v.n)))
    local st = run_loop(r)
    if st == "stop" then break elseif st then return unpack(r, 1, r.n) end
  end
end
function H.and_(a, b) reject(a) if a then return b() end return a end
function H.or_(a, b) if a then return a end return b() end
function H.not_(a) return not a end
-- Comparison hooks raise their errors at the caller (level 2), as the tracer's do.
local function cmp(f)
  return function(a, b)
    local ok, r = pcall(f, a, b)
    if ok then return r end
    error((r:gsub("^.-:%d+: ", "")), 2)
  end
end
H.lt = cmp(function(a, b) return a < b end)
H.le = cmp(function(a, b) return a <= b end)
H.gt = cmp(function(a, b) return a > b end)
H.ge = cmp(function(a, b) return a >= b end)
function H.eq(a, b) return a == b end
function H.ne(a, b) return a ~= b end
function H.decl(names, ...) reject(...) return ... end
function H.setindex(t, k, v) reject(v) t[k] = v end
function H.newtable(t) return t end
function H.assign(names, ...)
  local k = select(2, names:gsub(",", ",")) + 1
  return select(k + 1, ...)
end
H.pack = pack
function H.enter() return nil end

local src
local function rewrite(fn)
  local info = debug.getinfo(fn, "S")
  if not src then
    local f = assert(io.open(info.source:sub(2), "rb"))
    src = f:read("a")
    f:close()
  end
  local names, values = {}, {}
  for i = 1, math.huge do
    local n, v = debug.getupvalue(fn, i)
    if not n then break end
    names[i], values[i] = n, v
  end
  local text = assert(R.function_chunk(src, info.linedefined, info.lastlinedefined, names, info.source))
  return assert(load(text, info.source, "t"))(H, unpack(values, 1, #names)), text
end

local failures, checks = 0, 0
local function fail(msg)
  failures = failures + 1
  print("FAIL " .. msg)
end

-- The caller's current line.
local function here() return debug.getinfo(2, "l").currentline end

local function lines_probe(a)
  local seen = {}
  local function mark(l) seen[#seen + 1] = l end
  mark(here())
  local s = [[
  a long
  string ]] mark(here())
  --[==[ a long
  comment ]==] mark(here())
  if a > 0 then
    mark(here())
  else
    mark(here())
  end
  for i = 1, 2 do
    mark(here())
    while i > 5 do mark(here()) end
  end
  local v = a +
    here() +
    (a < 3 and here()
      or here())
  mark(v - a)
  repeat
    mark(here())
  until here() > 0
  for _, x in ipairs { here(), here() } do
    mark(x)
  end
  local t = {
    here(),
    k = a == 1 and here() or 0,
  }
  mark(t[1]); mark(t.k)
  if a == 1 then mark(here()) elseif a == 2 then
    mark(here())
  end
  local u = "x\
y" mark(here())
  local w = ('\z
      z') mark(here())
  mark(#s + #u + #w)
  return table.concat(seen, ",")
end

local function err_at(which)
  local t = nil
  local n = nil
  if which == 1 then
    return t.field
  elseif which == 2 then
    return n + 1
  elseif which == 3 then
    error("explicit")
  end
  for i = 1, 3 do
    if which == 4 and i == 2 then
      local s = "abc" ..
        n
    end
    while which == 5 do
      local f = nil
      f()
    end
  end
  local m = [[
]]
  if which == 6 then return m .. {} end
  repeat
    if which == 7 then error({}) end
    local x = which == 8 and #n
  until true
  if which ==
    9 then
    return 1 < t
  end
  local g = function()
    return n.x
  end
  if which == 10 then return g() end
  if which == 11 then
    local z = n <= 2
  end
  return "no error"
end

local function method_err(o)
  local r = o:name()
  if r == "x" then
    return o:missing()
  end
  return r
end

-- Hook calls sit on the line of the construct they replace: each statement
-- below sees "bad" when which == its number, and the rewritten function must
-- report the line holding the marker "@hook <number>".
local function hook_lines(which)
  local function v(k) if k == which then return "bad" end return false end
  local x = 0
  x = x + 1
  if v(1) then x = 2 end -- @hook 1
  x = x + 1
  while v(2) do x = 3 end -- @hook 2
  x = x + 1
  for i = 1, v(3) or 0 do x = i end -- @hook 3
  x = x + 1
  local y = v(4) and 1 -- @hook 4
  x = x + 1
  local z = -- @hook 5
    v(5)
  if x > 1 then
    x = x + 1
    if v(6) then x = 0 end -- @hook 6
  end
  return "done"
end

do
  local newfn = rewrite(hook_lines)
  local marks = {}
  local n = 0
  for line in (src .. "\n"):gmatch("(.-)\r?\n") do
    n = n + 1
    local k = line:match("%-%- @hook (%d+)$")
    if k then marks[tonumber(k)] = n end
  end
  for k = 1, 6 do
    checks = checks + 1
    local ok, e = pcall(newfn, k)
    local line = not ok and type(e) == "string" and tonumber(e:match("^[^:]*:(%d+): bad value"))
    if line ~= marks[k] then
      fail(string.format("hook_lines(%d): expected line %s, got %s", k, tostring(marks[k]), tostring(e)))
    end
  end
end

-- currentline sequences
do
  local newfn = rewrite(lines_probe)
  for _, a in ipairs { 1, 2, -1 } do
    checks = checks + 1
    local want, got = lines_probe(a), newfn(a)
    if want ~= got then fail(string.format("lines_probe(%d): original %s, rewritten %s", a, want, got)) end
  end
end

-- error positions
local function check_errors(fn, name, inputs)
  local newfn, text = rewrite(fn)
  for _, arg in ipairs(inputs) do
    checks = checks + 1
    local ok1, e1 = pcall(fn, arg)
    local ok2, e2 = pcall(newfn, arg)
    local p1 = type(e1) == "string" and e1:match("^[^:]*:%d+:") or tostring(ok1 and "ok" or type(e1))
    local p2 = type(e2) == "string" and e2:match("^[^:]*:%d+:") or tostring(ok2 and "ok" or type(e2))
    if ok1 ~= ok2 or p1 ~= p2 then
      fail(string.format("%s(%s): original %s (%s), rewritten %s (%s)", name, tostring(arg),
           tostring(e1), p1, tostring(e2), p2))
    end
  end
  return text
end
local inputs = {}
for i = 1, 12 do inputs[i] = i end
check_errors(err_at, "err_at", inputs)
check_errors(method_err, "method_err", { { name = function() return "x" end }, { name = function() return "y" end }, {} })

-- every error above must have named this file and a line inside the function
do
  local info = debug.getinfo(err_at, "S")
  for i = 1, 10 do
    checks = checks + 1
    local _, e = pcall(err_at, i)
    local line = type(e) == "string" and tonumber(e:match(":(%d+):"))
    if i ~= 7 and not (line and line > info.linedefined and line < info.lastlinedefined) then
      fail("reference error " .. i .. " has no line inside err_at: " .. tostring(e))
    end
  end
end

-- the rewritten text keeps each function line on its line: same line count
do
  local info = debug.getinfo(lines_probe, "S")
  local _, text = rewrite(lines_probe)
  local _, nl = text:gsub("\n", "")
  checks = checks + 1
  if nl + 1 ~= info.lastlinedefined then
    fail(string.format("rewritten chunk has %d lines, expected %d", nl + 1, info.lastlinedefined))
  end
end

print(string.format("%d checks, %d failures", checks, failures))
if failures > 0 then os.exit(1) end
