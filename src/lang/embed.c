/*
** embed.c -- Lua in a C API runtime (include/lattice_lua.h): the runtime's
** own lua_State (made on first use), lt_run_string / lt_run_file,
** lt.export's C half, and calling an exported kernel with C values.
**
** The state knows its runtime through the registry (HOST_KEY); lt.init in
** it adopts the runtime's program (core.program_new, program_api.c). Every
** call into Lua is protected: a Lua error becomes an lt_status and a message,
** never a longjmp through the host.
*/
#include <lualib.h>
#include <string.h>

#include "lang.h"
#include "lattice_lua.h"
#include "program/capi_impl.h"

#define HOST_KEY "lattice.host_runtime"
#define LAUNCH_FAILED_KEY "lattice.launch_failed"   /* set by core.launch_failed (kernel.lua) */

static capi_runtime *lang_host_runtime(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, HOST_KEY);
  capi_runtime *rt = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return rt;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = luaL_tolstring(L, 1, NULL);
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Runs f(ud) protected; LT_OK, or on_error (LT_ERROR_OUT_OF_MEMORY for
** Lua's memory errors) with the message set for fn. nresults stay on the
** stack on success. */
static lt_status protected(capi_runtime *rt, lua_State *L, lua_CFunction f, void *ud, int nresults, const char *fn,
                           lt_status on_error) {
  int base = lua_gettop(L);
  if (!lua_checkstack(L, 4)) return capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "the Lua stack is full");
  /* a script's error comes with its traceback; a kernel call's names the kernel and line already */
  if (on_error == LT_ERROR_SCRIPT) lua_pushcfunction(L, traceback);
  else lua_pushnil(L);
  lua_pushcfunction(L, f);
  lua_pushlightuserdata(L, ud);
  int r = lua_pcall(L, 1, nresults, lua_isnil(L, base + 1) ? 0 : base + 1);
  lua_remove(L, base + 1);
  if (r == LUA_OK) return LT_OK;
  const char *msg = lua_tostring(L, -1);
  lt_status st = r == LUA_ERRMEM ? LT_ERROR_OUT_OF_MEMORY : on_error;
  capi_fail(rt, st, fn, "%s", msg ? msg : "(an error object that is not a string)");
  lua_settop(L, base);
  return st;
}

/* ---- the state ------------------------------------------------------------------ */

static lt_status call_kernel(capi_runtime *rt, int ref, const lt_value *args, int nargs, lt_value *result);

static void unref(capi_runtime *rt, int ref) {
  lua_State *L = capi_embed(rt);
  if (L) luaL_unref(L, LUA_REGISTRYINDEX, ref);
}

static void close_state(capi_runtime *rt) {
  lua_State *L = capi_embed(rt);
  capi_set_embed(rt, NULL, NULL);
  if (L) lua_close(L);
}

static const capi_embed_ops ops = {call_kernel, unref, close_state};

static int open_state(lua_State *L) {
  capi_runtime *rt = lua_touserdata(L, 1);
  luaL_openlibs(L);
  lua_pushlightuserdata(L, rt);
  lua_setfield(L, LUA_REGISTRYINDEX, HOST_KEY);
  luaL_requiref(L, "lattice", luaopen_lattice, 0);
  return 0;
}

/* The runtime's state, made on first use; NULL with the message set. */
static lua_State *state_of(capi_runtime *rt, const char *fn) {
  lua_State *L = capi_embed(rt);
  if (L) return L;
  L = luaL_newstate();
  if (!L) {
    capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "cannot create a Lua state (out of memory)");
    return NULL;
  }
  if (protected(rt, L, open_state, rt, 0, fn, LT_ERROR_SCRIPT) != LT_OK) {
    lua_close(L);
    return NULL;
  }
  capi_set_embed(rt, L, &ops);
  return L;
}

lua_State *lt_lua_state(lt_runtime h) {
  lt_status st;
  capi_runtime *rt = capi_enter(h, "lt_lua_state", &st);
  if (!rt) return NULL;
  lua_State *L = state_of(rt, "lt_lua_state");
  capi_leave(rt);
  return L;
}

/* ---- running code ------------------------------------------------------------------- */

typedef struct {
  const char *source, *name;
  size_t len;
  const char *arg;                 /* the argument that names the code, for messages */
} chunk;

static int run_chunk(lua_State *L) {
  chunk *c = lua_touserdata(L, 1);
  if (c->source) {
    lt_register_source(L, c->name, c->source, c->len);   /* kernels defined in it can be traced */
    if (luaL_loadbufferx(L, c->source, c->len, c->name, "t") != LUA_OK) return lua_error(L);
  } else if (luaL_loadfilex(L, c->name, "t") != LUA_OK) {
    return lua_error(L);
  }
  lua_call(L, 0, 0);
  return 0;
}

static lt_status run(lt_runtime h, chunk *c, const char *fn) {
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  lua_State *L = c->name ? state_of(rt, fn) : NULL;
  if (!c->name) st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "%s is NULL", c->arg);
  else if (!L) st = LT_ERROR_SCRIPT;   /* (the message is set) */
  else st = protected(rt, L, run_chunk, c, 0, fn, LT_ERROR_SCRIPT);
  capi_leave(rt);
  return st;
}

lt_status lt_run_string(lt_runtime h, const char *source, const char *chunkname) {
  chunk c = {source, source ? (chunkname ? chunkname : "=(host)") : NULL, source ? strlen(source) : 0, "source"};
  return run(h, &c, "lt_run_string");
}

lt_status lt_run_file(lt_runtime h, const char *path) {
  chunk c = {NULL, path, 0, "path"};
  return run(h, &c, "lt_run_file");
}

/* ---- ndarrays ------------------------------------------------------------------------- */

/* Pushes a as an lt.ndarray object (ndarray.lua's wrap of the userdata). */
static void push_ndarray_object(lua_State *L, prog_ndarray *a) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);   /* not the global require: scripts may replace it */
  lua_getfield(L, -1, "lattice.ndarray");                     /* (loaded by lattice.init) */
  lua_remove(L, -2);
  if (!lua_istable(L, -1)) luaL_error(L, "internal error: the module lattice.ndarray is not loaded");
  lua_getfield(L, -1, "wrap");
  lua_remove(L, -2);
  lang_push_ndarray(L, a);
  lua_call(L, 1, 1);
}

typedef struct {
  capi_runtime *rt;
  prog_ndarray *a;
} push_nd;

static int push_nd_protected(lua_State *L) {
  push_nd *p = lua_touserdata(L, 1);
  push_ndarray_object(L, p->a);
  return 1;
}

lt_status lt_push_ndarray(lt_runtime h, lua_State *L, lt_ndarray a) {
  const char *fn = "lt_push_ndarray";
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  push_nd p = {rt, capi_ndarray(rt, a, fn)};
  if (!p.a) st = LT_ERROR_INVALID_HANDLE;
  else if (!L || L != capi_embed(rt))
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "L is not the runtime's Lua state (lt_lua_state)");
  else
    st = protected(rt, L, push_nd_protected, &p, 1, fn, LT_ERROR_SCRIPT);
  capi_leave(rt);
  return st;
}

/* ---- calling an exported kernel --------------------------------------------------------- */

typedef struct {
  capi_runtime *rt;
  int ref;
  const lt_value *args;
  int nargs;
  lt_value *result;
  int held;                        /* registry ref of the ndarray arguments' userdata (drop_args) */
} kernel_call;

static int call_protected(lua_State *L) {
  kernel_call *c = lua_touserdata(L, 1);
  lua_pushboolean(L, 0);
  lua_setfield(L, LUA_REGISTRYINDEX, LAUNCH_FAILED_KEY);
  luaL_checkstack(L, c->nargs + 6, "kernel arguments");
  lua_newtable(L);                 /* the ndarray arguments' userdata: drop_args */
  lua_pushvalue(L, -1);
  c->held = luaL_ref(L, LUA_REGISTRYINDEX);
  int held = lua_gettop(L), nheld = 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
  for (int i = 0; i < c->nargs; i++) {
    const lt_value *v = &c->args[i];
    if (v->kind == LT_VALUE_INT) lua_pushinteger(L, (lua_Integer)v->as.i);
    else if (v->kind == LT_VALUE_FLOAT) lua_pushnumber(L, v->as.f);
    else {
      push_ndarray_object(L, capi_ndarray(c->rt, v->as.nd, "lt_kernel_launch"));   /* checked before */
      lua_getfield(L, -1, "_ud");
      lua_rawseti(L, held, ++nheld);
    }
  }
  lua_call(L, c->nargs, 1);
  if (c->result) {
    if (lua_isinteger(L, -1)) *c->result = lt_int(lua_tointeger(L, -1));
    else if (lua_type(L, -1) == LUA_TNUMBER) *c->result = lt_float(lua_tonumber(L, -1));
    else if (lua_isboolean(L, -1)) *c->result = lt_int(lua_toboolean(L, -1));
  }
  return 0;
}

/* The launch's ndarray arguments let go of their arrays now, not when Lua
** collects the objects made for the call: once lt_kernel_launch returns the
** runtime holds no reference of its own to them, so the host's
** lt_ndarray_release runs the release callback at once. (Nothing keeps the
** objects: a kernel reads its arguments and drops them.) No allocation here. */
static void drop_args(lua_State *L, int held) {
  if (held == LUA_NOREF || !lua_checkstack(L, 2)) return;   /* (then the collector drops them later) */
  lua_rawgeti(L, LUA_REGISTRYINDEX, held);
  for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
    lang_drop_ndarray(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  luaL_unref(L, LUA_REGISTRYINDEX, held);   /* reuses the slot: no allocation */
}

static lt_status call_kernel(capi_runtime *rt, int ref, const lt_value *args, int nargs, lt_value *result) {
  const char *fn = "lt_kernel_launch";
  lua_State *L = capi_embed(rt);
  kernel_call c = {rt, ref, args, nargs, result, LUA_NOREF};
  lt_status st = protected(rt, L, call_protected, &c, 0, fn, LT_ERROR_SCRIPT);
  drop_args(L, c.held);
  if (st == LT_ERROR_SCRIPT) {
    lua_getfield(L, LUA_REGISTRYINDEX, LAUNCH_FAILED_KEY);
    bool ran = lua_toboolean(L, -1);
    lua_pop(L, 1);
    const char *msg = capi_message(rt);
    if (ran) st = LT_ERROR_RUNTIME;   /* it failed while it ran (core.launch_failed) */
    /* the kernel's own checks of its arguments (kernel.lua), before it ran */
    else if (strstr(msg, " expects ") && strstr(msg, " argument")) st = LT_ERROR_INVALID_ARGUMENT;
    else if (strstr(msg, ": argument '")) st = LT_ERROR_TYPE;
    /* else an error while tracing or compiling it: Lua code's error */
  }
  return st;
}

/* ---- lt.export ------------------------------------------------------------------------- */

/* core.export_kernel(name, k): k under name for lt_kernel_find (nothing
** outside a C API runtime) */
static int l_export_kernel(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  capi_runtime *rt = lang_host_runtime(L);
  if (!rt) return 0;
  lua_pushvalue(L, 2);
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (capi_export_kernel(rt, name, ref) != LT_OK) return luaL_error(L, "lt.export: out of memory");
  return 0;
}

/* core.export_field(prog, name, field, snode, instance|nil) */
static int l_export_field(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  const char *name = luaL_checkstring(L, 2);
  lua_Integer id = luaL_checkinteger(L, 4);
  capi_runtime *rt = lang_host_runtime(L);
  if (!rt) return 0;
  if (p != capi_program(rt)) return luaL_error(L, "internal error: lt.export of a field of another program");
  if (id < 0 || id >= p->ir->nsnodes || !p->ir->snodes[id] || p->ir->snodes[id]->kind != IR_SN_place)
    return luaL_error(L, "internal error: SNode %d is not a place", (int)id);
  const ir_snode *s = p->ir->snodes[id];
  char *const *slot = &p->mem[s->tree];
  if (!lua_isnoneornil(L, 5)) {
    lang_instance *in = luaL_checkudata(L, 5, LANG_INSTANCE);
    slot = &in->root;
  }
  lua_pushvalue(L, 3);             /* the field object keeps its tree and instance */
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (capi_export_field(rt, name, (int)id, slot, ref) != LT_OK) return luaL_error(L, "lt.export: out of memory");
  return 0;
}

/* core.launch_failed(): kernel.lua says that the launch under way failed
** while the kernel ran (call_kernel: LT_ERROR_RUNTIME, not LT_ERROR_SCRIPT) */
static int l_launch_failed(lua_State *L) {
  lua_pushboolean(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, LAUNCH_FAILED_KEY);
  return 0;
}

/* core.host_config() -> {arch, threads, device_memory, debug} of the C API
** runtime this state belongs to, or nil (lt.init checks its options against it) */
static int l_host_config(lua_State *L) {
  capi_runtime *rt = lang_host_runtime(L);
  if (!rt) return 0;
  const lt_runtime_config *c = capi_config(rt);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, c->arch == LT_ARCH_CUDA ? "cuda" : "cpu");
  lua_setfield(L, -2, "arch");
  lua_pushinteger(L, c->threads);
  lua_setfield(L, -2, "threads");
  lua_pushinteger(L, (lua_Integer)c->device_memory);
  lua_setfield(L, -2, "device_memory");
  lua_pushboolean(L, c->debug);
  lua_setfield(L, -2, "debug");
  return 1;
}

/* The program of this state's C API runtime for lt.init (program_api.c): its
** own program the first time, then (after lt.init reset it) a new one made
** from the runtime's config, which becomes the runtime's. NULL when the state
** belongs to no runtime; NULL with *err set when the program cannot start. */
prog_program *lang_host_program(lua_State *L, bool fma, bool fast_math, char *err, size_t errlen, bool *hosted) {
  capi_runtime *rt = lang_host_runtime(L);
  *hosted = rt != NULL;
  if (!rt) return NULL;
  prog_program *p = capi_program(rt);
  if (p->ir && !capi_adopt_program(rt)) {
    prog_retain(p);
  } else {
    prog_config cfg = capi_prog_config(rt);
    prog_config_from_env(&cfg);
    cfg.fma = fma;
    cfg.fast_math = fast_math;
    p = prog_create(&cfg, err, errlen);
    if (!p) return NULL;
    capi_set_program(rt, p);   /* retains it */
  }
  p->fma = fma || fast_math;
  p->fast_math = fast_math;
  return p;
}

void lang_open_embed(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"host_config", l_host_config},
    {"export_kernel", l_export_kernel},
    {"export_field", l_export_field},
    {"launch_failed", l_launch_failed},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
