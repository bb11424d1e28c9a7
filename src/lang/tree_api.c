/*
** tree_api.c -- instances of lt.tree types, the activation operations of
** sparse SNodes from Lua scope (lt.activate, lt.append, deactivate_all, ...)
** and the pool's counters (lt.stats). Everything goes through the host side
** of the sparse runtime (src/jit/jit_sparse.h); the cells it hands back are
** device addresses, written only through devmem.c.
*/
#include <stdio.h>
#include <string.h>

#include "lang.h"

static ir_snode *check_level(lua_State *L, prog_program *p, int idx) {
  lua_Integer id = luaL_checkinteger(L, idx);
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id] ||
      !ir_snode_kind_is_level(p->ir->snodes[id]->kind))
    luaL_error(L, "internal error: SNode %d is not a level", (int)id);
  return p->ir->snodes[id];
}

/* ---- instances -------------------------------------------------------------- */

static lang_instance *check_instance(lua_State *L, int idx) {
  return luaL_checkudata(L, idx, LANG_INSTANCE);
}

static void instance_release(lang_instance *in) {
  prog_program *p = in->prog;
  prog_instance_free(p, in->tree, in->root);
  in->root = NULL;
}

static int l_instance_gc(lua_State *L) {
  instance_release(check_instance(L, 1));
  return 0;
}

/* core.instance_new(prog, root_snode) -> instance | nil, message */
static int l_instance_new(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  lua_Integer id = luaL_checkinteger(L, 2);
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id] || p->ir->snodes[id]->kind != IR_SN_root)
    return luaL_error(L, "internal error: SNode %d is not a root", (int)id);
  int tree = p->ir->snodes[id]->tree;
  lang_instance *in = lua_newuserdatauv(L, sizeof *in, 1);   /* first: a memory error leaks nothing */
  in->prog = p;
  in->tree = tree;
  in->root = NULL;
  luaL_setmetatable(L, LANG_INSTANCE);
  char err[768] = "";
  in->root = prog_instance_new(p, tree, err, sizeof err);
  if (!in->root) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);     /* the program outlives its instances */
  return 1;
}

/* core.instance_free(instance): g:destroy(); later uses are errors */
static int l_instance_free(lua_State *L) {
  instance_release(check_instance(L, 1));
  return 0;
}

static int l_instance_alive(lua_State *L) {
  lang_instance *in = check_instance(L, 1);
  lua_pushboolean(L, in->root != NULL && in->prog->ir != NULL);
  return 1;
}

/* ---- activation operations from Lua scope ------------------------------------- */

/* Reads the indices of a cell of level s from first on, each checked against
** the extent of the field coordinates along its axis (the level's extent
** times what the levels under it split). */
static void read_level_indices(lua_State *L, const char *what, int first, const ir_snode *s,
                               int64_t *idx) {
  int n = s->nidx;
  int64_t shape[IR_MAX_INDICES];
  for (int i = 0; i < n; i++) shape[i] = s->total_shape[i] * s->below[s->physical_index_position[i]];
  int given = lua_gettop(L) - first + 1;
  if (given != n) luaL_error(L, "%s takes %d indices, got %d", what, n, given);
  for (int i = 0; i < n; i++) {
    int ok;
    idx[i] = lua_tointegerx(L, first + i, &ok);
    if (!ok) luaL_error(L, "%s: index %d must be an integer (got %s)", what, i,
                        luaL_tolstring(L, first + i, NULL));
    if (idx[i] < 0 || idx[i] >= shape[i])
      luaL_error(L, "%s: index %I out of range for axis %d (extent %I)", what,
                 (lua_Integer)idx[i], i, (lua_Integer)shape[i]);
  }
}

static const char *const op_names[] = {"activate", "deactivate", "is_active", "length", NULL};
static const jit_sn_op op_codes[] = {JIT_SN_ACTIVATE, JIT_SN_DEACTIVATE, JIT_SN_IS_ACTIVE, JIT_SN_LENGTH};

/* core.snode_op(prog, level, instance|nil, what, op, i...) -> result. what
** names the SNode for messages. A dynamic's deactivate/length take its
** parent's indices. */
static int l_snode_op(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_level(L, p, 2);
  char *root = lang_root_for(L, p, s, 3);
  const char *what = luaL_checkstring(L, 4);
  int which = luaL_checkoption(L, 5, NULL, op_names);
  jit_sn_op op = op_codes[which];
  bool whole = s->kind == IR_SN_dynamic && (op == JIT_SN_DEACTIVATE || op == JIT_SN_LENGTH);
  const ir_snode *ref = whole ? s->parent : s;
  int64_t idx[IR_MAX_INDICES] = {0};
  read_level_indices(L, what, 6, ref, idx);
  int64_t r = jit_sparse_snode_op(p->sparse, s, root, idx, op);
  lang_raise_sparse_error(L, p, "");
  if (op == JIT_SN_IS_ACTIVE) lua_pushboolean(L, r != 0);
  else lua_pushinteger(L, (lua_Integer)r);
  return 1;
}

/* core.snode_append(prog, dynamic, instance|nil, what, values, i...) -> index | nil, message.
** values[k] is the value of the dynamic's k-th place (1-based); a place left
** out stays zero. */
static int l_snode_append(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_level(L, p, 2);
  char *root = lang_root_for(L, p, s, 3);
  const char *what = luaL_checkstring(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  if (s->kind != IR_SN_dynamic || s->nchildren < 1)
    return luaL_error(L, "internal error: append to a level that is not a dynamic holding fields");
  int64_t idx[IR_MAX_INDICES] = {0};
  read_level_indices(L, what, 6, s->parent, idx);
  char err[768];
  /* the values' bytes and a pointer to each (NULL: left zero), freed by the GC */
  char *vals = lua_newuserdatauv(L, (size_t)s->nchildren * 8, 0);
  const void **val = lua_newuserdatauv(L, (size_t)s->nchildren * sizeof *val, 0);
  for (int c = 0; c < s->nchildren; c++) {
    val[c] = NULL;
    lua_rawgeti(L, 5, c + 1);
    if (!lua_isnil(L, -1) && s->children[c]->kind == IR_SN_place) {
      lang_encode_number(L, s->children[c]->dtype, lua_gettop(L), vals + 8 * c);
      val[c] = vals + 8 * c;
    }
    lua_pop(L, 1);
  }
  int32_t at = prog_append(p, s, root, idx, val, what, err, sizeof err);
  if (at < 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushinteger(L, at);
  return 1;
}

/* core.deactivate_all(prog, level, instance|nil) */
static int l_deactivate_all(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_snode *s = check_level(L, p, 2);
  char *root = lang_root_for(L, p, s, 3);
  jit_sparse_deactivate_all(p->sparse, s, root);
  lang_raise_sparse_error(L, p, "");
  return 0;
}

/* core.deactivate_tree(prog, root, instance|nil): every sparse level of one
** tree (the lt.root tree whose root SNode is root, or the instance's);
** core.deactivate_tree(prog): every lt.root tree of the program (those with
** memory of their own: a tree type's memory belongs to its instances). */
static int l_deactivate_tree(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  if (lua_isnoneornil(L, 2)) {
    for (int t = 0; t < p->ir->ntrees; t++) {
      const ir_tree *tr = &p->ir->trees[t];
      if (!tr->root || !tr->materialized || !p->mem[t]) continue;
      jit_sparse_deactivate_all(p->sparse, tr->root, p->mem[t]);
      lang_raise_sparse_error(L, p, "");
    }
    return 0;
  }
  lua_Integer id = luaL_checkinteger(L, 2);
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id] || p->ir->snodes[id]->kind != IR_SN_root)
    return luaL_error(L, "internal error: SNode %d is not a tree's root", (int)id);
  const ir_snode *r = p->ir->snodes[id];
  if (!p->ir->trees[r->tree].materialized) return 0;   /* nothing allocated yet */
  jit_sparse_deactivate_all(p->sparse, r, lang_root_for(L, p, r, 3));
  lang_raise_sparse_error(L, p, "");
  return 0;
}

/* ---- counters ------------------------------------------------------------------- */

static void set_int(lua_State *L, const char *k, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

/* One level's counters: {id, tree, label, kind, active, allocated, bytes,
** reserved}; allocated = pool cells it holds now (a dynamic's: chunks),
** bytes = their size, reserved = cells it took from the pool ever (0 for
** dense and bitmasked levels, which live in their parents' cells). */
static void push_level_stats(lua_State *L, prog_program *p, const ir_snode *s) {
  lua_createtable(L, 0, 8);
  set_int(L, "id", s->id);
  set_int(L, "tree", s->tree);
  char label[64];
  lua_pushstring(L, ir_snode_label(s, label, sizeof label));
  lua_setfield(L, -2, "label");
  lua_pushstring(L, ir_snode_kind_name(s->kind));
  lua_setfield(L, -2, "kind");
  bool live = p->ir->trees[s->tree].materialized;
  set_int(L, "active", live ? jit_sparse_active_cells(p->sparse, s->id) : 0);
  jit_pool_cells pc;
  if (!live || !jit_sparse_pool_cells(p->sparse, s->id, &pc)) memset(&pc, 0, sizeof pc);
  set_int(L, "allocated", pc.held);
  set_int(L, "bytes", pc.held * pc.cell_bytes);
  set_int(L, "reserved", pc.reserved);
}

/* core.level_stats(prog, level) -> push_level_stats's table */
static int l_level_stats(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  push_level_stats(L, p, check_level(L, p, 2));
  return 1;
}

/* core.stats(prog) -> {pool_bytes, pool_used, high_water, lists_built,
** lists_reused, gc_runs, snodes = {push_level_stats's table, ...}} */
static int l_stats(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  jit_sparse_stats st;
  memset(&st, 0, sizeof st);
  jit_sparse_get_stats(p->sparse, &st);
  lua_createtable(L, 0, 8);
  set_int(L, "pool_bytes", (int64_t)st.pool_bytes);
  set_int(L, "pool_used", (int64_t)st.pool_used);
  set_int(L, "high_water", (int64_t)st.pool_used);   /* the pool is a bump allocator */
  set_int(L, "lists_built", st.lists_built);
  set_int(L, "lists_reused", st.lists_reused);
  set_int(L, "gc_runs", st.gc_runs);
  set_int(L, "cache_hits", p->cache_hits);
  lua_pushnumber(L, p->code_ms);
  lua_setfield(L, -2, "code_ms");
  set_int(L, "cache_misses", p->cache_misses);
  lua_newtable(L);
  int n = 0;
  for (int i = 0; i < p->ir->nsnodes; i++) {
    const ir_snode *s = p->ir->snodes[i];
    if (!s || !ir_snode_kind_is_level(s->kind) || !p->ir->trees[s->tree].materialized) continue;
    push_level_stats(L, p, s);
    lua_rawseti(L, -2, ++n);
  }
  lua_setfield(L, -2, "snodes");
  return 1;
}

/* core.gc(prog): collect every pointer/dynamic SNode's recycled cells now */
static int l_gc(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  jit_sparse_gc_all(p->sparse);
  return 0;
}

void lang_open_tree(lua_State *L) {
  if (luaL_newmetatable(L, LANG_INSTANCE)) {
    lua_pushcfunction(L, l_instance_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"instance_new", l_instance_new},
    {"instance_free", l_instance_free},
    {"instance_alive", l_instance_alive},
    {"snode_op", l_snode_op},
    {"snode_append", l_snode_append},
    {"deactivate_all", l_deactivate_all},
    {"deactivate_tree", l_deactivate_tree},
    {"stats", l_stats},
    {"level_stats", l_level_stats},
    {"gc", l_gc},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
