-- Appends that the CPU gathers per list in a table of the thread and hands
-- over a batch at a time (src/jit/llvm/cg_append.c), checked against plain-Lua
-- models: bucket fills from four threads into few lists and into more lists
-- than a table has entries (so entries are taken from one list for another),
-- values of 1, 2, 4 and 8 bytes, chunks that a batch straddles, lists that
-- fill up (each ends exactly full, every value in it appended to it, once),
-- the level's count of elements, one thread's order, and the kernels that
-- must not be buffered (they read the index, a length or an element, or
-- deactivate) giving what unbuffered appends give. Run again with
-- LT_APPEND_TABLES=off (tests/tests.cmake): the same code then takes its
-- plain appends. On a GPU nothing is buffered and the same checks hold.
local lt = require "lattice"
lt.init { threads = 4 }
-- on a GPU (and its mock, which runs one GPU thread after another) smaller
local cpu = require("lattice.state").opts.arch == "cpu"
local function size(n) return cpu and n or n // 10 end

package.path = "lib/?.lua;" .. package.path
local T = require "check"
local check = T.check

local function fmix32(h)
  h = h ~ (h >> 16)
  h = (h * 0x85ebca6b) & 0xffffffff
  h = h ~ (h >> 13)
  h = (h * 0xc2b2ae35) & 0xffffffff
  return h ~ (h >> 16)
end

-- the elements counted in the dynamic level of field f (lt.stats)
local function level_active(f)
  for _, sn in ipairs(lt.stats().snodes) do
    if sn.id == f:parent().id then return sn.active end
  end
end

-- The elements of list `at` (a table of indices) of field f, sorted.
local function sorted_list(f, at)
  local n = lt.length(f, table.unpack(at))
  local got = {}
  for k = 0, n - 1 do
    local e = f
    for _, i in ipairs(at) do e = e[i] end
    got[#got + 1] = e[k]
  end
  table.sort(got)
  return got, n
end

local function same_list(what, got, want)
  if #got ~= #want then
    T.fail(("%s: %d elements, want %d"):format(what, #got, #want))
    return
  end
  for k = 1, #want do
    if got[k] ~= want[k] then
      T.fail(("%s: element %d is %s, want %s"):format(what, k, tostring(got[k]), tostring(want[k])))
      return
    end
  end
end

-- ---- a bucket fill into 256 lists, i32 ids, four threads -------------------------------
do
  local NP, G = size(50000), 16
  local l = lt.field(lt.i32)
  local cells = lt.root:pointer(lt.ij, G)
  cells:dynamic(lt.k, 4096, { chunk = 64 }):place(l)
  local cx, cy = lt.field(lt.i32, NP), lt.field(lt.i32, NP)
  local xs, ys, model = {}, {}, {}
  for p = 0, NP - 1 do
    xs[p], ys[p] = fmix32(2 * p + 1) % G, fmix32(2 * p + 2) % G
    local key = xs[p] * G + ys[p]
    model[key] = model[key] or {}
    table.insert(model[key], p)
  end
  cx:from_table(xs)
  cy:from_table(ys)
  local fill = lt.kernel(function()
    for p in lt.ndrange(NP) do lt.append(l, cx[p], cy[p], p) end
  end)
  local sums = lt.field(lt.i64, { G, G })
  local sum = lt.kernel(function()
    for i, j, k in l do lt.atomic_add(sums[i][j], lt.i64(l[i][j][k])) end
  end)
  for round = 1, cpu and 3 or 1 do
    fill()
    check("bucket fill: elements counted, round " .. round, level_active(l), NP)
    for i = 0, G - 1 do
      for j = 0, G - 1 do
        local got = sorted_list(l, { i, j })
        same_list(("bucket fill, round %d, list (%d, %d)"):format(round, i, j), got, model[i * G + j] or {})
      end
    end
    sums:fill(0)
    sum()
    for i = 0, G - 1 do
      for j = 0, G - 1 do
        local want = 0
        for _, p in ipairs(model[i * G + j] or {}) do want = want + p end
        check(("bucket fill: struct-for sum of list (%d, %d)"):format(i, j), sums[i][j], want)
      end
    end
    cells:deactivate_all()
  end
end

-- ---- 4096 lists (more than a table's 1024 entries), f64 values, chunks of 3 -------------
do
  local NP, G = size(60000), 64
  local l = lt.field(lt.f64)
  lt.root:pointer(lt.ij, G):dynamic(lt.k, 200, { chunk = 3 }):place(l)
  local fill = lt.kernel(function()
    for p in lt.ndrange(NP) do
      local h = (p * 2654435761) % 4096
      lt.append(l, h // G, h % G, p + 0.25)
    end
  end)
  fill()
  local model = {}
  for p = 0, NP - 1 do
    local h = (p * 2654435761) % 4096
    model[h] = model[h] or {}
    table.insert(model[h], p + 0.25)
  end
  for h = 0, 4095 do
    local got = sorted_list(l, { h // G, h % G })
    same_list(("4096 lists, f64, list %d"):format(h), got, model[h] or {})
  end
  check("4096 lists: elements counted", level_active(l), NP)
end

-- ---- lists that fill up: i16 values, capacity 37, chunks of 5 ----------------------------
do
  local NP, L, CAP = 5000, 16, 37
  local l = lt.field(lt.i16)
  local lists = lt.root:pointer(lt.i, L)
  lists:dynamic(lt.j, CAP, { chunk = 5 }):place(l)
  local fill = lt.kernel(function()
    for p in lt.ndrange(NP) do lt.append(l, p % L, lt.i16(p)) end
  end)
  for round = 1, 2 do
    fill()
    for i = 0, L - 1 do
      local got, n = sorted_list(l, { i })
      check(("full lists, round %d: length of list %d"):format(round, i), n, CAP)
      for k = 1, #got do
        if got[k] % L ~= i then T.fail(("full list %d holds %d, appended to list %d"):format(i, got[k], got[k] % L)) end
        if k > 1 and got[k] == got[k - 1] then T.fail(("full list %d holds %d twice"):format(i, got[k])) end
      end
    end
    check("full lists: elements counted", level_active(l), L * CAP)
    lists:deactivate_all()
  end
end

-- ---- i8 values under a dense level, chunks of 7 -----------------------------------------
do
  local NP = 1000
  local l = lt.field(lt.i8)
  lt.root:dense(lt.i, 4):dynamic(lt.j, 300, { chunk = 7 }):place(l)
  lt.kernel(function()
    for p in lt.ndrange(NP) do lt.append(l, p % 4, lt.i8(p % 100)) end
  end)()
  for i = 0, 3 do
    local want = {}
    for p = i, NP - 1, 4 do want[#want + 1] = p % 100 end
    table.sort(want)
    same_list("i8 list " .. i, (sorted_list(l, { i })), want)
  end
end

-- ---- one thread appends in order ---------------------------------------------------------
do
  local N = 1000
  local l = lt.field(lt.i32)
  lt.root:dense(lt.i, 3):dynamic(lt.j, N, { chunk = 16 }):place(l)
  lt.kernel(function()
    for _ = 0, 0 do
      for p = 0, N - 1 do lt.append(l, p % 3, p) end
    end
  end)()
  for i = 0, 2 do
    local n, bad = lt.length(l, i), nil
    for k = 0, n - 1 do
      if l[i][k] ~= 3 * k + i and not bad then bad = k end
    end
    check("one thread: length of list " .. i, n, (N - i + 2) // 3)
    if bad then T.fail(("one thread: list %d index %d holds %d, want %d"):format(i, bad, l[i][bad], 3 * bad + i)) end
  end
end

-- ---- kernels that must not be buffered -----------------------------------------------------
-- the first p in [0, n) where got(p) ~= want(p), as one failure
local function each(what, n, got, want)
  for p = 0, n - 1 do
    if got(p) ~= want(p) then
      T.fail(("%s: at %d got %s, want %s"):format(what, p, tostring(got(p)), tostring(want(p))))
      return
    end
  end
end

do
  local N = size(2000)
  local l = lt.field(lt.i32)
  local lists = lt.root:pointer(lt.i, 4)
  lists:dynamic(lt.j, N, { chunk = 8 }):place(l)
  local took = lt.field(lt.i32, N)
  local seen = lt.field(lt.i32, N)

  -- the index an append gives: the element sits there
  lt.kernel(function()
    for p in lt.ndrange(N) do took[p] = lt.append(l, p % 4, p) end
  end)()
  local t = took:to_table()
  each("index read: the element at the index particle p got", N, function(p) return l[p % 4][t[p + 1]] end,
       function(p) return p end)
  lists:deactivate_all()

  -- a length read after the append, in one thread, counts it
  lt.kernel(function()
    for _ = 0, 0 do
      for p = 0, N - 1 do
        lt.append(l, 1, p)
        seen[p] = lt.length(l, 1)
      end
    end
  end)()
  local s = seen:to_table()
  each("length read: the length after append p", N, function(p) return s[p + 1] end, function(p) return p + 1 end)
  lists:deactivate_all()

  -- an element read after the append, in one thread, is the value appended
  lt.kernel(function()
    for _ = 0, 0 do
      for p = 0, N - 1 do
        lt.append(l, 2, 7 * p)
        seen[p] = l[2][p]
      end
    end
  end)()
  s = seen:to_table()
  each("element read: l[2][p] read after its append", N, function(p) return s[p + 1] end,
       function(p) return 7 * p end)
  lists:deactivate_all()

  -- a list cleared between appends keeps only the later ones
  lt.kernel(function()
    for _ = 0, 0 do
      for p = 0, N - 1 do
        lt.append(l, 3, p)
        if p == 5 then lt.deactivate(l, 3) end
      end
    end
  end)()
  check("cleared between appends: length", lt.length(l, 3), N - 6)
  check("cleared between appends: first element", l[3][0], 6)
  check("cleared between appends: last element", l[3][N - 7], N - 1)
  lists:deactivate_all()
end

-- ---- appends to two levels in one kernel (one buffered, one not) --------------------------
do
  local N = size(3000)
  local a, b = lt.field(lt.i32), lt.field(lt.f32)
  lt.root:pointer(lt.i, 8):dynamic(lt.j, N, { chunk = 32 }):place(a)
  lt.root:pointer(lt.i, 5):dynamic(lt.j, N, { chunk = 32 }):place(b)
  lt.kernel(function()
    for p in lt.ndrange(N) do
      lt.append(a, p % 8, p)
      lt.append(b, p % 5, p * 0.5)
    end
  end)()
  for i = 0, 7 do
    local want = {}
    for p = i, N - 1, 8 do want[#want + 1] = p end
    same_list("two levels, list a" .. i, (sorted_list(a, { i })), want)
  end
  for i = 0, 4 do
    local want = {}
    for p = i, N - 1, 5 do want[#want + 1] = p * 0.5 end
    same_list("two levels, list b" .. i, (sorted_list(b, { i })), want)
  end
end

T.finish("dynamic_buffered")
