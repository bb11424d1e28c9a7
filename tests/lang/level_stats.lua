-- Per-level pool counters: level:stats() and lt.stats().snodes' allocated,
-- bytes and reserved, checked against a plain-Lua model of which blocks and
-- chunks are held, through activation, deactivation + GC and reuse.
local lt = require "lattice"
lt.init {}

local function check(what, got, want)
  if got ~= want then error(what .. ": got " .. tostring(got) .. ", want " .. tostring(want), 2) end
end
local function check_error(what, f, text)
  local ok, msg = pcall(f)
  if ok then error(what .. ": no error (wanted '" .. text .. "')", 2) end
  if not tostring(msg):find(text, 1, true) then error(what .. ": wrong message: " .. tostring(msg), 2) end
end

-- ---- pointer blocks ---------------------------------------------------------------
local NB, B = 32, 4
local x = lt.field(lt.f32, nil, "x")
local blocks = lt.root:pointer(lt.i, NB)
blocks:dense(lt.i, B):place(x)
local s0 = blocks:stats()
check("kind", s0.kind, "pointer")
check("nothing allocated", s0.allocated, 0)
check("no bytes", s0.bytes, 0)

local held, ever = {}, 0          -- the model: blocks held now, blocks taken from the pool ever
local function count(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end
local function expect(what)
  local s = blocks:stats()
  check(what .. ": allocated", s.allocated, count(held))
  check(what .. ": active", s.active, count(held))
  check(what .. ": reserved", s.reserved, ever)
  check(what .. ": bytes", s.bytes, s.allocated * B * 4)   -- a block is 4 f32
  -- lt.stats() has the same entry
  for _, n in ipairs(lt.stats().snodes) do
    if n.id == blocks.id then
      check(what .. ": lt.stats allocated", n.allocated, s.allocated)
      check(what .. ": lt.stats bytes", n.bytes, s.bytes)
    end
  end
end

local touch = lt.kernel(function(lo, hi, step)
  for k = lo, hi - 1 do
    if k % step == 0 then x[k * B] = k end
  end
end, { lo = lt.i32, hi = lt.i32, step = lt.i32 })
local drop = lt.kernel(function(lo, hi, step)
  for k = lo, hi - 1 do
    if k % step == 0 then lt.deactivate(x, k * B) end
  end
end, { lo = lt.i32, hi = lt.i32, step = lt.i32 })

local function model_touch(lo, hi, step)
  local fresh = 0
  for k = lo, hi - 1 do if k % step == 0 and not held[k] then held[k] = true; fresh = fresh + 1 end end
  -- cells come from the free list first, then from the pool
  local free = ever - (count(held) - fresh)
  if fresh > free then ever = ever + fresh - free end
end
local function model_drop(lo, hi, step)
  for k = lo, hi - 1 do if k % step == 0 then held[k] = nil end end
end

touch(0, 20, 1); model_touch(0, 20, 1); expect("20 blocks")
drop(0, 20, 2); model_drop(0, 20, 2); expect("10 dropped")
touch(20, 32, 3); model_touch(20, 32, 3); expect("4 more, from the free list")
touch(0, 32, 1); model_touch(0, 32, 1); expect("all 32")
lt.deactivate(x, 5 * B); model_drop(5, 6, 1); expect("one dropped in Lua scope")
x:deactivate_all(); held = {}; expect("deactivate_all")
x[7] = 1; model_touch(1, 2, 1); expect("a Lua-scope write")

-- ---- dynamic chunks ------------------------------------------------------------------
local CH = 8
local l = lt.field(lt.i32, nil, "l")
local lists = lt.root:dense(lt.i, 4):dynamic(lt.j, 100, { chunk = CH })
lists:place(l)
local push = lt.kernel(function(i, n) for k = 0, n - 1 do lt.append(l, i, k) end end, { i = lt.i32, n = lt.i32 })
local lens = { [0] = 0, 0, 0, 0 }
local dyn_ever = 0
local function chunks()
  local n = 0
  for i = 0, 3 do n = n + (lens[i] + CH - 1) // CH end
  return n
end
local function expect_dyn(what)
  local s = lists:stats()
  check(what .. ": kind", s.kind, "dynamic")
  check(what .. ": chunks allocated", s.allocated, chunks())
  check(what .. ": elements active", s.active, lens[0] + lens[1] + lens[2] + lens[3])
  if chunks() > dyn_ever then dyn_ever = chunks() end
  check(what .. ": reserved", s.reserved, dyn_ever)
  check(what .. ": bytes", s.bytes, s.allocated * (16 + CH * 4))   -- a chunk: next, its number, CH cells
end
push(0, 20); lens[0] = 20; expect_dyn("20 elements")
push(1, 8); lens[1] = 8; expect_dyn("one full chunk")
push(2, 1); lens[2] = 1; expect_dyn("one element")
lt.kernel(function() lt.deactivate(l, 0) end)(); lens[0] = 0; expect_dyn("a list emptied")
push(3, 17); lens[3] = 17; expect_dyn("chunks reused")
lt.append(l, 2, 5); lens[2] = 2; expect_dyn("a Lua-scope append")

-- ---- dense levels, printing, errors ------------------------------------------------------
local d = lt.root:dense(lt.i, 8)
d:place(lt.field(lt.f32, nil, "dd"))
local ds = d:stats()
check("dense kind", ds.kind, "dense")
check("dense allocated", ds.allocated, 0)
lt.print_stats()
check_error("stats on lt.root", function() lt.root:stats() end, "lt.root is not a level")
print("level_stats: ok")
