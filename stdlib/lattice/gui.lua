-- lattice.gui -- a window to draw simulation state into, each frame
-- (docs/gui.md). require always succeeds: gui.available says whether a real
-- window can open (Lattice built with SDL2, a display), gui.why why not.
--
--   local win = gui.window(title, {w, h}, {headless =, vsync =, fps_limit =, hidden =, out =, name =})
--   win:clear(c) win:image(f, o) win:circles(p, o) win:lines(a, b, o) win:text(x, y, s, o)
--   win:show() win:running() win:events() win:key_down(k) win:mouse() win.fps
--   win:save(path) win:close()
--
-- Draw calls write the canvas, win.canvas = lt.ndarray(lt.u32, {h, w}) of
-- 0xAARRGGBB pixels with row 0 at the TOP, with kernels (gui_draw.lua);
-- show() hands it to the SDL window (src/lang/gui_sdl.c, core.gui) in one
-- copy (none on the CPU, where the canvas is the window's own pixels), or
-- writes it as out/NAME_00001.png, ... when headless. Coordinates
-- seen by the user (positions, events, mouse) are in [0,1]^2 with the
-- origin at the BOTTOM-left, as fields are drawn.
local state = require "lattice.state"
local core = require "lattice.core"
local draw = require "lattice.gui_draw"

local M = {}
local raise = state.raise
local sdl = core.gui
local env = core.env()
local now = core.now or os.clock

if not sdl then
  M.available = false
  M.why = "Lattice was built without SDL2: install libsdl2-dev (sudo apt-get install libsdl2-dev) and rebuild"
elseif not env.display then
  M.available = false
  M.why = "no display (DISPLAY is not set)"
else
  M.available = true
end

local Window = {}
Window.__index = Window

local function image() return require "lattice.image" end

-- keys that end win:running()
local QUIT_KEYS = { q = true, escape = true }

-- An event from the binding (pixels, y from the top) in the user's terms.
local function user_event(win, ev)
  local out = {}
  for k, v in pairs(ev) do out[k] = v end
  if type(ev.x) == "number" then out.x = ev.x / win.w end
  if type(ev.y) == "number" then out.y = 1 - ev.y / win.h end
  return out
end

-- Queue one user event and follow its effect on the window's state.
local function note(win, ev)
  local q = win._queue
  q[#q + 1] = ev
  if ev.type == "quit" then win._quit = true end
  if ev.type == "key_down" then
    win._keys[ev.key] = true
    if QUIT_KEYS[ev.key] then win._quit = true end
  elseif ev.type == "key_up" then
    win._keys[ev.key] = nil
  end
  if type(ev.x) == "number" and type(ev.y) == "number" then win._mx, win._my = ev.x, ev.y end
end

local function poll(win)
  if win._sdl and not win._closed then
    for _, ev in ipairs(win._sdl:events()) do note(win, user_event(win, ev)) end
  end
end

local function check_open(win, what)
  if getmetatable(win) ~= Window then raise(what .. ": call it on a window (win:" .. what:match("[%w_]+$") .. "(...))") end
  if win._closed then raise("win:" .. what .. ": the window '" .. win.title .. "' is closed") end
end

local function name_from(title)
  local n = title:lower():gsub("[^%w]+", "_"):gsub("^_+", ""):gsub("_+$", "")
  return n ~= "" and n or "gui"
end

local OPTIONS = { headless = true, vsync = true, fps_limit = true, hidden = true, out = true, name = true }

-- gui.window(title, {w, h}, opts) -> win
function M.window(title, size, opts)
  local what = "gui.window"
  if type(title) ~= "string" then raise(what .. ": the title must be a string, got " .. type(title)) end
  if type(size) ~= "table" or math.type(size[1]) ~= "integer" or math.type(size[2]) ~= "integer"
      or size[1] < 1 or size[2] < 1 or size[1] > 16384 or size[2] > 16384 then
    raise(what .. "(" .. title .. "): the size is {w, h}, two whole numbers of pixels (1 to 16384)")
  end
  opts = opts or {}
  if type(opts) ~= "table" then raise(what .. "(" .. title .. "): options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do
    if not OPTIONS[k] then
      raise(what .. "(" .. title .. "): unknown option '" .. tostring(k) .. "' (headless, vsync, fps_limit, hidden, out, name)")
    end
  end
  local headless = opts.headless
  if headless == nil then headless = "auto" end
  if headless ~= true and headless ~= false and headless ~= "auto" and headless ~= "null" then
    raise(what .. "(" .. title .. "): opts.headless is true, false, \"auto\" or \"null\", got " .. tostring(headless))
  end
  local limit = opts.fps_limit
  if limit ~= nil and (type(limit) ~= "number" or not (limit > 0)) then
    raise(what .. "(" .. title .. "): opts.fps_limit must be a number of frames per second > 0, got "
      .. tostring(limit))
  end
  for _, k in ipairs { "vsync", "hidden" } do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      raise(what .. "(" .. title .. "): opts." .. k .. " must be a boolean, got " .. type(opts[k]))
    end
  end
  for _, k in ipairs { "out", "name" } do
    if opts[k] ~= nil and (type(opts[k]) ~= "string" or opts[k] == "") then
      raise(what .. "(" .. title .. "): opts." .. k .. " must be a non-empty string")
    end
  end
  if env.gui == "headless" and headless ~= "null" then headless = true end
  local w, h = size[1], size[2]
  local lt = require "lattice"
  local win = setmetatable({
    title = title, w = w, h = h, fps = 0, frame = 0,
    canvas = lt.ndarray(lt.u32, { h, w }),
    out = opts.out or "out", name = opts.name or name_from(title),
    _queue = {}, _keys = {}, _mx = 0, _my = 0, _times = {}, _t0 = 1, _t1 = 0, _limit = limit,
  }, Window)
  if headless == false or headless == "auto" then
    local why = M.why
    if M.available then
      local s, err = sdl.open(title, w, h, { vsync = opts.vsync or false, hidden = opts.hidden or false })
      if s then win._sdl = s else why = "cannot open a window: " .. tostring(err) end
      -- on the CPU the kernels draw straight into the window's pixels (one
      -- copy of each frame less; src/lang/gui_sdl.c keeps the array valid)
      local px = s and state.opts.arch == "cpu" and s:canvas()
      if px then win.canvas = require("lattice.ndarray").wrap(px) end
    end
    if not win._sdl then
      if headless == false then
        raise(what .. "(" .. title .. "): no window (headless = false): " .. why
          .. " (or draw headless: opts.headless = true, or LT_GUI=headless)")
      end
      io.stderr:write(("lattice.gui: %s; drawing '%s' headless to %s/%s_*.png\n"):format(why, title, win.out,
        win.name))
    end
  end
  win.mode = win._sdl and "window" or (headless == "null" and "null" or "headless")
  return win
end

-- Frame times of the last second (times[first..last]): fps over them.
local function tick(win)
  local t, times = now(), win._times
  local first, last = win._t0, win._t1 + 1
  times[last] = t
  while times[first] < t - 1 do
    times[first] = nil
    first = first + 1
  end
  if first > 4096 then   -- renumber from 1 now and then
    local moved = {}
    for k = first, last do moved[k - first + 1] = times[k] end
    win._times, times, last, first = moved, moved, last - first + 1, 1
  end
  win._t0, win._t1 = first, last
  local n = last - first
  win.fps = (n > 0 and t > times[first]) and n / (t - times[first]) or 0
end

-- win:show(): the canvas to the window (or a PNG when headless)
function Window:show()
  check_open(self, "show()")
  self.frame = self.frame + 1
  if self._sdl then
    local limit = self._limit
    if limit and self._shown then   -- at most fps_limit frames a second: wait out the rest
      local wait = self._shown + 1 / limit - now()
      if wait > 0 then core.sleep(wait) end
    end
    self._sdl:present(self.canvas)
    self._shown = now()
    poll(self)
  elseif self.mode == "headless" then
    if not self._dir_made then
      image().mkdirs(self.out)
      self._dir_made = true
    end
    image().write_png_argb(("%s/%s_%05d.png"):format(self.out, self.name, self.frame), self.canvas)
  end
  tick(self)
end

function Window:running()
  if getmetatable(self) ~= Window then raise("running(): call it on a window (win:running())") end
  if self._closed then return false end
  poll(self)
  return not self._quit
end

function Window:events()
  check_open(self, "events()")
  poll(self)
  local q = self._queue
  self._queue = {}
  return q
end

-- win:push_event(ev): an event as the user sees it (x, y in [0,1], origin
-- bottom-left): through SDL's queue in a window, straight to the queue headless.
local EVENT_TYPES = { key_down = true, key_up = true, mouse_move = true, mouse_down = true, mouse_up = true,
  quit = true }
function Window:push_event(ev)
  check_open(self, "push_event(ev)")
  if type(ev) ~= "table" or not EVENT_TYPES[ev.type] then
    raise("win:push_event(ev): ev is a table whose type is key_down, key_up, mouse_move, mouse_down, mouse_up "
      .. "or quit, got " .. (type(ev) == "table" and tostring(ev.type) or type(ev)))
  end
  if ev.type:match("^key") and type(ev.key) ~= "string" then
    raise("win:push_event(ev): a " .. ev.type .. " event needs key = a key name (\"space\", \"a\", ...)")
  end
  if ev.type:match("^mouse") and (type(ev.x) ~= "number" or type(ev.y) ~= "number") then
    raise("win:push_event(ev): a " .. ev.type .. " event needs x and y (numbers in [0,1])")
  end
  local e = {}
  for k, v in pairs(ev) do e[k] = v end
  if self._sdl then
    if e.x then e.x, e.y = math.floor(e.x * self.w), math.floor((1 - e.y) * self.h) end
    self._sdl:push_event(e)
  else
    note(self, e)
  end
end

function Window:key_down(name)
  check_open(self, "key_down(name)")
  if type(name) ~= "string" then raise("win:key_down(name): name is a key name (\"space\", \"a\", ...), got " .. type(name)) end
  if self._sdl then
    poll(self)
    return self._sdl:key_down(name)
  end
  return self._keys[name] == true
end

function Window:mouse()
  check_open(self, "mouse()")
  if self._sdl then
    local x, y = self._sdl:mouse()
    return x / self.w, 1 - y / self.h
  end
  return self._mx, self._my
end

function Window:save(path)
  check_open(self, "save(path)")
  if type(path) ~= "string" then raise("win:save(path): path must be a string, got " .. type(path)) end
  return image().write_png_argb(path, self.canvas)
end

-- win:close(): idempotent; a headless window that wrote frames makes
-- out/NAME.mp4 from them when ffmpeg is installed (returns its path).
function Window:close()
  if getmetatable(self) ~= Window then raise("close(): call it on a window (win:close())") end
  if self._closed then return nil end
  self._closed = true
  if self._sdl then
    self._sdl:close()
    self._sdl = nil
    return nil
  end
  if self.mode == "headless" and self.frame > 0 then
    return require("lattice.example").movie(self.out, self.name)
  end
  return nil
end

function Window:clear(color)
  check_open(self, "clear(color)")
  draw.clear(self, color)
end

function Window:image(f, opts)
  check_open(self, "image(field)")
  draw.image(self, f, opts)
end

function Window:circles(pos, opts)
  check_open(self, "circles(pos)")
  draw.circles(self, pos, opts)
end

function Window:lines(a, b, opts)
  check_open(self, "lines(a, b)")
  draw.lines(self, a, b, opts)
end

function Window:text(x, y, str, opts)
  check_open(self, "text(x, y, str)")
  draw.text(self, x, y, str, opts)
end

M.colormaps = { "gray", "inferno", "heat" }

return M
