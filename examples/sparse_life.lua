-- sparse_life.lua -- Conway's Game of Life on a sparse grid: a pointer level
-- of 16x16 dense blocks over a torus. Only blocks that hold live cells (and,
-- for one step, the blocks next to them) are active; memory and work follow
-- the pattern as it moves -- an acorn growing in the middle, gliders flying
-- away from it.
--
--   lattice examples/sparse_life.lua [--out DIR] [--test] [--window] [--frames N] [--quiet]
--
-- Writes DIR/sparse_life_<step>.png (default DIR: ./out) and prints their
-- paths. In the pictures live cells are white, active blocks blue (their
-- border cells lighter, so each block shows as a tile) and inactive memory
-- black. --frames N: N pictures (EVERY steps apart). --window: the cells
-- in a window, 2 steps a frame (white live, grey active blocks; space
-- pauses, r restarts, s saves a PNG, q quits).
-- --test: a small torus and few steps; every cell and the set of active
-- blocks are checked against the same rules in plain Lua after every step.
local lt = require "lattice"
local image = require "lattice.image"

local example = require "lattice.example"
local opts = example.options("examples/sparse_life.lua")
local out, test = opts.out, opts.test

local B = 16                           -- cells along each axis of a block
local N, STEPS, EVERY = 512, 2000, 250 -- torus size, steps, steps between pictures
local SCALE = 2                        -- pixels per cell along each axis
if test then N, STEPS, EVERY, SCALE = 96, 48, 16, 1 end
if opts.frames then STEPS = opts.frames * EVERY end
local NBK = N // B                     -- blocks along each axis

lt.init {}
local cur, nxt = lt.field(lt.i32, nil, "cur"), lt.field(lt.i32, nil, "nxt")
local blocks = lt.root:pointer(lt.ij, NBK)
blocks:dense(lt.ij, B):place(cur, nxt)
local live = lt.field(lt.i32, { NBK, NBK }, "live")   -- live cells per block, this step
local shown = lt.field(lt.i32, { N, N }, "shown")     -- what the picture draws

-- ---- the pattern ------------------------------------------------------------------
-- cells as {x, y} offsets; a glider is mirrored to fly towards (dx, dy)
local ACORN = { { 1, 0 }, { 3, 1 }, { 0, 2 }, { 1, 2 }, { 4, 2 }, { 5, 2 }, { 6, 2 } }
local GLIDER = { { 1, 0 }, { 2, 1 }, { 0, 2 }, { 1, 2 }, { 2, 2 } }   -- flies towards (+1, +1)
local BLINKER = { { 0, 0 }, { 1, 0 }, { 2, 0 } }

local function stamp(cells, shape, x0, y0, dx, dy)
  for _, c in ipairs(shape) do
    local x, y = c[1], c[2]
    if dx and dx < 0 then x = 2 - x end
    if dy and dy < 0 then y = 2 - y end
    cells[#cells + 1] = { (x0 + x) % N, (y0 + y) % N }
  end
end

local start = {}
if test then
  stamp(start, GLIDER, 5, 5, 1, 1)
  stamp(start, GLIDER, 60, 70, -1, -1)
  stamp(start, BLINKER, 40, 20)
else
  local m = N // 2
  stamp(start, ACORN, m - 3, m - 1)
  for _, d in ipairs { { 1, 1 }, { -1, 1 }, { 1, -1 }, { -1, -1 } } do
    stamp(start, GLIDER, m + d[1] * 60, m + d[2] * 60, d[1], d[2])
  end
end
-- Lua-scope writes activate their blocks, like writes in kernels
for _, c in ipairs(start) do cur[c[1]][c[2]] = 1 end

-- ---- kernels ------------------------------------------------------------------------
local function wrap(x) return (x + N) % N end

-- Births can happen just outside an active block, so before a step every live
-- cell on a block's border activates the blocks around it.
local function make_grow(src)
  return lt.kernel(function()
    for i, j in src do
      if src[i][j] == 1 and (i % B == 0 or i % B == B - 1 or j % B == 0 or j % B == B - 1) then
        for di in lt.static(-1, 1) do
          for dj in lt.static(-1, 1) do lt.activate(blocks, wrap(i + di), wrap(j + dj)) end
        end
      end
    end
  end)
end

-- One generation over the active cells; inactive neighbours read 0. Counts
-- the live cells of each block for prune.
local function make_step(src, dst)
  return lt.kernel(function()
    for i, j in src do
      local n = 0
      for di in lt.static(-1, 1) do
        for dj in lt.static(-1, 1) do
          if di ~= 0 or dj ~= 0 then n = n + src[wrap(i + di)][wrap(j + dj)] end
        end
      end
      local v = 0
      if n == 3 or (n == 2 and src[i][j] == 1) then v = 1 end
      dst[i][j] = v
      if v == 1 then lt.atomic_add(live[i // B][j // B], 1) end
    end
  end)
end

-- Blocks left without live cells give their memory back.
local prune = lt.kernel(function()
  for bi, bj in lt.ndrange(NBK, NBK) do
    if live[bi][bj] == 0 and lt.is_active(blocks, bi * B, bj * B) then
      lt.deactivate(blocks, bi * B, bj * B)
    end
    live[bi][bj] = 0
  end
end)

-- 1 for a live cell, + 2 where its block is active
local function make_show(src)
  return lt.kernel(function()
    for i, j in lt.ndrange(N, N) do
      local s = src[i][j]
      if lt.is_active(blocks, i, j) then s = s + 2 end
      shown[i][j] = s
    end
  end)
end

local grow = { [cur] = make_grow(cur), [nxt] = make_grow(nxt) }
local step = { [cur] = make_step(cur, nxt), [nxt] = make_step(nxt, cur) }
local show = { [cur] = make_show(cur), [nxt] = make_show(nxt) }

local function active_blocks()
  for _, s in ipairs(lt.stats().snodes) do
    if s.kind == "pointer" then return s.active end
  end
  error("lt.stats() lists no pointer SNode")
end

-- ---- plain-Lua reference (test only): a full N x N torus ----------------------------
local ref
local function ref_new()
  local g = {}
  for x = 0, N - 1 do g[x] = {} for y = 0, N - 1 do g[x][y] = 0 end end
  return g
end
local function ref_step(g)
  local h = ref_new()
  for x = 0, N - 1 do
    for y = 0, N - 1 do
      local n = 0
      for dx = -1, 1 do
        for dy = -1, 1 do
          if dx ~= 0 or dy ~= 0 then n = n + g[(x + dx) % N][(y + dy) % N] end
        end
      end
      h[x][y] = (n == 3 or (n == 2 and g[x][y] == 1)) and 1 or 0
    end
  end
  return h
end
if test then
  ref = ref_new()
  for _, c in ipairs(start) do ref[c[1]][c[2]] = 1 end
end

-- every cell, and the active blocks: exactly those with a live cell
local function check(stepno, t)
  local want_blocks, live_blocks = 0, {}
  for x = 0, N - 1 do
    for y = 0, N - 1 do
      if ref[x][y] == 1 then
        local k = x // B * NBK + y // B
        if not live_blocks[k] then live_blocks[k] = true; want_blocks = want_blocks + 1 end
      end
    end
  end
  for x = 0, N - 1 do
    for y = 0, N - 1 do
      local got, want = t[x + 1][y + 1], ref[x][y]
      if live_blocks[x // B * NBK + y // B] then want = want + 2 end
      if got ~= want then
        error(("sparse_life: step %d cell (%d,%d): kernel %d, plain Lua %d (1 = live, +2 = block active)")
          :format(stepno, x, y, got, want))
      end
    end
  end
  local got = active_blocks()
  if got ~= want_blocks then
    error(("sparse_life: step %d: lt.stats() counts %d active blocks, plain Lua %d"):format(stepno, got, want_blocks))
  end
  return want_blocks
end

-- ---- pictures -----------------------------------------------------------------------
local DEAD, LIVE = { 0, 0, 0 }, { 1, 1, 1 }
local BLOCK, EDGE = { 0.10, 0.16, 0.42 }, { 0.20, 0.32, 0.72 }
local function picture(path, t)
  local px = {}
  for x = 0, N * SCALE - 1 do
    local col, cx = {}, x // SCALE
    local tc = t[cx + 1]
    for y = 0, N * SCALE - 1 do
      local cy = y // SCALE
      local s = tc[cy + 1]
      local edge = cx % B == 0 or cx % B == B - 1 or cy % B == 0 or cy % B == B - 1
      col[y] = (s % 2 == 1) and LIVE or (s >= 2 and (edge and EDGE or BLOCK) or DEAD)
    end
    px[x] = col
  end
  image.write_png(path, px)
  return path
end

-- ---- run ----------------------------------------------------------------------------
if opts.window then
  local clear_all = lt.kernel(function()
    for i, j in lt.ndrange(N, N) do
      if lt.is_active(blocks, i, j) then lt.deactivate(blocks, i, j) end
    end
  end)
  local src = cur
  example.animate(opts, "sparse_life", { N * SCALE, N * SCALE }, STEPS // 2, {
    reset = function()
      clear_all()
      for _, c in ipairs(start) do cur[c[1]][c[2]] = 1 end
      src = cur
    end,
    advance = function()
      for _ = 1, 2 do
        grow[src]()
        step[src]()
        prune()
        src = (src == cur) and nxt or cur
      end
    end,
    draw = function(win, frame)
      show[src]()
      win:image(shown, { min = 0, max = 3, colormap = "gray" })
      win:text(0.02, 0.95, ("step %d  %d active blocks  %.0f fps"):format(2 * frame, active_blocks(), win.fps),
        { color = 0x66aaff })
    end })
  return
end

local progress = example.progress(opts, "sparse_life", STEPS // EVERY, EVERY)
image.mkdirs(out)
local src, fewest, most = cur, NBK * NBK, 0
show[src]()
progress:print(picture(("%s/sparse_life_%05d.png"):format(out, 0), shown:to_table()))
for s = 1, STEPS do
  grow[src]()
  step[src]()
  prune()
  src = (src == cur) and nxt or cur
  local n = active_blocks()
  fewest, most = math.min(fewest, n), math.max(most, n)
  if test then
    ref = ref_step(ref)
    show[src]()
    check(s, shown:to_table())
  end
  if s % EVERY == 0 then
    if not test then show[src]() end
    progress:print(picture(("%s/sparse_life_%05d.png"):format(out, s), shown:to_table()))
    progress(s // EVERY)
  end
end
progress:done()
if test then
  -- the point of the example: most of the torus never had memory
  assert(most < NBK * NBK // 2, ("sparse_life: %d of %d blocks active at once"):format(most, NBK * NBK))
  print(("sparse_life: %d steps match plain Lua, cell by cell and block by block"):format(STEPS))
end
print(("sparse_life: %d to %d of %d blocks active"):format(fewest, most, NBK * NBK))
