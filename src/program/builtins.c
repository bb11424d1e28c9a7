/*
** builtins.c -- the host half of the kernel builtins: the program's
** rt_builtins (random seed, launch counter, print buffer), the text of the
** print records a launch left, the messages of ndarray bounds and lt.assert
** failures, lt.random in host code, and the growable text those go to.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/builtins.h"
#include "program.h"
#include "program_impl.h"

#define DEFAULT_PRINT_BUFFER (1 << 20)

/* ---- text ------------------------------------------------------------------------ */

void prog_text_add(prog_text *t, const char *s, size_t n) {
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    while (cap < t->len + n + 1) cap *= 2;
    char *d = realloc(t->data, cap);
    if (!d) return;   /* out of memory: the text is cut short, nothing breaks */
    t->data = d;
    t->cap = cap;
  }
  memcpy(t->data + t->len, s, n);
  t->len += n;
  t->data[t->len] = 0;
}

void prog_text_addf(prog_text *t, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) prog_text_add(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void prog_text_free(prog_text *t) {
  free(t->data);
  *t = (prog_text){0};
}

void prog_text_number(prog_text *t, ir_type type, uint64_t u) {
  char buf[64];
  switch (type) {
  case IR_void: snprintf(buf, sizeof buf, "nil"); break;   /* a value no print_more wrote */
  case IR_i1: snprintf(buf, sizeof buf, "%s", (u & 1) ? "true" : "false"); break;
  case IR_f32:
  case IR_f64: {
    /* Lua's tostring: "%.14g", and ".0" after what would read as an integer */
    snprintf(buf, sizeof buf - 2, "%.14g", prog_decode_float(type, u));
    if (buf[strspn(buf, "-0123456789")] == 0) strcat(buf, ".0");
    break;
  }
  default: snprintf(buf, sizeof buf, "%lld", (long long)u); break;
  }
  prog_text_add(t, buf, strlen(buf));
}

/* ---- the builtins' state ------------------------------------------------------------- */

void prog_builtins_free(prog_program *p) {
  if (!p->builtins) return;
  free(p->builtins->print_data);
  free(p->builtins);
  p->builtins = NULL;
}

bool prog_builtins_setup(prog_program *p, uint64_t seed, int64_t cap, char *err, size_t errlen) {
  if (cap <= 0) cap = DEFAULT_PRINT_BUFFER;
  rt_builtins *b = calloc(1, sizeof *b);
  char *data = malloc((size_t)cap);
  if (!b || !data) {
    free(b);
    free(data);
    snprintf(err, errlen, "out of memory allocating the print buffer (%lld bytes)", (long long)cap);
    return false;
  }
  prog_builtins_free(p);
  b->seed = seed;
  b->print_data = data;
  b->print_cap = (uint64_t)cap;
  p->builtins = b;
  p->host_draws = 0;
  return true;
}

struct rt_builtins *prog_builtins_begin(prog_program *p) {
  rt_builtins *b = p->builtins;
  if (!b) return NULL;
  b->launch++;
  b->print_used = 0;
  b->print_dropped = 0;
  return b;
}

/* One record as a line: the format's '%' take the values in turn, "%%" is a '%'. */
static void add_record(prog_text *t, const ir_kernel *k, const rt_print_header *h) {
  const char *fmt = ir_kernel_string(k, h->string);
  const rt_print_slot *slots = (const rt_print_slot *)(h + 1);
  int next = 0;
  for (const char *s = fmt ? fmt : "?"; *s; s++) {
    if (*s != '%') { prog_text_add(t, s, 1); continue; }
    if (s[1] == '%') { prog_text_add(t, "%", 1); s++; continue; }
    if (next < h->nvalues) {
      prog_text_number(t, (ir_type)slots[next].type, slots[next].bits);
      next++;
    }
  }
  prog_text_add(t, "\n", 1);
}

void prog_builtins_flush(const prog_kernel *c, prog_text *out, prog_text *warn) {
  rt_builtins *b = c->prog ? c->prog->builtins : NULL;
  if (!b || (b->print_used == 0 && b->print_dropped == 0)) return;
  uint64_t end = b->print_used < b->print_cap ? b->print_used : b->print_cap;
  uint64_t dropped = b->print_dropped;
  b->print_used = b->print_dropped = 0;
  for (uint64_t at = 0; at + sizeof(rt_print_header) <= end;) {
    const rt_print_header *h = (const rt_print_header *)(b->print_data + at);
    if (h->bytes < sizeof *h || h->bytes > end - at) break;   /* never written: cannot happen */
    if (h->string < 0) break;   /* the end of the records, before a dropped one (print.c) */
    add_record(out, c->k, h);
    at += h->bytes;
  }
  if (dropped)
    prog_text_addf(warn,
                   "lattice: kernel %s: %llu print record%s dropped: the print buffer (%llu bytes) was full; "
                   "enlarge it with lt.init{print_buffer = bytes}\n",
                   c->k->name, (unsigned long long)dropped, dropped == 1 ? "" : "s",
                   (unsigned long long)b->print_cap);
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

bool prog_builtins_error(const prog_kernel *c, int32_t code, const int64_t *info, const uint64_t *args, char *err,
                         size_t errlen) {
  const ir_kernel *k = c->k;
  if (code == RT_ERR_NDINDEX) {
    int arg = (int)info[0];
    char shape[200] = "(?)";
    if (arg >= 0 && arg < k->nargs) shape_text(k, args, arg, shape, sizeof shape);
    snprintf(err, errlen, "kernel %s (%s:%d): index %lld out of range for axis %d of ndarray '%s' with shape %s",
             k->name, c->file, (int)info[3], (long long)info[2], (int)info[1],
             arg >= 0 && arg < k->nargs && k->arg_names[arg] ? k->arg_names[arg] : "?", shape);
    return true;
  }
  if (code == RT_ERR_ASSERT) {
    const char *msg = ir_kernel_string(k, (int)info[0]);
    find_assert fa = {(int)info[0], NULL};
    ir_walk(k->body, find_assert_file, &fa);   /* an lt.func may live in another file */
    /* a check the compiler made (a loop bound, ...) starts with \1: its text is the whole message */
    bool builtin = msg && msg[0] == '\1';
    snprintf(err, errlen, "kernel %s (%s:%d): %s%s", k->name, fa.file ? fa.file : c->file, (int)info[3],
             builtin ? "" : "assertion failed: ", msg ? msg + builtin : "?");
    return true;
  }
  return false;
}

void prog_random_host(prog_program *p, ir_type t, uint64_t *bits, double *f) {
  uint64_t seed = p->builtins ? p->builtins->seed : 0;
  uint64_t n = p->host_draws++;
  uint64_t u = rt_random_hash(seed, 0, 0xffffffffu, (uint32_t)(n >> 32), (uint32_t)n);
  *f = 0;
  if (t == IR_f32) *f = (double)(u >> 40) * 0x1p-24;
  else if (t == IR_f64) *f = (double)(u >> 11) * 0x1p-53;
  else u = prog_encode_int(t, (int64_t)u);
  *bits = u;
}
