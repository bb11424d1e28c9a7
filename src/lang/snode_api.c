/*
** snode_api.c -- bindings for building SNode trees (lt.root:dense(...):place(...))
** and materialising them (layout + one zeroed memory block per tree).
** SNodes are named by their integer id in the program.
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"

static ir_snode *check_snode(lua_State *L, prog_program *p, int idx) {
  lua_Integer id = luaL_checkinteger(L, idx);
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id])
    luaL_error(L, "internal error: no SNode %d", (int)id);
  return p->ir->snodes[id];
}

/* core.root_new(prog) -> id, handle: a new tree, held while the handle is
** (the tree's fields, SNode handles and tree type keep it). Trees nothing
** holds any more are freed first; when all IR_MAX_TREES are alive, a full
** garbage collection may free some, else the error names the limit. */
static int l_root_new(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  prog_reclaim_trees(p);
  if (!ir_program_has_room(p->ir)) {
    lua_gc(L, LUA_GCCOLLECT);      /* dropped fields whose handles are not yet collected */
    prog_reclaim_trees(p);
  }
  ir_snode *r = ir_program_has_room(p->ir) ? ir_snode_root(p->ir) : NULL;
  if (!r) {
    if (p->ir->ntrees >= IR_MAX_TREES && p->ir->nfree_trees == 0)
      return lang_error(L, "too many SNode trees alive at once (at most %d): every lt.root tree (a field made "
                        "with a shape joins the current one until it is used) and every lt.tree type is one, "
                        "and a tree lives while anything refers to it (its fields, SNode handles, tree type, "
                        "instances, or a kernel compiled against it); let go of the ones no longer needed, or "
                        "place several fields in one tree (lt.root:dense(lt.i, n):place(x, y, z))", IR_MAX_TREES);
    return lang_error(L, "too many SNodes alive at once (at most %d in all trees); let go of fields and "
                      "trees no longer needed", IR_MAX_SNODES);
  }
  lua_pushinteger(L, r->id);
  lang_push_tree_handle(L, 1, p, r->tree);
  return 2;
}

static int read_ints(lua_State *L, int idx, int64_t *out, const char *what) {
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = (int)luaL_len(L, idx);
  if (n > IR_MAX_INDICES) luaL_error(L, "%s: more than %d indices", what, IR_MAX_INDICES);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    int ok;
    out[i] = lua_tointegerx(L, -1, &ok);
    if (!ok) luaL_error(L, "%s: entry %d is not an integer", what, i + 1);
    lua_pop(L, 1);
  }
  return n;
}

/* Pushes a new SNode's id, or nil and the builder's message: the results of
** every core.* builder below. */
static int push_snode(lua_State *L, const ir_snode *s, const char *err) {
  if (!s) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushinteger(L, s->id);
  return 1;
}

/* A level of any kind but dynamic under the SNode at index 2, with the axes
** and extents at axes_idx and axes_idx + 1. */
static int new_level(lua_State *L, ir_snode_kind kind, const char *what, int axes_idx) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *parent = check_snode(L, p, 2);
  int64_t axes64[IR_MAX_INDICES], shape[IR_MAX_INDICES];
  int n = read_ints(L, axes_idx, axes64, "axes");
  int m = read_ints(L, axes_idx + 1, shape, "shape");
  if (n != m) return luaL_error(L, "%s: %d axes but %d extents", what, n, m);
  int axes[IR_MAX_INDICES];
  for (int i = 0; i < n; i++) axes[i] = (int)axes64[i];
  char err[512] = "";
  return push_snode(L, ir_snode_level(p->ir, parent, kind, n, axes, shape, err, sizeof err), err);
}

/* core.dense(prog, parent, axes, shape) -> id | nil, message */
static int l_dense(lua_State *L) { return new_level(L, IR_SN_dense, "dense", 3); }

/* core.level(prog, parent, kind, axes, shape) -> id | nil, message: any
** level kind but dynamic (dense, bitmasked, pointer). */
static int l_level(lua_State *L) {
  const char *name = luaL_checkstring(L, 3);
  int kind = ir_snode_kind_from_name(name);
  if (kind < 0 || !ir_snode_kind_is_level((ir_snode_kind)kind) || kind == IR_SN_dynamic)
    return luaL_error(L, "internal error: '%s' is not a level kind", name);
  return new_level(L, (ir_snode_kind)kind, name, 4);
}

/* core.dynamic(prog, parent, axis, n, chunk_cells) -> id | nil, message */
static int l_dynamic(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *parent = check_snode(L, p, 2);
  int axis = (int)luaL_checkinteger(L, 3);
  int64_t n = luaL_checkinteger(L, 4);
  int64_t chunk = luaL_optinteger(L, 5, 0);
  char err[512] = "";
  ir_snode *s = ir_snode_dynamic(p->ir, parent, axis, n, chunk, err, sizeof err);
  return push_snode(L, s, err);
}

/* core.place(prog, parent, dtype, name) -> id | nil, message */
static int l_place(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *parent = check_snode(L, p, 2);
  int t = ir_type_from_name(luaL_checkstring(L, 3));
  if (t < 0) return luaL_error(L, "unknown type '%s'", lua_tostring(L, 3));
  const char *name = luaL_optstring(L, 4, "?");   /* the SNode keeps a copy */
  char err[512] = "";
  ir_snode *s = ir_snode_place(p->ir, parent, (ir_type)t, name, err, sizeof err);
  return push_snode(L, s, err);
}

/* core.set_name(prog, id, name): fields learn their names late (from locals) */
static int l_set_name(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_snode(L, p, 2);
  char *copy = strdup(luaL_checkstring(L, 3));    /* the SNode owns its name */
  if (!copy) return luaL_error(L, "out of memory");
  free((char *)s->name);
  s->name = copy;
  return 0;
}

/* core.set_grad(prog, place, grad_place): the place's gradient (needs_grad) */
static int l_set_grad(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_snode(L, p, 2);
  ir_snode *g = check_snode(L, p, 3);
  if (s->kind != IR_SN_place || g->kind != IR_SN_place || s->dtype != g->dtype)
    return luaL_error(L, "internal error: a gradient is a place of the primal's type");
  s->grad = g->id;
  return 0;
}

/* core.set_dual(prog, place, dual_place): the place's tangent (needs_dual) */
static int l_set_dual(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_snode(L, p, 2);
  ir_snode *d = check_snode(L, p, 3);
  if (s->kind != IR_SN_place || d->kind != IR_SN_place || s->dtype != d->dtype)
    return luaL_error(L, "internal error: a tangent is a place of the primal's type");
  s->dual = d->id;
  return 0;
}

/* core.set_offset(prog, place, {o0, o1, ...}): the field's index offset
** (lt.field's offset option; field.lua checked it) */
static int l_set_offset(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_snode(L, p, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  if (s->kind != IR_SN_place || luaL_len(L, 3) != s->nidx)
    return luaL_error(L, "internal error: an offset is one integer per index of a place");
  for (int i = 0; i < s->nidx; i++) {
    lua_rawgeti(L, 3, i + 1);
    s->index_offset[i] = luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  return 0;
}

static int push_fail(lua_State *L, const char *err) {
  lua_pushnil(L);
  lua_pushstring(L, err);
  return 2;
}

/* core.materialize(prog, root, make_instance) -> true | nil, message.
** Lays the tree out and registers it with the sparse runtime; with
** make_instance (lt.root trees) also creates its one instance. Idempotent. */
static int l_materialize(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *r = check_snode(L, p, 2);
  bool make_instance = lua_isnone(L, 3) || lua_toboolean(L, 3);
  char err[768] = "";
  if (!prog_tree_materialize(p, r, make_instance, err, sizeof err)) return push_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.snode_info(prog, id) -> {kind, nidx, shape, dtype, tree, root, materialized,
** nchildren, parent, sparse, under_sparse, num_cells, children, name, label,
** axes, capacity} */
static int l_snode_info(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_snode(L, p, 2);
  lua_createtable(L, 0, 8);
  lua_pushstring(L, ir_snode_kind_name(s->kind));
  lua_setfield(L, -2, "kind");
  lua_pushinteger(L, s->nidx);
  lua_setfield(L, -2, "nidx");
  lua_createtable(L, s->nidx, 0);
  for (int i = 0; i < s->nidx; i++) {
    lua_pushinteger(L, s->total_shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "shape");
  if (s->kind == IR_SN_place) {
    lua_pushstring(L, ir_type_name(s->dtype));
    lua_setfield(L, -2, "dtype");
  }
  lua_pushinteger(L, s->tree);
  lua_setfield(L, -2, "tree");
  lua_pushinteger(L, p->ir->trees[s->tree].root ? p->ir->trees[s->tree].root->id : -1);
  lua_setfield(L, -2, "root");
  lua_pushboolean(L, p->ir->trees[s->tree].materialized);
  lua_setfield(L, -2, "materialized");
  lua_pushinteger(L, s->nchildren);
  lua_setfield(L, -2, "nchildren");
  lua_pushinteger(L, s->parent ? s->parent->id : -1);
  lua_setfield(L, -2, "parent");
  lua_pushboolean(L, ir_snode_kind_is_sparse(s->kind));
  lua_setfield(L, -2, "sparse");
  lua_pushboolean(L, ir_snode_under_sparse(s));
  lua_setfield(L, -2, "under_sparse");
  lua_pushinteger(L, s->num_cells);
  lua_setfield(L, -2, "num_cells");
  lua_createtable(L, s->nchildren, 0);
  for (int i = 0; i < s->nchildren; i++) {
    lua_pushinteger(L, s->children[i]->id);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "children");
  if (s->name) {
    lua_pushstring(L, s->name);
    lua_setfield(L, -2, "name");
  }
  char label[64];
  lua_pushstring(L, ir_snode_label(s, label, sizeof label));
  lua_setfield(L, -2, "label");
  /* the physical axis of each virtual index (to map indices between levels) */
  lua_createtable(L, s->nidx, 0);
  for (int i = 0; i < s->nidx; i++) {
    lua_pushinteger(L, s->physical_index_position[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "axes");
  lua_pushinteger(L, s->kind == IR_SN_dynamic ? s->num_cells : 0);
  lua_setfield(L, -2, "capacity");
  return 1;
}

void lang_open_snode(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"root_new", l_root_new},
    {"dense", l_dense},
    {"level", l_level},
    {"dynamic", l_dynamic},
    {"place", l_place},
    {"set_name", l_set_name},
    {"set_grad", l_set_grad},
    {"set_dual", l_set_dual},
    {"set_offset", l_set_offset},
    {"materialize", l_materialize},
    {"snode_info", l_snode_info},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
