-- print(...) in kernels with more values than one IR statement holds (10):
-- still one line with every value, tab-separated as Lua's print does, the
-- line computed here in plain Lua; in a parallel loop each line whole (one
-- record: a print typed u64 and the print_more statements filling it); with
-- a full buffer a line is dropped whole, never cut.
local lt = require "lattice"

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

local capture = T.capture

-- The arguments of the print with `count` values for n: integers, floats,
-- booleans and Lua strings in turn (values(n, count) in plain Lua, the
-- reference; the kernels below compute the same in kernel code).
local function values(n, count)
  local out = {}
  for m = 1, count do
    local r = m % 4
    if r == 0 then out[m] = n * m
    elseif r == 1 then out[m] = (n + 0.0) / m
    elseif r == 2 then out[m] = n > m
    else out[m] = "s" .. m end
  end
  return out
end

local function expected(n, count)
  local v = values(n, count)
  for m = 1, count do v[m] = tostring(v[m]) end
  return table.concat(v, "\t")
end

-- A kernel printing values(n, count) for n, or for every i of a parallel
-- loop over [0, loop) when loop is given. (Kernel code branches only on
-- comparisons of kernel values, so the kind of value m is picked by indexing
-- a table of functions with m % 4.)
local function printer(count, loop)
  local ms = {}
  for m = 1, count do ms[m] = m end
  local function one(n)
    local make = { function(x, m) return x * m end, function(x, m) return lt.f64(x) / m end,
                   function(x, m) return x > m end, function(_, m) return "s" .. m end }
    local out = {}
    for _, m in ipairs(ms) do out[m] = make[m % 4 + 1](n, m) end   -- unrolled: a Lua table
    print(table.unpack(out))
  end
  local function par()
    for i in lt.ndrange(loop) do
      local make = { function(x, m) return x * m end, function(x, m) return lt.f64(x) / m end,
                     function(x, m) return x > m end, function(_, m) return "s" .. m end }
      local out = {}
      for _, m in ipairs(ms) do out[m] = make[m % 4 + 1](i, m) end
      print(table.unpack(out))
    end
  end
  return loop and lt.kernel(par) or lt.kernel(one, { n = lt.i32 })
end

lt.init { threads = 4 }

-- ---- one line with all values, for counts around the statement's size -------------------------
local counts = { 9, 10, 11, 13, 14, 19, 20, 27, 40, 120 }
for _, count in ipairs(counts) do
  local k = printer(count)
  local lines = capture(function() k(7) end)
  check(count .. " arguments: one line", #lines, 1)
  check(count .. " arguments: the line", lines[1], expected(7, count))
  local kernel_values = math.floor(count * 3 / 4)   -- the strings are part of the format
  if kernel_values > 10 then
    local ir = k:ir()
    check(count .. " arguments: a record of " .. kernel_values .. " values in the IR",
      ir:find("<u64> %$%d+ = print \"[^\n]*\" [^\n]* values " .. kernel_values .. "\n") ~= nil, true)
    check(count .. " arguments: print_more in the IR", ir:find("= print_more %$%d+ at 10 ") ~= nil, true)
  end
end

-- ---- a parallel loop: every line whole, once ------------------------------------------------------
local N, COUNT = 300, 30
local par = printer(COUNT, N)
local lines = capture(par)
check("parallel: line count", #lines, N)
local seen, bad = {}, 0
for _, line in ipairs(lines) do
  local i = tonumber(line:match("^([%d.]+)"))   -- the first value is f64(i) / 1
  i = i and math.tointeger(i)
  if not i or line ~= expected(i, COUNT) then bad = bad + 1 else seen[i] = true end
end
check("parallel: lines that are not one iteration's whole line", bad, 0)
local missing = 0
for i = 0, N - 1 do if not seen[i] then missing = missing + 1 end end
check("parallel: iterations missing", missing, 0)

-- ---- a full buffer: whole lines kept, the rest dropped with a note --------------------------------
lt.init { threads = 2, print_buffer = 4096 }
local many = printer(COUNT, 100)
local err
lines, err = capture(many)
-- a record of 23 values takes 16 + 23 * 16 = 384 bytes: 10 fit in 4096
check("full buffer: lines kept", #lines, 10)
for _, line in ipairs(lines) do
  local i = math.tointeger(tonumber(line:match("^([%d.]+)")))
  check("full buffer: a whole line", line, i and expected(i, COUNT))
end
check("full buffer: note", err:find("90 print records dropped", 1, true) ~= nil, true)

T.finish("print_many")
