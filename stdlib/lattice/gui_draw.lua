-- gui_draw.lua -- lattice.gui's draw calls on a window's canvas (an
-- lt.ndarray(lt.u32, {h, w}), row 0 at the top): clear, image, circles,
-- lines, text. Each checks its arguments (errors name the call, the field
-- and what is expected) and launches a kernel of gui_kernels.lua: one per
-- drawn field and colouring (kept weakly with the field), the canvas an
-- argument, so per-frame Lua work does not grow with the picture.
local state = require "lattice.state"
local fieldm = require "lattice.field"
local cfield = require "lattice.cfield"
local ndarray = require "lattice.ndarray"
local kernels_src = require "lattice.gui_kernels"
local font = require "lattice.gui_font"

local M = {}
local raise = state.raise

local by_field = setmetatable({}, { __mode = "k" })   -- field -> {key -> kernel}
local shared = {}                                     -- name -> kernel (canvas-only kernels)

local function lt() return require "lattice" end
local function K() return kernels_src.builders() end

local function cached(f, key, make)
  local t = by_field[f]
  if not t then
    t = {}
    by_field[f] = t
  end
  local k = t[key]
  if not k then
    k = lt().kernel(make())
    t[key] = k
  end
  return k
end

local function shared_kernel(name, types)
  local k = shared[name]
  if not k then
    k = lt().kernel(K()[name](), types)
    shared[name] = k
  end
  return k
end

local function show(v)
  if ndarray.is_ndarray(v) then return "an ndarray" end
  if fieldm.is_field(v) or cfield.is(v) then return "a field" end
  return "a " .. type(v)
end

local function scalar_of(f) return cfield.is(f) and cfield.first(f) or f end

local function describe(f)
  local s = scalar_of(f)
  local kind = cfield.is(f) and tostring(rawget(f, "_ct").name) or s.dtype.name
  local dims = {}
  for k, n in ipairs(f.shape) do dims[k] = tostring(n) end
  return "field '" .. fieldm.guess_name(s) .. "' (" .. kind .. " (" .. table.concat(dims, ", ") .. "))"
end

-- "vec2"-like composite fields: the component count, else nil
local function vector_size(f)
  if not cfield.is(f) then return nil end
  local ct = rawget(f, "_ct")
  if ct.n and ct.count == ct.n and ct.dtype and ct.dtype.is_float then return ct.n end
  return nil
end

local function offsets(f)
  local o = rawget(scalar_of(f), "_offset")
  return o and o[1] or 0, o and o[2] or 0
end

local function check_opts(what, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then raise(what .. ": options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for n in pairs(allowed) do names[#names + 1] = n end
      table.sort(names)
      raise(what .. ": unknown option '" .. tostring(k) .. "' (" .. table.concat(names, ", ") .. ")")
    end
  end
  return opts
end

-- a 0xRRGGBB colour -> the opaque canvas pixel
local function color_of(what, c, default)
  if c == nil then c = default end
  if math.type(c) ~= "integer" or c < 0 or c > 0xFFFFFF then
    raise(what .. ": a colour is an integer 0xRRGGBB (0 to 0xFFFFFF), got " .. tostring(c))
  end
  return 0xFF000000 | c
end
M.color_of = color_of

local function number_opt(what, opts, key, default)
  local v = opts[key]
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v then raise(what .. ": opts." .. key .. " must be a number, got " .. tostring(v)) end
  return v
end

local function colormap_opts(what, opts)
  local lo, hi = number_opt(what, opts, "min", 0), number_opt(what, opts, "max", 1)
  if not (hi > lo) then raise(("%s: opts.max (%g) must be greater than opts.min (%g)"):format(what, hi, lo)) end
  local name = opts.colormap or "gray"
  local known = false
  for _, n in ipairs(kernels_src.colormap_names) do known = known or n == name end
  if not known then
    raise(what .. ": unknown colormap '" .. tostring(name) .. "' (use \"gray\", \"inferno\" or \"heat\")")
  end
  return lo, hi, name
end

-- The window's lt.ndarray(lt.u32, {1024}) of colormap name's colours
-- (image.c's table; gray has none and gets one unused word), made on first
-- use and kept with the window, whose lifetime (and arch) it shares.
local function lut_of(win, name)
  local luts = rawget(win, "_luts")
  if not luts then
    luts = {}
    rawset(win, "_luts", luts)
  end
  local t = luts[name]
  if not t then
    local words = require("lattice.image").colormap_table(name)
    t = lt().ndarray(lt().u32, { words and #words or 1 }, words or { 0 })
    luts[name] = t
  end
  return t
end

function M.clear(win, color)
  shared_kernel("clear", { cv = lt().ndarray_type(lt().u32, 2), color = lt().u32 })(win.canvas,
    color_of("win:clear(color)", color, 0))
end

-- win:image(field, {min =, max =, colormap =})
function M.image(win, f, opts)
  local what = "win:image(field)"
  opts = check_opts(what, opts, { min = true, max = true, colormap = true })
  if not (fieldm.is_field(f) or cfield.is(f)) then
    raise(what .. ": expects a 2-D field (a scalar, vec3 or vec4 field), got " .. show(f))
  end
  if #f.shape ~= 2 then raise(what .. ": " .. describe(f) .. " must have 2 indices (x, y)") end
  local FW, FH = f.shape[1], f.shape[2]
  local W, H = win.w, win.h
  if W * FW >= 2 ^ 31 or H * FH >= 2 ^ 31 then
    raise(what .. ": " .. describe(f) .. " is too large for a " .. W .. " x " .. H .. " window")
  end
  local ox, oy = offsets(f)
  local n = vector_size(f)
  if cfield.is(f) then
    if n ~= 3 and n ~= 4 then
      raise(what .. ": " .. describe(f) .. ": draw a scalar field (through a colormap), a vec3 (RGB) or a "
        .. "vec4 (RGBA) field with components in 0..1; for one component pass f.x")
    end
    if opts.min or opts.max or opts.colormap then
      raise(what .. ": " .. describe(f) .. " is drawn as colours: min, max and colormap apply to scalar fields")
    end
    local k = cached(f, "rgb", function() return K().image_rgb(f, FW, FH, ox, oy, n) end)
    k(win.canvas)
    return
  end
  local lo, hi, name = colormap_opts(what, opts)
  local k = cached(f, "image " .. (name == "gray" and "gray" or "lut") .. " " .. W .. "x" .. H, function()
    return K().image_scalar(f, FW, FH, ox, oy, name == "gray", W, H)
  end)
  k(win.canvas, lut_of(win, name), lo, hi)
end

-- win:circles(pos, {radius =, color = | color_field =, min =, max =, colormap =})
function M.circles(win, pos, opts)
  local what = "win:circles(pos)"
  opts = check_opts(what, opts, { radius = true, color = true, color_field = true, min = true, max = true,
    colormap = true })
  local rad = number_opt(what, opts, "radius", 2)
  if rad < 0 then raise(what .. ": opts.radius must be >= 0 pixels, got " .. rad) end
  local L = lt()
  if ndarray.is_ndarray(pos) then
    if (pos.dtype ~= L.f32 and pos.dtype ~= L.f64) or pos.ndim ~= 2 or pos.shape[2] ~= 2 then
      raise(what .. ": an ndarray of positions must be f32 or f64 with shape {n, 2}")
    end
    if opts.color_field then raise(what .. ": color_field needs the positions as a vec2 field") end
    local k = shared["circles_nd " .. pos.dtype.name]
    if not k then
      k = L.kernel(K().circles_nd(), { cv = L.ndarray_type(L.u32, 2), P = L.ndarray_type(pos.dtype, 2),
        rad = L.f32, color = L.u32 })
      shared["circles_nd " .. pos.dtype.name] = k
    end
    k(win.canvas, pos, rad, color_of(what, opts.color, 0xFFFFFF))
    return
  end
  if vector_size(pos) ~= 2 then
    raise(what .. ": expects positions as a vec2 field (or an {n, 2} ndarray) in [0,1]^2, got "
      .. (cfield.is(pos) or fieldm.is_field(pos) and describe(pos) or show(pos)))
  end
  local C, mode, cmap, lo, hi = opts.color_field, "const", "gray", 0, 1
  local color = color_of(what, opts.color, 0xFFFFFF)
  if C ~= nil then
    if opts.color ~= nil then raise(what .. ": give opts.color or opts.color_field, not both") end
    if not (fieldm.is_field(C) or cfield.is(C)) then
      raise(what .. ": opts.color_field must be a field, got " .. show(C))
    end
    local same = #C.shape == #pos.shape
    for k = 1, #pos.shape do same = same and C.shape[k] == pos.shape[k] end
    if not same then
      raise(what .. ": opts.color_field " .. describe(C) .. " must have the shape of " .. describe(pos))
    end
    if cfield.is(C) then
      if vector_size(C) ~= 3 then
        raise(what .. ": opts.color_field " .. describe(C) .. " must be an integer field (0xRRGGBB), a float "
          .. "field (through opts.colormap) or a vec3 field (RGB in 0..1)")
      end
      mode = "rgb"
    elseif C.dtype.is_int then
      mode = "int"
    else
      mode = "float"
      lo, hi, cmap = colormap_opts(what, opts)
      mode = cmap == "gray" and "float gray" or "float lut"
    end
  elseif opts.min or opts.max or opts.colormap then
    raise(what .. ": min, max and colormap colour a float opts.color_field")
  end
  local key = mode
  local per = by_field[pos]
  if not per then
    per = {}
    by_field[pos] = per
  end
  local ck = per[C or "none"]
  if type(ck) ~= "table" then
    ck = setmetatable({}, { __mode = "k" })
    per[C or "none"] = ck
  end
  local k = ck[key]
  if not k then
    k = L.kernel(K().circles_field(pos, mode:match("^%a+"), C, cmap == "gray"),
      { cv = L.ndarray_type(L.u32, 2), rad = L.f32, color = L.u32, lo = L.f64, hi = L.f64,
        lut = L.ndarray_type(L.u32, 1) })
    ck[key] = k
  end
  k(win.canvas, rad, color, lo, hi, lut_of(win, cmap))
end

-- win:lines(a, b, {color =, width =})
function M.lines(win, a, b, opts)
  local what = "win:lines(a, b)"
  opts = check_opts(what, opts, { color = true, width = true })
  for _, f in ipairs { a, b } do
    if vector_size(f) ~= 2 then
      raise(what .. ": expects two vec2 fields of end points in [0,1]^2, got "
        .. ((cfield.is(f) or fieldm.is_field(f)) and describe(f) or show(f)))
    end
  end
  local same = #a.shape == #b.shape
  for k = 1, #a.shape do same = same and a.shape[k] == b.shape[k] end
  if not same then raise(what .. ": " .. describe(a) .. " and " .. describe(b) .. " must have one shape") end
  local width = opts.width or 1
  if math.type(width) ~= "integer" or width < 1 or width > 256 then
    raise(what .. ": opts.width is a whole number of pixels (1 to 256), got " .. tostring(width))
  end
  local L = lt()
  local per = by_field[a]
  if not per then
    per = {}
    by_field[a] = per
  end
  local lines = per.lines
  if not lines then
    lines = setmetatable({}, { __mode = "k" })
    per.lines = lines
  end
  local k = lines[b]
  if not k then
    k = L.kernel(K().lines(a, b), { cv = L.ndarray_type(L.u32, 2), color = L.u32, width = L.i32 })
    lines[b] = k
  end
  k(win.canvas, color_of(what, opts.color, 0xFFFFFF), width)
end

-- win:text(x, y, str, {color =, scale =}): x, y in [0,1] (bottom-left
-- origin) is the top-left corner of the text; lines split at "\n".
function M.text(win, x, y, str, opts)
  local what = "win:text(x, y, str)"
  opts = check_opts(what, opts, { color = true, scale = true })
  if type(x) ~= "number" or type(y) ~= "number" then
    raise(what .. ": x and y are numbers in [0,1] (origin bottom-left), got " .. type(x) .. ", " .. type(y))
  end
  if type(str) ~= "string" and type(str) ~= "number" then raise(what .. ": str must be a string, got " .. type(str)) end
  str = tostring(str)
  local scale = opts.scale or 2
  if math.type(scale) ~= "integer" or scale < 1 or scale > 64 then
    raise(what .. ": opts.scale is a whole number of pixels per font pixel (1 to 64), got " .. tostring(scale))
  end
  local color = color_of(what, opts.color, 0xFFFFFF)
  local L = lt()
  local k = shared_kernel("text", { cv = L.ndarray_type(L.u32, 2), g = L.ndarray_type(L.i32, 1), n = L.i32,
    x0 = L.i32, y0 = L.i32, color = L.u32, scale = L.i32 })
  local px = math.floor(x * win.w + 0.5)
  local py = math.floor((1 - y) * win.h + 0.5)
  if px ~= px or py ~= py or math.abs(px) > 1e9 or math.abs(py) > 1e9 then return end
  local line = 0
  for s in (str .. "\n"):gmatch("([^\n]*)\n") do
    local n = #s
    if n > 0 then
      local cap = win._text_cap or 0
      if n > cap then
        cap = math.max(64, cap)
        while cap < n do cap = cap * 2 end
        win._text_buf = L.ndarray(L.i32, { cap * 7 })
        win._text_cap = cap
      end
      local t = {}
      for i = 1, n do
        local rows = font.rows(s:byte(i))
        for r = 1, 7 do t[(i - 1) * 7 + r] = rows[r] end
      end
      for i = n * 7 + 1, cap * 7 do t[i] = 0 end
      win._text_buf:from_table(t)
      k(win.canvas, win._text_buf, n, px, py + line * (font.height + 2) * scale, color, scale)
    end
    line = line + 1
  end
end

return M
