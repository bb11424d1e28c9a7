/*
** kernel.c -- compiled kernels: the passes and the backend's code, the IR
** text after every pass and the parts of it k:ir{...} and print_ir show, the trees a kernel holds, and the
** launch with its runtime failures as messages.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "program_impl.h"

/* ---- the IR after every pass ------------------------------------------------------ */

typedef struct {
  prog_text text;
} dump_buf;

static void dump_pass(const char *pass, ir_kernel *k, void *ud) {
  dump_buf *d = ud;
  char *text = ir_print(k);
  prog_text head = {0};
  prog_text_addf(&head, "# after %s\n", pass);
  prog_text_add(&d->text, head.data ? head.data : "", head.len);
  if (text) prog_text_add(&d->text, text, strlen(text));
  prog_text_add(&d->text, "\n", 1);
  prog_text_free(&head);
  free(text);
}

/* "# fields" and the declarations of the trees k names, when it names any. */
static void add_fields(prog_text *t, ir_kernel *k) {
  char *decl = ir_print_ex(k, IR_PRINT_FIELDS | IR_PRINT_ONLY_FIELDS);
  if (decl && *decl) {
    prog_text_addf(t, "# fields\n");
    prog_text_add(t, decl, strlen(decl));
    prog_text_add(t, "\n", 1);
  }
  free(decl);
}

const char *prog_kernel_ir(prog_kernel *c) {
  if (!c->ir_text && c->traced && c->prog) {
    ir_kernel *k = ir_kernel_clone(c->traced);
    if (!k) return "";
    dump_buf d = {0};
    add_fields(&d.text, k);
    dump_pass("trace", k, &d);
    c->prog->compiler->passes(k, true, dump_pass, &d);
    ir_kernel_free(k);
    c->ir_text = d.text.data;
  }
  return c->ir_text ? c->ir_text : "";
}

/* The start of the next line of text that starts with prefix, or NULL. */
static const char *next_line_with(const char *text, const char *prefix) {
  size_t n = strlen(prefix);
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
    if (strncmp(s, prefix, n) == 0) return s;
  return NULL;
}

/* Whether the section at s ("# after NAME\n...") is the one after pass name. */
static bool section_is(const char *s, const char *name) {
  size_t n = strlen(name);
  s += strlen("# after ");
  return strncmp(s, name, n) == 0 && s[n] == '\n';
}

char *prog_ir_select(const char *text, const char *view, char *err, size_t errlen) {
  const char *first = next_line_with(text, "# after ");
  if (!first || !view || strcmp(view, "all") == 0) return strdup(text);
  prog_text out = {0};
  prog_text_add(&out, text, (size_t)(first - text));       /* "# fields" and the declarations */
  size_t base = out.len;
  const char *last = first;
  for (const char *s = first; s; s = next_line_with(strchr(s, '\n'), "# after ")) last = s;
  bool final = strcmp(view, "final") == 0;
  for (const char *s = first; s; ) {
    const char *next = next_line_with(strchr(s, '\n'), "# after ");
    size_t len = next ? (size_t)(next - s) : strlen(s);
    if (final ? s == last : section_is(s, view)) prog_text_add(&out, s, len);
    s = next;
  }
  if (out.len == base) {                  /* a pass this kernel's pipeline did not run */
    prog_text ran = {0};
    for (const char *s = first; s; s = next_line_with(strchr(s, '\n'), "# after ")) {
      const char *name = s + strlen("# after ");
      size_t n = strcspn(name, "\n");
      char word[72];
      snprintf(word, sizeof word, " %.*s,", (int)(n < 64 ? n : 64), name);
      if (!ran.data || !strstr(ran.data, word)) prog_text_add(&ran, word, strlen(word));
    }
    if (ran.len) ran.data[--ran.len] = '\0';              /* the last comma */
    snprintf(err, errlen, "pass '%s' did not run for this kernel (its passes:%s)", view, ran.data ? ran.data : "");
    prog_text_free(&ran);
    prog_text_free(&out);
    return NULL;
  }
  if (!out.data) return strdup("");
  return out.data;
}

/* ---- the trees a kernel holds ------------------------------------------------------- */

typedef struct {
  const ir_program *ir;
  uint64_t *trees;
} tree_marks;

static void mark_tree(ir_stmt *s, void *ud) {
  tree_marks *m = ud;
  const ir_snode *sn = ir_op_names_snode(s->op) ? ir_program_snode(m->ir, s->aux) : NULL;
  if (sn && sn->tree >= 0 && sn->tree < IR_MAX_TREES) m->trees[sn->tree / 64] |= UINT64_C(1) << (sn->tree % 64);
}

/* c holds every tree its kernel (traced and compiled) names, until released. */
static void hold_trees(prog_kernel *c) {
  prog_program *p = c->prog;
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

static void release_trees(prog_kernel *c) {
  prog_program *p = c->prog;
  for (int t = 0; t < IR_MAX_TREES; t++)
    if (c->trees[t / 64] & (UINT64_C(1) << (t % 64)) && p && p->ir) p->tree_holds[t]--;
  memset(c->trees, 0, sizeof c->trees);
}

/* ---- compiling -------------------------------------------------------------------- */

/* The test suite's PTX check (prog_config.check_ptxas, src/jit/ptx_check.c),
** with libdevice and the temporary folder as the environment says. */
static bool check_ptx(prog_kernel *c, char *err, size_t errlen) {
  const char *ptxas = c->prog->check_ptxas;
  if (!ptxas || !c->prog->compiler->check_ptx) return true;   /* no compiler: no PTX to check */
  lt_env env;
  jit_options jo;
  lt_env_read(&env);
  lt_env_jit_options(&env, false, &jo);
  return c->prog->compiler->check_ptx(c->k, ptxas, &jo, err, errlen);
}

/* lt.stats' cache_hits: kernels whose code came from the offline cache;
** code_ms: the time their code took (LLVM, or the cache read, and linking) */
static void count_cache(prog_program *p, const jit_kernel *jk) {
  if (jk->cached) p->cache_hits++;
  else p->cache_misses++;
  p->code_ms += jk->compile_ms;
}

bool prog_kernel_ready(prog_kernel *c, char *err, size_t errlen) {
  if (c->pending && c->prog) {
    jit_backend *be = c->prog->be;
    char why[1024] = "";
    c->jk = be->compile_wait(be, c->pending, why, sizeof why);
    c->pending = NULL;
    if (!c->jk) {
      snprintf(err, errlen, "code generation failed: %s", why);
      return false;
    }
    count_cache(c->prog, c->jk);
    if (!check_ptx(c, err, errlen)) {
      be->release(be, c->jk);
      c->jk = NULL;
      return false;
    }
  }
  if (!c->jk) snprintf(err, errlen, "its compilation failed earlier");
  return c->jk != NULL;
}

/* c becomes p's kernel for k (taken), defined in file: on p's list, which
** prog_reset releases. */
static void attach(prog_kernel *c, prog_program *p, ir_kernel *k, const char *file) {
  c->k = k;
  c->prog = p;
  c->next = p->compiled;
  if (p->compiled) p->compiled->prev = c;
  p->compiled = c;
  c->file = strdup(file ? file : "?");
}

bool prog_kernel_compile(prog_kernel *c, prog_program *p, ir_kernel *k, const char *file, const char *print_ir,
                         bool background, char *err, size_t errlen) {
  attach(c, p, k, file);
  if (!p->compiler->passes || !p->be->compile) {
    snprintf(err, errlen, "kernel %s: this library has no compiler (the runtime library liblattice_rt runs "
             "kernels from AOT modules only)", k->name ? k->name : "?");
    return false;
  }
  /* The text of the IR after every pass (k:ir()) costs a printout per pass:
  ** made now only when print_ir shows a part of it, else from a copy of the traced
  ** kernel when it is first asked for (the passes are deterministic). */
  bool ok;
  if (print_ir) {            /* the view asked for, also when a pass fails (up to there) */
    dump_buf d = {0};
    add_fields(&d.text, c->k);
    dump_pass("trace", c->k, &d);
    ok = p->compiler->passes(c->k, true, dump_pass, &d);
    c->ir_text = d.text.data;
    char why[256];
    char *shown = prog_ir_select(prog_kernel_ir(c), print_ir, why, sizeof why);
    if (shown) fputs(shown, stdout);
    fflush(stdout);
    free(shown);
  } else {
    c->traced = ir_kernel_clone(c->k);
    ok = p->compiler->passes(c->k, true, NULL, NULL);
  }
  if (!ok) {                 /* "file:line: message" already names the user's line */
    snprintf(err, errlen, "%s", c->k->error);
    return false;
  }
  hold_trees(c);             /* its trees stay while it may run */
  char why[1024] = "";
  if (background && p->be->compile_start) {
    c->pending = p->be->compile_start(p->be, c->k, why, sizeof why);
    if (!c->pending) {
      snprintf(err, errlen, "kernel %s: code generation failed: %s", c->k->name, why);
      return false;
    }
    return true;
  }
  c->jk = p->be->compile(p->be, c->k, why, sizeof why);
  if (!c->jk) {
    snprintf(err, errlen, "kernel %s: code generation failed: %s", c->k->name, why);
    return false;
  }
  count_cache(p, c->jk);
  if (!check_ptx(c, why, sizeof why)) {
    snprintf(err, errlen, "kernel %s: %s", c->k->name, why);
    return false;
  }
  return true;
}

void prog_kernel_adopt(prog_kernel *c, prog_program *p, ir_kernel *k, jit_kernel *jk, const char *file,
                       bool foreign) {
  attach(c, p, k, file);
  c->jk = jk;
  c->foreign = foreign;
  hold_trees(c);
}


void prog_kernel_release(prog_kernel *c) {
  prog_program *p = c->prog;
  if (p) {
    char err[1024];
    prog_kernel_ready(c, err, sizeof err);   /* a compilation under way reads c->k */
    release_trees(c);
    if (c->jk && c->foreign) jit_kernel_free(c->jk);   /* the code is an AOT module's */
    else if (c->jk && p->be) p->be->release(p->be, c->jk);
    if (c->prev) c->prev->next = c->next;
    else p->compiled = c->next;
    if (c->next) c->next->prev = c->prev;
  }
  c->prev = c->next = NULL;
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

/* ---- values ------------------------------------------------------------------------ */

uint64_t prog_encode_int(ir_type t, int64_t v) {
  uint64_t u = (uint64_t)v;
  int bits = ir_type_bits(t);
  if (bits < 64) {
    uint64_t mask = (UINT64_C(1) << bits) - 1;
    u &= mask;
    if (ir_type_is_signed(t) && (u >> (bits - 1)) & 1) u |= ~mask;
  }
  return u;
}

uint64_t prog_encode_float(ir_type t, double v) {
  if (t == IR_f32) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  uint64_t u;
  memcpy(&u, &v, 8);
  return u;
}

int64_t prog_decode_int(ir_type t, uint64_t bits) { return (int64_t)prog_encode_int(t, (int64_t)bits); }

double prog_decode_float(ir_type t, uint64_t bits) {
  if (t == IR_f32) {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  double d;
  memcpy(&d, &bits, 8);
  return d;
}

/* ---- launching ----------------------------------------------------------------------- */

static void launch_error(const prog_kernel *c, int32_t code, const int64_t *info, char *err, size_t errlen) {
  ir_program *ir = c->prog->ir;
  char msg[768];
  /* the sparse runtime's failure (pool exhausted, ...) explains the others */
  if (prog_take_error(c->prog, msg, sizeof msg)) {
    snprintf(err, errlen, "kernel %s (%s): %s", c->k->name, c->file, msg);
    return;
  }
  if (code == RT_ERR_APPEND) {
    /* debug mode: snode_append found the list full */
    int sid = (int)info[0];
    const ir_snode *d = sid >= 0 && sid < ir->nsnodes ? ir->snodes[sid] : NULL;
    const char *field = d && d->nchildren == 1 && d->children[0]->name ? d->children[0]->name : "?";
    snprintf(err, errlen, "kernel %s (%s:%d): lt.append: the list of field '%s' is full (capacity %lld)",
             c->k->name, c->file, (int)info[3], field, (long long)(d ? d->num_cells : 0));
    return;
  }
  if (code == RT_ERR_INDEX) {
    int sid = (int)info[0];
    const ir_snode *s = sid >= 0 && sid < ir->nsnodes ? ir->snodes[sid] : NULL;
    int axis = (int)info[1];
    char box[200] = "shape (?)";
    if (s) prog_box_text(s, box, sizeof box);
    /* the IR checks the 0-based index; the user wrote it with the field's offset */
    long long at = (long long)info[2] + (s && axis >= 0 && axis < s->nidx ? s->index_offset[axis] : 0);
    snprintf(err, errlen, "kernel %s (%s:%d): index %lld out of range for axis %d of field '%s' with %s",
             c->k->name, c->file, (int)info[3], at, axis, s ? s->name : "?", box);
    return;
  }
  snprintf(err, errlen, "kernel %s (%s): runtime error %d", c->k->name, c->file, (int)code);
}

/* Writes the text to the stream unless the caller takes it. */
static void emit(prog_text *mine, prog_text *theirs, FILE *f) {
  if (theirs || !mine->len) return;
  fwrite(mine->data, 1, mine->len, f);
  fflush(f);
}

bool prog_launch(prog_kernel *c, char **roots, const uint64_t *args, int nargs, uint64_t *ret, prog_text *out,
                 prog_text *warn, char *err, size_t errlen) {
  prog_program *p = c->prog;
  if (!p || !p->ir) {
    snprintf(err, errlen, "this kernel was compiled for a program that has been reset");
    return false;
  }
  ir_kernel *k = c->k;
  char cerr[1024];
  if (!prog_kernel_ready(c, cerr, sizeof cerr)) {
    snprintf(err, errlen, "kernel %s: %s", k->name, cerr);
    return false;
  }
  if (nargs != k->nargs) {
    snprintf(err, errlen, "kernel %s expects %d arguments, got %d", k->name, k->nargs, nargs);
    return false;
  }
  for (int q = 0; q < k->nnoalias; q++) {
    const ir_noalias *na = &k->noalias[q];
    if (na->a < nargs && na->b < nargs && args[na->a] == args[na->b] && args[na->a] != 0) {
      const char *x = k->arg_names[na->a], *y = k->arg_names[na->b];
      snprintf(err, errlen,
               "kernel %s: arguments '%s' and '%s' are the same ndarray, but its parallel loop (line %d) writes "
               "one at elements it reads the other at in other iterations: pass two different ndarrays, or make "
               "the loop serial (lt.serial)",
               k->name, x ? x : "?", y ? y : "?", na->line);
      return false;
    }
  }
  char *all[IR_MAX_TREES];
  if (!roots) {
    memcpy(all, p->mem, sizeof p->mem);
    roots = all;
  }
  uint64_t slots[RT_MAX_ARGS] = {0};
  for (int i = 0; i < nargs && i < RT_MAX_ARGS; i++) slots[i] = args[i];
  uint64_t result = 0;
  char *gtmp = calloc(1, k->gtmp_size > 0 ? (size_t)k->gtmp_size : 8);
  if (!gtmp) {
    snprintf(err, errlen, "kernel %s: out of memory", k->name);
    return false;
  }
  int32_t error = 0;
  int64_t info[4] = {0};
  rt_context ctx = {
    .roots = roots, .args = slots, .ret = &result, .gtmp = gtmp, .error = &error,
    .error_info = info, .runtime = jit_sparse_runtime(p->sparse),
    .builtins = prog_builtins_begin(p)};
  jit_backend *be = p->be;
  bool ok = jit_launch_profiled(be, p->sparse, c->jk, &ctx, p->profile);
  char device_why[sizeof be->error] = "";
  if (!ok && error == RT_ERR_DEVICE) memcpy(device_why, be->error, sizeof device_why);   /* before later calls overwrite it */
  free(gtmp);
  prog_text o = {0}, w = {0};
  prog_builtins_flush(c, out ? out : &o, warn ? warn : &w);   /* what the kernel printed, also when it failed */
  emit(&o, out, stdout);
  emit(&w, warn, stderr);
  prog_text_free(&o);
  prog_text_free(&w);
  if (!ok || error != 0) {
    if (error == RT_ERR_DEVICE) snprintf(err, errlen, "kernel %s (%s): %s", k->name, c->file, device_why);
    else if (!prog_builtins_error(c, error, info, slots, err, errlen)) launch_error(c, error, info, err, errlen);
    return false;
  }
  char msg[768];
  if (prog_take_error(p, msg, sizeof msg)) {
    snprintf(err, errlen, "kernel %s (%s): %s", k->name, c->file, msg);
    return false;
  }
  if (ret) *ret = result;
  return true;
}
