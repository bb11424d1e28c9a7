/*
** test_passes.c -- the pass pipeline (ir_compile, ir_run_passes) on kernels
** built with the C builder, as the tracer builds them: the order of passes
** seen by the dump callback, verification between passes, and the user
** errors of typecheck that IR text cannot reach (the parser's verifier
** already rejects a non-boolean condition, so the tracer is the only source).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/ir/ir.h"
#include "../../src/ir/passes/passes.h"
#include "check.h"

static ir_kernel *new_kernel(ir_builder *b, int nargs, const ir_type *types) {
  ir_kernel *k = ir_kernel_new("t", NULL);
  k->nargs = nargs;
  for (int i = 0; i < nargs; i++) k->arg_types[i] = types[i];
  ir_builder_init(b, k);
  b->loc = (ir_loc){ir_strdup(k, "kern.lua"), 7};
  return k;
}

/* Compiling must fail with a message holding `want`, located at kern.lua:7. */
static void expect_error(ir_kernel *k, const char *want, const char *what) {
  bool ok = ir_compile(k, true, NULL, NULL);
  CHECKF(!ok, "%s: compiled, expected an error", what);
  CHECKF(strstr(k->error, want) != NULL, "%s: error \"%s\" lacks \"%s\"", what, k->error, want);
  CHECKF(strncmp(k->error, "kern.lua:7: ", 12) == 0, "%s: error \"%s\" lacks the location", what,
        k->error);
  ir_kernel_free(k);
}

static void test_errors(void) {
  ir_builder b;
  ir_type i32 = IR_i32, f32 = IR_f32;

  ir_kernel *k = new_kernel(&b, 1, &i32);
  ir_b_if(&b, ir_b_arg(&b, 0), false);
  expect_error(k, "the condition of `if` is a i32, not a boolean", "number as condition");

  k = new_kernel(&b, 1, &i32);
  ir_stmt *a = ir_b_arg(&b, 0);
  ir_b_op(&b, IR_logic_not, IR_i1, 1, &a);
  expect_error(k, "`not` needs a boolean, got a i32", "not of a number");

  k = new_kernel(&b, 1, &f32);
  ir_stmt *v = ir_b_alloca(&b, IR_i32);
  ir_b_local_store(&b, v, ir_b_arg(&b, 0));
  expect_error(k, "write lt.cast(x, lt.i32)", "float into an integer local");

  k = new_kernel(&b, 1, &i32);
  a = ir_b_arg(&b, 0);
  ir_stmt *c = ir_b_binary(&b, IR_cmp_lt, a, a);
  ir_b_binary(&b, IR_mul, c, a);
  expect_error(k, "booleans take no part in arithmetic", "arithmetic on a boolean");

  k = new_kernel(&b, 1, &i32);
  a = ir_b_arg(&b, 0);
  ir_stmt *sel[3] = {a, a, a};
  ir_b_op(&b, IR_select, IR_i32, 3, sel);
  expect_error(k, "the condition of lt.select is a i32", "select on a number");

  /* unknown pass names are reported, not crashed on */
  k = new_kernel(&b, 0, NULL);
  CHECKF(!ir_run_passes(k, "typecheck,frobnicate", true, NULL, NULL), "unknown pass accepted");
  CHECKF(strstr(k->error, "unknown pass 'frobnicate'") != NULL, "error: %s", k->error);
  ir_kernel_free(k);
}

typedef struct {
  char seq[1024];
  int n;
} trace;

static void record(const char *pass, ir_kernel *k, void *ud) {
  trace *t = ud;
  t->n++;
  strncat(t->seq, pass, sizeof t->seq - strlen(t->seq) - 2);
  strcat(t->seq, " ");
  (void)k;
}

/* Skips one or more "constfold cse dce " rounds at *p; false if none is there. */
static bool skip_rounds(const char **p) {
  const char *round = "constfold cse dce ";
  if (strncmp(*p, round, strlen(round)) != 0) return false;
  while (strncmp(*p, round, strlen(round)) == 0) *p += strlen(round);
  return true;
}

/* The pipeline order: typecheck mem2reg, (constfold cse dce)+, offload reduce
** demote_atomics mem2reg simplify_index licm, (constfold cse dce)+. */
static void test_pipeline(void) {
  ir_builder b;
  ir_type types[2] = {IR_i32, IR_f32};
  ir_kernel *k = new_kernel(&b, 2, types);
  ir_stmt *n = ir_b_arg(&b, 0), *t = ir_b_arg(&b, 1);
  ir_stmt *var = ir_b_alloca(&b, IR_f32);
  ir_stmt *two = ir_b_const_int(&b, IR_i32, 2);
  ir_b_local_store(&b, var, ir_b_binary(&b, IR_mul, t, ir_b_binary(&b, IR_add, two, two)));
  ir_stmt *loop = ir_b_range_for(&b, ir_b_const_int(&b, IR_i32, 0), n);
  ir_block *outer = b.block;
  b.block = loop->blocks[0];
  ir_stmt *i = ir_b_loop_index(&b, loop);
  ir_stmt *x = ir_b_binary(&b, IR_add, ir_b_local_load(&b, var), i);
  ir_b_local_store(&b, var, x);
  b.block = outer;

  trace tr = {"", 0};
  bool ok = ir_compile(k, true, record, &tr);
  CHECKF(ok, "compile failed: %s", k->error);
  CHECKF(k->offloaded, "not offloaded");
  const char *p = tr.seq, *head = "typecheck mem2reg ";
  const char *mid = "offload reduce demote_atomics mem2reg simplify_index licm ";
  CHECKF(strncmp(p, head, strlen(head)) == 0, "pipeline starts: %s", tr.seq);
  p += strlen(head);
  CHECKF(skip_rounds(&p), "no simplify rounds after mem2reg: %s", tr.seq);
  CHECKF(strncmp(p, mid, strlen(mid)) == 0, "pipeline middle: %s", p);
  p += strlen(mid);
  CHECKF(skip_rounds(&p), "no simplify rounds at the end: %s", tr.seq);
  CHECKF(*p == 0, "pipeline ends: %s", p);
  CHECKF(ir_verify_ex(k, IR_VERIFY_TYPES, k->error, sizeof k->error), "final IR: %s", k->error);
  /* every top-level statement is a task; the local crossed into a gtmp */
  for (ir_stmt *s = k->body->first; s; s = s->next)
    CHECKF(ir_op_flags(s->op) & IR_TASK, "top-level %s is not a task", ir_op_name(s->op));
  CHECKF(k->gtmp_size >= 16, "gtmp_size %d: expected the bound and the local", k->gtmp_size);
  /* the constant 2+2 folded: the text holds 4.0 (the f32 cast of 4) and no add of consts */
  char *text = ir_print(k);
  CHECKF(strstr(text, "const 4.0") != NULL, "2+2 not folded into an f32 4.0:\n%s", text);
  free(text);
  ir_kernel_free(k);

  /* a second ir_compile-free run through ir_run_passes gives the same text */
  k = new_kernel(&b, 1, types);
  ir_stmt *a = ir_b_arg(&b, 0);
  ir_b_binary(&b, IR_add, a, ir_b_const_float(&b, IR_f32, 1.5));
  CHECKF(ir_run_passes(k, "typecheck, constfold,cse ,dce", true, NULL, NULL), "%s", k->error);
  CHECKF(k->body->first == NULL || k->body->first->op == IR_arg, "dead code left");
  ir_kernel_free(k);
}

int main(void) {
  test_errors();
  test_pipeline();
  return check_finish("test_passes");
}
