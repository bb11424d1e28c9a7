/*
** kernel_api.c -- compiled kernels as Lua userdata (a prog_kernel inside,
** src/program/kernel.c) and their launch with Lua values.
**
** A compiled kernel belongs to its program: lt.init releases every kernel of
** the old program.
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "ir/affine.h"
#include "ir/passes/passes.h"

static prog_kernel *check_compiled(lua_State *L, int idx) {
  prog_kernel *c = luaL_checkudata(L, idx, LANG_COMPILED);
  if (!c->prog || !c->prog->ir)
    luaL_error(L, "this kernel was compiled for a program that lt.init has reset");
  return c;
}

static int l_compiled_gc(lua_State *L) {
  prog_kernel_release(luaL_checkudata(L, 1, LANG_COMPILED));
  return 0;
}

/* core.compile(builder, print_ir, file[, background]) -> compiled. Takes the
** builder's kernel; print_ir: nil, or the view of its IR to print
** (prog_ir_select: "final", "all" or a pass name). With background set (and
** a backend that can), the machine code is made on another thread; the first
** launch waits for it. */
static int l_compile(lua_State *L) {
  lang_builder *b = luaL_checkudata(L, 1, LANG_BUILDER);
  if (!b->k) return luaL_error(L, "internal error: kernel builder already compiled");
  const char *echo = luaL_optstring(L, 2, NULL);
  const char *file = luaL_optstring(L, 3, "?");
  bool background = lua_toboolean(L, 4);
  prog_program *p = b->prog;
  if (!p->ir) return luaL_error(L, "the program was reset by lt.init while tracing");
  prog_kernel *c = lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, LANG_COMPILED);
  lua_getiuservalue(L, 1, 1);
  lua_setiuservalue(L, -2, 1);       /* the program outlives its kernels */
  ir_kernel *k = b->k;
  b->k = NULL;
  char err[1280] = "";
  if (!prog_kernel_compile(c, p, k, file, echo, background, err, sizeof err)) {
    lua_pushstring(L, err);
    return lua_error(L);
  }
  return 1;
}

/* core.compiled_wait(compiled): finishes a background compilation; raises
** its error ("kernel NAME: code generation failed: ..."). */
static int l_compiled_wait(lua_State *L) {
  prog_kernel *c = check_compiled(L, 1);
  char err[1024] = "";
  if (!prog_kernel_ready(c, err, sizeof err)) return luaL_error(L, "kernel %s: %s", c->k->name, err);
  return 0;
}

static uint64_t encode_arg(lua_State *L, ir_type t, int idx) {
  if (ir_type_is_float(t)) return prog_encode_float(t, luaL_checknumber(L, idx));
  int ok;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok) luaL_error(L, "internal error: argument %d is not an integer", idx - 1);
  return prog_encode_int(t, v);
}

static void push_ret(lua_State *L, ir_type t, uint64_t u) {
  if (ir_type_is_float(t)) lua_pushnumber(L, prog_decode_float(t, u));
  else if (t == IR_i1) lua_pushboolean(L, (int)(u & 1));
  else lua_pushinteger(L, (lua_Integer)prog_decode_int(t, u));
}

/* The roots the launch sees: each tree's default instance, replaced by the
** instances in the table at idx (nil: none) for the lt.tree types passed as
** arguments. */
static void launch_roots(lua_State *L, prog_program *p, int idx, char **roots) {
  memcpy(roots, p->mem, sizeof p->mem);
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    lang_instance *in = luaL_checkudata(L, -1, LANG_INSTANCE);
    if (!in->root) luaL_error(L, "a tree instance passed to the kernel was destroyed (g:destroy())");
    roots[in->tree] = in->root;
    lua_pop(L, 1);
  }
}

/* Calls io.<file>:write or io.write with the text (nothing when empty). */
static void lua_write(lua_State *L, const char *file, const prog_text *t) {
  if (!t->len) return;
  lua_getglobal(L, "io");
  if (!lua_istable(L, -1)) { lua_pop(L, 1); return; }
  if (file) {
    lua_getfield(L, -1, file);                    /* io, f */
    lua_getfield(L, -1, "write");                 /* io, f, write */
    lua_insert(L, -2);                            /* io, write, f */
    lua_pushlstring(L, t->data, t->len);
    lua_call(L, 2, 0);
  } else {
    lua_getfield(L, -1, "write");                 /* io, write */
    lua_pushlstring(L, t->data, t->len);
    lua_call(L, 1, 0);
  }
  lua_pop(L, 1);
}

/* core.launch(compiled, instances|nil, args...) -> ret | nothing; raises on a
** runtime error (the program stays usable) */
static int l_launch(lua_State *L) {
  prog_kernel *c = check_compiled(L, 1);
  ir_kernel *k = c->k;
  int nargs = lua_gettop(L) - 2;
  if (nargs != k->nargs)
    return luaL_error(L, "kernel %s expects %d arguments, got %d", k->name, k->nargs, nargs);
  char *roots[IR_MAX_TREES];
  launch_roots(L, c->prog, 2, roots);
  uint64_t args[RT_MAX_ARGS] = {0}, ret = 0;
  for (int i = 0; i < nargs && i < RT_MAX_ARGS; i++) args[i] = encode_arg(L, k->arg_types[i], i + 3);
  prog_text out = {0}, warn = {0};
  char err[1280] = "";
  bool ok = prog_launch(c, roots, args, nargs, &ret, &out, &warn, err, sizeof err);
  /* what the kernel printed, also when it failed; io.write may raise, so the
  ** texts move to Lua strings (which the collector frees) first */
  if (out.len || warn.len) {
    lua_pushlstring(L, out.data ? out.data : "", out.len);
    lua_pushlstring(L, warn.data ? warn.data : "", warn.len);
    prog_text_free(&out);
    prog_text_free(&warn);
    size_t n;
    const char *s = lua_tolstring(L, -2, &n);
    lua_write(L, NULL, &(prog_text){(char *)s, n, n});
    s = lua_tolstring(L, -1, &n);
    lua_write(L, "stderr", &(prog_text){(char *)s, n, n});
  }
  prog_text_free(&out);
  prog_text_free(&warn);
  if (!ok) {
    lua_pushstring(L, err);
    return lua_error(L);
  }
  if (k->ret_type == IR_void) return 0;
  push_ret(L, k->ret_type, ret);
  return 1;
}

/* core.compiled_nargs(compiled) -> its IR arguments after every pass, and
** their names from the first after `from` (an adjoint takes its result's
** adjoint, "result.grad", and an array for its arguments' gradients,
** "args.grad", after the primal's) */
static int l_compiled_nargs(lua_State *L) {
  prog_kernel *c = check_compiled(L, 1);
  int n = c->k ? c->k->nargs : 0;
  lua_Integer from = luaL_optinteger(L, 2, n);
  lua_pushinteger(L, n);
  for (int i = from < 0 ? 0 : (int)from; i < n; i++)
    lua_pushstring(L, c->k->arg_names[i] ? c->k->arg_names[i] : "");
  return 1 + (n > from ? (int)(n - (from < 0 ? 0 : from)) : 0);
}

/* core.compiled_arg_type(compiled, i) -> the type name of IR argument i
** (0-based) after every pass, e.g. "f64" */
static int l_compiled_arg_type(lua_State *L) {
  prog_kernel *c = check_compiled(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (!c->k || i < 0 || i >= c->k->nargs) return luaL_error(L, "compiled_arg_type: no argument %d", (int)i);
  lua_pushstring(L, ir_type_name(c->k->arg_types[i]));
  return 1;
}

/* core.compiled_ir(compiled[, view]) -> the IR after every pass ("all", the
** default), the final IR ("final") or the IR after the pass named view, after
** the declarations of the trees it names: these and any one part parse back.
** A pass the kernel's pipeline did not run is an error listing those it ran. */
static int l_compiled_ir(lua_State *L) {
  prog_kernel *c = luaL_checkudata(L, 1, LANG_COMPILED);
  const char *view = luaL_optstring(L, 2, "all");
  char err[512];
  char *text = prog_ir_select(prog_kernel_ir(c), view, err, sizeof err);
  if (!text) return luaL_error(L, "%s", err);
  lua_pushstring(L, text);
  free(text);
  return 1;
}

/* core.pass_names() -> {"trace", "typecheck", ...}: what a view of the IR
** may name (trace: the IR as traced; then IR_PASSES, passes.h) */
static int l_pass_names(lua_State *L) {
  static const char *const names[] = {"trace",
#define P(name, doc) #name,
    IR_PASSES(P)
#undef P
  };
  lua_createtable(L, (int)(sizeof names / sizeof names[0]), 0);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

typedef struct {
  lua_State *L;
  const ir_kernel *k;
  int list;                        /* stack index of the result */
} field_uses;

/* One access as {id =, line =, op = "read" | "store" | "add", axes = {...}}:
** an axis is {arg = n, c = c} (IR argument n plus c), {c = c} (a constant)
** or false (unknown). An ndarray argument's access has nd = its IR argument
** (the address) instead of id, and no axes (any element). */
static void note_use(ir_stmt *s, void *ud) {
  field_uses *u = ud;
  lua_State *L = u->L;
  unsigned f = ir_op_flags(s->op);
  if (!(f & (IR_LOAD | IR_STORE)) || !s->ops[0]) return;
  ir_stmt *p = s->ops[0];
  bool nd = p->op == IR_ext_ptr && p->ops[0] && p->ops[0]->op == IR_arg;
  if (p->op != IR_global_ptr && !nd) return;
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, nd ? p->ops[0]->aux : p->aux);
  lua_setfield(L, -2, nd ? "nd" : "id");
  lua_pushinteger(L, s->loc.line);
  lua_setfield(L, -2, "line");
  lua_pushstring(L, s->op == IR_global_load ? "read"
                    : s->op == IR_global_store ? "store"
                    : s->op == IR_atomic_add || s->op == IR_atomic_sub ? "add" : "other");
  lua_setfield(L, -2, "op");
  lua_createtable(L, p->nops, 0);
  for (int i = 0; !nd && i < p->nops; i++) {
    ir_affine a = ir_affine_of(u->k, p->ops[i]);
    if (a.base && a.base->op != IR_arg) {
      lua_pushboolean(L, 0);
    } else {
      lua_createtable(L, 0, 2);
      lua_pushinteger(L, a.c);
      lua_setfield(L, -2, "c");
      if (a.base) {
        lua_pushinteger(L, a.base->aux);
        lua_setfield(L, -2, "arg");
      }
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "axes");
  lua_rawseti(L, u->list, (lua_Integer)lua_rawlen(L, u->list) + 1);
}

/* core.kernel_fields(compiled) -> the list of its field accesses (note_use),
** in program order: lt.tape's check (autodiff.lua) */
static int l_kernel_fields(lua_State *L) {
  prog_kernel *c = check_compiled(L, 1);
  lua_newtable(L);
  field_uses u = {L, c->k, lua_gettop(L)};
  if (c->k) ir_walk(c->k->body, note_use, &u);
  return 1;
}

void lang_open_kernel(lua_State *L) {
  if (luaL_newmetatable(L, LANG_COMPILED)) {
    lua_pushcfunction(L, l_compiled_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"compile", l_compile},
    {"compiled_wait", l_compiled_wait},
    {"launch", l_launch},
    {"compiled_ir", l_compiled_ir},
    {"pass_names", l_pass_names},
    {"compiled_nargs", l_compiled_nargs},
    {"compiled_arg_type", l_compiled_arg_type},
    {"kernel_fields", l_kernel_fields},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
