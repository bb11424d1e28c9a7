-- Every Lua-scope path into the memory kernels see (src/lang/devmem.c): field
-- element reads and writes, fill, to_table and from_table on dense fields that
-- share their cells (AoS) in nested, column-major and offset layouts, every
-- scalar type, sparse fields, lt.tree instances, lt.append, and ndarrays. Each
-- is checked against a plain-Lua model, and against kernels, which compute
-- addresses on their own. On the CPU this checks the host paths; on a backend
-- whose memory is a device's, the same script checks the copies (a dense
-- field's bulk operations copy the bytes it spans once, read-modify-write, so
-- the fields sharing its cells must survive).
local lt = require "lattice"
lt.init {}

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

-- Compares field f (2-D, n1 x n2) with model(i, j) through to_table and
-- through single reads.
local function same(what, f, n1, n2, model)
  local t = f:to_table()
  local bad = 0
  for i = 0, n1 - 1 do
    for j = 0, n2 - 1 do
      local want = model(i, j)
      if t[i + 1][j + 1] ~= want and bad < 3 then
        bad = bad + 1
        T.fail(("%s: to_table[%d][%d] = %s, want %s"):format(what, i + 1, j + 1, t[i + 1][j + 1], want))
      end
      if f[i][j] ~= want and bad < 3 then
        bad = bad + 1
        T.fail(("%s: [%d][%d] = %s, want %s"):format(what, i, j, f[i][j], want))
      end
    end
  end
end

-- ---- dense fields sharing cells -------------------------------------------------------

-- a container before them in the root's cell, so their range starts past 0
local pad = lt.field(lt.i32)
lt.root:dense(lt.i, 5):place(pad)
-- three types in one cell, 3x2 blocks of 2x5 cells = 6 x 10
local a, b, c = lt.field(lt.i8), lt.field(lt.f64), lt.field(lt.u16)
lt.root:dense(lt.ij, { 3, 2 }):dense(lt.ij, { 2, 5 }):place(a, b, c)
-- column-major, two fields: shape 3 x 4
local d, e = lt.field(lt.f32), lt.field(lt.i64)
lt.root:dense(lt.ji, { 4, 3 }):place(d, e)

local fa = function(i, j) return (i * 10 + j) % 100 - 50 end
local fb = function(i, j) return i * 0.25 - j end
local fc = function(i, j) return i * 1000 + j end
local fd = function(i, j) return i + j * 0.5 end
local fe = function(i, j) return -(i * 7 + j) * 100000 end
local paint = lt.kernel(function()
  for i, j in lt.ndrange(6, 10) do
    a[i][j] = (i * 10 + j) % 100 - 50
    b[i][j] = i * 0.25 - j
    c[i][j] = i * 1000 + j
  end
  for i, j in lt.ndrange(3, 4) do
    d[i][j] = i + j * 0.5
    e[i][j] = -(i * 7 + j) * 100000
  end
  for i in lt.ndrange(5) do pad[i] = 100 + i end
end)
paint()
same("a after the kernel", a, 6, 10, fa)
same("b after the kernel", b, 6, 10, fb)
same("c after the kernel", c, 6, 10, fc)
same("d (column-major) after the kernel", d, 3, 4, fd)
same("e (column-major) after the kernel", e, 3, 4, fe)

-- fill one field: its neighbours in the cells keep their values
a:fill(-3)
same("a filled", a, 6, 10, function() return -3 end)
same("b beside a filled a", b, 6, 10, fb)
same("c beside a filled a", c, 6, 10, fc)
e:fill(2 ^ 40)
same("e filled", e, 3, 4, function() return 1 << 40 end)
same("d beside a filled e", d, 3, 4, fd)

-- from_table, 0-based and 1-based, with wrapping integers
local tb, tc = {}, {}
for i = 0, 5 do
  tb[i], tc[i + 1] = {}, {}
  for j = 0, 9 do
    tb[i][j] = i * j + 0.5
    tc[i + 1][j + 1] = 65536 * 3 + i * 11 + j   -- u16 keeps the low 16 bits
  end
end
b:from_table(tb)
c:from_table(tc)
same("b from a 0-based table", b, 6, 10, function(i, j) return i * j + 0.5 end)
same("c from a 1-based table (wrapped)", c, 6, 10, function(i, j) return i * 11 + j end)
same("a beside b and c written", a, 6, 10, function() return -3 end)
local td = {}
for i = 1, 3 do td[i] = {} for j = 1, 4 do td[i][j] = i * 100 + j end end
d:from_table(td)
same("d (column-major) from a table", d, 3, 4, function(i, j) return (i + 1) * 100 + j + 1 end)
same("e beside d written", e, 3, 4, function() return 1 << 40 end)

-- single writes, then a kernel reads what Lua wrote
a[2][3] = 200                                   -- i8: wraps to -56
c[5][9] = -1                                    -- u16: 65535
check("i8 write wraps", a[2][3], -56)
check("u16 write wraps", c[5][9], 65535)
local total = lt.field(lt.f64, {})
local sum = lt.kernel(function()
  for i, j in lt.ndrange(6, 10) do lt.atomic_add(total.value, a[i][j] + b[i][j] * 2 + c[i][j]) end
  for i in lt.ndrange(5) do lt.atomic_add(total.value, pad[i]) end
end)
sum()
local want = 0
for i = 0, 5 do
  for j = 0, 9 do
    local av = (i == 2 and j == 3) and -56 or -3
    local cv = (i == 5 and j == 9) and 65535 or i * 11 + j
    want = want + av + (i * j + 0.5) * 2 + cv
  end
end
for i = 0, 4 do want = want + 100 + i end
check("a kernel sums what Lua wrote", total.value, want)
check("pad untouched", pad[4], 104)

-- 0-D fields: fill and to_table give the one value
local z = lt.field(lt.i16, {})
z:fill(-7)
check("0-D fill", z.value, -7)
check("0-D to_table", z:to_table(), -7)

-- ---- every scalar type ----------------------------------------------------------------

-- the value a type stores for the Lua integer v (wrap to the width)
local function wrap(v, bits, signed)
  if bits == 64 then return v end
  v = v & ((1 << bits) - 1)
  if signed and v >= 1 << (bits - 1) then v = v - (1 << bits) end
  return v
end
local ints = { i8 = { 8, true }, u8 = { 8, false }, i16 = { 16, true }, u16 = { 16, false },
  i32 = { 32, true }, u32 = { 32, false }, i64 = { 64, true }, u64 = { 64, false } }
local vals = { 0, 1, -1, 127, 128, 255, 256, -129, 40000, -40000, 3000000000, -3000000000, math.maxinteger,
  math.mininteger }
local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local fvals = { 0.0, -0.0, 1.5, -2.25, 1 / 3, 1e30, -1e-30, 123456789.123 }
local typed = {}
for name in pairs(ints) do typed[name] = lt.field(lt[name], { #vals }) end
typed.f32 = lt.field(lt.f32, { #fvals })
typed.f64 = lt.field(lt.f64, { #fvals })
for name, spec in pairs(ints) do
  local f = typed[name]
  local tt = {}
  for k, v in ipairs(vals) do
    f[k - 1] = v
    check(name .. " write/read " .. v, f[k - 1], wrap(v, spec[1], spec[2]))
    tt[k] = v + 1
  end
  f:from_table(tt)
  local got = f:to_table()
  for k, v in ipairs(vals) do check(name .. " from_table/to_table " .. v, got[k], wrap(v + 1, spec[1], spec[2])) end
  f:fill(-2)
  check(name .. " fill", f:to_table()[#vals], wrap(-2, spec[1], spec[2]))
end
for k, v in ipairs(fvals) do
  typed.f32[k - 1] = v
  typed.f64[k - 1] = v
  check("f32 write/read " .. v, typed.f32[k - 1], f32(v))
  check("f64 write/read " .. v, typed.f64[k - 1], v)
end
typed.f32:from_table(fvals)
typed.f64:from_table(fvals)
for k, v in ipairs(fvals) do
  check("f32 to_table " .. v, typed.f32:to_table()[k], f32(v))
  check("f64 to_table " .. v, typed.f64:to_table()[k], v)
end
typed.f32:fill(0.1)
check("f32 fill rounds", typed.f32[3], f32(0.1))

-- ---- sparse fields ----------------------------------------------------------------------

local s, s2 = lt.field(lt.i32), lt.field(lt.f32)
lt.root:pointer(lt.ij, { 4, 4 }):dense(lt.ij, { 2, 2 }):place(s, s2)
same("sparse: nothing active reads 0", s, 8, 8, function() return 0 end)
check("reads activate nothing", #s:active(), 0)
s[3][5] = 7                                       -- activates block (1, 2): 4 cells
check("a write activates its block", #s:active(), 4)
s:fill(1)                                         -- only the active cells
local function in_block(i, j) return i // 2 == 1 and j // 2 == 2 end
same("sparse fill writes the active cells", s, 8, 8, function(i, j) return in_block(i, j) and 1 or 0 end)
check("fill activates nothing", #s:active(), 4)
local ts = {}
for i = 0, 7 do ts[i] = {} for j = 0, 7 do ts[i][j] = i * 8 + j end end
s:from_table(ts)                                  -- activates every block
check("from_table activates", #s:active(), 64)
same("sparse from_table", s, 8, 8, function(i, j) return i * 8 + j end)
same("the sparse neighbour stays 0", s2, 8, 8, function() return 0 end)
s2[7][7] = 2.5
local ssum = lt.field(lt.f64, {})
lt.kernel(function()
  for i, j in s do lt.atomic_add(ssum.value, s[i][j] + s2[i][j]) end
end)()
check("a kernel reads the sparse writes", ssum.value, 63 * 64 / 2 + 2.5)

-- a bitmasked level: to_table of a partly active field
local bm = lt.field(lt.u8)
lt.root:bitmasked(lt.i, 16):place(bm)
bm[3], bm[9] = 300, 4                             -- 300 wraps to 44
local tbm = bm:to_table()
for i = 0, 15 do check("bitmasked to_table " .. i, tbm[i + 1], i == 3 and 44 or i == 9 and 4 or 0) end

-- lt.append in Lua scope, read by to_table, single reads and a kernel
local l = lt.field(lt.i16)
lt.root:dense(lt.i, 3):dynamic(lt.j, 8):place(l)
local model = { [0] = {}, {}, {} }
for k = 1, 11 do
  local row, v = k % 3, k * 1000 - 5000
  check("append index", lt.append(l, row, v), #model[row])
  model[row][#model[row] + 1] = wrap(v, 16, true)
end
local tl = l:to_table()
for i = 0, 2 do
  for j = 0, 7 do
    check(("append: to_table[%d][%d]"):format(i, j), tl[i + 1][j + 1], model[i][j + 1] or 0)
    check(("append: l[%d][%d]"):format(i, j), l[i][j], model[i][j + 1] or 0)
  end
end
local lsum = lt.field(lt.i64, {})
lt.kernel(function() for i, j in l do lt.atomic_add(lsum.value, l[i][j] * (i + 1)) end end)()
local lwant = 0
for i = 0, 2 do for _, v in ipairs(model[i]) do lwant = lwant + v * (i + 1) end end
check("a kernel reads the appended values", lsum.value, lwant)

-- ---- lt.tree instances ------------------------------------------------------------------

local G = lt.tree { fields = { p = lt.f32, q = lt.i32 }, lt.dense(lt.ij, { 3, 4 }) { "p", "q" } }
local S = lt.tree { fields = { w = lt.i32 }, lt.pointer(lt.i, 4) { lt.dense(lt.i, 4) { "w" } } }
local g1, g2 = G:instantiate(), G:instantiate()
local s1, sb = S:instantiate(), S:instantiate()
local tp = {}
for i = 1, 3 do tp[i] = {} for j = 1, 4 do tp[i][j] = i - j * 0.5 end end
g1.p:from_table(tp)
g2.p:fill(5)
g2.q[2][3] = 9
g1.q:fill(-1)
same("instance 1: p from a table", g1.p, 3, 4, function(i, j) return (i + 1) - (j + 1) * 0.5 end)
same("instance 1: q filled", g1.q, 3, 4, function() return -1 end)
same("instance 2: p filled", g2.p, 3, 4, function() return 5 end)
same("instance 2: q one write", g2.q, 3, 4, function(i, j) return (i == 2 and j == 3) and 9 or 0 end)
s1.w:from_table({ [0] = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 })
sb.w[6] = 60
sb.w:fill(3)                                      -- the active block 4..7 only
local tw1, tw2 = s1.w:to_table(), sb.w:to_table()
for i = 0, 15 do
  check("sparse instance 1 [" .. i .. "]", tw1[i + 1], i)
  check("sparse instance 2 [" .. i .. "]", tw2[i + 1], (i >= 4 and i < 8) and 3 or 0)
end
local gsum = lt.field(lt.f64, {})
local kg = lt.kernel(function(g, t)
  for i, j in lt.ndrange(3, 4) do lt.atomic_add(gsum.value, g.p[i][j] * 10 + g.q[i][j]) end
  for i in t.w do lt.atomic_add(gsum.value, t.w[i]) end
end, { g = G, t = S })
kg(g1, s1)
local gwant = 15 * 16 / 2
for i = 1, 3 do for j = 1, 4 do gwant = gwant + (i - j * 0.5) * 10 - 1 end end
check("a kernel reads instance 1", gsum.value, gwant)
gsum.value = 0
kg(g2, sb)
check("a kernel reads instance 2", gsum.value, 5 * 10 * 12 + 9 + 4 * 3)

-- ---- ndarrays -----------------------------------------------------------------------------

local nd_ints = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64" }
for _, name in ipairs(nd_ints) do
  local spec = ints[name]
  local arr = lt.ndarray(lt[name], { 2, 7 })
  for k, v in ipairs(vals) do
    local i, j = (k - 1) // 7, (k - 1) % 7
    arr[i][j] = v
    check("ndarray " .. name .. " write/read " .. v, arr[i][j], wrap(v, spec[1], spec[2]))
  end
  local rows = { {}, {} }
  for k = 1, 14 do rows[(k - 1) // 7 + 1][(k - 1) % 7 + 1] = k * 37 - 200 end
  arr:from_table(rows)
  local back = arr:to_table()
  for k = 1, 14 do
    check("ndarray " .. name .. " from_table/to_table " .. k, back[(k - 1) // 7 + 1][(k - 1) % 7 + 1],
      wrap(k * 37 - 200, spec[1], spec[2]))
  end
  arr:fill(-9)
  check("ndarray " .. name .. " fill", arr[1][6], wrap(-9, spec[1], spec[2]))
end
local af = lt.ndarray(lt.f32, #fvals)
local ad = lt.ndarray(lt.f64, #fvals)
for k, v in ipairs(fvals) do af[k - 1], ad[k - 1] = v, v end
for k, v in ipairs(fvals) do
  check("ndarray f32 " .. v, af[k - 1], f32(v))
  check("ndarray f64 " .. v, ad[k - 1], v)
end

-- launches are synchronous: Lua writes reach the next launch, a kernel's
-- writes are there for Lua reads when it returns
local src, dst = lt.ndarray(lt.i32, { 5, 3 }), lt.ndarray(lt.f64, { 5, 3 })
for i = 0, 4 do for j = 0, 2 do src[i][j] = i * 3 + j end end
local twice = lt.kernel(function(x, y)
  for i, j in lt.ndrange(x.shape[1], x.shape[2]) do
    y[i][j] = x[i][j] * 2.5
    x[i][j] = x[i][j] + 1
  end
end)
twice(src, dst)
local dt = dst:to_table()
for i = 0, 4 do
  for j = 0, 2 do
    check(("kernel wrote dst[%d][%d]"):format(i, j), dt[i + 1][j + 1], (i * 3 + j) * 2.5)
    check(("kernel updated src[%d][%d]"):format(i, j), src[i][j], i * 3 + j + 1)
  end
end
src:fill(4)
twice(src, dst)
check("after fill, the kernel saw it", dst[4][2], 10.0)
check("and wrote back", src[0][0], 5)

T.finish("Lua-scope memory")
print("lua_scope_memory: ok")
