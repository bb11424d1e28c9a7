/*
** builtins_host.c -- the host half of the kernel builtins: the program's
** rt_builtins (random seed, launch counter, print buffer), flushing print
** records after a launch, the messages of ndarray bounds and lt.assert
** failures, and lt.random in Lua scope.
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "runtime/builtins.h"

#define DEFAULT_PRINT_BUFFER (1 << 20)

void lang_builtins_free(lang_program *p) {
  if (!p->builtins) return;
  free(p->builtins->print_data);
  free(p->builtins);
  p->builtins = NULL;
}

/* core.builtins_setup(prog, seed, print_buffer_bytes) -> true | nil, message */
static int l_builtins_setup(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  lua_Integer seed = luaL_checkinteger(L, 2);
  lua_Integer cap = luaL_optinteger(L, 3, 0);
  if (cap <= 0) cap = DEFAULT_PRINT_BUFFER;
  lang_builtins_free(p);
  rt_builtins *b = calloc(1, sizeof *b);
  char *data = malloc((size_t)cap);
  if (!b || !data) {
    free(b);
    free(data);
    lua_pushnil(L);
    lua_pushfstring(L, "out of memory allocating the print buffer (%I bytes)", cap);
    return 2;
  }
  b->seed = (uint64_t)seed;
  b->print_data = data;
  b->print_cap = (uint64_t)cap;
  p->builtins = b;
  p->host_draws = 0;
  lua_pushboolean(L, 1);
  return 1;
}

struct rt_builtins *lang_builtins_begin_launch(lang_program *p) {
  rt_builtins *b = p->builtins;
  if (!b) return NULL;
  b->launch++;
  b->print_used = 0;
  b->print_dropped = 0;
  return b;
}

/* Pushes the value of a print slot formatted as Lua's print would. */
static void push_slot(lua_State *L, const rt_print_slot *v) {
  uint64_t u = v->bits;
  switch ((ir_type)v->type) {
  case IR_void: lua_pushnil(L); break;   /* a value no print_more wrote */
  case IR_i1: lua_pushboolean(L, (int)(u & 1)); break;
  case IR_f32: {
    uint32_t w = (uint32_t)u;
    float f;
    memcpy(&f, &w, 4);
    lua_pushnumber(L, f);
    break;
  }
  case IR_f64: {
    double d;
    memcpy(&d, &u, 8);
    lua_pushnumber(L, d);
    break;
  }
  default: lua_pushinteger(L, (lua_Integer)u); break;
  }
}

/* One record as a line: the format's '%' take the values in turn, "%%" is a '%'. */
static void push_record(lua_State *L, const ir_kernel *k, const rt_print_header *h) {
  const char *fmt = ir_kernel_string(k, h->string);
  const rt_print_slot *slots = (const rt_print_slot *)(h + 1);
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  int next = 0;
  for (const char *s = fmt ? fmt : "?"; *s; s++) {
    if (*s != '%') { luaL_addchar(&buf, *s); continue; }
    if (s[1] == '%') { luaL_addchar(&buf, '%'); s++; continue; }
    if (next < h->nvalues) {
      push_slot(L, &slots[next++]);
      luaL_tolstring(L, -1, NULL);
      lua_remove(L, -2);
      luaL_addvalue(&buf);
    }
  }
  luaL_addchar(&buf, '\n');
  luaL_pushresult(&buf);
}

/* Calls io.<file>:write or io.write with the string on top (popped). */
static void lua_write(lua_State *L, const char *file) {
  lua_getglobal(L, "io");
  if (!lua_istable(L, -1)) { lua_pop(L, 2); return; }
  if (file) {
    lua_getfield(L, -1, file);                    /* io, f */
    lua_getfield(L, -1, "write");                 /* io, f, write */
    lua_insert(L, -4);                            /* write, str, io, f */
    lua_insert(L, -3);                            /* write, f, str, io */
    lua_pop(L, 1);
    lua_call(L, 2, 0);
  } else {
    lua_getfield(L, -1, "write");                 /* str, io, write */
    lua_insert(L, -3);                            /* write, str, io */
    lua_pop(L, 1);
    lua_call(L, 1, 0);
  }
}

void lang_builtins_flush(lua_State *L, const lang_compiled *c) {
  rt_builtins *b = c->prog ? c->prog->builtins : NULL;
  if (!b || (b->print_used == 0 && b->print_dropped == 0)) return;
  uint64_t end = b->print_used < b->print_cap ? b->print_used : b->print_cap;
  uint64_t dropped = b->print_dropped;
  b->print_used = b->print_dropped = 0;
  for (uint64_t at = 0; at + sizeof(rt_print_header) <= end;) {
    const rt_print_header *h = (const rt_print_header *)(b->print_data + at);
    if (h->bytes < sizeof *h || h->bytes > end - at) break;   /* never written: cannot happen */
    if (h->string < 0) break;   /* the end of the records, before a dropped one (print.c) */
    push_record(L, c->k, h);
    lua_write(L, NULL);
    at += h->bytes;
  }
  if (dropped) {
    lua_pushfstring(L, "lattice: kernel %s: %I print record%s dropped: the print buffer (%I bytes) was full; "
                       "enlarge it with lt.init{print_buffer = bytes}\n",
                    c->k->name, (lua_Integer)dropped, dropped == 1 ? "" : "s", (lua_Integer)b->print_cap);
    lua_write(L, "stderr");
  }
}

/* "(4, 3)": the extents of the ndarray whose address is argument arg (they
** follow it, named "<name>.shape[k]"). */
static void shape_text(const ir_kernel *k, const uint64_t *args, int arg, char *out, size_t len) {
  size_t n = (size_t)snprintf(out, len, "(");
  const char *name = k->arg_names[arg] ? k->arg_names[arg] : "";
  size_t nl = strlen(name);
  for (int i = arg + 1; i < k->nargs && n < len; i++) {
    const char *an = k->arg_names[i];
    if (!an || strncmp(an, name, nl) != 0 || strncmp(an + nl, ".shape[", 7) != 0) break;
    n += (size_t)snprintf(out + n, len - n, "%s%lld", i > arg + 1 ? ", " : "", (long long)(int32_t)args[i]);
  }
  if (n < len) snprintf(out + n, len - n, ")");
}

typedef struct {
  int string;
  const char *file;
} find_assert;

static void find_assert_file(ir_stmt *s, void *ud) {
  find_assert *fa = ud;
  if (s->op == IR_assert && s->aux == fa->string && s->loc.file) fa->file = s->loc.file;
}

bool lang_builtins_error(lua_State *L, const lang_compiled *c, int32_t code, const int64_t *info,
                         const uint64_t *args) {
  const ir_kernel *k = c->k;
  if (code == RT_ERR_NDINDEX) {
    int arg = (int)info[0];
    char shape[200] = "(?)";
    if (arg >= 0 && arg < k->nargs) shape_text(k, args, arg, shape, sizeof shape);
    lua_pushfstring(L, "kernel %s (%s:%d): index %I out of range for axis %d of ndarray '%s' with shape %s",
                    k->name, c->file, (int)info[3], (lua_Integer)info[2], (int)info[1],
                    arg >= 0 && arg < k->nargs && k->arg_names[arg] ? k->arg_names[arg] : "?", shape);
    return true;
  }
  if (code == RT_ERR_ASSERT) {
    const char *msg = ir_kernel_string(k, (int)info[0]);
    find_assert fa = {(int)info[0], NULL};
    ir_walk(k->body, find_assert_file, &fa);   /* an lt.func may live in another file */
    /* a check the compiler made (a loop bound, ...) starts with \1: its text is the whole message */
    bool builtin = msg && msg[0] == '\1';
    lua_pushfstring(L, "kernel %s (%s:%d): %s%s", k->name, fa.file ? fa.file : c->file, (int)info[3],
                    builtin ? "" : "assertion failed: ", msg ? msg + builtin : "?");
    return true;
  }
  return false;
}

/* core.random_host(prog, type) -> a number drawn as a kernel's lt.random(type)
** would (site 0xffffffff, launch 0, the host's own draw counter) */
static int l_random_host(lua_State *L) {
  lang_program *p = lang_check_program(L, 1);
  lua_Integer t = luaL_checkinteger(L, 2);
  uint64_t seed = p->builtins ? p->builtins->seed : 0;
  uint64_t n = p->host_draws++;
  uint64_t u = rt_random_hash(seed, 0, 0xffffffffu, (uint32_t)(n >> 32), (uint32_t)n);
  if (t == IR_f32) lua_pushnumber(L, (double)(u >> 40) * 0x1p-24);
  else if (t == IR_f64) lua_pushnumber(L, (double)(u >> 11) * 0x1p-53);
  else {
    int bits = ir_type_bits((ir_type)t);
    if (bits < 64) {
      uint64_t mask = (UINT64_C(1) << bits) - 1;
      u &= mask;
      if (ir_type_is_signed((ir_type)t) && (u >> (bits - 1)) & 1) u |= ~mask;
    }
    lua_pushinteger(L, (lua_Integer)u);
  }
  return 1;
}

void lang_open_builtins(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"builtins_setup", l_builtins_setup},
    {"random_host", l_random_host},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
