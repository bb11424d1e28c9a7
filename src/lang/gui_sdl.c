/*
** gui_sdl.c -- core.gui: windows through SDL2 for lattice.gui (stdlib/lattice/gui.lua).
** Built only when CMake finds SDL2 (LT_HAVE_SDL2); without it core.gui is nil.
**
**   gui.open(title, w, h, {vsync =, hidden =}) -> win | nil, message
**   win:present(nd)     nd: lt.ndarray(lt.u32, {h, w}) of 0xAARRGGBB, row 0 the top row;
**                       one copy (from a host view of device memory when the
**                       array lives on a GPU) into the window's framebuffer
**                       (SDL_GetWindowSurface), or with vsync into a streaming
**                       texture that a renderer presents at the display's rate
**   win:events()        -> the events since the last call, in order (see push_event)
**   win:key_down(name)  -> bool; win:mouse() -> x, y (pixels, y from the top)
**   win:push_event(ev)  ev as events() returns them, through SDL_PushEvent (tests);
**                       also {type = "size_changed"}, SDL's resize notice
**   win:read_pixels()   -> the presented frame, w*h*4 bytes, ARGB8888 (little-endian
**                       words 0xFFRRGGBB: alpha is always opaque), rows top first
**   win:canvas()        -> an ndarray userdata over the framebuffer's own pixels
**                       (no renderer; 32-bit RGB rows without padding), else nil:
**                       presenting it copies nothing (host memory only)
**   win:size() -> w, h; win:close() (idempotent; also __gc and __close)
**
** Events: {type = "key_down"|"key_up", key = NAME} (SDL's key names in lower
** case: "a", "space", "escape", "return", "left", ...), {type = "mouse_move",
** x =, y =}, {type = "mouse_down"|"mouse_up", button = 1|2|3, x =, y =},
** {type = "quit"} (the window was closed). SDL has one event queue for the
** process: whatever window polls it hands every event to the open window it
** names (a ring of QCAP per window, the oldest dropped), so windows never take
** each other's events. key_down and mouse answer from the events seen, so an
** injected event counts like a real one.
**
** Every misuse (a closed window, an ndarray of the wrong type or shape, a bad
** event) raises a Lua error at the user's line naming what was wrong.
*/
#include <ctype.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <SDL.h>

#include "lang.h"

/* ---- SDL, loaded when the first window opens ----
** Linking libSDL2 would load it, and the ~40 libraries it needs (X11,
** Wayland, PulseAudio, ALSA, codecs, ...), into every lattice process at
** start-up: ~20 ms before the first line of any script. So gui.open loads
** SDL with dlopen; SDL's header still gives the types. Each function below
** is called through a pointer of its declared type, and the macros after
** sdl_load keep the code reading as plain SDL calls. */
#define SDL_FUNCS(_)                                                                                 \
  _(SDL_GetError) _(SDL_SetHint) _(SDL_SetHintWithPriority) _(SDL_InitSubSystem)                     \
  _(SDL_QuitSubSystem) _(SDL_CreateWindow) _(SDL_DestroyWindow) _(SDL_GetWindowID)                   \
  _(SDL_GetWindowTitle) _(SDL_GetWindowSize) _(SDL_GetWindowSurface) _(SDL_UpdateWindowSurface)      \
  _(SDL_LockSurface) _(SDL_UnlockSurface) _(SDL_ConvertPixels) _(SDL_CreateRenderer)                 \
  _(SDL_DestroyRenderer) _(SDL_CreateTexture) _(SDL_DestroyTexture) _(SDL_SetTextureBlendMode)       \
  _(SDL_LockTexture) _(SDL_UnlockTexture) _(SDL_RenderClear) _(SDL_RenderCopy) _(SDL_RenderPresent)  \
  _(SDL_RenderReadPixels) _(SDL_GetRendererOutputSize) _(SDL_PollEvent) _(SDL_PushEvent)             \
  _(SDL_GetTicks) _(SDL_GetKeyName) _(SDL_GetKeyFromName) _(SDL_GetScancodeFromKey)

#define SDL_POINTER(name) __typeof__(name) *p_##name;
static struct { SDL_FUNCS(SDL_POINTER) } sdl;
#undef SDL_POINTER

/* the SONAME of SDL2's shared library (Debian: libsdl2-2.0-0) */
#define SDL_LIBRARY "libSDL2-2.0.so.0"

/* Loads SDL once; false with why (the library, or a function, missing). */
static bool sdl_load(char *why, size_t len) {
  static bool loaded;
  if (loaded) return true;
  void *lib = dlopen(SDL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, len, "cannot load %s (Debian: libsdl2-2.0-0): %s", SDL_LIBRARY, dlerror());
    return false;
  }
#define SDL_RESOLVE(name)                                                    \
  if (!(*(void **)&sdl.p_##name = dlsym(lib, #name))) {                      \
    snprintf(why, len, "%s has no function %s: too old an SDL2", SDL_LIBRARY, #name); \
    dlclose(lib);                                                            \
    return false;                                                            \
  }
  SDL_FUNCS(SDL_RESOLVE)
#undef SDL_RESOLVE
  loaded = true;   /* never closed: SDL keeps threads and handlers for the process */
  return true;
}

#define SDL_GetError (*sdl.p_SDL_GetError)
#define SDL_SetHint (*sdl.p_SDL_SetHint)
#define SDL_SetHintWithPriority (*sdl.p_SDL_SetHintWithPriority)
#define SDL_InitSubSystem (*sdl.p_SDL_InitSubSystem)
#define SDL_QuitSubSystem (*sdl.p_SDL_QuitSubSystem)
#define SDL_CreateWindow (*sdl.p_SDL_CreateWindow)
#define SDL_DestroyWindow (*sdl.p_SDL_DestroyWindow)
#define SDL_GetWindowID (*sdl.p_SDL_GetWindowID)
#define SDL_GetWindowTitle (*sdl.p_SDL_GetWindowTitle)
#define SDL_GetWindowSize (*sdl.p_SDL_GetWindowSize)
#define SDL_GetWindowSurface (*sdl.p_SDL_GetWindowSurface)
#define SDL_UpdateWindowSurface (*sdl.p_SDL_UpdateWindowSurface)
#define SDL_LockSurface (*sdl.p_SDL_LockSurface)
#define SDL_UnlockSurface (*sdl.p_SDL_UnlockSurface)
#define SDL_ConvertPixels (*sdl.p_SDL_ConvertPixels)
#define SDL_CreateRenderer (*sdl.p_SDL_CreateRenderer)
#define SDL_DestroyRenderer (*sdl.p_SDL_DestroyRenderer)
#define SDL_CreateTexture (*sdl.p_SDL_CreateTexture)
#define SDL_DestroyTexture (*sdl.p_SDL_DestroyTexture)
#define SDL_SetTextureBlendMode (*sdl.p_SDL_SetTextureBlendMode)
#define SDL_LockTexture (*sdl.p_SDL_LockTexture)
#define SDL_UnlockTexture (*sdl.p_SDL_UnlockTexture)
#define SDL_RenderClear (*sdl.p_SDL_RenderClear)
#define SDL_RenderCopy (*sdl.p_SDL_RenderCopy)
#define SDL_RenderPresent (*sdl.p_SDL_RenderPresent)
#define SDL_RenderReadPixels (*sdl.p_SDL_RenderReadPixels)
#define SDL_GetRendererOutputSize (*sdl.p_SDL_GetRendererOutputSize)
#define SDL_PollEvent (*sdl.p_SDL_PollEvent)
#define SDL_PushEvent (*sdl.p_SDL_PushEvent)
#define SDL_GetTicks (*sdl.p_SDL_GetTicks)
#define SDL_GetKeyName (*sdl.p_SDL_GetKeyName)
#define SDL_GetKeyFromName (*sdl.p_SDL_GetKeyFromName)
#define SDL_GetScancodeFromKey (*sdl.p_SDL_GetScancodeFromKey)

#define GUI_WINDOW "lattice.gui.window"
#define QCAP 4096
#define MAX_SIDE 16384

typedef struct gui_win gui_win;
struct gui_win {
  SDL_Window *win;                 /* NULL once closed */
  SDL_Renderer *ren;               /* with vsync: a renderer and a streaming texture; */
  SDL_Texture *tex;                /* without: NULL, the window's own framebuffer */
  Uint32 id;                       /* SDL's window id */
  int w, h;
  SDL_Event *q;                    /* the ring of this window's events */
  int qhead, qlen;
  bool keys[SDL_NUM_SCANCODES];    /* held, from the events seen */
  int mx, my;
  prog_ndarray *canvas;            /* win:canvas(): an array over the window surface's pixels, or NULL */
  gui_win *next;                   /* the open windows */
};

static gui_win *open_wins;
static void drop_canvas(gui_win *g, bool keep);

/* ---- the event queue, shared by the process ---- */

static gui_win *find_win(Uint32 id) {
  for (gui_win *g = open_wins; g; g = g->next)
    if (g->id == id) return g;
  return NULL;
}

static void enqueue(gui_win *g, const SDL_Event *e) {
  if (g->qlen == QCAP) {           /* nobody polls: drop the oldest */
    g->qhead = (g->qhead + 1) % QCAP;
    g->qlen--;
  }
  g->q[(g->qhead + g->qlen) % QCAP] = *e;
  g->qlen++;
}

/* Hands every pending SDL event to the window it names; the state key_down
** and mouse answer from follows. */
static void pump(void) {
  SDL_Event e;
  while (SDL_PollEvent(&e)) {
    gui_win *g = NULL;
    switch (e.type) {
      case SDL_KEYDOWN:
      case SDL_KEYUP:
        if ((g = find_win(e.key.windowID)) != NULL && e.key.keysym.scancode < SDL_NUM_SCANCODES)
          g->keys[e.key.keysym.scancode] = e.type == SDL_KEYDOWN;
        break;
      case SDL_MOUSEMOTION:
        if ((g = find_win(e.motion.windowID)) != NULL) g->mx = e.motion.x, g->my = e.motion.y;
        break;
      case SDL_MOUSEBUTTONDOWN:
      case SDL_MOUSEBUTTONUP:
        if ((g = find_win(e.button.windowID)) != NULL) g->mx = e.button.x, g->my = e.button.y;
        break;
      case SDL_WINDOWEVENT:
        if (e.window.event == SDL_WINDOWEVENT_CLOSE) {
          g = find_win(e.window.windowID);
        } else if (e.window.event == SDL_WINDOWEVENT_SIZE_CHANGED || e.window.event == SDL_WINDOWEVENT_RESIZED) {
          /* SDL frees the surface at the next SDL_GetWindowSurface: the
          ** canvas over it takes its pixels now (window_surface checks too) */
          gui_win *r = find_win(e.window.windowID);
          if (r) drop_canvas(r, true);
        }
        break;
      case SDL_QUIT:               /* the last window closed, or a signal: every window's */
        for (gui_win *w = open_wins; w; w = w->next) enqueue(w, &e);
        break;
      default:
        break;
    }
    if (g) enqueue(g, &e);
  }
}

/* ---- the window userdata ---- */

static gui_win *to_win(lua_State *L, int idx, const char *what) {
  gui_win *g = luaL_testudata(L, idx, GUI_WINDOW);
  if (!g) {
    lang_error(L, "%s: expected a window (from gui.open), got %s", what, luaL_typename(L, idx));
    return NULL;
  }
  if (!g->win) lang_error(L, "%s: the window is closed", what);
  return g;
}

/* The canvas stops being the window's pixels: it moves to memory of its own
** (Lua may still hold it), with a copy of them when keep (the surface is
** still there: close, a resize seen in the events), else zeroed (SDL has
** already replaced the surface), and the window forgets it. */
static void drop_canvas(gui_win *g, bool keep) {
  if (!g->canvas) return;
  prog_ndarray_detach(g->canvas, keep);
  prog_ndarray_release(g->canvas);
  g->canvas = NULL;
}

/* The window's surface. SDL makes a new one (freeing the old) when the
** window's size has changed, e.g. by a window manager: the canvas over the
** old pixels is let go first. */
static SDL_Surface *window_surface(gui_win *g) {
  int w, h;
  SDL_GetWindowSize(g->win, &w, &h);
  if (g->canvas && (w != g->w || h != g->h)) drop_canvas(g, true);
  SDL_Surface *s = SDL_GetWindowSurface(g->win);
  if (g->canvas && (!s || (void *)g->canvas->data != s->pixels)) drop_canvas(g, false);   /* (not expected) */
  return s;
}

static void close_win(gui_win *g) {
  if (!g->win) return;
  drop_canvas(g, true);
  for (gui_win **p = &open_wins; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      break;
    }
  if (g->tex) SDL_DestroyTexture(g->tex);
  if (g->ren) SDL_DestroyRenderer(g->ren);
  SDL_DestroyWindow(g->win);
  g->win = NULL, g->ren = NULL, g->tex = NULL;
  free(g->q);
  g->q = NULL;
  SDL_QuitSubSystem(SDL_INIT_VIDEO);   /* counted; video_held keeps the last reference */
}

static int l_close(lua_State *L) {
  gui_win *g = luaL_checkudata(L, 1, GUI_WINDOW);
  close_win(g);
  return 0;
}

static int l_tostring(lua_State *L) {
  gui_win *g = luaL_checkudata(L, 1, GUI_WINDOW);
  if (g->win) lua_pushfstring(L, "gui window %dx%d '%s'", g->w, g->h, SDL_GetWindowTitle(g->win));
  else lua_pushliteral(L, "gui window (closed)");
  return 1;
}

static bool opt_bool(lua_State *L, int t, const char *k) {
  if (lua_isnoneornil(L, t)) return false;
  lua_getfield(L, t, k);
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
    lang_error(L, "gui.open: option '%s' must be a boolean, got %s", k, luaL_typename(L, -1));
  bool v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

static int check_side(lua_State *L, int idx, const char *which) {
  int isint = 0;
  lua_Integer n = lua_tointegerx(L, idx, &isint);
  if (!isint || n < 1 || n > MAX_SIDE)
    lang_error(L, "gui.open: the %s must be an integer from 1 to %d, got %s", which, MAX_SIDE,
               luaL_tolstring(L, idx, NULL));
  return (int)n;
}

/* Copies the frame (w*h ARGB8888 words, rows top first; NULL: black) into
** the window and presents it; false with SDL's error. */
static bool draw_frame(gui_win *g, const char *view) {
  size_t row = (size_t)g->w * 4;
  void *pixels;
  int pitch;
  if (g->ren) {
    if (SDL_LockTexture(g->tex, NULL, &pixels, &pitch) != 0) return false;
    for (int y = 0; y < g->h; y++)
      if (view) memcpy((char *)pixels + (size_t)y * pitch, view + y * row, row);
      else memset((char *)pixels + (size_t)y * pitch, 0, row);
    SDL_UnlockTexture(g->tex);
    SDL_RenderClear(g->ren);
    SDL_RenderCopy(g->ren, g->tex, NULL, NULL);
    SDL_RenderPresent(g->ren);
    return true;
  }
  SDL_Surface *s = window_surface(g);   /* the same one until the window changes */
  if (!s || s->w < g->w || s->h < g->h) return false;
  if (SDL_MUSTLOCK(s) && SDL_LockSurface(s) != 0) return false;
  Uint32 f = s->format->format;
  bool same = f == SDL_PIXELFORMAT_ARGB8888 || f == SDL_PIXELFORMAT_RGB888;   /* alpha aside */
  int rc = 0;
  if (!view)
    for (int y = 0; y < g->h; y++) memset((char *)s->pixels + (size_t)y * s->pitch, 0, row);
  else if (view == s->pixels)
    ;                              /* drawn in place: the canvas is the surface (win:canvas) */
  else if (same)
    for (int y = 0; y < g->h; y++) memcpy((char *)s->pixels + (size_t)y * s->pitch, view + y * row, row);
  else
    rc = SDL_ConvertPixels(g->w, g->h, SDL_PIXELFORMAT_ARGB8888, view, (int)row, f, s->pixels, s->pitch);
  if (SDL_MUSTLOCK(s)) SDL_UnlockSurface(s);
  return rc == 0 && SDL_UpdateWindowSurface(g->win) == 0;
}

/* gui.open(title, w, h, opts) -> win | nil, message */
static int l_open(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING)
    return lang_error(L, "gui.open: the title must be a string, got %s", luaL_typename(L, 1));
  const char *title = lua_tostring(L, 1);
  int w = check_side(L, 2, "width"), h = check_side(L, 3, "height");
  if (!lua_isnoneornil(L, 4) && !lua_istable(L, 4))
    return lang_error(L, "gui.open: the options must be a table, got %s", luaL_typename(L, 4));
  if (!lua_isnoneornil(L, 4)) {
    for (lua_pushnil(L); lua_next(L, 4); lua_pop(L, 1))
      if (lua_type(L, -2) != LUA_TSTRING || (strcmp(lua_tostring(L, -2), "vsync") != 0 &&
                                              strcmp(lua_tostring(L, -2), "hidden") != 0))
        return lang_error(L, "gui.open: unknown option '%s' (vsync, hidden)", luaL_tolstring(L, -2, NULL));
  }
  bool vsync = opt_bool(L, 4, "vsync"), hidden = opt_bool(L, 4, "hidden");

  char why[512];
  if (!sdl_load(why, sizeof why)) {
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
  }
  gui_win *g = lua_newuserdatauv(L, sizeof *g, 0);
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, GUI_WINDOW);
  g->q = malloc(QCAP * sizeof *g->q);
  if (!g->q) return luaL_error(L, "gui.open: out of memory");

  /* Ctrl-C keeps ending the script (SDL would turn it into a quit event) */
  SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1");
  /* a display or nothing: SDL would otherwise fall back to its invisible
  ** "offscreen" driver (SDL_VIDEODRIVER, when set, still decides) */
  SDL_SetHintWithPriority(SDL_HINT_VIDEODRIVER, "x11,wayland", SDL_HINT_DEFAULT);
  /* the window surface straight to the display server (X11: MIT-SHM), not
  ** through an OpenGL texture: without a GPU that is Mesa's software
  ** rasteriser, which cost ~8 ms a 1024^2 frame under Xvfb and took CPU from
  ** the kernels (the user's SDL_FRAMEBUFFER_ACCELERATION still decides) */
  SDL_SetHintWithPriority(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0", SDL_HINT_DEFAULT);
  if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "no display (SDL: %s); set DISPLAY, or run under Xvfb "
                       "(xvfb-run -a lattice script.lua)", SDL_GetError());
    free(g->q);
    g->q = NULL;
    return 2;
  }
  const char *step = "SDL_CreateWindow";
  g->win = SDL_CreateWindow(title, SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, w, h,
                            hidden ? SDL_WINDOW_HIDDEN : SDL_WINDOW_SHOWN);
  bool ok = g->win != NULL;
  if (ok && vsync) {
    step = "SDL_CreateRenderer";
    g->ren = SDL_CreateRenderer(g->win, -1, SDL_RENDERER_ACCELERATED | SDL_RENDERER_PRESENTVSYNC);
    if (!g->ren) g->ren = SDL_CreateRenderer(g->win, -1, SDL_RENDERER_SOFTWARE | SDL_RENDERER_PRESENTVSYNC);
    if (g->ren) {
      step = "SDL_CreateTexture";
      g->tex = SDL_CreateTexture(g->ren, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, w, h);
    }
    ok = g->tex != NULL;
  } else if (ok) {
    step = "SDL_GetWindowSurface";
    ok = SDL_GetWindowSurface(g->win) != NULL;
  }
  if (!ok) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s failed: %s", step, SDL_GetError());
    if (g->ren) SDL_DestroyRenderer(g->ren);
    if (g->win) SDL_DestroyWindow(g->win);
    g->win = NULL, g->ren = NULL;
    free(g->q);
    g->q = NULL;
    SDL_QuitSubSystem(SDL_INIT_VIDEO);
    return 2;
  }
  /* Video stays up once a window has opened: shutting it down with the last
  ** window and starting it again for the next one reconnected to the X
  ** server each time, and under load that reconnection failed now and then
  ** (SDL: "x11,wayland not available"). One reference is kept for good. */
  static bool video_held;
  if (!video_held && SDL_InitSubSystem(SDL_INIT_VIDEO) == 0) video_held = true;
  if (g->tex) SDL_SetTextureBlendMode(g->tex, SDL_BLENDMODE_NONE);
  g->id = SDL_GetWindowID(g->win);
  g->w = w, g->h = h;
  g->next = open_wins;
  open_wins = g;
  draw_frame(g, NULL);             /* black until the first present: read_pixels never sees garbage */
  return 1;
}

static int l_size(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:size");
  lua_pushinteger(L, g->w);
  lua_pushinteger(L, g->h);
  return 2;
}

/* The prog_ndarray of an lt.ndarray (a table holding the userdata in _ud)
** or of the userdata itself; NULL when idx is neither. */
static prog_ndarray *arg_ndarray(lua_State *L, int idx) {
  prog_ndarray *a = lang_to_ndarray(L, idx);
  if (a || !lua_istable(L, idx)) return a;
  lua_pushliteral(L, "_ud");
  lua_rawget(L, idx);
  a = lang_to_ndarray(L, -1);
  lua_pop(L, 1);
  return a;
}

static void describe_ndarray(luaL_Buffer *b, const prog_ndarray *a) {
  luaL_addstring(b, "lt.ndarray(lt.");
  luaL_addstring(b, ir_type_name(a->dtype));
  luaL_addstring(b, ", {");
  for (int i = 0; i < a->ndim; i++) {
    char n[32];
    snprintf(n, sizeof n, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
    luaL_addstring(b, n);
  }
  luaL_addstring(b, "})");
}

/* win:present(nd) */
static int l_present(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:present");
  prog_ndarray *a = arg_ndarray(L, 2);
  if (!a)
    return lang_error(L, "win:present: expected an lt.ndarray(lt.u32, {%d, %d}) (height, width) of 0xAARRGGBB "
                         "pixels, got %s", g->h, g->w, luaL_typename(L, 2));
  if (a->dtype != IR_u32 || a->ndim != 2 || a->shape[0] != g->h || a->shape[1] != g->w) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    describe_ndarray(&b, a);
    luaL_pushresult(&b);
    return lang_error(L, "win:present: expected an lt.ndarray(lt.u32, {%d, %d}) (height, width) of 0xAARRGGBB "
                         "pixels, got an %s", g->h, g->w, lua_tostring(L, -1));
  }
  char err[256];
  if (!a->data || !prog_ndarray_usable(a, err, sizeof err))
    return lang_error(L, "win:present: the ndarray's memory is gone (%s)", a->data ? err : "freed");
  size_t n = (size_t)g->w * (size_t)g->h * 4;
  jit_backend *be = prog_ndarray_backend(a);
  const char *view = lang_mem_stage(L, be, a->data, n, true, "ndarray", NULL);
  if (!view) return lang_raise(L);
  int box = lua_gettop(L);
  bool ok = draw_frame(g, view);
  if (!lang_mem_unstage(L, be, box, a->data, n, false, "ndarray", NULL)) return lang_raise(L);
  if (!ok) return lang_error(L, "win:present: SDL could not draw the frame: %s", SDL_GetError());
  pump();                          /* keeps the window answering its window manager */
  return 0;
}

/* win:canvas() -> the ndarray userdata over the window surface's pixels
** (u32 {h, w}, 0x??RRGGBB), so that kernels draw straight into what the
** next present hands to the display, saving a copy of the frame; nil when
** the surface is not such an array (a renderer, another pixel format, rows
** with padding). The window holds the array until it closes or its size
** changes; then the array keeps a copy of the last pixels (drop_canvas). For
** host memory only: lattice.gui asks on the CPU backend. */
static int l_canvas(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:canvas");
  if (!g->canvas && !g->ren) {
    SDL_Surface *s = window_surface(g);
    if (s && s->w == g->w && s->h == g->h && s->pitch == g->w * 4 && !SDL_MUSTLOCK(s) &&
        (s->format->format == SDL_PIXELFORMAT_ARGB8888 || s->format->format == SDL_PIXELFORMAT_RGB888)) {
      char err[256];
      int64_t shape[2] = {g->h, g->w};
      g->canvas = prog_ndarray_wrap(NULL, IR_u32, 2, shape, s->pixels, (size_t)g->h * (size_t)s->pitch, NULL,
                                    NULL, err, sizeof err);
    }
  }
  if (!g->canvas) {
    lua_pushnil(L);
    return 1;
  }
  lang_push_ndarray(L, g->canvas);
  return 1;
}

/* win:read_pixels() -> string: the texture drawn 1:1 into the back buffer and read */
static int l_read_pixels(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:read_pixels");
  size_t n = (size_t)g->w * (size_t)g->h * 4;
  luaL_Buffer b;
  Uint32 *px = (Uint32 *)luaL_buffinitsize(L, &b, n);
  if (g->ren) {                    /* the texture drawn 1:1 into the back buffer and read */
    int ow, oh;
    if (SDL_GetRendererOutputSize(g->ren, &ow, &oh) != 0)
      return lang_error(L, "win:read_pixels: SDL_GetRendererOutputSize failed: %s", SDL_GetError());
    if (ow < g->w || oh < g->h)
      return lang_error(L, "win:read_pixels: the window's drawable is %dx%d, smaller than its %dx%d frame", ow, oh,
                        g->w, g->h);
    SDL_Rect r = {0, 0, g->w, g->h};
    SDL_RenderClear(g->ren);
    SDL_RenderCopy(g->ren, g->tex, NULL, &r);
    if (SDL_RenderReadPixels(g->ren, &r, SDL_PIXELFORMAT_ARGB8888, px, g->w * 4) != 0)
      return lang_error(L, "win:read_pixels: SDL_RenderReadPixels failed: %s", SDL_GetError());
  } else {                         /* the framebuffer itself */
    SDL_Surface *s = window_surface(g);
    if (!s || s->w < g->w || s->h < g->h)
      return lang_error(L, "win:read_pixels: the window has no framebuffer of its size: %s", SDL_GetError());
    if (SDL_MUSTLOCK(s) && SDL_LockSurface(s) != 0)
      return lang_error(L, "win:read_pixels: SDL_LockSurface failed: %s", SDL_GetError());
    int rc = SDL_ConvertPixels(g->w, g->h, s->format->format, s->pixels, s->pitch, SDL_PIXELFORMAT_ARGB8888, px,
                               g->w * 4);
    if (SDL_MUSTLOCK(s)) SDL_UnlockSurface(s);
    if (rc != 0) return lang_error(L, "win:read_pixels: SDL_ConvertPixels failed: %s", SDL_GetError());
  }
  for (size_t i = 0; i < n / 4; i++) px[i] = SDL_SwapLE32(px[i] | 0xFF000000u);
  luaL_pushresultsize(&b, n);
  return 1;
}

/* "Left Shift" -> "left shift" */
static void push_key_name(lua_State *L, SDL_Keycode k) {
  const char *s = SDL_GetKeyName(k);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (; *s; s++) luaL_addchar(&b, (char)tolower((unsigned char)*s));
  luaL_pushresult(&b);
}

static void set_int(lua_State *L, const char *k, int v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* Pushes the Lua table of e; false (nothing pushed) for events not reported. */
static bool push_event(lua_State *L, const SDL_Event *e) {
  const char *type;
  switch (e->type) {
    case SDL_KEYDOWN: type = "key_down"; break;
    case SDL_KEYUP: type = "key_up"; break;
    case SDL_MOUSEMOTION: type = "mouse_move"; break;
    case SDL_MOUSEBUTTONDOWN: type = "mouse_down"; break;
    case SDL_MOUSEBUTTONUP: type = "mouse_up"; break;
    case SDL_WINDOWEVENT:
    case SDL_QUIT: type = "quit"; break;
    default: return false;
  }
  lua_createtable(L, 0, 4);
  lua_pushstring(L, type);
  lua_setfield(L, -2, "type");
  switch (e->type) {
    case SDL_KEYDOWN:
    case SDL_KEYUP:
      push_key_name(L, e->key.keysym.sym);
      lua_setfield(L, -2, "key");
      break;
    case SDL_MOUSEMOTION:
      set_int(L, "x", e->motion.x);
      set_int(L, "y", e->motion.y);
      break;
    case SDL_MOUSEBUTTONDOWN:
    case SDL_MOUSEBUTTONUP:
      set_int(L, "button", e->button.button);
      set_int(L, "x", e->button.x);
      set_int(L, "y", e->button.y);
      break;
  }
  return true;
}

/* win:events() -> {ev, ...}; one quit at most per call */
static int l_events(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:events");
  pump();
  lua_createtable(L, g->qlen, 0);
  int n = 0;
  bool quit = false;
  for (; g->qlen > 0; g->qhead = (g->qhead + 1) % QCAP, g->qlen--) {
    const SDL_Event *e = &g->q[g->qhead];
    bool is_quit = e->type == SDL_QUIT || e->type == SDL_WINDOWEVENT;
    if (is_quit && quit) continue;
    if (push_event(L, e)) {
      lua_rawseti(L, -2, ++n);
      quit = quit || is_quit;
    }
  }
  return 1;
}

static SDL_Keycode check_key(lua_State *L, int idx, const char *what) {
  if (lua_type(L, idx) != LUA_TSTRING)
    lang_error(L, "%s: the key must be a name such as \"space\" or \"a\", got %s", what, luaL_typename(L, idx));
  SDL_Keycode k = SDL_GetKeyFromName(lua_tostring(L, idx));
  if (k == SDLK_UNKNOWN)
    lang_error(L, "%s: unknown key '%s' (SDL's key names in lower case: \"a\", \"space\", \"escape\", "
                  "\"return\", \"left\", ...)", what, lua_tostring(L, idx));
  return k;
}

/* win:key_down(name) -> bool */
static int l_key_down(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:key_down");
  SDL_Scancode sc = SDL_GetScancodeFromKey(check_key(L, 2, "win:key_down"));
  pump();
  lua_pushboolean(L, sc > SDL_SCANCODE_UNKNOWN && sc < SDL_NUM_SCANCODES && g->keys[sc]);
  return 1;
}

/* win:mouse() -> x, y */
static int l_mouse(lua_State *L) {
  gui_win *g = to_win(L, 1, "win:mouse");
  pump();
  lua_pushinteger(L, g->mx);
  lua_pushinteger(L, g->my);
  return 2;
}

static int field_int(lua_State *L, int t, const char *k, const char *what, const char *type) {
  lua_getfield(L, t, k);
  int isint = 0;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint || v < INT32_MIN || v > INT32_MAX)
    lang_error(L, "%s: a '%s' event needs an integer %s, got %s", what, type, k, luaL_typename(L, -1));
  lua_pop(L, 1);
  return (int)v;
}

/* win:push_event({type =, ...}) */
static int l_push_event(lua_State *L) {
  const char *what = "win:push_event";
  gui_win *g = to_win(L, 1, what);
  if (!lua_istable(L, 2)) return lang_error(L, "%s: expected an event table, got %s", what, luaL_typename(L, 2));
  lua_getfield(L, 2, "type");
  const char *type = lua_tostring(L, -1);
  if (lua_type(L, -1) != LUA_TSTRING) type = "";
  SDL_Event e;
  memset(&e, 0, sizeof e);
  e.common.timestamp = SDL_GetTicks();
  if (!strcmp(type, "key_down") || !strcmp(type, "key_up")) {
    bool down = type[4] == 'd';
    lua_getfield(L, 2, "key");
    SDL_Keycode k = check_key(L, -1, what);
    e.type = down ? SDL_KEYDOWN : SDL_KEYUP;
    e.key.windowID = g->id;
    e.key.state = down ? SDL_PRESSED : SDL_RELEASED;
    e.key.keysym.sym = k;
    e.key.keysym.scancode = SDL_GetScancodeFromKey(k);
  } else if (!strcmp(type, "mouse_move")) {
    e.type = SDL_MOUSEMOTION;
    e.motion.windowID = g->id;
    e.motion.x = field_int(L, 2, "x", what, type);
    e.motion.y = field_int(L, 2, "y", what, type);
  } else if (!strcmp(type, "mouse_down") || !strcmp(type, "mouse_up")) {
    bool down = type[6] == 'd';
    int button = field_int(L, 2, "button", what, type);
    if (button < 1 || button > 3)
      return lang_error(L, "%s: the button must be 1, 2 or 3 (left, middle, right), got %d", what, button);
    e.type = down ? SDL_MOUSEBUTTONDOWN : SDL_MOUSEBUTTONUP;
    e.button.windowID = g->id;
    e.button.button = (Uint8)button;
    e.button.state = down ? SDL_PRESSED : SDL_RELEASED;
    e.button.clicks = 1;
    e.button.x = field_int(L, 2, "x", what, type);
    e.button.y = field_int(L, 2, "y", what, type);
  } else if (!strcmp(type, "quit")) {
    e.type = SDL_WINDOWEVENT;
    e.window.event = SDL_WINDOWEVENT_CLOSE;
    e.window.windowID = g->id;
  } else if (!strcmp(type, "size_changed")) {   /* what SDL sends on a resize (events() omits it) */
    e.type = SDL_WINDOWEVENT;
    e.window.event = SDL_WINDOWEVENT_SIZE_CHANGED;
    e.window.windowID = g->id;
    e.window.data1 = g->w, e.window.data2 = g->h;
  } else {
    return lang_error(L, "%s: unknown event type %s (key_down, key_up, mouse_move, mouse_down, mouse_up, quit, "
                      "size_changed)", what, luaL_tolstring(L, -1, NULL));
  }
  if (SDL_PushEvent(&e) < 0) return lang_error(L, "%s: SDL_PushEvent failed: %s", what, SDL_GetError());
  return 0;
}

void lang_open_gui(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"present", l_present},   {"events", l_events}, {"key_down", l_key_down},
    {"mouse", l_mouse},       {"push_event", l_push_event}, {"read_pixels", l_read_pixels},
    {"size", l_size},         {"close", l_close},   {"canvas", l_canvas},
    {NULL, NULL}};
  if (luaL_newmetatable(L, GUI_WINDOW)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, l_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_open);
  lua_setfield(L, -2, "open");
  lua_setfield(L, -2, "gui");
}
