/*
** program.c -- lang_program: the state one lt.init owns (IR program, the
** memory pool with every tree's memory, backend, compiled kernels), as a Lua
** userdata; and the messages of the sparse runtime's failures.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host/mempool.h"

#include "lang.h"

lang_program *lang_check_program(lua_State *L, int idx) {
  lang_program *p = luaL_checkudata(L, idx, LANG_PROGRAM);
  if (!p->ir)
    luaL_error(L, "this field or kernel belongs to a program that lt.init has reset; "
                  "create it again after lt.init");
  return p;
}

char *lang_tree_memory(lang_program *p, const ir_snode *s) {
  if (!p->ir || s->tree < 0 || s->tree >= IR_MAX_TREES) return NULL;
  return p->mem[s->tree];
}

char *lang_root_for(lua_State *L, lang_program *p, const ir_snode *s, int idx) {
  if (idx > 0 && !lua_isnoneornil(L, idx)) {
    lang_instance *in = luaL_checkudata(L, idx, LANG_INSTANCE);
    if (!in->root) luaL_error(L, "this tree instance was destroyed (g:destroy()); instantiate a new one");
    if (in->prog != p || in->tree != s->tree)
      luaL_error(L, "internal error: instance of tree %d used for an SNode of tree %d", in->tree, s->tree);
    return in->root;
  }
  char *mem = lang_tree_memory(p, s);
  if (!mem) luaL_error(L, "internal error: SNode %d has no materialised memory", s->id);
  return mem;
}

void lang_raise_sparse_error(lua_State *L, lang_program *p, const char *where) {
  char msg[768];
  if (p->sparse && jit_sparse_take_error(p->sparse, p->ir, msg, sizeof msg))
    luaL_error(L, "%s%s", where, msg);
}

/* ---- what keeps a tree ---------------------------------------------------------- */

typedef struct {
  lang_program *p;
  int tree;
} tree_handle;

static int l_tree_handle_gc(lua_State *L) {
  tree_handle *h = luaL_checkudata(L, 1, LANG_TREE);
  if (h->p && h->p->ir) h->p->tree_holds[h->tree]--;   /* freed at the next lang_reclaim_trees */
  h->p = NULL;
  return 0;
}

void lang_push_tree_handle(lua_State *L, int prog_idx, lang_program *p, int tree) {
  prog_idx = lua_absindex(L, prog_idx);
  tree_handle *h = lua_newuserdatauv(L, sizeof *h, 1);
  h->p = p;
  h->tree = tree;
  luaL_setmetatable(L, LANG_TREE);
  lua_pushvalue(L, prog_idx);
  lua_setiuservalue(L, -2, 1);     /* the program outlives the handles of its trees */
  p->tree_holds[tree]++;
}

typedef struct {
  const ir_program *ir;
  uint64_t *trees;
} tree_marks;

static void mark_tree(ir_stmt *s, void *ud) {
  tree_marks *m = ud;
  const ir_snode *sn = ir_op_names_snode(s->op) ? ir_program_snode(m->ir, s->aux) : NULL;
  if (sn && sn->tree >= 0 && sn->tree < IR_MAX_TREES) m->trees[sn->tree / 64] |= UINT64_C(1) << (sn->tree % 64);
}

void lang_hold_trees(lang_compiled *c) {
  lang_program *p = c->prog;
  if (!p || !p->ir) return;
  uint64_t used[IR_MAX_TREES / 64] = {0};
  tree_marks m = {p->ir, used};
  if (c->k) ir_walk(c->k->body, mark_tree, &m);
  if (c->traced) ir_walk(c->traced->body, mark_tree, &m);   /* k:ir() compiles it again */
  for (int t = 0; t < IR_MAX_TREES; t++) {
    uint64_t bit = UINT64_C(1) << (t % 64);
    if ((used[t / 64] & bit) && !(c->trees[t / 64] & bit)) {
      c->trees[t / 64] |= bit;
      p->tree_holds[t]++;
    }
  }
}

static void release_trees(lang_compiled *c) {
  lang_program *p = c->prog;
  for (int t = 0; t < IR_MAX_TREES; t++)
    if (c->trees[t / 64] & (UINT64_C(1) << (t % 64)) && p && p->ir) p->tree_holds[t]--;
  memset(c->trees, 0, sizeof c->trees);
}

void lang_reclaim_trees(lang_program *p) {
  if (!p->ir) return;
  for (int t = 0; t < p->ir->ntrees; t++) {
    if (!p->ir->trees[t].root || p->tree_holds[t] > 0) continue;
    if (p->mem[t]) jit_sparse_free_instance(p->sparse, p->ir, t, p->mem[t]);
    p->mem[t] = NULL;
    jit_sparse_drop_tree(p->sparse, p->ir, t);
    ir_tree_free(p->ir, t);
    p->tree_holds[t] = 0;
  }
}

void lang_release_compiled(lang_compiled *c) {
  lang_program *p = c->prog;
  if (p) {
    char err[1024];
    lang_compiled_ready(c, err, sizeof err);   /* a compilation under way reads c->k */
    release_trees(c);
    if (c->jk && p->be) p->be->release(p->be, c->jk);
    if (c->prev) c->prev->next = c->next;
    else p->compiled = c->next;
    if (c->next) c->next->prev = c->prev;
  }
  c->jk = NULL;
  c->prog = NULL;
  if (c->k) ir_kernel_free(c->k);
  c->k = NULL;
  if (c->traced) ir_kernel_free(c->traced);
  c->traced = NULL;
  free(c->ir_text);
  c->ir_text = NULL;
  free(c->file);
  c->file = NULL;
}

static void program_free(lang_program *p) {
  if (!p->ir) return;
  while (p->compiled) lang_release_compiled(p->compiled);
  for (int i = 0; i < IR_MAX_TREES; i++) p->mem[i] = NULL;   /* in the pool */
  if (p->sparse) jit_sparse_destroy(p->sparse);   /* frees the pool through p->be */
  p->sparse = NULL;
  if (p->be) p->be->destroy(p->be);
  p->be = NULL;
  ir_program_free(p->ir);
  p->ir = NULL;
  lang_builtins_free(p);
}

/* The pool's size and where it comes from, for messages: device_memory,
** else a share of the device's memory, else the backend's default (jit.h,
** default_pool). false with a message when the share is not a byte. */
static bool pool_size(const jit_backend *be, lua_Integer pool, lua_Number fraction, uint64_t *bytes,
                      char *src, size_t srclen) {
  const char *dev = be->host_memory ? "RAM" : "device memory";
  if (pool > 0) {
    *bytes = (uint64_t)pool;
    snprintf(src, srclen, "lt.init{device_memory = %lld}", (long long)pool);
  } else if (fraction > 0) {
    *bytes = (uint64_t)(fraction * (double)be->memory_bytes);
    snprintf(src, srclen, "lt.init{device_memory_fraction = %.17g} of %llu bytes of %s", (double)fraction,
             (unsigned long long)be->memory_bytes, dev);
    if (*bytes == 0) return false;
  } else {
    *bytes = be->default_pool ? be->default_pool : JIT_SPARSE_DEFAULT_POOL;
    snprintf(src, srclen, "the default size; set lt.init{device_memory = ...} to change it");
  }
  return true;
}

/* The memory the pool may take on the host (the CPU backend): RAM + swap, or
** limit (LT_MEMORY_LIMIT, read by lt.init) when set. Warns once per process
** when a pool the script asked for is larger than that. */
static void host_memory_limit(lang_program *p, lua_Integer limit, uint64_t pool, bool asked, const char *src) {
  static bool warned;
  uint64_t ram, total;
  const char *found = "RAM + swap";
  if (limit > 0) {
    total = (uint64_t)limit;
    found = "LT_MEMORY_LIMIT";
  } else {
    rt_host_memory(&ram, &total);
  }
  if (!total) return;   /* unknown: nothing to check against */
  jit_sparse_set_commit_limit(p->sparse, total, found);
  if (asked && pool > total && !warned) {
    warned = true;
    char a[32], b[32];
    jit_sparse_format_bytes(pool, a, sizeof a);
    jit_sparse_format_bytes(total, b, sizeof b);
    fprintf(stderr,
            "lattice: warning: the memory pool of %llu bytes (%s; %s) is larger than the %s of memory "
            "found (%s); it is address space used only where touched, so sparse trees may still fit, "
            "but a tree whose dense part does not fit is an error, and filling the pool beyond that "
            "gets the process killed\n",
            (unsigned long long)pool, a, src, b, found);
    fflush(stderr);
  }
}

/* core.program_new(arch, threads, debug, pool_bytes, fma, fraction, memory_limit)
** -> program | nil, message. arch: "cpu" or "cuda". The pool: pool_bytes, else
** fraction of the device's memory, else the backend's default. memory_limit:
** the host memory to assume instead of RAM + swap (0: found). */
static int l_program_new(lua_State *L) {
  const char *arch = luaL_checkstring(L, 1);
  int threads = (int)luaL_optinteger(L, 2, 0);
  bool debug = lua_toboolean(L, 3);
  lua_Integer pool = luaL_optinteger(L, 4, 0);
  bool fma = lua_toboolean(L, 5);
  lua_Number fraction = luaL_optnumber(L, 6, 0);
  lua_Integer limit = luaL_optinteger(L, 7, 0);
  bool cuda = strcmp(arch, "cuda") == 0;
  if (!cuda && strcmp(arch, "cpu") != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "unknown arch '%s'", arch);
    return 2;
  }
  lang_program *p = lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  luaL_setmetatable(L, LANG_PROGRAM);
  char err[768] = "";
  if (cuda) {
    const char *driver = getenv("LT_CUDA_DRIVER");   /* tests point this at the mock driver */
    p->be = jit_cuda_create(driver && *driver ? driver : NULL, debug, err, sizeof err);
  } else {
    p->be = jit_cpu_create(threads, debug, err, sizeof err);
  }
  if (!p->be) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot start the %s backend: %s", cuda ? "CUDA" : "CPU", err);
    return 2;
  }
  uint64_t bytes = 0;
  char src[160];
  bool sized = pool_size(p->be, pool, fraction, &bytes, src, sizeof src);
  p->sparse = sized ? jit_sparse_create(p->be, bytes, err, sizeof err) : NULL;
  if (!p->sparse) {
    p->be->destroy(p->be);
    p->be = NULL;
    lua_pushnil(L);
    if (!sized)
      lua_pushfstring(L, "%s is less than one byte; give a larger share, or device_memory in bytes", src);
    else
      lua_pushfstring(L, "cannot reserve the memory pool of %I bytes (%s): %s", (lua_Integer)bytes, src, err);
    return 2;
  }
  p->be->sparse = p->sparse;
  if (p->be->host_memory) host_memory_limit(p, limit, bytes, pool > 0 || fraction > 0, src);
  p->ir = ir_program_new();
  p->debug = debug;
  p->fma = fma;
  return 1;
}

static int l_program_free(lua_State *L) {
  program_free(luaL_checkudata(L, 1, LANG_PROGRAM));
  return 0;
}

static int l_program_alive(lua_State *L) {
  lang_program *p = luaL_checkudata(L, 1, LANG_PROGRAM);
  lua_pushboolean(L, p->ir != NULL);
  return 1;
}

static int l_program_threads(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  lua_pushinteger(L, p->be ? p->be->threads : 0);
  return 1;
}

void lang_open_program(lua_State *L) {
  if (luaL_newmetatable(L, LANG_PROGRAM)) {
    lua_pushcfunction(L, l_program_free);
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
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
