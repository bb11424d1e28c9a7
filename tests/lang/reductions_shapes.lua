-- Updates of kernel-scope locals in parallel loops (the reduce pass): every
-- shape that makes a reduction -- sums through conversions and chains of + and
-- -, lt.max / lt.min, the guarded maximum, one-constant flags -- gives the serial
-- result computed here in plain Lua on every one of many runs (a lost update
-- shows within a few runs when the workers race), and any other update is an
-- error naming the local and the line (tests/fails/race_*.lua).
local lt = require "lattice"
lt.init { threads = 2 }
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local N = 20000
local a = lt.field(lt.f64, N)
local v = lt.field(lt.i32, N)
local ra, rv = {}, {}
for i = 0, N - 1 do
  ra[i] = (i % 97) * 0.25 - 3
  rv[i] = (i * 7919) % 2001 - 1000
  a[i], v[i] = ra[i], rv[i]
end

-- the issue's case: an f64 accumulator declared with lt.f64(0)
local sum64 = lt.kernel(function() local t = lt.f64(0); for i = 0, N - 1 do t = t + lt.f64(a[i]) end; return t end)
-- an f32 accumulator with f64 terms: the cast goes to the term
local sum32 = lt.kernel(function() local t = 0.0; for i = 0, N - 1 do t = t + lt.f64(v[i]) end; return t end)
-- an i32 sum through i64 arithmetic, and a chain with s once on a + side
local sumi = lt.kernel(function() local s = 0; for i = 0, N - 1 do s = s + lt.i64(v[i]) end; return s end)
local chain = lt.kernel(function() local s = 7; for i = 0, N - 1 do s = 3 + (v[i] + s) - 2 * i end; return s end)
local down = lt.kernel(function() local s = 0; for i = 0, N - 1, 3 do s = s - v[i] end; return s end)   -- stepped
local mx = lt.kernel(function() local m = -100000; for i = 0, N - 1 do m = lt.max(m, v[i]) end; return m end)
local mn = lt.kernel(function() local m = 1e30; for i = 0, N - 1 do m = lt.min(a[i], m) end; return m end)
local gmax = lt.kernel(function()
  local m = -100000
  for i = 0, N - 1 do local x = v[i] * 3; if x > m then m = x end end
  return m
end)
local gmin = lt.kernel(function()
  local m = 100000
  for i = 0, N - 1 do local x = v[i] + i % 5; if m > x then m = x end end
  return m
end)
local flag = lt.kernel(function(t) local f = 0; for i = 0, N - 1 do if v[i] == t then f = 1 end end; return f end,
  { t = lt.i32 })
local two = lt.kernel(function()                 -- two accumulators and a struct-for-like 2-D range
  local s, c = 0, 0
  for i, j in lt.ndrange(100, 200) do s = s + v[i * 200 + j]; c = c + 1 end
  return s * 100000 + c
end)

local w64, w32, wi, wc, wd, wmx, wmn, wg, wgn = 0.0, 0.0, 0, 7, 0, -100000, 1e30, -100000, 100000
for i = 0, N - 1 do
  w64 = w64 + ra[i]
  w32 = w32 + rv[i]
  wi = wi + rv[i]
  wc = 3 + (rv[i] + wc) - 2 * i
  if i % 3 == 0 then wd = wd - rv[i] end
  wmx = math.max(wmx, rv[i])
  wmn = math.min(wmn, ra[i])
  wg = math.max(wg, rv[i] * 3)
  wgn = math.min(wgn, rv[i] + i % 5)
end
local w2 = 0
for q = 0, 100 * 200 - 1 do w2 = w2 + rv[q] end
for run = 1, 20 do
  C.check("f64 sum " .. run, sum64(), w64)           -- quarter-integers: exact in any order
  C.check("f32 sum of f64 terms " .. run, sum32(), w32)
  C.check("i32 sum through i64 " .. run, sumi(), wi)
  C.check("chain " .. run, chain(), wc)
  C.check("stepped difference " .. run, down(), wd)
  C.check("lt.max " .. run, mx(), wmx)
  C.check("lt.min " .. run, mn(), wmn)
  C.check("guarded max " .. run, gmax(), wg)
  C.check("guarded min " .. run, gmin(), wgn)
  C.check("flag found " .. run, flag(rv[123]), 1)
  C.check("flag absent " .. run, flag(5000), 0)
  C.check("two sums " .. run, two(), w2 * 100000 + 20000)
end
C.check("sum64 is atomic", (sum64:ir():find("atomic_add", 1, true)) ~= nil, true)
C.check("lt.max is atomic", (mx:ir():find("atomic_max", 1, true)) ~= nil, true)
C.check("guarded min is atomic", (gmin:ir():find("atomic_min", 1, true)) ~= nil, true)

C.finish("reductions_shapes")
