-- lattice.example -- the command line shared by the scripts in examples/:
--   lattice examples/NAME.lua [--out DIR] [--test] [--bench FRAMES] [--threads T] [--scale K] [--fast-math]
--                             [--window] [--frames N] [--quiet]
-- options(script) reads the global `arg` and returns { out = DIR, test = bool,
-- bench = FRAMES or nil, threads = T or nil, scale = K or nil, fast_math =
-- true or nil, window = true or nil, frames = N or nil, quiet = true or nil }
-- (out defaults to "out"; --scale: a larger problem, for examples that
-- support it); an unknown argument is an error naming the usage. --bench is
-- for the examples bench/run.sh times (they skip their images then);
-- --threads and --fast-math go to lt.init (fast_math = true,
-- docs/arithmetic.md) in the examples that take them. --window: draw the
-- state in a lattice.gui window every frame (window() below); --frames N:
-- that many frames (pictures, or iterations) instead of the example's own
-- count; --quiet: no progress lines.
-- progress(opts, name, total[, per]) -> p: p(k) after frame k of total (per:
-- steps in a frame, for the rate); on a terminal one line rewritten in place
-- (frame k/N, steps/s, ETA), otherwise a plain line every 10%; nothing with
-- --quiet, or with --test when stdout is not a terminal (the suite's logs).
-- p:print(...) prints a line without breaking the progress line; p:done().
-- window(opts, name, size, frames) -> view (docs/gui.md, lattice.gui): with
-- --window, a window of size {w, h}; view:running() says whether to go on
-- (false once closed, q or Escape, or when the window is headless --
-- LT_GUI=headless, no display, or --test -- after `frames` frames, --frames
-- N, or 4 with --test);
-- view.paused (space), view:restarted() (r: true once), view:show() draws
-- the canvas (s saves it as DIR/NAME_save_00001.png, ...).
-- animate(opts, name, size, frames, {reset =, advance =, draw =}): the
-- window's loop most examples need: r calls reset() and counts frames from
-- 0 again, a frame not paused calls advance() and counts one, every frame
-- calls draw(win, frame) and shows it; closes the window at the end.
local M = {}

local function count(script, a, what)
  local n = math.tointeger(tonumber(arg[a]))
  if not n or n < 0 then
    error(("usage: lattice %s: %s needs a whole number, got '%s'"):format(script, what, tostring(arg[a])), 3)
  end
  return n
end

function M.options(script)
  local opts = { out = "out", test = false }
  local a = 1
  while arg and arg[a] do
    if arg[a] == "--test" then
      opts.test = true
    elseif arg[a] == "--out" and arg[a + 1] then
      opts.out = arg[a + 1]
      a = a + 1
    elseif arg[a] == "--bench" then
      opts.bench = count(script, a + 1, "--bench")
      a = a + 1
    elseif arg[a] == "--threads" then
      opts.threads = count(script, a + 1, "--threads")
      a = a + 1
    elseif arg[a] == "--fast-math" then
      opts.fast_math = true
    elseif arg[a] == "--window" then
      opts.window = true
    elseif arg[a] == "--quiet" then
      opts.quiet = true
    elseif arg[a] == "--frames" then
      opts.frames = count(script, a + 1, "--frames")
      if opts.frames < 1 then error(("usage: lattice %s: --frames must be at least 1"):format(script), 2) end
      a = a + 1
    elseif arg[a] == "--scale" then
      opts.scale = count(script, a + 1, "--scale")
      if opts.scale < 1 then error(("usage: lattice %s: --scale must be at least 1"):format(script), 2) end
      a = a + 1
    else
      error(("usage: lattice %s [--out DIR] [--test] [--bench FRAMES] [--threads T] [--scale K] [--fast-math] "
        .. "[--window] [--frames N] [--quiet]  (unknown argument '%s')")
        :format(script, arg[a]), 2)
    end
    a = a + 1
  end
  return opts
end

function M.lib(name)
  local dir = (arg and arg[0] and arg[0]:match("^(.*)/")) or "."
  local path = dir .. "/lib/" .. name .. ".lua"
  local chunk, err = loadfile(path)
  if not chunk then error("cannot load the example library " .. path .. ": " .. err, 2) end
  return chunk()
end

function M.movie(dir, name)
  if not os.execute("command -v ffmpeg >/dev/null 2>&1") then return nil end
  local movie = ("%s/%s.mp4"):format(dir, name)
  local cmd = "ffmpeg -y -loglevel error -framerate 30 -i '%s/%s_%%05d.png' -pix_fmt yuv420p '%s'"
  return os.execute(cmd:format(dir, name, movie)) and movie or nil
end

-- ---- progress ------------------------------------------------------------------------

local function clock() return require("lattice.core").now() end

local function duration(s)
  s = math.floor(s + 0.5)
  if s >= 3600 then return ("%d:%02d:%02d"):format(s // 3600, s % 3600 // 60, s % 60) end
  return ("%d:%02d"):format(s // 60, s % 60)
end

local Progress = {}
Progress.__index = Progress

-- how (tests): { tty = bool, out = a file (io.stdout) }
function M.progress(opts, name, total, per, how)
  how = how or {}
  local out = how.out or io.stdout
  local tty = how.tty
  if tty == nil then tty = require("lattice.core").isatty(1) end
  local quiet = opts.quiet or (opts.test and not tty)
  return setmetatable({ name = name, total = total, per = per or 1, out = out, tty = tty, quiet = quiet,
    t0 = clock(), next_pct = 10, line = false }, Progress)
end

function Progress:__call(k)
  if self.quiet then return end
  local dt = clock() - self.t0
  local rate = dt > 0 and k * self.per / dt or 0
  local eta = k > 0 and dt * (self.total - k) / k or 0
  local text = ("%s: frame %d/%d  %.0f steps/s  ETA %s"):format(self.name, k, self.total, rate, duration(eta))
  if self.tty then
    self.out:write("\r", text, "\27[K")
    self.out:flush()
    self.line = true
  elseif k * 100 >= self.next_pct * self.total or k == self.total then
    self.out:write(text, "\n")
    while self.next_pct * self.total <= k * 100 do self.next_pct = self.next_pct + 10 end
  end
end

function Progress:print(...)
  if self.line then self.out:write("\r\27[K") end
  local parts = { ... }
  for i = 1, select("#", ...) do parts[i] = tostring(parts[i]) end
  self.out:write(table.concat(parts, "\t"), "\n")
  self.line = false
end

function Progress:done()
  if self.line then
    self.out:write("\r\27[K")
    self.line = false
  end
  if not self.quiet then
    self.out:write(("%s: %d frames in %.1f s\n"):format(self.name, self.total, clock() - self.t0))
  end
  self.quiet = true
end

-- ---- window ----------------------------------------------------------------------------

local View = {}
View.__index = View

function M.window(opts, name, size, frames)
  local gui = require "lattice.gui"
  local win = gui.window("Lattice: " .. name, size, { out = opts.out, name = name .. "_window",
    headless = opts.test and true or nil, fps_limit = 60 })
  frames = opts.frames or (opts.test and math.min(frames, 4)) or frames
  local v = setmetatable({ win = win, name = name, out = opts.out, frames = frames, shown = 0, saved = 0,
    paused = false, restart = false, keys = "space: pause  r: restart  s: save  q: quit" }, View)
  if win.mode == "window" then
    print(("%s: a window; %s"):format(name, v.keys))
  end
  return v
end

function View:running()
  if not self.win:running() then return false end
  if self.win.mode ~= "window" and self.frames and self.shown >= self.frames then return false end
  return true
end

-- true once after r was pressed: the example starts again
function View:restarted()
  local r = self.restart
  self.restart = false
  return r
end

-- the canvas to the window; then the keys pressed meanwhile
function View:show()
  local win = self.win
  if self.paused then win:text(0.02, 0.02, "paused", { color = 0xffff66 }) end
  win:show()
  self.shown = self.shown + 1
  for _, ev in ipairs(win:events()) do
    if ev.type == "key_down" then
      if ev.key == "space" then
        self.paused = not self.paused
      elseif ev.key == "r" then
        self.restart = true
      elseif ev.key == "s" then
        self.saved = self.saved + 1
        require("lattice.image").mkdirs(self.out)
        print(win:save(("%s/%s_save_%05d.png"):format(self.out, self.name, self.saved)))
      end
    end
  end
end

function View:close()
  local movie = self.win:close()
  if movie then print(movie) end
end

function M.animate(opts, name, size, frames, how)
  local view, frame = M.window(opts, name, size, frames), 0
  while view:running() do
    if view:restarted() then
      how.reset()
      frame = 0
    end
    if not view.paused then
      how.advance()
      frame = frame + 1
    end
    how.draw(view.win, frame)
    view:show()
  end
  view:close()
end

return M
