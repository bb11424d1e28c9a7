/*
** ndarray.c -- lt.ndarray: arrays of one scalar type that own their memory,
** passed to kernels as arguments (stdlib/lattice/ndarray.lua is the Lua half).
**
** The userdata holds the element type, the shape and a 64-byte aligned host
** allocation, freed by __gc when Lua collects the array. Elements are
** row-major (the last index varies fastest), numbered 0..size-1. A kernel
** gets the data's address and the extents as arguments, so one compiled
** kernel serves every shape. (The CUDA backend will keep a device copy next
** to the host one; the Lua side only sees this userdata.)
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"

#define LANG_NDARRAY "lattice.ndarray"

typedef struct {
  ir_type dtype;
  int ndim;
  int64_t shape[IR_MAX_INDICES];
  int64_t size;                    /* elements */
  char *data;                      /* NULL once freed */
} lang_ndarray;

static lang_ndarray *check_nd(lua_State *L, int idx) {
  lang_ndarray *a = luaL_checkudata(L, idx, LANG_NDARRAY);
  if (!a->data) luaL_error(L, "internal error: the ndarray's memory was freed");
  return a;
}

static int l_nd_gc(lua_State *L) {
  lang_ndarray *a = luaL_checkudata(L, 1, LANG_NDARRAY);
  free(a->data);
  a->data = NULL;
  return 0;
}

/* core.ndarray_new(type, {n1, n2, ...}) -> userdata | nil, message.
** The Lua side has checked the type and that every extent is a positive
** integer; this checks the total size. */
static int l_nd_new(lua_State *L) {
  lua_Integer t = luaL_checkinteger(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int ndim = (int)luaL_len(L, 2);
  if (t <= IR_i1 || t >= IR_NUM_TYPES || ndim < 1 || ndim > IR_MAX_INDICES)
    return luaL_error(L, "internal error: ndarray of type %d with %d dimensions", (int)t, ndim);
  lang_ndarray *a = lua_newuserdatauv(L, sizeof *a, 0);
  memset(a, 0, sizeof *a);
  a->dtype = (ir_type)t;
  a->ndim = ndim;
  a->size = 1;
  int64_t esize = ir_type_bits(a->dtype) / 8;
  for (int i = 0; i < ndim; i++) {
    lua_geti(L, 2, i + 1);
    a->shape[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
    /* extents and the element count are i32 in kernels */
    if (a->shape[i] <= 0 || a->shape[i] > INT32_MAX || a->size > INT32_MAX / a->shape[i]) {
      lua_pushnil(L);
      lua_pushstring(L, "the array is too large (at most 2^31 - 1 elements)");
      return 2;
    }
    a->size *= a->shape[i];
  }
  size_t bytes = (size_t)(a->size * esize + 63) / 64 * 64;
  a->data = aligned_alloc(64, bytes);
  if (!a->data) {
    lua_pushnil(L);
    lua_pushfstring(L, "out of memory allocating %I bytes", (lua_Integer)bytes);
    return 2;
  }
  memset(a->data, 0, bytes);
  luaL_setmetatable(L, LANG_NDARRAY);
  return 1;
}

static lua_Integer check_elem(lua_State *L, lang_ndarray *a, int idx) {
  lua_Integer i = luaL_checkinteger(L, idx);
  if (i < 0 || i >= a->size) luaL_error(L, "internal error: element %I of %I", i, (lua_Integer)a->size);
  return i;
}

/* Pushes element i as a Lua number (integer types as integers). */
static void push_elem(lua_State *L, const lang_ndarray *a, int64_t i) {
  const char *p = a->data + i * (ir_type_bits(a->dtype) / 8);
  switch (a->dtype) {
  case IR_i8: lua_pushinteger(L, *(const int8_t *)p); break;
  case IR_i16: lua_pushinteger(L, *(const int16_t *)p); break;
  case IR_i32: lua_pushinteger(L, *(const int32_t *)p); break;
  case IR_i64: lua_pushinteger(L, *(const int64_t *)p); break;
  case IR_u8: lua_pushinteger(L, *(const uint8_t *)p); break;
  case IR_u16: lua_pushinteger(L, *(const uint16_t *)p); break;
  case IR_u32: lua_pushinteger(L, *(const uint32_t *)p); break;
  case IR_u64: lua_pushinteger(L, (lua_Integer) * (const uint64_t *)p); break;
  case IR_f32: lua_pushnumber(L, *(const float *)p); break;
  default: lua_pushnumber(L, *(const double *)p); break;
  }
}

/* Stores the value at idx (already converted by the Lua side: an integer
** for integer types) into element i. */
static void store_elem(lua_State *L, lang_ndarray *a, int64_t i, int idx) {
  char *p = a->data + i * (ir_type_bits(a->dtype) / 8);
  if (a->dtype == IR_f32) { *(float *)p = (float)luaL_checknumber(L, idx); return; }
  if (a->dtype == IR_f64) { *(double *)p = luaL_checknumber(L, idx); return; }
  lua_Integer v = luaL_checkinteger(L, idx);
  switch (a->dtype) {
  case IR_i8: case IR_u8: *(uint8_t *)p = (uint8_t)v; break;
  case IR_i16: case IR_u16: *(uint16_t *)p = (uint16_t)v; break;
  case IR_i32: case IR_u32: *(uint32_t *)p = (uint32_t)v; break;
  default: *(uint64_t *)p = (uint64_t)v; break;
  }
}

/* core.ndarray_get(a, i) / core.ndarray_set(a, i, v): element i (row-major) */
static int l_nd_get(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  push_elem(L, a, check_elem(L, a, 2));
  return 1;
}

static int l_nd_set(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  store_elem(L, a, check_elem(L, a, 2), 3);
  return 0;
}

/* core.ndarray_fill(a, v) */
static int l_nd_fill(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  store_elem(L, a, 0, 2);
  size_t es = (size_t)ir_type_bits(a->dtype) / 8;
  for (int64_t i = 1; i < a->size; i++) memcpy(a->data + i * (int64_t)es, a->data, es);
  return 0;
}

/* core.ndarray_to_list(a) -> {v0, v1, ...} (flat, row-major) */
static int l_nd_to_list(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  lua_createtable(L, (int)(a->size < INT32_MAX ? a->size : 0), 0);
  for (int64_t i = 0; i < a->size; i++) {
    push_elem(L, a, i);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* core.ndarray_set_list(a, {v0, v1, ...}): values already converted */
static int l_nd_set_list(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  for (int64_t i = 0; i < a->size; i++) {
    lua_rawgeti(L, 2, i + 1);
    store_elem(L, a, i, -1);
    lua_pop(L, 1);
  }
  return 0;
}

/* core.ndarray_address(a) -> the data's address as an integer (a kernel's u64 argument) */
static int l_nd_address(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  lua_pushinteger(L, (lua_Integer)(uintptr_t)a->data);
  return 1;
}

void lang_open_ndarray(lua_State *L) {
  if (luaL_newmetatable(L, LANG_NDARRAY)) {
    lua_pushcfunction(L, l_nd_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"ndarray_new", l_nd_new},
    {"ndarray_get", l_nd_get},
    {"ndarray_set", l_nd_set},
    {"ndarray_fill", l_nd_fill},
    {"ndarray_to_list", l_nd_to_list},
    {"ndarray_set_list", l_nd_set_list},
    {"ndarray_address", l_nd_address},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
