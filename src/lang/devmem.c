/*
** devmem.c -- Lua-scope access to the memory kernels see (fields, the sparse
** pool, ndarrays) through the program layer's copies (src/program/memory.c),
** staged views for bulk work, and the conversions between Lua numbers and
** the bytes of one element.
**
** On the CPU that memory is the host's: a copy here is a memcpy and a staged
** view is the memory itself. On CUDA every access is a copy through
** be->mem_read / mem_write. A failed copy (be->error says why, e.g. the CUDA
** context was lost) is a Lua error naming what was accessed, at the user's
** line (or handed back for the Lua side to raise there): never a crash, and
** worded here once.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"

#define LANG_STAGING "lattice.staging"

/* The innermost frame of user code, as state.raise blames it: not C, not a
** lattice/ module. False when there is none. */
static bool user_frame(lua_State *L, lua_Debug *ar) {
  for (int level = 1; lua_getstack(L, level, ar); level++) {
    if (!lua_getinfo(L, "Sl", ar)) break;
    if (ar->currentline > 0 && strncmp(ar->source, "=lattice/", 9) != 0) return true;
  }
  return false;
}

/* "file:line: " of the user's frame, or "". */
static void push_where(lua_State *L) {
  lua_Debug ar;
  if (user_frame(L, &ar)) lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
  else lua_pushliteral(L, "");
}

/* ---- the last element read ------------------------------------------------------
** A Lua-scope read gives a plain number, so one index too many (x[1][1][1]
** on a 2-D field) indexes a number, and Lua's message would not name the
** field. Each read notes the user's line and the value it gave; field.lua's
** metatable for numbers asks core.read_here whether the number indexed is
** that one, at that line, to name the field instead. (Per thread: only
** messages depend on it.) */
static _Thread_local struct {
  const char *source;              /* the chunk's source string (identity) */
  int line;
  int type;                        /* LUA_TNUMBER + 1: an integer */
  char bits[sizeof(lua_Number) > sizeof(lua_Integer) ? sizeof(lua_Number) : sizeof(lua_Integer)];
} last_read;

/* The value at idx in last_read's representation. */
static int number_bits(lua_State *L, int idx, char *bits) {
  memset(bits, 0, sizeof last_read.bits);
  if (lua_isinteger(L, idx)) {
    lua_Integer i = lua_tointeger(L, idx);
    memcpy(bits, &i, sizeof i);
    return LUA_TNUMBER + 1;
  }
  lua_Number d = lua_tonumber(L, idx);
  memcpy(bits, &d, sizeof d);
  return LUA_TNUMBER;
}

void lang_note_read(lua_State *L) {
  lua_Debug ar;
  last_read.source = NULL;
  if (!user_frame(L, &ar)) return;
  last_read.source = ar.source;
  last_read.line = ar.currentline;
  last_read.type = number_bits(L, -1, last_read.bits);
}

/* core.read_here(v) -> whether the number v is what the last element read
** gave, read at the line of user code running now. */
static int l_read_here(lua_State *L) {
  lua_Debug ar;
  char bits[sizeof last_read.bits];
  bool here = lua_type(L, 1) == LUA_TNUMBER && last_read.source && user_frame(L, &ar) &&
              ar.source == last_read.source && ar.currentline == last_read.line &&
              number_bits(L, 1, bits) == last_read.type && memcmp(bits, last_read.bits, sizeof bits) == 0;
  lua_pushboolean(L, here);
  return 1;
}

void lang_open_devmem(lua_State *L) {
  static const luaL_Reg fns[] = {{"read_here", l_read_here}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}

int lang_raise(lua_State *L) {
  push_where(L);
  lua_insert(L, -2);
  lua_concat(L, 2);
  return lua_error(L);
}

int lang_error(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lang_raise(L);
}

bool lang_mem_read(lua_State *L, jit_backend *be, void *dst, const char *src, size_t n, const char *what,
                   const char *name) {
  char err[768];
  if (prog_mem_read(be, dst, src, n, what, name, err, sizeof err)) return true;
  lua_pushstring(L, err);
  return false;
}

bool lang_mem_write(lua_State *L, jit_backend *be, char *dst, const void *src, size_t n, const char *what,
                    const char *name) {
  char err[768];
  if (prog_mem_write(be, dst, src, n, what, name, err, sizeof err)) return true;
  lua_pushstring(L, err);
  return false;
}

/* ---- staged views for bulk work --------------------------------------------------
** The buffer is malloc'd (a failure is a message, not the allocator's abort)
** and owned by a userdata box, so a Lua error between stage and unstage (out
** of memory building tables, ...) leaks nothing: the box's __gc frees it. */

static int staging_gc(lua_State *L) {
  char **box = luaL_checkudata(L, 1, LANG_STAGING);
  free(*box);
  *box = NULL;
  return 0;
}

char *lang_mem_stage(lua_State *L, jit_backend *be, char *dev, size_t n, bool load, const char *what,
                     const char *name) {
  if (prog_host_memory(be) || n == 0) {
    lua_pushnil(L);
    return dev;
  }
  char **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = NULL;
  if (luaL_newmetatable(L, LANG_STAGING)) {
    lua_pushcfunction(L, staging_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  *box = malloc(n);
  if (!*box) {
    if (!what) lua_pushfstring(L, "cannot copy %I bytes of device memory (out of host memory for the copy)",
                               (lua_Integer)n);
    else if (!name)
      lua_pushfstring(L, "%s: cannot copy %I bytes of device memory (out of host memory for the copy)", what,
                      (lua_Integer)n);
    else
      lua_pushfstring(L, "%s '%s': cannot copy %I bytes of device memory (out of host memory for the copy)",
                      what, name, (lua_Integer)n);
    return NULL;
  }
  if (load && !lang_mem_read(L, be, *box, dev, n, what, name)) return NULL;
  return *box;
}

bool lang_mem_unstage(lua_State *L, jit_backend *be, int box_idx, char *dev, size_t n, bool store,
                      const char *what, const char *name) {
  char **box = luaL_testudata(L, box_idx, LANG_STAGING);
  if (!box || !*box) return true;   /* nothing staged: the view was the memory itself */
  bool ok = !store || lang_mem_write(L, be, dev, *box, n, what, name);
  free(*box);                       /* now rather than at the next GC: it can be large */
  *box = NULL;
  return ok;
}

/* ---- one element's bytes <-> a Lua number ------------------------------------------ */

void lang_push_number(lua_State *L, ir_type t, const char *bytes) {
  switch (t) {
#define INT(T, ctype) \
  case IR_##T: { ctype v; memcpy(&v, bytes, sizeof v); lua_pushinteger(L, (lua_Integer)v); break; }
  INT(i8, int8_t) INT(i16, int16_t) INT(i32, int32_t) INT(i64, int64_t)
  INT(u8, uint8_t) INT(u16, uint16_t) INT(u32, uint32_t) INT(u64, uint64_t)
#undef INT
  case IR_f32: { float v; memcpy(&v, bytes, sizeof v); lua_pushnumber(L, v); break; }
  case IR_f64: { double v; memcpy(&v, bytes, sizeof v); lua_pushnumber(L, v); break; }
  default: lua_pushnil(L); break;
  }
}

void lang_encode_number(lua_State *L, ir_type t, int idx, char *bytes) {
  if (ir_type_is_float(t)) {
    if (t == IR_f32 && lua_isinteger(L, idx)) {   /* one rounding, as a kernel's conversion */
      float f = (float)lua_tointeger(L, idx);
      memcpy(bytes, &f, sizeof f);
      return;
    }
    double d = luaL_checknumber(L, idx);
    if (t == IR_f32) { float f = (float)d; memcpy(bytes, &f, sizeof f); }
    else memcpy(bytes, &d, sizeof d);
    return;
  }
  int ok;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok) luaL_error(L, "value is not an integer");
  uint64_t u = (uint64_t)v;
  switch (ir_type_bits(t)) {   /* integers wrap to the width */
  case 8: { uint8_t x = (uint8_t)u; memcpy(bytes, &x, 1); break; }
  case 16: { uint16_t x = (uint16_t)u; memcpy(bytes, &x, 2); break; }
  case 32: { uint32_t x = (uint32_t)u; memcpy(bytes, &x, 4); break; }
  default: memcpy(bytes, &u, 8); break;
  }
}
