/*
** snode_api.c -- bindings for building SNode trees (lt.root:dense(...):place(...))
** and materialising them (layout + one zeroed memory block per tree).
** SNodes are named by their integer id in the program.
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"

static ir_snode *check_snode(lua_State *L, lang_program *p, int idx) {
  lua_Integer id = luaL_checkinteger(L, idx);
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id])
    luaL_error(L, "internal error: no SNode %d", (int)id);
  return p->ir->snodes[id];
}

/* core.root_new(prog) -> id */
static int l_root_new(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  if (p->ir->ntrees >= IR_MAX_TREES)
    return luaL_error(L, "too many SNode trees (at most %d)", IR_MAX_TREES);
  ir_snode *r = ir_snode_root(p->ir);
  if (!r) return luaL_error(L, "cannot create a new SNode tree");
  lua_pushinteger(L, r->id);
  return 1;
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

/* core.dense(prog, parent, axes, shape) -> id | nil, message */
static int l_dense(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  ir_snode *parent = check_snode(L, p, 2);
  int64_t axes64[IR_MAX_INDICES], shape[IR_MAX_INDICES];
  int n = read_ints(L, 3, axes64, "axes");
  int m = read_ints(L, 4, shape, "shape");
  if (n != m) return luaL_error(L, "dense: %d axes but %d extents", n, m);
  int axes[IR_MAX_INDICES];
  for (int i = 0; i < n; i++) axes[i] = (int)axes64[i];
  char err[512] = "";
  ir_snode *s = ir_snode_dense(p->ir, parent, n, axes, shape, err, sizeof err);
  if (!s) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushinteger(L, s->id);
  return 1;
}

/* core.place(prog, parent, dtype, name) -> id | nil, message */
static int l_place(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  ir_snode *parent = check_snode(L, p, 2);
  int t = ir_type_from_name(luaL_checkstring(L, 3));
  if (t < 0) return luaL_error(L, "unknown type '%s'", lua_tostring(L, 3));
  const char *name = luaL_optstring(L, 4, "?");   /* the SNode keeps a copy */
  char err[512] = "";
  ir_snode *s = ir_snode_place(p->ir, parent, (ir_type)t, name, err, sizeof err);
  if (!s) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushinteger(L, s->id);
  return 1;
}

/* core.set_name(prog, id, name): fields learn their names late (from locals) */
static int l_set_name(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  ir_snode *s = check_snode(L, p, 2);
  char *copy = strdup(luaL_checkstring(L, 3));    /* the SNode owns its name */
  if (!copy) return luaL_error(L, "out of memory");
  free((char *)s->name);
  s->name = copy;
  return 0;
}

/* core.materialize(prog, root) -> true | nil, message. Idempotent. */
static int l_materialize(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  ir_snode *r = check_snode(L, p, 2);
  ir_tree *t = &p->ir->trees[r->tree];
  if (!t->materialized) {
    char err[512] = "";
    if (!ir_snode_layout(p->ir, r, err, sizeof err)) {
      lua_pushnil(L);
      lua_pushstring(L, err);
      return 2;
    }
  }
  if (!p->mem[r->tree]) {
    p->mem[r->tree] = calloc(1, t->bytes > 0 ? (size_t)t->bytes : 1);
    if (!p->mem[r->tree])
      return luaL_error(L, "out of memory allocating %I bytes for SNode tree %d",
                        (lua_Integer)t->bytes, r->tree);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.snode_info(prog, id) -> {kind, nidx, shape, dtype, tree, root, materialized, nchildren} */
static int l_snode_info(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
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
  lua_pushboolean(L, p->ir->trees[s->tree].materialized && p->mem[s->tree]);
  lua_setfield(L, -2, "materialized");
  lua_pushinteger(L, s->nchildren);
  lua_setfield(L, -2, "nchildren");
  return 1;
}

void lang_open_snode(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"root_new", l_root_new},
    {"dense", l_dense},
    {"place", l_place},
    {"set_name", l_set_name},
    {"materialize", l_materialize},
    {"snode_info", l_snode_info},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
