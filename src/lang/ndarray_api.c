/*
** ndarray_api.c -- lt.ndarray's C half: a userdata holding a reference to a
** prog_ndarray (src/program/ndarray.c), and element and bulk access from Lua
** (stdlib/lattice/ndarray.lua is the Lua half).
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"

#define LANG_NDARRAY "lattice.ndarray"

typedef struct {
  prog_ndarray *a;
} nd_box;

static prog_ndarray *check_nd(lua_State *L, int idx) {
  nd_box *b = luaL_checkudata(L, idx, LANG_NDARRAY);
  if (!b->a || !b->a->data) luaL_error(L, "internal error: the ndarray's memory was freed");
  char err[256];
  if (!prog_ndarray_usable(b->a, err, sizeof err))
    lang_error(L, "this ndarray was in the device memory of a program that lt.init has reset; its values "
                  "are gone: make it again after lt.init");
  return b->a;
}

/* The current program, or NULL. */
static prog_program *opt_program(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return NULL;
  prog_program *p = lang_to_program(L, idx);
  return p->ir ? p : NULL;
}

static int l_nd_gc(lua_State *L) {
  nd_box *b = luaL_checkudata(L, 1, LANG_NDARRAY);
  prog_ndarray_release(b->a);
  b->a = NULL;
  return 0;
}

void lang_push_ndarray(lua_State *L, prog_ndarray *a) {
  nd_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->a = a;
  prog_ndarray_retain(a);
  luaL_setmetatable(L, LANG_NDARRAY);
}

prog_ndarray *lang_to_ndarray(lua_State *L, int idx) {
  nd_box *b = luaL_testudata(L, idx, LANG_NDARRAY);
  return b ? b->a : NULL;
}

void lang_drop_ndarray(lua_State *L, int idx) {
  nd_box *b = luaL_testudata(L, idx, LANG_NDARRAY);
  if (!b || !b->a) return;
  prog_ndarray *a = b->a;
  b->a = NULL;
  prog_ndarray_release(a);
}

/* core.ndarray_new(type, {n1, n2, ...}, prog|nil) -> userdata | nil, message.
** The Lua side has checked the type and that every extent is a positive
** integer. prog: the current program, whose device memory takes the data
** when it is not host memory. */
static int l_nd_new(lua_State *L) {
  lua_Integer t = luaL_checkinteger(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  prog_program *p = opt_program(L, 3);
  int ndim = (int)luaL_len(L, 2);
  if (t <= IR_i1 || t >= IR_NUM_TYPES || ndim < 1 || ndim > IR_MAX_INDICES)
    return luaL_error(L, "internal error: ndarray of type %d with %d dimensions", (int)t, ndim);
  int64_t shape[IR_MAX_INDICES];
  for (int i = 0; i < ndim; i++) {
    lua_geti(L, 2, i + 1);
    shape[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  nd_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->a = NULL;
  luaL_setmetatable(L, LANG_NDARRAY);
  char err[256];
  b->a = prog_ndarray_new(p, (ir_type)t, ndim, shape, err, sizeof err);
  if (!b->a) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 1;
}

/* core.ndarray_info(ud) -> type, {n1, n2, ...}: for an array made in C */
static int l_nd_info(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  lua_pushinteger(L, a->dtype);
  lua_createtable(L, a->ndim, 0);
  for (int i = 0; i < a->ndim; i++) {
    lua_pushinteger(L, a->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 2;
}

static lua_Integer check_elem(lua_State *L, prog_ndarray *a, int idx) {
  lua_Integer i = luaL_checkinteger(L, idx);
  if (i < 0 || i >= a->size) luaL_error(L, "internal error: element %I of %I", i, (lua_Integer)a->size);
  return i;
}

/* core.ndarray_get(a, i) / core.ndarray_set(a, i, v): element i (row-major);
** v already converted by the Lua side (an integer for integer types) */
static int l_nd_get(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  lua_Integer i = check_elem(L, a, 2);
  size_t es = prog_ndarray_elem_bytes(a);
  char v[8];
  if (!lang_mem_read(L, prog_ndarray_backend(a), v, a->data + i * (lua_Integer)es, es, "ndarray", NULL))
    return lang_raise(L);
  lang_push_number(L, a->dtype, v);
  lang_note_read(L);
  return 1;
}

static int l_nd_set(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  lua_Integer i = check_elem(L, a, 2);
  size_t es = prog_ndarray_elem_bytes(a);
  char v[8];
  lang_encode_number(L, a->dtype, 3, v);
  if (!lang_mem_write(L, prog_ndarray_backend(a), a->data + i * (lua_Integer)es, v, es, "ndarray", NULL))
    return lang_raise(L);
  return 0;
}

/* The bulk operations below work on a host view of the whole array (box: its
** owner's stack slot): the data itself in host memory, one copy each way on a
** device. */
static char *open_view(lua_State *L, prog_ndarray *a, bool load, int *box) {
  size_t n = (size_t)a->size * prog_ndarray_elem_bytes(a);
  char *view = lang_mem_stage(L, prog_ndarray_backend(a), a->data, n, load, "ndarray", NULL);
  if (!view) lang_raise(L);
  *box = lua_gettop(L);
  return view;
}

static void close_view(lua_State *L, prog_ndarray *a, int box, bool store) {
  size_t n = (size_t)a->size * prog_ndarray_elem_bytes(a);
  if (!lang_mem_unstage(L, prog_ndarray_backend(a), box, a->data, n, store, "ndarray", NULL)) lang_raise(L);
}

/* core.ndarray_fill(a, v) */
static int l_nd_fill(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  size_t es = prog_ndarray_elem_bytes(a), n = (size_t)a->size * es;
  char v[8];
  lang_encode_number(L, a->dtype, 2, v);
  int box;
  char *view = open_view(L, a, false, &box);
  for (size_t off = 0; off < n; off += es) memcpy(view + off, v, es);
  close_view(L, a, box, true);
  return 0;
}

/* core.ndarray_copy(dst, src): every element of src into dst (a:copy_from(b);
** ndarray.lua has checked that the element types and shapes agree) */
static int l_nd_copy(lua_State *L) {
  prog_ndarray *d = check_nd(L, 1), *s = check_nd(L, 2);
  if (d->dtype != s->dtype || d->size != s->size)
    return luaL_error(L, "internal error: ndarray_copy between arrays of different types or sizes");
  if (d == s || d->data == s->data) return 0;
  size_t n = (size_t)d->size * prog_ndarray_elem_bytes(d);
  int bs, bd;
  const char *from = open_view(L, s, true, &bs);
  char *to = open_view(L, d, false, &bd);
  memcpy(to, from, n);
  close_view(L, d, bd, true);
  close_view(L, s, bs, false);
  return 0;
}

/* core.ndarray_to_list(a) -> {v0, v1, ...} (flat, row-major) */
static int l_nd_to_list(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  int64_t es = (int64_t)prog_ndarray_elem_bytes(a);
  int box;
  const char *view = open_view(L, a, true, &box);
  lua_createtable(L, (int)(a->size < INT32_MAX ? a->size : 0), 0);
  for (int64_t i = 0; i < a->size; i++) {
    lang_push_number(L, a->dtype, view + i * es);
    lua_rawseti(L, -2, i + 1);
  }
  close_view(L, a, box, false);
  return 1;
}

/* core.ndarray_from_table(a, t) -> true | nil, message: every element from
** nested tables of a's shape (datatable.c's rules), checked whole before
** anything is written. */
static int l_nd_from_table(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  lua_settop(L, 2);
  const char *vals = lang_table_encode(L, 2, a->ndim, a->shape, a->dtype, "ndarray");
  if (!vals) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  int box;
  char *view = open_view(L, a, false, &box);
  memcpy(view, vals, (size_t)a->size * prog_ndarray_elem_bytes(a));
  close_view(L, a, box, true);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.ndarray_address(a, prog|nil) -> the data's address as an integer (a
** kernel's u64 argument): a device address when prog's memory is a device's */
static int l_nd_address(lua_State *L) {
  prog_ndarray *a = check_nd(L, 1);
  prog_program *p = opt_program(L, 2);
  char err[512];
  char *d = prog_ndarray_address(a, p, err, sizeof err);
  if (!d) return lang_error(L, "%s", err);
  lua_pushinteger(L, (lua_Integer)(uintptr_t)d);
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
    {"ndarray_info", l_nd_info},
    {"ndarray_get", l_nd_get},
    {"ndarray_set", l_nd_set},
    {"ndarray_fill", l_nd_fill},
    {"ndarray_to_list", l_nd_to_list},
    {"ndarray_copy", l_nd_copy},
    {"ndarray_from_table", l_nd_from_table},
    {"ndarray_address", l_nd_address},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
