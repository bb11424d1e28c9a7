/*
** field.c -- host (Lua-scope) access to field elements: x[i][j], x[i][j] = v,
** x:fill(v), x:to_table(), x:from_table(t). Every access is bounds-checked; a bad index returns
** nil plus a message so the Lua side can raise it at the user's line.
**
** Each function takes the instance (an lt.tree instance, or nil for the
** tree's default one). Fields under sparse levels go through the sparse
** runtime: reads of inactive cells give 0 without activating anything,
** writes activate; fill writes only the active cells.
*/
#include <stdio.h>
#include <string.h>

#include "lang.h"

/* The place at idx and the root container of the instance at idx + 1. */
static ir_snode *check_place(lua_State *L, lang_program *p, int idx, char **mem) {
  lua_Integer id = luaL_checkinteger(L, idx);
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id] ||
      p->ir->snodes[id]->kind != IR_SN_place)
    luaL_error(L, "internal error: SNode %d is not a place", (int)id);
  ir_snode *s = p->ir->snodes[id];
  *mem = lang_root_for(L, p, s, idx + 1);
  return s;
}

/* The element's address for a read (NULL: inactive, reads as 0) or a write
** (activates; NULL when the pool is exhausted: jit_sparse_take_error says why). */
static char *element(lang_program *p, const ir_snode *s, char *mem, const int64_t *idx, bool write) {
  if (!ir_snode_under_sparse(s)) return mem + ir_snode_offset(s, idx);
  return jit_sparse_element(p->sparse, s, mem, idx, write);
}

static void push_value(lua_State *L, ir_type t, const char *ptr);

static void push_elem(lua_State *L, ir_type t, const char *ptr) {
  if (!ptr) {
    if (ir_type_is_float(t)) lua_pushnumber(L, 0.0);
    else lua_pushinteger(L, 0);
    return;
  }
  push_value(L, t, ptr);
}

static void push_value(lua_State *L, ir_type t, const char *ptr) {
  switch (t) {
#define INT(T, ctype) case IR_##T: { ctype v; memcpy(&v, ptr, sizeof v); lua_pushinteger(L, (lua_Integer)v); break; }
  INT(i8, int8_t) INT(i16, int16_t) INT(i32, int32_t) INT(i64, int64_t)
  INT(u8, uint8_t) INT(u16, uint16_t) INT(u32, uint32_t) INT(u64, uint64_t)
#undef INT
  case IR_f32: { float v; memcpy(&v, ptr, sizeof v); lua_pushnumber(L, v); break; }
  case IR_f64: { double v; memcpy(&v, ptr, sizeof v); lua_pushnumber(L, v); break; }
  default: lua_pushnil(L); break;
  }
}

/* Writes the Lua value at idx; integers wrap to the width, floats round. The
** Lua side has already rejected non-numbers and non-integral floats for
** integer fields. */
static void store_elem(lua_State *L, ir_type t, char *ptr, int idx) {
  if (ir_type_is_float(t)) {
    double d = luaL_checknumber(L, idx);
    if (t == IR_f32) { float f = (float)d; memcpy(ptr, &f, sizeof f); }
    else memcpy(ptr, &d, sizeof d);
    return;
  }
  lua_Integer v;
  if (lua_isinteger(L, idx)) v = lua_tointeger(L, idx);
  else {
    int ok;
    v = lua_tointegerx(L, idx, &ok);
    if (!ok) luaL_error(L, "value is not an integer");
  }
  uint64_t u = (uint64_t)v;
  switch (ir_type_bits(t)) {
  case 8: { uint8_t x = (uint8_t)u; memcpy(ptr, &x, 1); break; }
  case 16: { uint16_t x = (uint16_t)u; memcpy(ptr, &x, 2); break; }
  case 32: { uint32_t x = (uint32_t)u; memcpy(ptr, &x, 4); break; }
  default: memcpy(ptr, &u, 8); break;
  }
}

static void shape_text(const ir_snode *s, char *buf, size_t len) {
  size_t n = 0;
  n += snprintf(buf + n, len - n, "(");
  for (int i = 0; i < s->nidx && n < len; i++)
    n += snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s->total_shape[i]);
  if (n < len) snprintf(buf + n, len - n, ")");
}

/* Reads nidx indices from the stack starting at first; on a bad one pushes
** nil + message and returns false. */
static bool read_indices(lua_State *L, const ir_snode *s, int first, int64_t *idx) {
  int given = lua_gettop(L) - first + 1;
  if (given != s->nidx) {
    lua_pushnil(L);
    lua_pushfstring(L, "field '%s' has %d indices, got %d", s->name, s->nidx, given);
    return false;
  }
  for (int i = 0; i < s->nidx; i++) {
    int ok;
    idx[i] = lua_tointegerx(L, first + i, &ok);
    if (!ok) {
      const char *text = luaL_tolstring(L, first + i, NULL);
      lua_pushnil(L);
      lua_pushfstring(L, "index %d of field '%s' must be an integer (got %s)", i, s->name, text);
      return false;
    }
    if (idx[i] < 0 || idx[i] >= s->total_shape[i]) {
      char shape[160];
      shape_text(s, shape, sizeof shape);
      lua_pushnil(L);
      lua_pushfstring(L, "index %I out of range for axis %d of field '%s' with shape %s",
                      (lua_Integer)idx[i], i, s->name, shape);
      return false;
    }
  }
  return true;
}

/* core.field_get(prog, id, instance|nil, i...) -> value | nil, message */
static int l_field_get(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  int64_t idx[IR_MAX_INDICES] = {0};
  if (!read_indices(L, s, 4, idx)) return 2;
  push_elem(L, s->dtype, element(p, s, mem, idx, false));
  return 1;
}

/* core.field_set(prog, id, instance|nil, value, i...) -> true | nil, message */
static int l_field_set(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  int64_t idx[IR_MAX_INDICES] = {0};
  if (!read_indices(L, s, 5, idx)) return 2;
  char *e = element(p, s, mem, idx, true);
  if (!e) {
    char msg[768] = "";
    if (!jit_sparse_take_error(p->sparse, p->ir, msg, sizeof msg))
      snprintf(msg, sizeof msg, "cannot activate the cell of field '%s'", s->name);
    lua_pushnil(L);
    lua_pushstring(L, msg);
    return 2;
  }
  store_elem(L, s->dtype, e, 4);
  lua_pushboolean(L, 1);
  return 1;
}

/* Advances a row-major multi-index; false after the last one. */
static bool next_index(const ir_snode *s, int64_t *idx) {
  for (int i = s->nidx - 1; i >= 0; i--) {
    if (++idx[i] < s->total_shape[i]) return true;
    idx[i] = 0;
  }
  return false;
}

static bool empty_field(const ir_snode *s) {
  for (int i = 0; i < s->nidx; i++)
    if (s->total_shape[i] <= 0) return true;
  return false;
}

/* core.field_fill(prog, id, instance|nil, value): every element of a dense
** field; only the active elements of a sparse one (nothing is activated). */
static int l_field_fill(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  if (empty_field(s)) return 0;
  int64_t idx[IR_MAX_INDICES] = {0};
  do {
    char *e = element(p, s, mem, idx, false);
    if (e) store_elem(L, s->dtype, e, 4);
  } while (next_index(s, idx));
  return 0;
}

static void build_table(lua_State *L, lang_program *p, const ir_snode *s, char *mem, int64_t *idx,
                        int axis) {
  if (axis == s->nidx) {
    push_elem(L, s->dtype, element(p, s, mem, idx, false));
    return;
  }
  lua_createtable(L, (int)s->total_shape[axis], 0);
  for (int64_t i = 0; i < s->total_shape[axis]; i++) {
    idx[axis] = i;
    build_table(L, p, s, mem, idx, axis + 1);
    lua_rawseti(L, -2, i + 1);
  }
}

/* core.field_to_table(prog, id, instance|nil) -> nested tables, 1-based
** (t[i+1][j+1] = x[i][j]); inactive elements are 0 */
static int l_field_to_table(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  int64_t idx[IR_MAX_INDICES] = {0};
  luaL_checkstack(L, s->nidx + 4, "field nesting");
  build_table(L, p, s, mem, idx, 0);
  return 1;
}

/* from_table's walk: writes the numbers of the nested table at the top of
** the stack (and pops it) into the elements from axis `axis` on. Each level may count from
** 0 or from 1 (Lua literals); after the indices, the keys at stack slots
** [keys, keys + nkeys) pick the component out of the element's value. On a
** bad entry leaves nil + message on the stack and returns false. */
typedef struct {
  lang_program *p;
  const ir_snode *s;
  char *mem;
  int keys, nkeys;
  int64_t idx[IR_MAX_INDICES];
  int base[IR_MAX_INDICES];          /* each level's first index: 0 or 1 */
} fill_walk;

static bool bad_entry(lua_State *L, fill_walk *w, int axis, const char *what) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "t");
  for (int i = 0; i < axis; i++)
    lua_pushfstring(L, "[%I]", (lua_Integer)(w->idx[i] + w->base[i])), luaL_addvalue(&b);
  luaL_pushresult(&b);
  const char *path = lua_tostring(L, -1);
  char shape[160];
  shape_text(w->s, shape, sizeof shape);
  lua_pushnil(L);
  lua_pushfstring(L, "%s %s (the field has shape %s)", path, what, shape);
  return false;
}

static bool fill_from(lua_State *L, fill_walk *w, int axis) {
  const ir_snode *s = w->s;
  if (axis == s->nidx) {
    if (w->nkeys > 0 && lua_isnil(L, -1)) return bad_entry(L, w, axis, "is missing");
    for (int k = 0; k < w->nkeys; k++) {   /* the component of a composite element */
      if (!lua_istable(L, -1))
        return bad_entry(L, w, axis, k ? "has a component that is not a table" : "is not a table of components");
      lua_pushvalue(L, w->keys + k);
      lua_gettable(L, -2);
      lua_remove(L, -2);
    }
    if (!lua_isnumber(L, -1))
      return bad_entry(L, w, axis, lua_isnil(L, -1) ? (w->nkeys ? "lacks a component" : "is missing")
                                                    : "is not a number");
    if (!ir_type_is_float(s->dtype) && !lua_isinteger(L, -1)) {
      int ok;
      lua_tointegerx(L, -1, &ok);
      if (!ok) return bad_entry(L, w, axis, "is not an integer (the field holds integers)");
    }
    char *e = element(w->p, s, w->mem, w->idx, true);
    if (!e) {
      char msg[768] = "";
      if (!jit_sparse_take_error(w->p->sparse, w->p->ir, msg, sizeof msg))
        snprintf(msg, sizeof msg, "cannot activate the cell of field '%s'", s->name);
      lua_pushnil(L);
      lua_pushstring(L, msg);
      return false;
    }
    store_elem(L, s->dtype, e, -1);
    lua_pop(L, 1);
    return true;
  }
  if (!lua_istable(L, -1)) return bad_entry(L, w, axis, "is not a table");
  w->base[axis] = lua_rawgeti(L, -1, 0) == LUA_TNIL ? 1 : 0;
  lua_pop(L, 1);
  for (int64_t i = 0; i < s->total_shape[axis]; i++) {
    w->idx[axis] = i;
    lua_rawgeti(L, -1, (lua_Integer)i + w->base[axis]);
    if (!fill_from(L, w, axis + 1)) return false;
  }
  lua_pop(L, 1);   /* like a leaf, a level consumes its table */
  return true;
}

/* core.field_from_table(prog, id, instance|nil, t, key...) -> true | nil,
** message: x[i][j] = t[i][j] (or t[i+1][j+1]) for every element, each value
** t[...][key1][key2]... when keys are given (a component of a composite
** element); writes activate cells of sparse fields. */
static int l_field_from_table(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  fill_walk w = {.p = p, .keys = 5, .nkeys = lua_gettop(L) - 4};
  w.s = check_place(L, p, 2, &w.mem);
  luaL_checkstack(L, w.s->nidx + w.nkeys + 8, "field nesting");
  lua_pushvalue(L, 4);
  if (!fill_from(L, &w, 0)) return 2;
  lua_pushboolean(L, 1);
  return 1;
}

/* core.field_active(prog, id, instance|nil) -> {{i, j, ...}, ...}: the
** indices of the active elements, row-major (every element of a dense field) */
static int l_field_active(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  lua_newtable(L);
  if (empty_field(s)) return 1;
  int64_t idx[IR_MAX_INDICES] = {0};
  lua_Integer n = 0;
  do {
    if (!element(p, s, mem, idx, false)) continue;
    lua_createtable(L, s->nidx, 0);
    for (int i = 0; i < s->nidx; i++) {
      lua_pushinteger(L, (lua_Integer)idx[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_rawseti(L, -2, ++n);
  } while (next_index(s, idx));
  return 1;
}

void lang_open_field(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"field_get", l_field_get},
    {"field_set", l_field_set},
    {"field_fill", l_field_fill},
    {"field_to_table", l_field_to_table},
    {"field_from_table", l_field_from_table},
    {"field_active", l_field_active},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
