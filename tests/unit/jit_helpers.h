/*
** jit_helpers.h -- building offloaded kernels by hand for the JIT tests:
** one-field trees, tasks, and an rt_context with its buffers.
*/
#ifndef LATTICE_TEST_JIT_HELPERS_H
#define LATTICE_TEST_JIT_HELPERS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/snode.h"
#include "jit/jit.h"

/* A new tree root -> dense(i, n) -> place(t); returns the place. */
static inline ir_snode *h_field1(ir_program *p, ir_type t, int64_t n, const char *name) {
  char err[256];
  ir_snode *root = ir_snode_root(p);
  int axis = 0;
  ir_snode *d = ir_snode_dense(p, root, 1, &axis, &n, err, sizeof err);
  ir_snode *pl = d ? ir_snode_place(p, d, t, name, err, sizeof err) : NULL;
  if (!pl || !ir_snode_layout(p, root, err, sizeof err)) {
    fprintf(stderr, "h_field1: %s\n", err);
    abort();
  }
  return pl;
}

/* Appends a task to k's body and points the builder into it. */
static inline ir_stmt *h_task(ir_builder *b, ir_op op, int64_t begin, int64_t end) {
  ir_stmt *t = ir_new(b->k, op, IR_void, 0, NULL);
  t->blocks[0] = ir_block_new(b->k, t);
  t->range.begin = begin;
  t->range.end = end;
  ir_append(b->k->body, t);
  b->k->offloaded = true;
  b->block = t->blocks[0];
  return t;
}

/* The element pointer of a one-index field at index i. */
static inline ir_stmt *h_ptr(ir_builder *b, ir_snode *f, ir_stmt *i) {
  return ir_b_global_ptr(b, f->id, 1, &i);
}

/* Host memory of every tree of a program plus the context pointing at it. */
typedef struct {
  rt_context ctx;
  char *roots[IR_MAX_TREES];
  uint64_t args[RT_MAX_ARGS], ret[1];
  char gtmp[256];
  int32_t error;
  int64_t error_info[4];
} h_ctx;

static inline void h_ctx_init(h_ctx *h, ir_program *p) {
  memset(h, 0, sizeof *h);
  for (int t = 0; t < p->ntrees; t++) h->roots[t] = calloc(1, (size_t)p->trees[t].bytes + 16);
  h->ctx.roots = h->roots;
  h->ctx.args = h->args;
  h->ctx.ret = h->ret;
  h->ctx.gtmp = h->gtmp;
  h->ctx.error = &h->error;
  h->ctx.error_info = h->error_info;
}

static inline void h_ctx_free(h_ctx *h, ir_program *p) {
  for (int t = 0; t < p->ntrees; t++) free(h->roots[t]);
}

/* Address of field f's element at one index, the host way. */
static inline void *h_elem(h_ctx *h, ir_snode *f, int64_t i) {
  return h->roots[f->tree] + ir_snode_offset(f, &i);
}

#endif
