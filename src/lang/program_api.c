/*
** program_api.c -- the program (src/program) as a Lua userdata: lt.init's
** core.program_new and friends, the handles that keep trees, and the
** instance a Lua-scope access uses.
*/
#include <string.h>

#include "lang.h"

/* The userdata holds one reference to the program. */
typedef struct {
  prog_program *p;
} program_box;

prog_program *lang_to_program(lua_State *L, int idx) {
  program_box *b = luaL_checkudata(L, idx, LANG_PROGRAM);
  return b->p;
}

prog_program *lang_check_program(lua_State *L, int idx) {
  prog_program *p = lang_to_program(L, idx);
  if (!p->ir)
    luaL_error(L, "this field or kernel belongs to a program that lt.init has reset; "
                  "create it again after lt.init");
  return p;
}

char *lang_root_for(lua_State *L, prog_program *p, const ir_snode *s, int idx) {
  if (idx > 0 && !lua_isnoneornil(L, idx)) {
    lang_instance *in = luaL_checkudata(L, idx, LANG_INSTANCE);
    if (!in->root) luaL_error(L, "this tree instance was destroyed (g:destroy()); instantiate a new one");
    if (in->prog != p || in->tree != s->tree)
      luaL_error(L, "internal error: instance of tree %d used for an SNode of tree %d", in->tree, s->tree);
    return in->root;
  }
  char *mem = prog_tree_memory(p, s);
  if (!mem) luaL_error(L, "internal error: SNode %d has no materialised memory", s->id);
  return mem;
}

void lang_raise_sparse_error(lua_State *L, prog_program *p, const char *where) {
  char msg[768];
  if (prog_take_error(p, msg, sizeof msg)) luaL_error(L, "%s%s", where, msg);
}

/* ---- what keeps a tree ---------------------------------------------------------- */

typedef struct {
  prog_program *p;
  int tree;
} tree_handle;

static int l_tree_handle_gc(lua_State *L) {
  tree_handle *h = luaL_checkudata(L, 1, LANG_TREE);
  if (h->p && h->p->ir) h->p->tree_holds[h->tree]--;   /* freed at the next prog_reclaim_trees */
  h->p = NULL;
  return 0;
}

void lang_push_tree_handle(lua_State *L, int prog_idx, prog_program *p, int tree) {
  prog_idx = lua_absindex(L, prog_idx);
  tree_handle *h = lua_newuserdatauv(L, sizeof *h, 1);
  h->p = p;
  h->tree = tree;
  luaL_setmetatable(L, LANG_TREE);
  lua_pushvalue(L, prog_idx);
  lua_setiuservalue(L, -2, 1);     /* the program outlives the handles of its trees */
  p->tree_holds[tree]++;
}

/* ---- the program ---------------------------------------------------------------- */

/* core.program_new(arch, threads, debug, pool_bytes, fma, fraction, limit, cache, fast_math) ->
** program | nil, message. arch: "cpu" or "cuda". The pool: pool_bytes, else
** fraction of the device's memory, else the backend's default. The
** settings of the environment (LT_MEMORY_LIMIT, LT_CUDA_DRIVER,
** LT_CHECK_PTX, LT_CACHE) come from lang_env. cache: nil (LT_CACHE or the
** default directory), false (none) or a directory. fast_math implies fma. */
static int l_program_new(lua_State *L) {
  prog_config cfg = {
    .arch = luaL_checkstring(L, 1),
    .threads = (int)luaL_optinteger(L, 2, 0),
    .debug = lua_toboolean(L, 3),
    .pool_bytes = luaL_optinteger(L, 4, 0),
    .fma = lua_toboolean(L, 5),
    .pool_fraction = luaL_optnumber(L, 6, 0),
    .memory_limit = luaL_optinteger(L, 7, 0),
    .fast_math = lua_toboolean(L, 9),
  };
  int64_t limit = cfg.memory_limit;   /* lt.init has checked LT_MEMORY_LIMIT */
  prog_config_from_env(&cfg);
  cfg.memory_limit = limit;
  if (lua_type(L, 8) == LUA_TSTRING) {
    snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s", lua_tostring(L, 8));
    cfg.jit.cache_dir = cfg.cache_dir;
  } else if (!lua_isnoneornil(L, 8)) {
    cfg.jit.cache_dir = NULL;   /* cache = false */
  }
  program_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->p = NULL;
  luaL_setmetatable(L, LANG_PROGRAM);
  char err[1024] = "";
  bool hosted;
  b->p = lang_host_program(L, cfg.fma, cfg.fast_math, err, sizeof err, &hosted);   /* a C API runtime's (embed.c) */
  if (!hosted) b->p = prog_create(&cfg, err, sizeof err);
  if (!b->p) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 1;
}

static int l_program_gc(lua_State *L) {
  program_box *b = luaL_checkudata(L, 1, LANG_PROGRAM);
  if (b->p) prog_release(b->p);
  b->p = NULL;
  return 0;
}

/* core.program_free(prog): lt.init's reset; what refers to it errors from now on */
static int l_program_free(lua_State *L) {
  program_box *b = luaL_checkudata(L, 1, LANG_PROGRAM);
  if (b->p) prog_reset(b->p);
  return 0;
}

static int l_program_alive(lua_State *L) {
  program_box *b = luaL_checkudata(L, 1, LANG_PROGRAM);
  lua_pushboolean(L, b->p && b->p->ir != NULL);
  return 1;
}

static int l_program_threads(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  lua_pushinteger(L, p->be ? p->be->threads : 0);
  return 1;
}

/* core.builtins_setup(prog, seed, print_buffer_bytes) -> true | nil, message */
static int l_builtins_setup(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  char err[256];
  if (!prog_builtins_setup(p, (uint64_t)luaL_checkinteger(L, 2), luaL_optinteger(L, 3, 0), err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.random_host(prog, type) -> a number drawn as a kernel's lt.random(type)
** would (site 0xffffffff, launch 0, the host's own draw counter) */
static int l_random_host(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  ir_type t = (ir_type)luaL_checkinteger(L, 2);
  uint64_t bits;
  double f;
  prog_random_host(p, t, &bits, &f);
  if (ir_type_is_float(t)) lua_pushnumber(L, f);
  else lua_pushinteger(L, (lua_Integer)bits);
  return 1;
}

void lang_open_program(lua_State *L) {
  if (luaL_newmetatable(L, LANG_PROGRAM)) {
    lua_pushcfunction(L, l_program_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, LANG_TREE)) {
    lua_pushcfunction(L, l_tree_handle_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"program_new", l_program_new},
    {"program_free", l_program_free},
    {"program_alive", l_program_alive},
    {"program_threads", l_program_threads},
    {"builtins_setup", l_builtins_setup},
    {"random_host", l_random_host},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
