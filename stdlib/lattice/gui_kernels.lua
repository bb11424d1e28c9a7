-- gui_kernels.lua -- the kernels that draw lattice.gui's canvas, an
-- lt.ndarray(lt.u32, {h, w}) of 0xAARRGGBB pixels with row 0 at the top.
-- The canvas is always a kernel argument (one compiled kernel per canvas
-- type, whatever its size); a drawn field is an upvalue (gui_draw.lua keeps
-- one kernel per field, weakly). The kernel text is a chunk of its own,
-- registered in package.loaded["lattice.sources"], since the tracer rewrites
-- a kernel from its source text (as copy.lua does).
--
-- Colours follow src/lang/image.c exactly: gray is lround(v * 255) per
-- channel, computed here; the other colormaps are image.c's tables of 1024
-- colours (image.colormap_table), which a kernel takes as an
-- lt.ndarray(lt.u32, {1024}) and indexes the way image.c does. So a frame
-- drawn here and image.write_png of the same field give the same bytes.
local M = {}

M.colormap_names = { "gray", "inferno", "heat" }
M.LUT_SIZE = 1024

local CHUNK = "=lattice/gui_kernels"
local SRC = [[
local lt = ...
local K = {}
local OPAQUE = 0xFF000000

-- image.c's to_byte: NaN and <= 0 -> 0, >= 1 -> 255, else lround(c * 255)
local byte = lt.func(function(c)
  local b = lt.u32(0)
  if c >= 1.0 then b = lt.u32(255) elseif c > 0.0 then b = lt.u32(lt.round(c * 255.0)) end
  return b
end)

-- an opaque pixel from three channels in 0..1 (f64)
local function rgb(r, g, b)
  return lt.u32(OPAQUE) | (byte(r) << 16) | (byte(g) << 8) | byte(b)
end

-- The pixel of value x (f64) drawn from [lo, hi] through a colormap: gray
-- (a trace-time boolean) computes image.c's byte of (x - lo) / (hi - lo);
-- otherwise entry lut_index of lut, with image.c's operations in its order
-- (x - lo times the scale, rounded; NaN and below lo is 0).
local LUT_LAST = 1023.0
local gray_pixel = lt.func(function(x, lo, hi)
  local b = byte((x - lo) / (hi - lo))
  return lt.u32(OPAQUE) | (b << 16) | (b << 8) | b
end)
local lut_pixel = lt.func(function(lut, x, lo, hi)
  local s = (x - lo) * (LUT_LAST / (hi - lo))
  local i = 0
  if s > 0.0 then i = lt.i32(lt.min(s, LUT_LAST) + 0.5) end
  return lut[i]
end)
local function shade(lut, gray, x, lo, hi)
  if gray then return gray_pixel(x, lo, hi) end
  return lut_pixel(lut, x, lo, hi)
end
K.shade = shade

function K.clear()
  return function(cv, color)
    for r in lt.ndrange(cv.shape[1]) do
      for c in lt.ndrange(cv.shape[2]) do cv[r][c] = color end
    end
  end
end

-- A 2-D scalar field f (FW x FH, first index x left to right, second y
-- bottom to top, indices from ox, oy) scaled to the canvas by nearest
-- sampling. An iteration draws one canvas column of RB rows: a field column
-- is contiguous in memory, and a canvas row is, so both the reads and the
-- writes of a thread stay on few cache lines (a row per iteration read the
-- field 4 KiB apart, 1.5x slower; 16 x 16 tiles with inner loops were slower
-- still). The canvas' size W x H is a constant of the kernel (gui_draw.lua
-- keys its cache by it), so the sampling's divisions fold into multiplications.
local RB = 8
function K.image_scalar(f, FW, FH, ox, oy, gray, W, H)
  local exact = H % RB == 0            -- no last, partial block to guard
  return function(cv, lut, lo, hi)
    for rb, c in lt.ndrange((H + RB - 1) // RB, W) do
      local x = c * FW // W + ox
      for k in lt.static(0, RB - 1) do
        local r = rb * RB + k
        if exact or r < H then         -- (a static if when exact)
          local y = (H - 1 - r) * FH // H + oy
          cv[r][c] = shade(lut, gray, lt.f64(f[x][y]), lo, hi)
        end
      end
    end
  end
end

-- A 2-D vec3 (RGB) or vec4 (RGBA, blended over the canvas) field.
function K.image_rgb(f, FW, FH, ox, oy, ncomp)
  return function(cv)
    local H, W = cv.shape[1], cv.shape[2]
    for r in lt.ndrange(H) do
      local y = (H - 1 - r) * FH // H + oy
      for c in lt.ndrange(W) do
        local v = f[c * FW // W + ox][y]
        if ncomp == 3 then
          cv[r][c] = rgb(lt.f64(v.x), lt.f64(v.y), lt.f64(v.z))
        else
          local a = lt.min(lt.max(lt.f64(v.w), 0.0), 1.0)
          local old = cv[r][c]
          local orr = lt.f64((old >> 16) & 255) / 255.0
          local og = lt.f64((old >> 8) & 255) / 255.0
          local ob = lt.f64(old & 255) / 255.0
          cv[r][c] = rgb(lt.f64(v.x) * a + orr * (1.0 - a), lt.f64(v.y) * a + og * (1.0 - a),
            lt.f64(v.z) * a + ob * (1.0 - a))
        end
      end
    end
  end
end

-- The disc of radius rad pixels around position p (in [0,1]^2, origin
-- bottom-left): every pixel whose centre is within rad of p's point.
local disc = lt.func(function(cv, px, py, rad, color)
  local H, W = cv.shape[1], cv.shape[2]
  if px == px and py == py then
    local cx, cy = px * W, (1.0 - py) * H
    local c0 = lt.max(lt.i32(lt.max(lt.floor(cx - rad), -1.0)), 0)
    local c1 = lt.min(lt.i32(lt.min(lt.floor(cx + rad), lt.f32(W))), W - 1)
    local r0 = lt.max(lt.i32(lt.max(lt.floor(cy - rad), -1.0)), 0)
    local r1 = lt.min(lt.i32(lt.min(lt.floor(cy + rad), lt.f32(H))), H - 1)
    for r = r0, r1 do
      local dy = r + 0.5 - cy
      for c = c0, c1 do
        local dx = c + 0.5 - cx
        if dx * dx + dy * dy <= rad * rad then cv[r][c] = color end
      end
    end
  end
end)

-- The pixels of rows r0..r1 and columns c0..c1 (inclusive, already inside
-- the canvas) set to color: a line's stamp, a font pixel.
local fill_rect = lt.func(function(cv, r0, r1, c0, c1, color)
  for r = r0, r1 do
    for c = c0, c1 do cv[r][c] = color end
  end
end)

-- Per-particle colour: mode "const" (the argument), "int" (0xRRGGBB from an
-- integer field), "float" (a scalar through the colormap), "rgb" (a vec3).
local function particle_color(mode, C, I, color, lo, hi, lut, gray)
  if mode == "const" then return color end
  if mode == "int" then return lt.u32(OPAQUE) | (lt.u32(C[I]) & 0xFFFFFF) end
  if mode == "float" then return shade(lut, gray, lt.f64(C[I]), lo, hi) end
  local v = C[I]
  return rgb(lt.f64(v.x), lt.f64(v.y), lt.f64(v.z))
end

-- Circles at the positions of vec2 field P (any shape; a sparse field's active cells).
function K.circles_field(P, mode, C, gray)
  return function(cv, rad, color, lo, hi, lut)
    for I in lt.grouped(P) do
      local p = P[I]
      disc(cv, p.x, p.y, rad, particle_color(mode, C, I, color, lo, hi, lut, gray))
    end
  end
end

-- Circles at the rows of an ndarray P of shape {n, 2}.
function K.circles_nd()
  return function(cv, P, rad, color)
    for i in lt.ndrange(P.shape[1]) do
      disc(cv, lt.f32(P[i][0]), lt.f32(P[i][1]), rad, color)
    end
  end
end

-- A line of width px pixels from A[I] to B[I] (vec2 fields of one shape):
-- squares of width px stamped at max(|dx|, |dy|) + 1 points along it
-- (at most 16384 steps, so end points far outside the window draw dotted).
function K.lines(A, B)
  return function(cv, color, width)
    local H, W = cv.shape[1], cv.shape[2]
    for I in lt.grouped(A) do
      local a, b = A[I], B[I]
      local x0, y0 = a.x * W, (1.0 - a.y) * H
      local x1, y1 = b.x * W, (1.0 - b.y) * H
      if x0 == x0 and y0 == y0 and x1 == x1 and y1 == y1 then
        local n = lt.i32(lt.min(lt.ceil(lt.max(lt.abs(x1 - x0), lt.abs(y1 - y0))), 16384.0))
        local inv = 1.0 / lt.max(n, 1)
        for s = 0, n do
          local t = s * inv
          local px = lt.i32(lt.max(lt.min(lt.floor(x0 + (x1 - x0) * t), 1e9), -1e9))
          local py = lt.i32(lt.max(lt.min(lt.floor(y0 + (y1 - y0) * t), 1e9), -1e9))
          fill_rect(cv, lt.max(py - (width - 1) // 2, 0), lt.min(py + width // 2, H - 1),
            lt.max(px - (width - 1) // 2, 0), lt.min(px + width // 2, W - 1), color)
        end
      end
    end
  end
end

-- Text: g holds 7 rows of 5 bits per character (gui_font.lua), n characters;
-- the top-left corner of the first glyph at pixel (x0, y0), each font pixel
-- a scale x scale square.
function K.text()
  return function(cv, g, n, x0, y0, color, scale)
    local H, W = cv.shape[1], cv.shape[2]
    for k in lt.ndrange(n) do
      for row = 0, 6 do
        local bits = g[k * 7 + row]
        for col = 0, 4 do
          if (bits >> (4 - col)) & 1 == 1 then
            local px, py = x0 + (k * 6 + col) * scale, y0 + row * scale
            fill_rect(cv, lt.max(py, 0), lt.min(py + scale, H) - 1, lt.max(px, 0), lt.min(px + scale, W) - 1, color)
          end
        end
      end
    end
  end
end

return K
]]

local K
-- The kernel builders (each returns a function for lt.kernel).
function M.builders()
  if K then return K end
  local sources = package.loaded["lattice.sources"]
  if type(sources) ~= "table" then
    sources = {}
    package.loaded["lattice.sources"] = sources
  end
  sources[CHUNK] = SRC
  K = assert(load(SRC, CHUNK, "t"))(require "lattice")
  return K
end

return M
