/* image.c -- module "lattice.image": write 2-D data (a field or a Lua table)
** as a PNG with libpng, read one back (for tests), create output folders.
**
**   image.write_png(path, data, {min=0, max=1, colormap="gray"}) -> path
**   image.read_png(path) -> {width=, height=, pixel=function(x, y) -> r, g, b}
**   image.mkdirs(dir) -> dir
**   image.write_png_argb(path, nd) -> path   (nd: an lt.ndarray(lt.u32, {h, w})
**       of 0xAARRGGBB pixels, row 0 the TOP row: lattice.gui's canvas; alpha dropped)
**   image.colormap_table(name) -> the colormap's 1024 colours (nil for gray)
**
** data is indexed data[x][y]: the first index runs along the width, the
** second along the height, and y = 0 is the BOTTOM row of the picture (the
** way a field f[i][j] is drawn on a plot). Tables may be 0-based (what
** field:to_table() returns) or 1-based (a Lua table literal); an entry is a
** number, mapped from [min, max] through the colormap, or an {r, g, b}
** triple in 0..1. All Lua reads happen before the file is opened, so a bad
** value raises an error without leaving a half-written file or a leak. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>
#include <png.h>

#include "image.h"
#include "lang.h"

#define MAX_SIDE 65536

/* ---- colormaps: control points, linearly interpolated ---- */

typedef struct { float at, r, g, b; } stop;

static const stop gray_stops[] = {{0, 0, 0, 0}, {1, 1, 1, 1}};
/* dark purple through red and orange to pale yellow, after perceptual maps */
static const stop inferno_stops[] = {
  {0.000f, 0.000f, 0.000f, 0.016f}, {0.125f, 0.122f, 0.047f, 0.282f},
  {0.250f, 0.333f, 0.059f, 0.427f}, {0.375f, 0.533f, 0.133f, 0.416f},
  {0.500f, 0.729f, 0.212f, 0.333f}, {0.625f, 0.890f, 0.349f, 0.200f},
  {0.750f, 0.976f, 0.549f, 0.039f}, {0.875f, 0.976f, 0.788f, 0.196f},
  {1.000f, 0.988f, 1.000f, 0.643f}};
/* black-body: black, red, yellow, white */
static const stop heat_stops[] = {
  {0, 0, 0, 0}, {1.0f / 3, 1, 0, 0}, {2.0f / 3, 1, 1, 0}, {1, 1, 1, 1}};

#define COLORMAPS(_) \
  _(gray, gray_stops) \
  _(inferno, inferno_stops) \
  _(heat, heat_stops)

typedef struct { const char *name; const stop *stops; int n; } colormap;

#define CMAP_ENTRY(name, stops) {#name, stops, (int)(sizeof stops / sizeof stops[0])},
static const colormap colormaps[] = {COLORMAPS(CMAP_ENTRY)};
#define NCOLORMAPS ((int)(sizeof colormaps / sizeof colormaps[0]))

static unsigned char to_byte(double c) {
  if (!(c > 0)) return 0; /* NaN too */
  if (c >= 1) return 255;
  return (unsigned char)lround(c * 255.0);
}

/* v in 0..1 (NaN is drawn as 0) → rgb, between the control points */
static void apply_colormap(const colormap *m, double v, unsigned char *out) {
  if (!(v > 0)) v = 0;
  if (v > 1) v = 1;
  int k = 1;
  while (k < m->n - 1 && v > m->stops[k].at) k++;
  const stop *a = &m->stops[k - 1], *b = &m->stops[k];
  double t = (v - a->at) / (b->at - a->at);
  out[0] = to_byte(a->r + t * (b->r - a->r));
  out[1] = to_byte(a->g + t * (b->g - a->g));
  out[2] = to_byte(a->b + t * (b->b - a->b));
}

/* Colormaps other than gray are tables of LUT_SIZE colours, sampled at
** i / (LUT_SIZE - 1), as plotting libraries keep them (matplotlib's hold 256):
** a lookup is what lattice.gui's kernels can afford per pixel, and drawing
** through the same table here keeps write_png's bytes equal to a window's.
** Neighbouring entries differ by at most one level per channel. Gray needs
** no table: its byte is lround(v * 255), exactly. */
#define LUT_SIZE 1024

static bool is_gray(const colormap *m) { return m->stops == gray_stops; }

/* The entry of value x drawn from [lo, hi]: x - lo scaled by
** (LUT_SIZE - 1) / (hi - lo) (one multiplication per value, the scale
** computed once), rounded; NaN and below lo is entry 0. lattice.gui's
** kernels compute it with the same operations, in the same order. */
static int lut_index(double x, double lo, double hi) {
  double s = (x - lo) * ((LUT_SIZE - 1) / (hi - lo));
  if (!(s > 0)) return 0;
  if (s > LUT_SIZE - 1) s = LUT_SIZE - 1;
  return (int)(s + 0.5);
}

/* The tables as 0xFFRRGGBB words, made once per process (pthread_once:
** Lua states on several threads may draw at once). Gray's row is unused. */
static uint32_t luts[NCOLORMAPS][LUT_SIZE];
static pthread_once_t luts_once = PTHREAD_ONCE_INIT;

static void make_luts(void) {
  for (int id = 0; id < NCOLORMAPS; id++)
    for (int i = 0; i < LUT_SIZE; i++) {
      unsigned char c[3];
      apply_colormap(&colormaps[id], (double)i / (LUT_SIZE - 1), c);
      luts[id][i] = 0xFF000000u | (uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | c[2];
    }
}

static const uint32_t *colormap_lut(const colormap *m) {
  pthread_once(&luts_once, make_luts);
  return luts[m - colormaps];
}

/* the colour of value x drawn from [lo, hi] through m */
static void map_value(const colormap *m, double x, double lo, double hi, unsigned char *out) {
  if (is_gray(m)) {
    out[0] = out[1] = out[2] = to_byte((x - lo) / (hi - lo));
    return;
  }
  uint32_t p = colormap_lut(m)[lut_index(x, lo, hi)];
  out[0] = (unsigned char)(p >> 16), out[1] = (unsigned char)(p >> 8), out[2] = (unsigned char)p;
}

/* ---- reading the data out of Lua ---- */

/* Index of the first element (0 or 1) and the number of elements of the
** sequence at idx. */
static lua_Integer seq_bounds(lua_State *L, int idx, lua_Integer *base) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  int zero = lua_rawgeti(L, idx, 0) != LUA_TNIL;
  lua_pop(L, 1);
  *base = zero ? 0 : 1;
  return zero ? n + 1 : n;
}

typedef struct {
  const char *path;
  double min, max;
  const colormap *cmap;
} write_opts;

static void read_opts(lua_State *L, int idx, write_opts *o) {
  o->min = 0;
  o->max = 1;
  o->cmap = &colormaps[0];
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx))
    luaL_error(L, "image.write_png(%s): options must be a table, got %s", o->path, luaL_typename(L, idx));
  if (lua_getfield(L, idx, "min") != LUA_TNIL) {
    if (!lua_isnumber(L, -1)) luaL_error(L, "image.write_png(%s): opts.min must be a number", o->path);
    o->min = lua_tonumber(L, -1);
  }
  if (lua_getfield(L, idx, "max") != LUA_TNIL) {
    if (!lua_isnumber(L, -1)) luaL_error(L, "image.write_png(%s): opts.max must be a number", o->path);
    o->max = lua_tonumber(L, -1);
  }
  if (!(o->max > o->min))
    luaL_error(L, "image.write_png(%s): opts.max (%f) must be greater than opts.min (%f)", o->path, o->max,
               o->min);
  if (lua_getfield(L, idx, "colormap") != LUA_TNIL) {
    const char *name = lua_tostring(L, -1);
    o->cmap = NULL;
    for (int i = 0; name && i < NCOLORMAPS; i++)
      if (strcmp(name, colormaps[i].name) == 0) o->cmap = &colormaps[i];
    if (o->cmap == NULL)
      luaL_error(L, "image.write_png(%s): unknown colormap '%s' (use \"gray\", \"inferno\" or \"heat\")",
                 o->path, name ? name : luaL_typename(L, -1));
  }
  lua_pop(L, 3);
}

/* One entry → 3 bytes. The value is on the top of the stack. */
static void read_pixel(lua_State *L, const write_opts *o, lua_Integer x, lua_Integer y, unsigned char *out) {
  int t = lua_type(L, -1);
  if (t == LUA_TNUMBER) {
    map_value(o->cmap, lua_tonumber(L, -1), o->min, o->max, out);
    return;
  }
  if (t == LUA_TTABLE) {
    lua_Integer base;
    if (seq_bounds(L, -1, &base) == 3) {
      for (int c = 0; c < 3; c++) {
        lua_rawgeti(L, -1, base + c);
        int isnum;
        double v = lua_tonumberx(L, -1, &isnum);
        lua_pop(L, 1);
        if (!isnum) goto bad;
        out[c] = to_byte(v);
      }
      return;
    }
  }
bad:
  luaL_error(L, "image.write_png(%s): bad value at data[%I][%I]: expected a number or an {r, g, b} triple, got %s",
             o->path, x, y, luaL_typename(L, -1));
}

/* Fills a w*h*3 buffer (rows top to bottom) from the table at idx. */
static unsigned char *read_data(lua_State *L, int idx, const write_opts *o, int *wp, int *hp) {
  if (!lua_istable(L, idx))
    luaL_error(L, "image.write_png(%s): data must be a field or a table data[x][y], got %s", o->path,
               luaL_typename(L, idx));
  lua_Integer xb, yb = 0, h = -1;
  lua_Integer w = seq_bounds(L, idx, &xb);
  for (lua_Integer x = 0; x < w; x++) {
    if (lua_rawgeti(L, idx, xb + x) != LUA_TTABLE)
      luaL_error(L, "image.write_png(%s): data[%I] is a %s, expected a table of values (data is data[x][y])",
                 o->path, xb + x, luaL_typename(L, -1));
    lua_Integer b, n = seq_bounds(L, -1, &b);
    if (h < 0) { h = n; yb = b; }
    else if (b != yb)
      luaL_error(L, "image.write_png(%s): data[%I] is indexed from %I, data[%I] from %I: use one base for all",
                 o->path, xb + x, b, xb, yb);
    else if (n != h)
      luaL_error(L, "image.write_png(%s): ragged data: data[%I] has %I values, data[%I] has %I", o->path,
                 xb + x, n, xb, h);
    lua_pop(L, 1);
  }
  if (w <= 0 || h <= 0) luaL_error(L, "image.write_png(%s): the image is empty (%I x %I)", o->path, w, h < 0 ? 0 : h);
  if (w > MAX_SIDE || h > MAX_SIDE)
    luaL_error(L, "image.write_png(%s): %I x %I is too large (at most %d a side)", o->path, w, h, MAX_SIDE);
  /* a userdata, so an error while reading frees it with the rest */
  unsigned char *buf = lua_newuserdatauv(L, (size_t)w * (size_t)h * 3, 0);
  for (lua_Integer x = 0; x < w; x++) {
    lua_rawgeti(L, idx, xb + x);
    for (lua_Integer y = 0; y < h; y++) {
      lua_rawgeti(L, -1, yb + y);
      read_pixel(L, o, xb + x, yb + y, buf + ((size_t)(h - 1 - y) * (size_t)w + (size_t)x) * 3);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  /* buf stays on the stack (alive) until the file is written */
  *wp = (int)w;
  *hp = (int)h;
  return buf;
}

/* ---- libpng ---- */

typedef struct { char msg[256]; } png_err;

static void on_png_error(png_structp png, png_const_charp msg) {
  png_err *e = png_get_error_ptr(png);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

/* Returns NULL, or a message (in e) on failure. No Lua calls in here. */
static const char *png_write_rgb(const char *path, const unsigned char *rgb, int w, int h, png_err *e) {
  FILE *volatile f = fopen(path, "wb");
  if (f == NULL) {
    snprintf(e->msg, sizeof e->msg, "cannot open for writing: %s", strerror(errno));
    return e->msg;
  }
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (info == NULL) {
    png_destroy_write_struct(&png, NULL);
    fclose(f);
    snprintf(e->msg, sizeof e->msg, "out of memory");
    return e->msg;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    fclose(f);
    return e->msg;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int r = 0; r < h; r++) png_write_row(png, rgb + (size_t)r * (size_t)w * 3);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  if (fclose(f) != 0) {
    snprintf(e->msg, sizeof e->msg, "cannot write: %s", strerror(errno));
    return e->msg;
  }
  return NULL;
}

/* Reads any 8/16-bit PNG as RGB8 into a malloc'd buffer (caller frees). */
static unsigned char *png_read_rgb(const char *path, int *wp, int *hp, png_err *e) {
  FILE *volatile f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(e->msg, sizeof e->msg, "cannot open: %s", strerror(errno));
    return NULL;
  }
  unsigned char sig[8];
  if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8) != 0) {
    fclose(f);
    snprintf(e->msg, sizeof e->msg, "not a PNG file");
    return NULL;
  }
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, e, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  unsigned char *volatile buf = NULL;
  if (info == NULL) {
    png_destroy_read_struct(&png, NULL, NULL);
    fclose(f);
    snprintf(e->msg, sizeof e->msg, "out of memory");
    return NULL;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    free(buf);
    return NULL;
  }
  png_init_io(png, f);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  int w = (int)png_get_image_width(png, info), h = (int)png_get_image_height(png, info);
  if (png_get_rowbytes(png, info) != (size_t)w * 3 || w > MAX_SIDE || h > MAX_SIDE)
    png_error(png, "unsupported PNG layout");
  buf = malloc((size_t)w * (size_t)h * 3);
  png_bytep *rows = buf ? malloc(sizeof(png_bytep) * (size_t)h) : NULL;
  if (rows == NULL) png_error(png, "out of memory");
  for (int r = 0; r < h; r++) rows[r] = buf + (size_t)r * (size_t)w * 3;
  png_read_image(png, rows);
  free(rows);
  png_read_end(png, NULL);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
  *wp = w;
  *hp = h;
  return buf;
}

/* ---- Lua functions ---- */

/* image.write_png(path, data, opts) -> path */
static int l_write_png(lua_State *L) {
  write_opts o;
  o.path = luaL_checkstring(L, 1);
  luaL_checkany(L, 2);
  lua_settop(L, 3);
  read_opts(L, 3, &o);
  /* a field (or anything with a to_table method): draw its values */
  int t = lua_type(L, 2), indexable = t == LUA_TTABLE;
  if (t == LUA_TUSERDATA && luaL_getmetafield(L, 2, "__index") != LUA_TNIL) {
    lua_pop(L, 1);
    indexable = 1;
  }
  if (indexable && lua_getfield(L, 2, "to_table") == LUA_TFUNCTION) {
    lua_pushvalue(L, 2);
    lua_call(L, 1, 1);
    lua_replace(L, 2);
  } else if (indexable) {
    lua_pop(L, 1);
  }
  int w, h;
  unsigned char *rgb = read_data(L, 2, &o, &w, &h);
  png_err e;
  const char *msg = png_write_rgb(o.path, rgb, w, h, &e);
  if (msg) return luaL_error(L, "image.write_png(%s): %s", o.path, msg);
  lua_pushvalue(L, 1);
  return 1;
}

/* image.write_png_argb(path, nd) -> path: an lt.ndarray(lt.u32, {h, w}) of
** 0xAARRGGBB pixels, row 0 at the top (lattice.gui's canvas), one host view of
** it (a copy when it lives in device memory), alpha dropped. */
static int l_write_png_argb(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (lua_istable(L, 2)) lua_getfield(L, 2, "_ud");   /* the lt.ndarray object: its userdata */
  else lua_pushvalue(L, 2);
  prog_ndarray *a = lang_to_ndarray(L, -1);
  if (!a || !a->data)
    return luaL_error(L, "image.write_png_argb(%s): expects an lt.ndarray(lt.u32, {h, w}), got %s", path,
                      luaL_typename(L, 2));
  char err[256];
  if (!prog_ndarray_usable(a, err, sizeof err))
    return luaL_error(L, "image.write_png_argb(%s): the ndarray's memory is gone (%s)", path, err);
  if (a->dtype != IR_u32 || a->ndim != 2)
    return luaL_error(L, "image.write_png_argb(%s): expects an ndarray of u32 with 2 dimensions {h, w}", path);
  int64_t h = a->shape[0], w = a->shape[1];
  if (w > MAX_SIDE || h > MAX_SIDE)
    return luaL_error(L, "image.write_png_argb(%s): %I x %I is too large (at most %d a side)", path,
                      (lua_Integer)w, (lua_Integer)h, MAX_SIDE);
  unsigned char *rgb = lua_newuserdatauv(L, (size_t)w * (size_t)h * 3, 0);
  size_t n = (size_t)a->size * 4;
  const char *view = lang_mem_stage(L, prog_ndarray_backend(a), a->data, n, true, "ndarray", NULL);
  if (!view) return lang_raise(L);
  int box = lua_gettop(L);
  const uint32_t *px = (const uint32_t *)(const void *)view;
  for (size_t i = 0; i < (size_t)a->size; i++) {
    rgb[3 * i] = (unsigned char)(px[i] >> 16);
    rgb[3 * i + 1] = (unsigned char)(px[i] >> 8);
    rgb[3 * i + 2] = (unsigned char)px[i];
  }
  if (!lang_mem_unstage(L, prog_ndarray_backend(a), box, a->data, n, false, "ndarray", NULL)) return lang_raise(L);
  png_err e;
  const char *msg = png_write_rgb(path, rgb, (int)w, (int)h, &e);
  if (msg) return luaL_error(L, "image.write_png_argb(%s): %s", path, msg);
  lua_pushvalue(L, 1);
  return 1;
}

/* pixel(x, y) -> r, g, b (0..255), origin bottom-left like write_png */
static int l_pixel(lua_State *L) {
  size_t len;
  const unsigned char *rgb = (const unsigned char *)lua_tolstring(L, lua_upvalueindex(1), &len);
  lua_Integer w = lua_tointeger(L, lua_upvalueindex(2)), h = lua_tointeger(L, lua_upvalueindex(3));
  lua_Integer x = luaL_checkinteger(L, 1), y = luaL_checkinteger(L, 2);
  if (x < 0 || x >= w || y < 0 || y >= h)
    return luaL_error(L, "pixel(%I, %I) is outside the %I x %I image (0-based, origin bottom-left)", x, y, w, h);
  const unsigned char *p = rgb + ((size_t)(h - 1 - y) * (size_t)w + (size_t)x) * 3;
  for (int c = 0; c < 3; c++) lua_pushinteger(L, p[c]);
  return 3;
}

/* image.read_png(path) -> {width=, height=, pixel=function(x, y)} */
static int l_read_png(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  png_err e;
  int w, h;
  unsigned char *rgb = png_read_rgb(path, &w, &h, &e);
  if (rgb == NULL) return luaL_error(L, "image.read_png(%s): %s", path, e.msg);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, w);
  lua_setfield(L, -2, "width");
  lua_pushinteger(L, h);
  lua_setfield(L, -2, "height");
  /* (only an out-of-memory error in pushlstring could leak rgb) */
  lua_pushlstring(L, (const char *)rgb, (size_t)w * (size_t)h * 3);
  free(rgb);
  lua_pushinteger(L, w);
  lua_pushinteger(L, h);
  lua_pushcclosure(L, l_pixel, 3);
  lua_setfield(L, -2, "pixel");
  return 1;
}

/* image.mkdirs(dir) -> dir: creates dir and its missing parents */
static int l_mkdirs(lua_State *L) {
  size_t len;
  const char *dir = luaL_checklstring(L, 1, &len);
  char *p = lua_newuserdatauv(L, len + 1, 0);
  memcpy(p, dir, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char c = p[i];
    p[i] = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      return luaL_error(L, "image.mkdirs(%s): cannot create %s: %s", dir, p, strerror(errno));
    p[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return luaL_error(L, "image.mkdirs(%s): exists and is not a folder", dir);
  lua_pushvalue(L, 1);
  return 1;
}

/* image.colormap_table(name) -> {0xFFRRGGBB, ...} (LUT_SIZE entries, or
** nil for gray, which has no table), the colours lattice.gui looks up */
static int l_colormap_table(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  for (int i = 0; i < NCOLORMAPS; i++) {
    if (strcmp(colormaps[i].name, name) != 0) continue;
    if (is_gray(&colormaps[i])) {
      lua_pushnil(L);
      return 1;
    }
    const uint32_t *t = colormap_lut(&colormaps[i]);
    lua_createtable(L, LUT_SIZE, 0);
    for (int k = 0; k < LUT_SIZE; k++) {
      lua_pushinteger(L, t[k]);
      lua_rawseti(L, -2, k + 1);
    }
    return 1;
  }
  return luaL_error(L, "image.colormap_table: unknown colormap '%s'", name);
}

static const luaL_Reg image_funcs[] = {
  {"colormap_table", l_colormap_table},
  {"write_png", l_write_png},
  {"read_png", l_read_png},
  {"mkdirs", l_mkdirs},
  {"write_png_argb", l_write_png_argb},
  {NULL, NULL}};

int luaopen_lattice_image(lua_State *L) {
  luaL_newlib(L, image_funcs);
  lua_createtable(L, NCOLORMAPS, 0);
  for (int i = 0; i < NCOLORMAPS; i++) {
    lua_pushstring(L, colormaps[i].name);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "colormaps");
  return 1;
}
