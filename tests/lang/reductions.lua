-- reductions.lua -- `s = s + v` / `s = v + s` / `s = s - v` on a local declared
-- outside a parallel loop are made atomic (the reduce pass), so the sums equal
-- the serial ones computed here in plain Lua, on every one of many runs (a
-- lost update shows up within a few runs when the workers race).
local lt = require "lattice"
lt.init {}

local isum = lt.kernel(function(n)
  local s = 0
  for i = 1, n do s = s + i end
  return s
end, { n = lt.i32 }, lt.i32)

local mixed = lt.kernel(function(n)
  local a, b = 0, 1000000
  for i = 0, n - 1 do
    a = (i % 3) + a
    b = b - i % 7
  end
  return a * 1000 + b
end, { n = lt.i32 }, lt.i32)

local fsum = lt.kernel(function(n)
  local s = 0.0
  for i = 1, n do s = s + 1.0 * (i % 100) end
  return s
end, { n = lt.i32 }, lt.f32)

local function serial_mixed(n)
  local a, b = 0, 1000000
  for i = 0, n - 1 do a = a + i % 3; b = b - i % 7 end
  return a * 1000 + b
end

local n = 20000
local want_f = 0
for i = 1, n do want_f = want_f + i % 100 end
for run = 1, 50 do
  local got = isum(n)
  assert(got == n * (n + 1) // 2, ("run %d: sum 1..%d = %d, want %d"):format(run, n, got, n * (n + 1) // 2))
  got = mixed(n)
  assert(got == serial_mixed(n), ("run %d: mixed = %d, want %d"):format(run, got, serial_mixed(n)))
  got = fsum(n) -- integer-valued partial sums below 2^24 are exact in f32
  assert(got == want_f, ("run %d: float sum = %s, want %s"):format(run, got, want_f))
end
assert(isum:ir():find("atomic_add"), "the sum should be an atomic_add after the reduce pass")
print("reductions: ok")
