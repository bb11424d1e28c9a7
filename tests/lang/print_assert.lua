-- print(...) in kernels (formatted as Lua's print, flushed through io.write
-- when the kernel ends, each thread's lines in order, overflow dropped with a
-- note) and lt.assert (active with debug = true, compiled out otherwise).
local lt = require "lattice"

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check, check_error = T.check, T.check_error

local capture = T.capture

lt.init { threads = 4 }

-- ---- values of every kind, formatted as Lua would ------------------------------------------
local k = lt.kernel(function(n, x)
  local f = x * 2
  print("n =", n, "f =", f, n > 2, lt.f64(x), "100% done", 7, 2.5)
  print()
  print(lt.u8(n + 250), lt.i64(n) * 1000000000000, x / 3)
end, { n = lt.i32, x = lt.f32 })
local lines = capture(function() k(5, 0.1) end)
local f32 = lt.f32
check("line count", #lines, 3)
check("mixed values", lines[1], table.concat({ "n =", tostring(5), "f =", tostring(f32(f32(0.1) * 2)), "true",
  tostring(f32(0.1)), "100% done", "7", "2.5" }, "\t"))
check("empty print", lines[2], "")
check("types", lines[3], table.concat({ tostring(255), tostring(5000000000000), tostring(f32(f32(0.1) / 3)) }, "\t"))

-- ---- a parallel loop: every line once, each iteration's lines in order -----------------------
local N = 500
local par = lt.kernel(function()
  for i in lt.ndrange(N) do
    print("a", i)
    print("b", i, i * i)
  end
end)
lines = capture(par)
check("parallel line count", #lines, 2 * N)
local seen_a, bad_order, bad_value = {}, 0, 0
for _, line in ipairs(lines) do
  local kind, i, sq = line:match("^(%a)\t(%d+)\t?(%d*)$")
  i = tonumber(i)
  if kind == "a" then seen_a[i] = true
  elseif not seen_a[i] then bad_order = bad_order + 1 end
  if kind == "b" and tonumber(sq) ~= i * i then bad_value = bad_value + 1 end
end
local missing = 0
for i = 0, N - 1 do if not seen_a[i] then missing = missing + 1 end end
check("every iteration printed", missing, 0)
check("a before b in each iteration", bad_order, 0)
check("values", bad_value, 0)

-- ---- overflow: records dropped, a note, no crash --------------------------------------------------
lt.init { threads = 2, print_buffer = 1024 }
local many = lt.kernel(function()
  for i in lt.ndrange(1000) do print("line", i) end
end)
local err
lines, err = capture(many)
-- a record with one value takes 32 bytes: 32 of them fit in 1024
check("lines kept", #lines, 32)
check("note on stderr", err:find("968 print records dropped: the print buffer (1024 bytes) was full", 1, true) ~= nil,
  true)
local fits = lt.kernel(function() print("fits") end)
lines, err = capture(fits)
check("the buffer is emptied for the next launch", lines[1], "fits")
check("no note then", err, "")

-- ---- lt.assert ---------------------------------------------------------------------------------------
local function asserting()
  local x = lt.field(lt.i32, 16)
  return x, lt.kernel(function(limit)
    for i in x do
      x[i] = i
      if i > 100 then lt.assert(false, "never reached") end   -- a Lua false: checked where it runs
      lt.assert(i < limit, "i must stay below the limit")
    end
  end)
end

lt.init { debug = false }
local x, kern = asserting()
kern(4)                                    -- compiled out: no error
check("without debug the kernel runs to the end", x[15], 15)
check("no assert in the IR without debug", kern:ir():find("assert") == nil, true)

lt.init { debug = true, threads = 4 }
x, kern = asserting()
kern(100)
check("a true assertion passes", x[15], 15)
check_error("a false assertion stops the kernel", function() kern(4) end,
  "print_assert.lua:76): assertion failed: i must stay below the limit")
check("assert in the IR", kern:ir():find("assert %$%d+ \"i must stay below the limit\"") ~= nil, true)

-- what was printed before a failure is still flushed
local noisy = lt.kernel(function()
  print("before")
  lt.assert(1 > 2, "stop")
end)
check_error("assert after print", function()
  lines = capture(function() noisy() end)
end, "assertion failed: stop")

-- Lua scope
check("lt.assert passes its value", lt.assert(3, "x"), 3)
check_error("lt.assert in Lua scope", function() lt.assert(false, "plain") end, "assertion failed: plain")

T.finish("print_assert")
