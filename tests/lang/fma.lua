-- lt.init{fma = true}: a float multiply and the add using it may fuse into
-- one multiply-add with a single rounding; without it (the default) every
-- operation rounds on its own, as docs/arithmetic.md and constant folding say.
-- The inputs make the two differ: a * b = 1 + 2^-11 + 2^-24 exactly, which
-- rounds (to even) to 1 + 2^-11 in f32, so a * b + c with c = -(1 + 2^-11) is
-- 0 when rounded twice and 2^-24 when fused.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local a, b, c = 1 + 2 ^ -12, 1 + 2 ^ -12, -(1 + 2 ^ -11)

-- whether this CPU has FMA instructions (the JIT targets the host)
local function host_has_fma()
  local f = io.open("/proc/cpuinfo", "r")
  if not f then return false end
  local text = f:read("a")
  f:close()
  return text:find("%sfma%s") ~= nil
end

local function run(opts)
  lt.init(opts)
  local out = lt.field(lt.f32, 4)
  local k = lt.kernel(function(x, y, z)
    for i in lt.ndrange(4) do out[i] = x * y + z - i end
  end, { x = lt.f32, y = lt.f32, z = lt.f32 })
  k(a, b, c)
  return out[0], out[1]
end

local strict, strict1 = run {}
C.check("default: each operation rounds", strict, 0.0)
C.check("default: a * b + c - 1", strict1, -1.0)
local fused = run { fma = true }
if host_has_fma() then
  C.check("fma = true: one rounding", fused, 2 ^ -24)
else
  print("fma: this CPU has no FMA instructions; fma = true computes like the default here")
  C.check("fma = true without FMA hardware", fused, 0.0)
end
C.check_error("fma must be a boolean", function() lt.init { fma = 1 } end, "fma")

C.finish("fma")
