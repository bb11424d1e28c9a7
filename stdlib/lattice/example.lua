-- lattice.example -- the command line shared by the scripts in examples/:
--   lattice examples/NAME.lua [--out DIR] [--test] [--bench FRAMES] [--threads T] [--scale K] [--fast-math]
-- options(script) reads the global `arg` and returns { out = DIR, test = bool,
-- bench = FRAMES or nil, threads = T or nil, scale = K or nil, fast_math =
-- true or nil } (out defaults to "out"; --scale: a larger problem, for
-- examples that support it); an unknown argument is an error naming the
-- usage. --bench is for the examples bench/run.sh times (they skip their
-- images then); --threads and --fast-math go to lt.init (fast_math = true,
-- docs/arithmetic.md) in the examples that take them.
-- movie(dir, name) turns dir/NAME_00001.png, ... into dir/NAME.mp4 when
-- ffmpeg is installed and returns its path (nil otherwise).
-- lib(name) loads examples/lib/NAME.lua (helpers and plain-Lua references
-- shared by the examples), found next to the running script.
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
    elseif arg[a] == "--scale" then
      opts.scale = count(script, a + 1, "--scale")
      if opts.scale < 1 then error(("usage: lattice %s: --scale must be at least 1"):format(script), 2) end
      a = a + 1
    else
      error(("usage: lattice %s [--out DIR] [--test] [--bench FRAMES] [--threads T] [--scale K] [--fast-math]  "
        .. "(unknown argument '%s')")
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

return M
