/*
** kernel.c -- compiling a traced kernel (passes + backend) and launching it.
**
** A compiled kernel is a userdata holding the kernel after the passes, the
** backend's code, and the IR text after every pass (k:ir(), print_ir). It
** belongs to its program: lt.init releases every kernel of the old program.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/passes/passes.h"
#include "lang.h"

typedef struct {
  char *text;
  size_t len, cap;
  bool echo;                       /* print_ir: also write to stdout */
} dump_buf;

static void buf_add(dump_buf *d, const char *s) {
  size_t n = strlen(s);
  if (d->len + n + 1 > d->cap) {
    size_t cap = (d->cap ? d->cap * 2 : 4096);
    while (cap < d->len + n + 1) cap *= 2;
    char *t = realloc(d->text, cap);
    if (!t) return;
    d->text = t;
    d->cap = cap;
  }
  memcpy(d->text + d->len, s, n + 1);
  d->len += n;
}

static void dump_pass(const char *pass, ir_kernel *k, void *ud) {
  dump_buf *d = ud;
  char head[128];
  snprintf(head, sizeof head, "# after %s\n", pass);
  char *text = ir_print(k);
  buf_add(d, head);
  buf_add(d, text ? text : "");
  buf_add(d, "\n");
  if (d->echo) {
    fputs(head, stdout);
    fputs(text ? text : "", stdout);
    fputs("\n", stdout);
    fflush(stdout);
  }
  free(text);
}

static lang_compiled *check_compiled(lua_State *L, int idx) {
  lang_compiled *c = luaL_checkudata(L, idx, LANG_COMPILED);
  if (!c->prog || !c->prog->ir)
    luaL_error(L, "this kernel was compiled for a program that lt.init has reset");
  return c;
}

static int l_compiled_gc(lua_State *L) {
  lang_compiled *c = luaL_checkudata(L, 1, LANG_COMPILED);
  lang_release_compiled(c);
  return 0;
}

/* The test suite's PTX check (tests/tests.cmake, src/jit/ptx_check.c). */
static bool check_ptx(lang_compiled *c, char *err, size_t errlen) {
  const char *ptxas = getenv("LT_CHECK_PTX");
  if (!ptxas || !*ptxas) return true;
  return jit_ptxas_check(c->k, ptxas, err, errlen);
}

bool lang_compiled_ready(lang_compiled *c, char *err, size_t errlen) {
  if (c->pending) {
    jit_backend *be = c->prog->be;
    char why[1024] = "";
    c->jk = be->compile_wait(be, c->pending, why, sizeof why);
    c->pending = NULL;
    if (!c->jk) {
      snprintf(err, errlen, "code generation failed: %s", why);
      return false;
    }
    if (!check_ptx(c, err, errlen)) {
      be->release(be, c->jk);
      c->jk = NULL;
      return false;
    }
  }
  if (!c->jk) snprintf(err, errlen, "its compilation failed earlier");
  return c->jk != NULL;
}

/* core.compile(builder, print_ir, file[, background]) -> compiled. Takes the
** builder's kernel. With background set (and a backend that can), the
** machine code is made on another thread; the first launch waits for it. */
static int l_compile(lua_State *L) {
  lang_builder *b = luaL_checkudata(L, 1, LANG_BUILDER);
  if (!b->k) return luaL_error(L, "internal error: kernel builder already compiled");
  bool echo = lua_toboolean(L, 2);
  const char *file = luaL_optstring(L, 3, "?");
  bool background = lua_toboolean(L, 4);
  lang_program *p = b->prog;
  if (!p->ir) return luaL_error(L, "the program was reset by lt.init while tracing");

  lang_compiled *c = lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, LANG_COMPILED);
  lua_getiuservalue(L, 1, 1);
  lua_setiuservalue(L, -2, 1);       /* the program outlives its kernels */
  c->k = b->k;
  b->k = NULL;
  c->prog = p;
  c->next = p->compiled;
  if (p->compiled) p->compiled->prev = c;
  p->compiled = c;
  c->file = strdup(file);

  /* The text of the IR after every pass (k:ir()) costs a printout per pass:
  ** made now only when print_ir echoes it, else from a copy of the traced
  ** kernel when it is first asked for (the passes are deterministic). */
  bool ok;
  if (echo) {
    dump_buf d = {.echo = true};
    dump_pass("trace", c->k, &d);
    ok = ir_compile(c->k, true, dump_pass, &d);
    c->ir_text = d.text;
  } else {
    c->traced = ir_kernel_clone(c->k);
    ok = ir_compile(c->k, true, NULL, NULL);
  }
  if (!ok) {                 /* "file:line: message" already names the user's line */
    lua_pushstring(L, c->k->error);
    return lua_error(L);
  }
  lang_hold_trees(c);                /* its trees stay while it may run */
  char err[1024] = "";
  if (background && p->be->compile_start) {
    c->pending = p->be->compile_start(p->be, c->k, err, sizeof err);
    if (!c->pending) return luaL_error(L, "kernel %s: code generation failed: %s", c->k->name, err);
    return 1;
  }
  c->jk = p->be->compile(p->be, c->k, err, sizeof err);
  if (!c->jk) return luaL_error(L, "kernel %s: code generation failed: %s", c->k->name, err);
  if (!check_ptx(c, err, sizeof err)) return luaL_error(L, "kernel %s: %s", c->k->name, err);
  return 1;
}

/* core.compiled_wait(compiled): finishes a background compilation; raises
** its error ("kernel NAME: code generation failed: ..."). */
static int l_compiled_wait(lua_State *L) {
  lang_compiled *c = check_compiled(L, 1);
  char err[1024] = "";
  if (!lang_compiled_ready(c, err, sizeof err)) return luaL_error(L, "kernel %s: %s", c->k->name, err);
  return 0;
}

static uint64_t encode_arg(lua_State *L, ir_type t, int idx) {
  if (t == IR_f32) {
    float f = (float)luaL_checknumber(L, idx);
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  if (t == IR_f64) {
    double f = luaL_checknumber(L, idx);
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
  }
  int ok;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok) luaL_error(L, "internal error: argument %d is not an integer", idx - 1);
  uint64_t u = (uint64_t)v;
  int bits = ir_type_bits(t);
  if (bits < 64) {
    uint64_t mask = (UINT64_C(1) << bits) - 1;
    u &= mask;
    if (ir_type_is_signed(t) && (u >> (bits - 1)) & 1) u |= ~mask;
  }
  return u;
}

static void push_ret(lua_State *L, ir_type t, uint64_t u) {
  if (t == IR_f32) {
    uint32_t b = (uint32_t)u;
    float f;
    memcpy(&f, &b, 4);
    lua_pushnumber(L, f);
  } else if (t == IR_f64) {
    double f;
    memcpy(&f, &u, 8);
    lua_pushnumber(L, f);
  } else if (t == IR_i1) {
    lua_pushboolean(L, (int)(u & 1));
  } else {
    int bits = ir_type_bits(t);
    if (bits < 64) {
      uint64_t mask = (UINT64_C(1) << bits) - 1;
      u &= mask;
      if (ir_type_is_signed(t) && (u >> (bits - 1)) & 1) u |= ~mask;
    }
    lua_pushinteger(L, (lua_Integer)u);
  }
}

static void push_launch_error(lua_State *L, lang_compiled *c, int32_t code, const int64_t *info) {
  ir_program *ir = c->prog->ir;
  char msg[768];
  /* the sparse runtime's failure (pool exhausted, ...) explains the others */
  if (c->prog->sparse && jit_sparse_take_error(c->prog->sparse, ir, msg, sizeof msg)) {
    lua_pushfstring(L, "kernel %s (%s): %s", c->k->name, c->file, msg);
    return;
  }
  if (code == RT_ERR_APPEND) {
    /* debug mode: snode_append found the list full */
    int sid = (int)info[0];
    const ir_snode *d = sid >= 0 && sid < ir->nsnodes ? ir->snodes[sid] : NULL;
    const char *field = d && d->nchildren == 1 && d->children[0]->name ? d->children[0]->name : "?";
    lua_pushfstring(L, "kernel %s (%s:%d): lt.append: the list of field '%s' is full (capacity %I)",
                    c->k->name, c->file, (int)info[3], field, (lua_Integer)(d ? d->num_cells : 0));
    return;
  }
  if (code == RT_ERR_INDEX) {
    int sid = (int)info[0];
    const ir_snode *s = sid >= 0 && sid < ir->nsnodes ? ir->snodes[sid] : NULL;
    char shape[200] = "(";
    size_t n = 1;
    for (int i = 0; s && i < s->nidx && n < sizeof shape; i++)
      n += snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "", (long long)s->total_shape[i]);
    if (n < sizeof shape - 1) strcat(shape, ")");
    lua_pushfstring(L, "kernel %s (%s:%d): index %I out of range for axis %d of field '%s' with shape %s",
                    c->k->name, c->file, (int)info[3], (lua_Integer)info[2], (int)info[1],
                    s ? s->name : "?", shape);
    return;
  }
  lua_pushfstring(L, "kernel %s (%s): runtime error %d", c->k->name, c->file, (int)code);
}

/* The roots the launch sees: each tree's default instance, replaced by the
** instances in the table at idx (nil: none) for the lt.tree types passed as
** arguments. */
static void launch_roots(lua_State *L, lang_program *p, int idx, char **roots) {
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

/* core.launch(compiled, instances|nil, args...) -> ret | nothing; raises on a
** runtime error (the program stays usable) */
static int l_launch(lua_State *L) {
  lang_compiled *c = check_compiled(L, 1);
  ir_kernel *k = c->k;
  char cerr[1024];
  if (!lang_compiled_ready(c, cerr, sizeof cerr)) return luaL_error(L, "kernel %s: %s", k->name, cerr);
  int nargs = lua_gettop(L) - 2;
  if (nargs != k->nargs)
    return luaL_error(L, "kernel %s expects %d arguments, got %d", k->name, k->nargs, nargs);
  char *roots[IR_MAX_TREES];
  launch_roots(L, c->prog, 2, roots);
  uint64_t args[RT_MAX_ARGS] = {0}, ret = 0;
  for (int i = 0; i < nargs && i < RT_MAX_ARGS; i++) args[i] = encode_arg(L, k->arg_types[i], i + 3);
  char *gtmp = calloc(1, k->gtmp_size > 0 ? (size_t)k->gtmp_size : 8);
  if (!gtmp) return luaL_error(L, "out of memory");
  int32_t error = 0;
  int64_t info[4] = {0};
  rt_context ctx = {
    .roots = roots, .args = args, .ret = &ret, .gtmp = gtmp, .error = &error,
    .error_info = info, .runtime = jit_sparse_runtime(c->prog->sparse),
    .builtins = lang_builtins_begin_launch(c->prog)};
  jit_backend *be = c->prog->be;
  bool ok = be->launch(be, c->jk, &ctx);
  char device_why[sizeof be->error] = "";
  if (!ok && error == RT_ERR_DEVICE) memcpy(device_why, be->error, sizeof device_why);   /* before later calls overwrite it */
  free(gtmp);
  lang_builtins_flush(L, c);        /* what the kernel printed, also when it failed */
  if (!ok || error != 0) {
    if (error == RT_ERR_DEVICE)
      lua_pushfstring(L, "kernel %s (%s): %s", k->name, c->file, device_why);
    else if (!lang_builtins_error(L, c, error, info, args))
      push_launch_error(L, c, error, info);
    return lua_error(L);
  }
  char msg[768];
  if (c->prog->sparse && jit_sparse_take_error(c->prog->sparse, c->prog->ir, msg, sizeof msg))
    return luaL_error(L, "kernel %s (%s): %s", k->name, c->file, msg);
  if (k->ret_type == IR_void) return 0;
  push_ret(L, k->ret_type, ret);
  return 1;
}

/* core.compiled_ir(compiled) -> the IR after every pass, after the
** declarations of the trees it names: these and any one part parse back */
static int l_compiled_ir(lua_State *L) {
  lang_compiled *c = luaL_checkudata(L, 1, LANG_COMPILED);
  if (!c->ir_text && c->traced) {
    ir_kernel *k = ir_kernel_clone(c->traced);
    if (!k) return luaL_error(L, "out of memory");
    dump_buf d = {.echo = false};
    char *decl = ir_print_ex(k, IR_PRINT_FIELDS | IR_PRINT_ONLY_FIELDS);
    if (*decl) {
      buf_add(&d, "# fields\n");
      buf_add(&d, decl);
      buf_add(&d, "\n");
    }
    free(decl);
    dump_pass("trace", k, &d);
    ir_compile(k, true, dump_pass, &d);
    ir_kernel_free(k);
    c->ir_text = d.text;
  }
  lua_pushstring(L, c->ir_text ? c->ir_text : "");
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
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
