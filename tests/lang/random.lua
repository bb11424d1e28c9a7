-- lt.random: uniformity (chi-square for f32, f64 and u8), independence
-- (correlation of draws in one iteration and of neighbouring iterations, and
-- no shared streams between loops or launches), determinism for a seed
-- whatever the thread count, another stream for another seed.
-- Every number here follows from the seed, so the thresholds cannot flake.
local lt = require "lattice"

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

local N = 200000

-- draws[i][0..2]: three draws of iteration i (f32); d64: one f64; bytes: one u8
local function sample(opts)
  lt.init(opts)
  local draws = lt.ndarray(lt.f32, { N, 3 })
  local d64 = lt.ndarray(lt.f64, N)
  local bytes = lt.ndarray(lt.u8, N)
  local k = lt.kernel(function(r, d, b)
    for i in lt.ndrange(r.shape[1]) do
      for j = 0, 2 do r[i][j] = lt.random() end   -- default: f32
      d[i] = lt.random(lt.f64)
      b[i] = lt.random(lt.u8)
    end
  end)
  k(draws, d64, bytes)
  return draws, d64, bytes, k
end

local function chi2(counts, nbins, total)
  local e, x = total / nbins, 0
  for b = 0, nbins - 1 do x = x + (counts[b] - e) ^ 2 / e end
  return x
end

local draws, d64, bytes, k = sample { threads = 4, seed = 1234 }
local flat = draws:to_table()
local dd, bb = d64:to_table(), bytes:to_table()

-- ---- range and uniformity ------------------------------------------------------------------
local lo, hi, sum = math.huge, -math.huge, 0
local c32, c64, c8 = {}, {}, {}
for b = 0, 255 do c32[b], c64[b], c8[b] = 0, 0, 0 end
for i = 1, N do
  local x = flat[i][1]
  lo, hi, sum = math.min(lo, x), math.max(hi, x), sum + x
  c32[math.floor(x * 100)] = c32[math.floor(x * 100)] + 1
  c64[math.floor(dd[i] * 100)] = c64[math.floor(dd[i] * 100)] + 1
  c8[bb[i]] = c8[bb[i]] + 1
end
check("f32 >= 0", lo >= 0, true)
check("f32 < 1", hi < 1, true)
check("f32 mean near 1/2", math.abs(sum / N - 0.5) < 0.005, true)
-- 99 degrees of freedom: P(chi2 > 148.2) = 0.001; 255: P(chi2 > 330.5) = 0.001
local x32, x64, x8 = chi2(c32, 100, N), chi2(c64, 100, N), chi2(c8, 256, N)
check("chi-square f32 (" .. x32 .. ")", x32 < 148.2, true)
check("chi-square f64 (" .. x64 .. ")", x64 < 148.2, true)
check("chi-square u8 (" .. x8 .. ")", x8 < 330.5, true)
-- and not suspiciously perfect either: P(chi2 < 60.0) < 0.001 at 99 degrees
check("chi-square f32 not too small", x32 > 60, true)

-- ---- independence ----------------------------------------------------------------------------
local function corr(xs, ys)
  local n, sx, sy, sxx, syy, sxy = #xs, 0, 0, 0, 0, 0
  for i = 1, n do
    local x, y = xs[i], ys[i]
    sx, sy, sxx, syy, sxy = sx + x, sy + y, sxx + x * x, syy + y * y, sxy + x * y
  end
  return (n * sxy - sx * sy) / math.sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))
end
local first, second, next_iter = {}, {}, {}
for i = 1, N - 1 do
  first[i], second[i], next_iter[i] = flat[i][1], flat[i][2], flat[i + 1][1]
end
local bound = 4 / math.sqrt(N)                   -- four standard deviations of r
local r1, r2 = corr(first, second), corr(first, next_iter)
check("draws 1 and 2 of an iteration uncorrelated (" .. r1 .. ")", math.abs(r1) < bound, true)
check("neighbouring iterations uncorrelated (" .. r2 .. ")", math.abs(r2) < bound, true)
local equal = 0
for i = 1, N - 1 do if flat[i][1] == flat[i][2] or flat[i][1] == flat[i + 1][1] then equal = equal + 1 end end
-- f32 draws take 2^24 values: about 2N / 2^24 = 0.02 ties are expected by chance
check("few ties between draws (" .. equal .. ")", equal < 5, true)

-- a second launch of the same kernel draws new numbers
local again = lt.ndarray(lt.f32, { N, 3 })
k(again, d64, bytes)
local same = 0
for i = 0, 999 do if again[i][0] == flat[i + 1][1] then same = same + 1 end end
check("second launch differs", same < 5, true)

-- ---- determinism -------------------------------------------------------------------------------
-- the same seed on 1 thread and on 3: identical numbers (nothing depends on the schedule)
local function same_as_first(d)
  local t, diff = d:to_table(), 0
  for i = 1, N do for j = 1, 3 do if t[i][j] ~= flat[i][j] then diff = diff + 1 end end end
  return diff
end
check("same seed, 1 thread", same_as_first((sample { threads = 1, seed = 1234 })), 0)
check("same seed, 3 threads", same_as_first((sample { threads = 3, seed = 1234 })), 0)
local other = (sample { threads = 4, seed = 1235 }):to_table()
local matches = 0
for i = 1, N do if other[i][1] == flat[i][1] then matches = matches + 1 end end
check("another seed, another stream (" .. matches .. " matches)", matches < 20, true)

-- ---- loops, serial code, several draws per iteration in a loop, Lua scope ------------------------
lt.init { seed = 9 }
local two = lt.ndarray(lt.i32, { 2, 1000 })
local ser = lt.ndarray(lt.i64, 4)
local loops = lt.kernel(function(t, s)
  s[0] = lt.random(lt.i64)
  for i in lt.ndrange(1000) do t[0][i] = lt.random(lt.i32) end
  s[1] = lt.random(lt.i64)
  for i in lt.ndrange(1000) do t[1][i] = lt.random(lt.i32) end
  local n = 0
  while n < 2 do s[2 + n] = lt.random(lt.i64); n = n + 1 end
end)
loops(two, ser)
same = 0
for i = 0, 999 do if two[0][i] == two[1][i] then same = same + 1 end end
check("two loops of one kernel draw different numbers", same, 0)
check("serial draws differ", ser[0] ~= ser[1] and ser[1] ~= ser[2] and ser[2] ~= ser[3], true)
local neg = 0
for i = 0, 999 do if two[0][i] < 0 then neg = neg + 1 end end
check("i32 draws cover negative values (" .. neg .. ")", neg > 400 and neg < 600, true)

-- a struct-for over a sparse field (the stream is the cell's number) and draws
-- inside an lt.func: distinct numbers, the same with 1 and 4 threads
local function sparse_draws(threads)
  lt.init { seed = 3, threads = threads }
  local y = lt.field(lt.f32)
  lt.root:pointer(lt.ij, 8):dense(lt.ij, 8):place(y)
  local half = lt.func(function() return lt.random() * 0.5 end)
  local fill = lt.kernel(function()
    for i, j in lt.ndrange(64, 64) do y[i][j] = 1 end
  end)
  local draw = lt.kernel(function()
    for i, j in y do y[i][j] = half() + lt.random() end
  end)
  fill()
  draw()
  return y:to_table()
end
local s1, s4 = sparse_draws(1), sparse_draws(4)
local diff, ties, seen, s_lo, s_hi = 0, 0, {}, math.huge, -math.huge
for i = 1, 64 do
  for j = 1, 64 do
    local v = s1[i][j]
    if v ~= s4[i][j] then diff = diff + 1 end
    if seen[v] then ties = ties + 1 end
    seen[v] = true
    s_lo, s_hi = math.min(s_lo, v), math.max(s_hi, v)
  end
end
check("struct-for draws: same with 1 and 4 threads", diff, 0)
check("struct-for draws: distinct cells differ (" .. ties .. " ties)", ties < 3, true)
check("struct-for draws: range of half() + random()", s_lo >= 0 and s_hi < 1.5 and s_hi > 1.2, true)

lt.init { seed = 9 }
local a1, a2 = lt.random(), lt.random(lt.i32)
lt.init { seed = 9 }
check("Lua scope: same seed, same numbers", lt.random() == a1 and lt.random(lt.i32) == a2, true)
local u = lt.random(lt.f64)
check("Lua scope: f64 in [0, 1)", u >= 0 and u < 1, true)

T.finish("random")
