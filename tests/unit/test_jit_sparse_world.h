/*
** test_jit_sparse_world.h -- a program with a pool, sparse trees and the CPU
** backend for the sparse JIT tests: declare fields from IR text, run kernels
** written as IR text (compiled with the whole pipeline), look SNodes up.
*/
#ifndef LATTICE_TEST_JIT_SPARSE_WORLD_H
#define LATTICE_TEST_JIT_SPARSE_WORLD_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/passes/passes.h"
#include "ir/snode.h"
#include "jit/jit.h"
#include "jit/jit_sparse.h"

typedef struct {
  ir_program *p;
  jit_sparse *sp;
  jit_backend *be;
  char *roots[IR_MAX_TREES];
  int ntrees;                  /* trees registered so far */
  bool debug;                  /* kernels get k->debug */
  int32_t code;                /* rt_error_code of the last launch */
  int64_t info[4];
  char err[1024];
} sw;

static inline bool sw_init(sw *w, uint64_t pool, int threads) {
  memset(w, 0, sizeof *w);
  w->p = ir_program_new();
  w->be = jit_cpu_create(threads, NULL, w->err, sizeof w->err);
  if (!w->be) return false;
  w->sp = jit_sparse_create(w->be, pool, w->err, sizeof w->err);
  return w->sp != NULL;
}

static inline void sw_free(sw *w) {
  if (w->sp) jit_sparse_destroy(w->sp);   /* frees the pool through w->be */
  if (w->be) w->be->destroy(w->be);
  ir_program_free(w->p);
}

/* Registers the trees declared since the last call and gives each an instance. */
static inline bool sw_sync(sw *w) {
  for (; w->ntrees < w->p->ntrees; w->ntrees++) {
    if (!jit_sparse_add_tree(w->sp, w->p, w->ntrees, w->err, sizeof w->err)) return false;
    w->roots[w->ntrees] = jit_sparse_new_instance(w->sp, w->p, w->ntrees, w->err, sizeof w->err);
    if (!w->roots[w->ntrees]) return false;
  }
  return true;
}

/* Declares fields: `decls` is field lines of the IR text format. */
static inline bool sw_fields(sw *w, const char *decls) {
  char text[4096];
  snprintf(text, sizeof text, "%skernel decl() {\n}\n", decls);
  ir_kernel *k = ir_parse(text, w->p, w->err, sizeof w->err);
  if (!k) return false;
  ir_kernel_free(k);
  return sw_sync(w);
}

static inline ir_snode *sw_place(sw *w, const char *name) {
  for (int i = 0; i < w->p->nsnodes; i++) {
    ir_snode *s = w->p->snodes[i];
    if (s && s->kind == IR_SN_place && s->name && strcmp(s->name, name) == 0) return s;
  }
  fprintf(stderr, "no field %s\n", name);
  abort();
}

/* The level `up` levels above field name's place (1: its parent). */
static inline ir_snode *sw_level(sw *w, const char *name, int up) {
  ir_snode *s = sw_place(w, name);
  while (up-- > 0) s = s->parent;
  return s;
}

/* Compiles a kernel from printf-formatted IR text (the whole pipeline), or NULL. */
static inline jit_kernel *sw_compile(sw *w, const char *fmt, ...) {
  char text[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  ir_kernel *k = ir_parse(text, w->p, w->err, sizeof w->err);
  if (!k) {
    fprintf(stderr, "parse: %s\n%s", w->err, text);
    return NULL;
  }
  k->debug = w->debug;
  jit_kernel *jk = NULL;
  if (!ir_compile(k, true, NULL, NULL)) {
    fprintf(stderr, "ir_compile: %s\n", k->error);
  } else {
    jk = w->be->compile(w->be, k, w->err, sizeof w->err);
    if (!jk) fprintf(stderr, "compile: %s\n", w->err);
  }
  ir_kernel_free(k);
  return jk;
}

/* Launches with up to 4 integer arguments; false on a task error (w->code). */
static inline bool sw_launch(sw *w, jit_kernel *jk, const int64_t *args, int nargs) {
  uint64_t a[RT_MAX_ARGS] = {0}, ret = 0;
  char gtmp[256] = {0};
  for (int i = 0; i < nargs; i++) a[i] = (uint64_t)args[i];
  w->code = 0;
  memset(w->info, 0, sizeof w->info);
  rt_context ctx = {.roots = w->roots, .args = a, .ret = &ret, .gtmp = gtmp, .error = &w->code,
                    .error_info = w->info};
  return jit_launch(w->be, w->sp, jk, &ctx);
}

/* Compiles, launches once without arguments and releases. */
static inline bool sw_run(sw *w, const char *fmt, ...) {
  char text[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  jit_kernel *jk = sw_compile(w, "%s", text);
  if (!jk) return false;
  bool ok = sw_launch(w, jk, NULL, 0);
  w->be->release(w->be, jk);
  return ok;
}

/* Host read of an integer field element (0 when inactive), through the
** backend: the element's address is a device address. */
static inline int64_t sw_get_i32(sw *w, const char *name, int64_t i, int64_t j) {
  ir_snode *pl = sw_place(w, name);
  int64_t idx[2] = {i, j};
  char *at = jit_sparse_element(w->sp, pl, w->roots[pl->tree], idx, false);
  int32_t v = 0;
  if (at && !w->be->mem_read(w->be, &v, at, sizeof v)) fprintf(stderr, "mem_read: %s\n", w->be->error);
  return v;
}

static inline double sw_get_f32(sw *w, const char *name, int64_t i, int64_t j) {
  ir_snode *pl = sw_place(w, name);
  int64_t idx[2] = {i, j};
  char *at = jit_sparse_element(w->sp, pl, w->roots[pl->tree], idx, false);
  float v = 0;
  if (at && !w->be->mem_read(w->be, &v, at, sizeof v)) fprintf(stderr, "mem_read: %s\n", w->be->error);
  return v;
}

static inline jit_sparse_stats sw_stats(sw *w) {
  jit_sparse_stats st;
  jit_sparse_get_stats(w->sp, &st);
  return st;
}

#endif
