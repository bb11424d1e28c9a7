/*
** module_write.c -- saving an AOT module (module.h has the format): the tree
** types of a program, compiled kernels with their signatures, and their
** machine code, which the compiler makes for the module's CPU and links into
** one shared object (jit_compiler.cpu_module). The file is written to a
** temporary name and renamed, so a reader never sees half a module.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../jit/kcache.h"
#include "lattice_version.h"
#include "env.h"
#include "module.h"
#include "program.h"

/* ---- a growing byte buffer ---------------------------------------------------------- */

typedef struct {
  unsigned char *p;
  size_t n, cap;
  bool oom;
} buf;

static void put(buf *b, const void *s, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->n + n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void put_le(buf *b, uint64_t v, int bytes) {
  unsigned char x[8];
  for (int i = 0; i < bytes; i++) x[i] = (unsigned char)(v >> (8 * i));
  put(b, x, (size_t)bytes);
}
static void put_u32(buf *b, uint32_t v) { put_le(b, v, 4); }
static void put_i64(buf *b, int64_t v) { put_le(b, (uint64_t)v, 8); }
static void put_u8(buf *b, unsigned v) { put_le(b, v, 1); }
static void put_str(buf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  put_u32(b, (uint32_t)n);
  put(b, s, n);
}

/* A section: its header, then the body's bytes. */
static void put_section(buf *b, uint32_t tag, const buf *body) {
  put_u32(b, tag);
  put_u32(b, MOD_SEC_REQUIRED);
  put_le(b, body->n, 8);
  put(b, body->p, body->n);
  if (body->oom) b->oom = true;
}

/* ---- CPUs ------------------------------------------------------------------------------ */

static const struct {
  const char *cpu, *features;
} cpus[] = {
  {"x86-64", ""},
  {"x86-64-v2", "sse3,ssse3,sse4.1,sse4.2,popcnt"},
  {"x86-64-v3", "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,fma"},
  {"x86-64-v4", "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,fma,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"},
};

const char *prog_module_cpu_features(const char *cpu) {
  for (size_t i = 0; i < sizeof cpus / sizeof *cpus; i++)
    if (strcmp(cpus[i].cpu, cpu) == 0) return cpus[i].features;
  return NULL;
}

/* ---- trees ------------------------------------------------------------------------------ */

typedef struct {
  const ir_snode *nodes[IR_MAX_SNODES];
  int n;
} preorder;

static void walk(preorder *o, const ir_snode *s) {
  if (o->n == IR_MAX_SNODES) return;
  o->nodes[o->n++] = s;
  for (int c = 0; c < s->nchildren; c++) walk(o, s->children[c]);
}

static int index_of(const preorder *o, int id) {
  for (int i = 0; i < o->n; i++)
    if (o->nodes[i]->id == id) return i;
  return -1;
}

static bool put_tree(buf *b, const ir_program *ir, const mod_tree_spec *t, char *err, size_t errlen) {
  preorder *o = calloc(1, sizeof *o);
  if (!o) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  walk(o, t->root);
  put_str(b, t->name);
  put_u32(b, (uint32_t)t->root->tree);
  put_i64(b, ir->trees[t->root->tree].bytes);
  put_u32(b, (uint32_t)o->n);
  for (int i = 0; i < o->n; i++) {
    const ir_snode *s = o->nodes[i];
    put_u32(b, (uint32_t)s->id);
    put_u32(b, (uint32_t)(s->parent ? index_of(o, s->parent->id) : -1));
    put_u8(b, (unsigned)s->kind);
    put_u8(b, s->kind == IR_SN_place ? (unsigned)s->dtype : 0);
    int naxes = s->kind == IR_SN_root || s->kind == IR_SN_place ? 0 : s->naxes;
    put_u8(b, (unsigned)naxes);
    for (int a = 0; a < naxes; a++) {
      put_u8(b, (unsigned)s->axes[a]);
      put_i64(b, s->shape[a]);
    }
    put_i64(b, s->chunk_cells);
    put_str(b, s->kind == IR_SN_place && s->name ? s->name : "");
    put_i64(b, s->offset);
    put_i64(b, s->cell_bytes);
    put_i64(b, s->container_bytes);
    put_i64(b, s->meta_offset);
  }
  put_u32(b, (uint32_t)t->nfields);
  bool ok = true;
  for (int f = 0; f < t->nfields && ok; f++) {
    const mod_field *fd = &t->fields[f];
    put_str(b, fd->name);
    put_u8(b, (unsigned)fd->kind);
    put_u32(b, (uint32_t)fd->rows);
    put_u32(b, (uint32_t)fd->cols);
    put_u32(b, (uint32_t)fd->ncomp);
    for (int k = 0; k < fd->ncomp; k++) {
      int at = index_of(o, fd->comp[k]);
      if (at < 0) {
        snprintf(err, errlen, "tree type '%s': field '%s' is not in the tree", t->name, fd->name);
        ok = false;
        break;
      }
      put_u32(b, (uint32_t)at);
    }
  }
  free(o);
  return ok;
}

/* ---- kernels ----------------------------------------------------------------------------- */

typedef struct {
  const ir_program *ir;
  const mod_spec *spec;
  const mod_kernel_spec *k;
  const ir_snode *bad;
} tree_check;

static void check_snode(ir_stmt *s, void *ud) {
  tree_check *c = ud;
  if (c->bad || !ir_op_names_snode(s->op)) return;
  const ir_snode *sn = ir_program_snode(c->ir, s->aux);
  if (!sn) return;
  for (int i = 0; i < c->k->nparams; i++) {
    const mod_param *q = &c->k->params[i];
    if (q->kind == MOD_PARAM_TREE && q->tree < c->spec->ntrees && c->spec->trees[q->tree].root->tree == sn->tree)
      return;
  }
  c->bad = sn;
}

/* The name of a field under level s (for messages): its first place. */
static const char *field_name(const ir_snode *s) {
  while (s && s->kind != IR_SN_place) s = s->nchildren ? s->children[0] : NULL;
  return s && s->name ? s->name : "?";
}

static bool check_trees(const ir_program *ir, const mod_spec *spec, const mod_kernel_spec *k, char *err,
                        size_t errlen) {
  tree_check c = {ir, spec, k, NULL};
  ir_walk(k->compiled->k->body, check_snode, &c);
  if (!c.bad) return true;
  snprintf(err, errlen, "kernel '%s' uses field '%s', which is not in a tree instance it takes as an argument (an "
           "lt.root field, or a tree type not added to the module): a kernel in a module reaches fields only "
           "through tree instances passed as arguments, so give it a parameter of a tree type "
           "(m:add_tree_type) and use that instance's field", k->name, field_name(c.bad));
  return false;
}

static int count_tasks(const ir_kernel *k) {
  int n = 0;
  for (const ir_stmt *s = k->body->first; s; s = s->next) n++;
  return n;
}

static bool put_kernel(buf *b, const mod_kernel_spec *k, char *err, size_t errlen) {
  ir_kernel *ik = k->compiled->k;
  char *text = ir_print_ex(ik, IR_PRINT_LOC);
  if (!text) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  put_str(b, k->name);
  put_str(b, k->compiled->file ? k->compiled->file : "?");
  put_str(b, text);
  free(text);
  put_u32(b, (ik->fma || ik->fast_math ? MOD_KERNEL_FMA : 0) | (ik->fast_math ? MOD_KERNEL_FAST_MATH : 0));
  put_u32(b, (uint32_t)k->nparams);
  for (int i = 0; i < k->nparams; i++) {
    const mod_param *q = &k->params[i];
    put_str(b, q->name);
    put_u8(b, (unsigned)q->kind);
    put_u8(b, (unsigned)q->dtype);
    put_u32(b, (uint32_t)q->rows);
    put_u32(b, (uint32_t)q->cols);
    put_u32(b, (uint32_t)q->ndim);
    put_u32(b, (uint32_t)q->tree);
  }
  put_u32(b, (uint32_t)ik->nnoalias);
  for (int i = 0; i < ik->nnoalias; i++) {
    put_u32(b, (uint32_t)ik->noalias[i].a);
    put_u32(b, (uint32_t)ik->noalias[i].b);
    put_u32(b, (uint32_t)ik->noalias[i].line);
  }
  put_u32(b, (uint32_t)count_tasks(ik));
  return true;
}

bool prog_module_kernel_check(prog_program *p, const mod_spec *spec, int kernel, char *err, size_t errlen) {
  return check_trees(p->ir, spec, &spec->kernels[kernel], err, errlen);
}

/* ---- the file ----------------------------------------------------------------------------- */

static bool write_file(const char *path, const buf *b, char *err, size_t errlen) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, errlen, "cannot write %s: %m", tmp);
    return false;
  }
  bool ok = fwrite(b->p, 1, b->n, f) == b->n;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0) ok = false;
  if (!ok) {
    snprintf(err, errlen, "cannot write %s: %m", path);
    remove(tmp);
  }
  return ok;
}

/* The CUDA sections: every kernel's PTX per SM, checked by ptxas when the
** program has one to check with (the test suite's LT_CHECK_PTX). */
static bool put_cuda(buf *b, prog_program *p, const mod_spec *spec, ir_kernel **ks, const jit_options *jo, char *err,
                     size_t errlen) {
  if (!p->compiler->cuda_module_ptx) {
    snprintf(err, errlen, "this library has no compiler: modules are saved with liblattice");
    return false;
  }
  buf s = {0};
  bool ok = true;
  for (int i = 0; i < spec->nsms && ok; i++) {
    const char *sm = spec->sms[i];
    s.n = 0;
    put_str(&s, sm);
    put_u32(&s, (uint32_t)spec->nkernels);
    for (int k = 0; k < spec->nkernels && ok; k++) {
      char why[1024];
      char *ptx = p->compiler->cuda_module_ptx(ks[k], k, sm, jo, why, sizeof why);
      if (!ptx) {
        snprintf(err, errlen, "kernel '%s': no PTX for %s: %s", spec->kernels[k].name, sm, why);
        ok = false;
        break;
      }
      char what[400];
      snprintf(what, sizeof what, "kernel '%s'", spec->kernels[k].name);
      if (p->check_ptxas && p->compiler->check_ptx_text &&
          !p->compiler->check_ptx_text(ptx, sm, what, p->check_ptxas, jo, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        ok = false;
      }
      put_str(&s, ptx);
      free(ptx);
    }
    put_u32(b, MOD_SEC_CUDA);
    put_u32(b, 0);                 /* not required: a runtime without a GPU skips it */
    put_le(b, s.n, 8);
    put(b, s.p, s.n);
    if (s.oom) b->oom = true;
  }
  free(s.p);
  return ok;
}

bool prog_module_save(prog_program *p, const mod_spec *spec, const char *path, char *err, size_t errlen) {
  if (!spec->has_cpu && spec->nsms == 0) {
    snprintf(err, errlen, "the module has no target: give arch = \"cpu\", \"cuda\" or both");
    return false;
  }
  if (spec->nsms > MOD_MAX_SMS) {
    snprintf(err, errlen, "at most %d SMs in a module", MOD_MAX_SMS);
    return false;
  }
  const char *cpu = spec->cpu ? spec->cpu : PROG_MODULE_DEFAULT_CPU;
  const char *features = prog_module_cpu_features(cpu);
  if (!features) {
    snprintf(err, errlen, "cpu '%s' is not one a module can target; use x86-64, x86-64-v2 (the default), "
             "x86-64-v3 or x86-64-v4", cpu);
    return false;
  }
  if (!p->compiler->cpu_module) {
    snprintf(err, errlen, "this library has no compiler: modules are saved with liblattice");
    return false;
  }
  lt_env env;
  jit_options jo;
  lt_env_read(&env);
  lt_env_jit_options(&env, false, &jo);
  ir_kernel **ks = calloc((size_t)(spec->nkernels ? spec->nkernels : 1), sizeof *ks);
  if (!ks) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  bool ok = true;
  for (int i = 0; i < spec->nkernels && ok; i++) {
    char why[1024];
    if (!prog_kernel_ready(spec->kernels[i].compiled, why, sizeof why)) {
      snprintf(err, errlen, "kernel '%s': %s", spec->kernels[i].name, why);
      ok = false;
    } else {
      ok = check_trees(p->ir, spec, &spec->kernels[i], err, errlen);
      ks[i] = spec->kernels[i].compiled->k;
    }
  }
  void *so = NULL;
  size_t so_len = 0;
  if (ok && spec->nkernels && spec->has_cpu)
    ok = p->compiler->cpu_module(ks, spec->nkernels, cpu, &jo, &so, &so_len, err, errlen);
  if (!ok) {
    free(ks);
    return false;
  }

  buf b = {0}, s = {0};
  put(&b, PROG_MODULE_MAGIC, 8);
  put_u32(&b, PROG_MODULE_FORMAT);
  bool cpu_code = spec->has_cpu && spec->nkernels;
  put_u32(&b, (uint32_t)(1 + spec->ntrees + spec->nkernels + (cpu_code ? 1 : 0) + (spec->nkernels ? spec->nsms : 0)));
  put_le(&b, 0, 8);                /* the file's length, set below */
  put_le(&b, 0, 8);
  put_str(&s, LT_VERSION);
  put_str(&s, spec->has_cpu ? "x86_64-unknown-linux-gnu" : "");
  put_str(&s, spec->has_cpu ? cpu : "");
  put_str(&s, spec->has_cpu ? features : "");
  put_section(&b, MOD_SEC_INFO, &s);
  for (int t = 0; t < spec->ntrees && ok; t++) {
    s.n = 0;
    ok = put_tree(&s, p->ir, &spec->trees[t], err, errlen);
    put_section(&b, MOD_SEC_TREE, &s);
  }
  for (int i = 0; i < spec->nkernels && ok; i++) {
    s.n = 0;
    ok = put_kernel(&s, &spec->kernels[i], err, errlen);
    put_section(&b, MOD_SEC_KERNEL, &s);
  }
  if (ok && cpu_code) {
    s.n = 0;
    put_str(&s, "elf-shared-object");
    put_le(&s, so_len, 8);
    put(&s, so, so_len);
    put_section(&b, MOD_SEC_CPU_CODE, &s);
  }
  if (ok && spec->nkernels) ok = put_cuda(&b, p, spec, ks, &jo, err, errlen);
  free(ks);
  free(so);
  free(s.p);
  if (ok && !b.oom) {
    uint64_t total = b.n + 8;
    for (int i = 0; i < 8; i++) b.p[16 + i] = (unsigned char)(total >> (8 * i));
    put_le(&b, jit_hash(jit_hash_init, b.p, b.n), 8);
  }
  if (ok && b.oom) {
    snprintf(err, errlen, "out of memory");
    ok = false;
  }
  if (ok) ok = write_file(path, &b, err, errlen);
  free(b.p);
  return ok;
}
