/*
** field.c -- host (Lua-scope) access to field elements: x[i][j], x[i][j] = v,
** x:fill(v), x:to_table(), x:from_table(t) (whose nested tables datatable.c
** walks). Every access is bounds-checked; a bad index returns nil plus a
** message so the Lua side can raise it at the user's line. Element reads
** note what they gave (lang_note_read) for x[i][j][k] one index too many.
**
** Each function takes the instance (an lt.tree instance, or nil for the
** tree's default one). Fields under sparse levels go through the sparse
** runtime: reads of inactive cells give 0 without activating anything,
** writes activate; fill writes only the active cells.
**
** Field memory is device memory (jit.h): it is touched only through
** devmem.c. Single elements are one copy each; the bulk operations (fill,
** to_table, from_table) of a field under dense levels copy the bytes it spans
** in its instance once each way and convert on the host (field_view).
*/
#include <stdio.h>
#include <string.h>

#include "lang.h"

/* The place at idx and the root container of the instance at idx + 1. */
static ir_snode *check_place(lua_State *L, prog_program *p, int idx, char **mem) {
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
static char *element(prog_program *p, const ir_snode *s, char *mem, const int64_t *idx, bool write) {
  if (!ir_snode_under_sparse(s)) return mem + ir_snode_offset(s, idx);
  return jit_sparse_element(p->sparse, s, mem, idx, write);
}

static size_t elem_bytes(const ir_snode *s) { return (size_t)(ir_type_bits(s->dtype) + 7) / 8; }

static void push_zero(lua_State *L, ir_type t) {
  if (ir_type_is_float(t)) lua_pushnumber(L, 0.0);
  else lua_pushinteger(L, 0);
}

/* Reads nidx indices from the stack starting at first, as the user writes
** them (with the field's offset), into 0-based idx; on a bad one pushes nil +
** message and returns false. */
static bool read_indices(lua_State *L, const ir_snode *s, int first, int64_t *idx) {
  int given = lua_gettop(L) - first + 1;
  if (given != s->nidx) {
    lua_pushnil(L);
    lua_pushfstring(L, "field '%s' has %d indices, got %d", s->name, s->nidx, given);
    return false;
  }
  for (int i = 0; i < s->nidx; i++) {
    int ok = 0;
    if (lua_type(L, first + i) == LUA_TNUMBER) idx[i] = lua_tointegerx(L, first + i, &ok);
    if (!ok) {   /* (a string is not converted: x["1"] is a mistake) */
      lang_push_value_text(L, first + i);
      const char *text = lua_tostring(L, -1);
      lua_pushnil(L);
      lua_pushfstring(L, "index %d of field '%s' must be an integer (got %s)", i, s->name, text);
      return false;
    }
    int64_t at = idx[i];                    /* as the user wrote it (the field's offset added) */
    idx[i] = (int64_t)((uint64_t)at - (uint64_t)s->index_offset[i]);   /* (wraps far out of range) */
    if (idx[i] < 0 || idx[i] >= s->total_shape[i]) {
      char box[200];
      prog_box_text(s, box, sizeof box);
      lua_pushnil(L);
      lua_pushfstring(L, "index %I out of range for axis %d of field '%s' with %s", (lua_Integer)at, i, s->name,
                      box);
      return false;
    }
  }
  return true;
}

/* Pushes why element() could not activate a cell of s for a write. */
static void push_activation_failure(lua_State *L, prog_program *p, const ir_snode *s) {
  char msg[768] = "";
  if (!jit_sparse_take_error(p->sparse, p->ir, msg, sizeof msg))
    snprintf(msg, sizeof msg, "cannot activate the cell of field '%s'", s->name);
  lua_pushstring(L, msg);
}

/* Returns nil + the message on top of the stack (the Lua side raises it at
** the user's line, naming the field). */
static int nil_message(lua_State *L) {
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

/* core.field_get(prog, id, instance|nil, i...) -> value | nil, message */
static int l_field_get(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  int64_t idx[IR_MAX_INDICES] = {0};
  if (!read_indices(L, s, 4, idx)) return 2;
  const char *e = element(p, s, mem, idx, false);
  char v[8];
  if (!e) push_zero(L, s->dtype);
  else if (!lang_mem_read(L, p->be, v, e, elem_bytes(s), "field", s->name)) return nil_message(L);
  else lang_push_number(L, s->dtype, v);
  lang_note_read(L);
  return 1;
}

/* core.field_set(prog, id, instance|nil, value, i...) -> true | nil, message */
static int l_field_set(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  int64_t idx[IR_MAX_INDICES] = {0};
  if (!read_indices(L, s, 5, idx)) return 2;
  char v[8];
  lang_encode_number(L, s->dtype, 4, v);
  char *e = element(p, s, mem, idx, true);
  if (!e) {
    push_activation_failure(L, p, s);
    return nil_message(L);
  }
  if (!lang_mem_write(L, p->be, e, v, elem_bytes(s), "field", s->name)) return nil_message(L);
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

/* ---- bulk access -------------------------------------------------------------
** A field under dense levels only lies inside [lo, lo + n) of its instance:
** lo is element (0, ..., 0)'s offset, and each level on the way down adds at
** most (num_cells - 1) cells to it. Bulk work reads that range into one host
** view (on the CPU the memory itself), converts there and writes it back
** whole: a read-modify-write, since the fields sharing the cells (an AoS
** layout) lie in the same range. Under sparse levels, the view is NULL and
** each element goes through the runtime and is copied on its own. */
typedef struct {
  prog_program *p;
  const ir_snode *s;
  char *mem;                       /* the instance's root container */
  char *view;                      /* dense: host view of mem + lo; NULL: per element */
  int64_t lo;
  size_t n;
  int box;                         /* stack slot of the view's owner (lang_mem_stage) */
} field_view;

/* Opens the view (load: with the field's values) and pushes its owner;
** false with the message pushed above it when the copy failed. */
static bool view_open(lua_State *L, field_view *v, prog_program *p, const ir_snode *s, char *mem, bool load) {
  *v = (field_view){.p = p, .s = s, .mem = mem};
  if (ir_snode_under_sparse(s) || empty_field(s)) {
    lua_pushnil(L);
    v->box = lua_gettop(L);
    return true;
  }
  int64_t zero[IR_MAX_INDICES] = {0};
  v->lo = ir_snode_offset(s, zero);
  int64_t n = (int64_t)elem_bytes(s);
  for (const ir_snode *a = s->parent; a; a = a->parent) n += (a->num_cells - 1) * a->cell_bytes;
  v->n = (size_t)n;
  v->view = lang_mem_stage(L, p->be, mem + v->lo, v->n, load, NULL, NULL);
  v->box = lua_gettop(L) - (v->view ? 0 : 1);
  return v->view != NULL;
}

/* Closes the view, writing it back when store (false: that copy failed,
** the message pushed). The owner stays on the stack. */
static bool view_close(lua_State *L, field_view *v, bool store) {
  char *view = v->view;
  v->view = NULL;
  return !view || lang_mem_unstage(L, v->p->be, v->box, v->mem + v->lo, v->n, store, NULL, NULL);
}

/* Sets *out to element idx's bytes: in the view, or copied into tmp; NULL
** when the cell is inactive (a read activates nothing). False when the copy
** failed (the message pushed). */
static bool view_read(lua_State *L, field_view *v, const int64_t *idx, char *tmp, const char **out) {
  if (v->view) {
    *out = v->view + (ir_snode_offset(v->s, idx) - v->lo);
    return true;
  }
  const char *e = element(v->p, v->s, v->mem, idx, false);
  *out = e ? tmp : NULL;
  return !e || lang_mem_read(L, v->p->be, tmp, e, elem_bytes(v->s), NULL, NULL);
}

/* Writes bytes into element idx. activate: activate its cell (false: skip an
** inactive one). False with the message pushed when activation (the pool is
** exhausted) or the copy failed. */
static bool view_write(lua_State *L, field_view *v, const int64_t *idx, const char *bytes, bool activate) {
  size_t n = elem_bytes(v->s);
  if (v->view) {
    memcpy(v->view + (ir_snode_offset(v->s, idx) - v->lo), bytes, n);
    return true;
  }
  char *e = element(v->p, v->s, v->mem, idx, activate);
  if (!e && activate) {
    push_activation_failure(L, v->p, v->s);
    return false;
  }
  return !e || lang_mem_write(L, v->p->be, e, bytes, n, NULL, NULL);
}

/* core.field_fill(prog, id, instance|nil, value) -> true | nil, message: every
** element of a dense field; only the active elements of a sparse one
** (nothing is activated). */
static int l_field_fill(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  char val[8];
  lang_encode_number(L, s->dtype, 4, val);
  lua_pushboolean(L, 1);
  if (empty_field(s)) return 1;
  field_view v;
  if (!view_open(L, &v, p, s, mem, true)) return nil_message(L);
  int64_t idx[IR_MAX_INDICES] = {0};
  do
    if (!view_write(L, &v, idx, val, false)) return nil_message(L);
  while (next_index(s, idx));
  if (!view_close(L, &v, true)) return nil_message(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* Pushes the nested tables of the elements from axis on; false with the
** message pushed when a copy failed. */
static bool build_table(lua_State *L, field_view *v, int64_t *idx, int axis) {
  const ir_snode *s = v->s;
  if (axis == s->nidx) {
    char tmp[8];
    const char *e;
    if (!view_read(L, v, idx, tmp, &e)) return false;
    if (e) lang_push_number(L, s->dtype, e);
    else push_zero(L, s->dtype);
    return true;
  }
  lua_createtable(L, (int)s->total_shape[axis], 0);
  for (int64_t i = 0; i < s->total_shape[axis]; i++) {
    idx[axis] = i;
    if (!build_table(L, v, idx, axis + 1)) return false;
    lua_rawseti(L, -2, i + 1);
  }
  return true;
}

/* core.field_to_table(prog, id, instance|nil) -> nested tables, 1-based
** (t[i+1][j+1] = x[i][j]); inactive elements are 0 | nil, message */
static int l_field_to_table(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  int64_t idx[IR_MAX_INDICES] = {0};
  luaL_checkstack(L, s->nidx + 4, "field nesting");
  field_view v;
  if (!view_open(L, &v, p, s, mem, true)) return nil_message(L);
  if (!build_table(L, &v, idx, 0)) return nil_message(L);
  view_close(L, &v, false);   /* (nothing to write: cannot fail) */
  return 1;
}

/* core.field_from_table(prog, id, instance|nil, t) -> true | nil, message:
** x[i][j] = t[i][j] (or t[i+1][j+1]) for every element (datatable.c's
** rules); writes activate cells of sparse fields. The whole table is checked
** (and encoded) before anything is written; only running out of pool memory
** for the cells can stop the writes part way. A 0-D field takes the number
** itself. */
static int l_field_from_table(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  lua_settop(L, 4);
  const char *vals = lang_table_encode(L, 4, s->nidx, s->total_shape, s->dtype, "field");
  if (!vals) return nil_message(L);
  lua_pushboolean(L, 1);
  if (empty_field(s)) return 1;
  field_view v;
  if (!view_open(L, &v, p, s, mem, true)) return nil_message(L);
  int64_t idx[IR_MAX_INDICES] = {0};
  size_t es = elem_bytes(s);
  bool ok = true;
  for (const char *e = vals; ok; e += es) {
    ok = view_write(L, &v, idx, e, true);
    if (!next_index(s, idx)) break;
  }
  if (!view_close(L, &v, true) || !ok) return nil_message(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.field_set_list(prog, id, instance|nil, {v1, v2, ...}) -> true | nil,
** message: every element, row-major, from a flat list of numbers already
** checked (a composite field's x:from_table, one component at a time). */
static int l_field_set_list(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char *mem;
  ir_snode *s = check_place(L, p, 2, &mem);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_settop(L, 4);
  lua_pushboolean(L, 1);
  if (empty_field(s)) return 1;
  field_view v;
  if (!view_open(L, &v, p, s, mem, true)) return nil_message(L);
  int64_t idx[IR_MAX_INDICES] = {0};
  lua_Integer k = 0;
  bool ok = true;
  do {
    char val[8];
    if (lua_rawgeti(L, 4, ++k) != LUA_TNUMBER)
      return luaL_error(L, "internal error: field_set_list: entry %I is not a number", k);
    lang_encode_number(L, s->dtype, -1, val);
    lua_pop(L, 1);
    ok = view_write(L, &v, idx, val, true);
  } while (ok && next_index(s, idx));
  if (!view_close(L, &v, true) || !ok) return nil_message(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.field_active(prog, id, instance|nil) -> {{i, j, ...}, ...}: the
** indices of the active elements (with the field's offset), row-major
** (every element of a dense field) */
static int l_field_active(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
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
      lua_pushinteger(L, (lua_Integer)(idx[i] + s->index_offset[i]));
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
    {"field_set_list", l_field_set_list},
    {"table_elements", lang_table_elements},
    {"field_active", l_field_active},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  lang_open_devmem(L);   /* core.read_here, for field.lua's element reads */
}
