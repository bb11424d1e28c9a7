/*
** ndarray.c -- lt.ndarray: arrays of one scalar type that own their memory,
** passed to kernels as arguments (stdlib/lattice/ndarray.lua is the Lua half).
**
** The userdata holds the element type, the shape and the data, freed by __gc
** when Lua collects the array. Elements are row-major (the last index varies
** fastest), numbered 0..size-1. A kernel gets the data's address and the
** extents as arguments, so one compiled kernel serves every shape.
**
** Where the data lives: on a backend with host memory (the CPU), a 64-byte
** aligned host allocation that belongs to no program. On a device (CUDA),
** memory from the program's be->mem_alloc, reached only through devmem.c
** (every Lua-scope access is a copy); such an array belongs to that program
** and is unusable once lt.init resets it. An array made before any lt.init
** starts in host memory and moves to the device on its first launch there.
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
  size_t bytes;                    /* the allocation */
  char *data;                      /* NULL once freed */
  lang_program *prog;              /* device memory: the program whose backend holds
                                      data (user value 1 keeps it alive); NULL: host */
} lang_ndarray;

static lang_ndarray *check_nd(lua_State *L, int idx) {
  lang_ndarray *a = luaL_checkudata(L, idx, LANG_NDARRAY);
  if (!a->data) luaL_error(L, "internal error: the ndarray's memory was freed");
  if (a->prog && !a->prog->ir)
    lang_error(L, "this ndarray was in the device memory of a program that lt.init has reset; its values "
                  "are gone: make it again after lt.init");
  return a;
}

/* The backend whose memory holds a's data; NULL: host memory. */
static jit_backend *nd_backend(const lang_ndarray *a) { return a->prog ? a->prog->be : NULL; }

static size_t elem_bytes(const lang_ndarray *a) { return (size_t)ir_type_bits(a->dtype) / 8; }

/* A program whose backend's memory is not the host's, or NULL. */
static lang_program *device_program(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return NULL;
  lang_program *p = luaL_checkudata(L, idx, LANG_PROGRAM);
  return p->ir && p->be && !lang_host_memory(p->be) ? p : NULL;
}

static int l_nd_gc(lua_State *L) {
  lang_ndarray *a = luaL_checkudata(L, 1, LANG_NDARRAY);
  if (!a->prog) free(a->data);
  else if (a->data && a->prog->ir && a->prog->be) a->prog->be->mem_free(a->prog->be, a->data, a->bytes);
  /* (a reset program's backend took its memory with it) */
  a->data = NULL;
  return 0;
}

/* core.ndarray_new(type, {n1, n2, ...}, prog|nil) -> userdata | nil, message.
** The Lua side has checked the type and that every extent is a positive
** integer; this checks the total size. prog: the current program, whose
** device memory takes the data when it is not host memory. */
static int l_nd_new(lua_State *L) {
  lua_Integer t = luaL_checkinteger(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lang_program *dev = device_program(L, 3);
  int ndim = (int)luaL_len(L, 2);
  if (t <= IR_i1 || t >= IR_NUM_TYPES || ndim < 1 || ndim > IR_MAX_INDICES)
    return luaL_error(L, "internal error: ndarray of type %d with %d dimensions", (int)t, ndim);
  lang_ndarray *a = lua_newuserdatauv(L, sizeof *a, 1);
  memset(a, 0, sizeof *a);
  a->dtype = (ir_type)t;
  a->ndim = ndim;
  a->size = 1;
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
  a->bytes = ((size_t)a->size * elem_bytes(a) + 63) / 64 * 64;
  if (dev) {
    a->data = dev->be->mem_alloc(dev->be, a->bytes);   /* zeroed */
    if (!a->data) {
      lua_pushnil(L);
      lua_pushfstring(L, "cannot allocate %I bytes of device memory (%s)", (lua_Integer)a->bytes,
                      dev->be->error);
      return 2;
    }
    a->prog = dev;
    lua_pushvalue(L, 3);
    lua_setiuservalue(L, -2, 1);
  } else {
    a->data = aligned_alloc(64, a->bytes);
    if (!a->data) {
      lua_pushnil(L);
      lua_pushfstring(L, "out of memory allocating %I bytes", (lua_Integer)a->bytes);
      return 2;
    }
    memset(a->data, 0, a->bytes);
  }
  luaL_setmetatable(L, LANG_NDARRAY);
  return 1;
}

static lua_Integer check_elem(lua_State *L, lang_ndarray *a, int idx) {
  lua_Integer i = luaL_checkinteger(L, idx);
  if (i < 0 || i >= a->size) luaL_error(L, "internal error: element %I of %I", i, (lua_Integer)a->size);
  return i;
}

/* core.ndarray_get(a, i) / core.ndarray_set(a, i, v): element i (row-major);
** v already converted by the Lua side (an integer for integer types) */
static int l_nd_get(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  lua_Integer i = check_elem(L, a, 2);
  char v[8];
  if (!lang_mem_read(L, nd_backend(a), v, a->data + i * (lua_Integer)elem_bytes(a), elem_bytes(a), "ndarray",
                     NULL))
    return lang_raise(L);
  lang_push_number(L, a->dtype, v);
  lang_note_read(L);
  return 1;
}

static int l_nd_set(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  lua_Integer i = check_elem(L, a, 2);
  char v[8];
  lang_encode_number(L, a->dtype, 3, v);
  if (!lang_mem_write(L, nd_backend(a), a->data + i * (lua_Integer)elem_bytes(a), v, elem_bytes(a), "ndarray",
                      NULL))
    return lang_raise(L);
  return 0;
}

/* The bulk operations below work on a host view of the whole array (box: its
** owner's stack slot): the data itself in host memory, one copy each way on a
** device. */
static char *open_view(lua_State *L, lang_ndarray *a, bool load, int *box) {
  size_t n = (size_t)a->size * elem_bytes(a);
  char *view = lang_mem_stage(L, nd_backend(a), a->data, n, load, "ndarray", NULL);
  if (!view) lang_raise(L);
  *box = lua_gettop(L);
  return view;
}

static void close_view(lua_State *L, lang_ndarray *a, int box, bool store) {
  size_t n = (size_t)a->size * elem_bytes(a);
  if (!lang_mem_unstage(L, nd_backend(a), box, a->data, n, store, "ndarray", NULL)) lang_raise(L);
}

/* core.ndarray_fill(a, v) */
static int l_nd_fill(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  size_t es = elem_bytes(a), n = (size_t)a->size * es;
  char v[8];
  lang_encode_number(L, a->dtype, 2, v);
  int box;
  char *view = open_view(L, a, false, &box);
  for (size_t off = 0; off < n; off += es) memcpy(view + off, v, es);
  close_view(L, a, box, true);
  return 0;
}

/* core.ndarray_to_list(a) -> {v0, v1, ...} (flat, row-major) */
static int l_nd_to_list(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  int64_t es = (int64_t)elem_bytes(a);
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
  lang_ndarray *a = check_nd(L, 1);
  lua_settop(L, 2);
  const char *vals = lang_table_encode(L, 2, a->ndim, a->shape, a->dtype, "ndarray");
  if (!vals) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  int box;
  char *view = open_view(L, a, false, &box);
  memcpy(view, vals, (size_t)a->size * elem_bytes(a));
  close_view(L, a, box, true);
  lua_pushboolean(L, 1);
  return 1;
}

/* Moves a host array into prog's device memory (its first launch there). */
static void move_to_device(lua_State *L, lang_ndarray *a, lang_program *prog, int prog_idx) {
  jit_backend *be = prog->be;
  if (a->prog) lang_error(L, "this ndarray is in the device memory of another program");
  char *d = be->mem_alloc(be, a->bytes);
  if (!d)
    lang_error(L, "cannot allocate %I bytes of device memory for an ndarray (%s)", (lua_Integer)a->bytes,
               be->error);
  if (!lang_mem_write(L, be, d, a->data, a->bytes, "ndarray", NULL)) {
    be->mem_free(be, d, a->bytes);
    lang_raise(L);
  }
  free(a->data);
  a->data = d;
  a->prog = prog;
  lua_pushvalue(L, prog_idx);
  lua_setiuservalue(L, 1, 1);
}

/* core.ndarray_address(a, prog|nil) -> the data's address as an integer (a
** kernel's u64 argument): a device address when prog's memory is a device's */
static int l_nd_address(lua_State *L) {
  lang_ndarray *a = check_nd(L, 1);
  lang_program *dev = device_program(L, 2);
  if (dev && a->prog != dev) move_to_device(L, a, dev, 2);
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
    {"ndarray_from_table", l_nd_from_table},
    {"ndarray_address", l_nd_address},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
