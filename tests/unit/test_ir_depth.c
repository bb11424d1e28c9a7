/*
** test_ir_depth.c -- nesting depth of the IR text: 100 000 nested ifs are
** refused with "line N: blocks nested more than IR_MAX_DEPTH deep" (no stack
** overflow), and a kernel nested exactly IR_MAX_DEPTH deep parses, verifies,
** goes through the whole pipeline and prints back identically.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/passes/passes.h"
#include "ir/snode.h"

typedef struct {
  char *s;
  size_t len, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    t->cap = 2 * t->cap + (size_t)n;
    t->s = realloc(t->s, t->cap);
    if (!t->s) abort();
  }
}

/* n nested ifs on one condition */
static char *nested_ifs(int n) {
  text t = {malloc(64), 0, 64};
  add(&t, "kernel deep() {\n  <i1> $0 = const 1\n");
  for (int i = 1; i <= n; i++) add(&t, "$%d = if $0 {\n", i);
  for (int i = 1; i <= n; i++) add(&t, "}\n");
  add(&t, "}\n");
  return t.s;
}

/* n nested blocks taking turns as if / range_for / while, each storing into
** a kernel local and reading its loop's index, so the passes have work at
** every level (mem2reg, licm, offload, ...) */
static char *nested_mix(int n) {
  text t = {malloc(64), 0, 64};
  add(&t, "field x <i32> dense [i:16]\n");
  add(&t, "kernel mix(i32 n) {\n  <i32> $0 = arg 0\n  <i32> $1 = const 0\n  <i32> $2 = alloca\n"
          "  <i1> $3 = cmp_lt $1 $0\n");
  int id = 4;
  for (int i = 0; i < n; i++) {
    switch (i % 3) {
    case 0: add(&t, "$%d = if $3 {\n", id++); break;
    case 1: {
      int loop = id++;
      add(&t, "$%d = range_for $1 $0 {\n<i32> $%d = loop_index $%d\n$%d = local_store $2 $%d\n", loop, id,
          loop, id + 1, id);
      id += 2;
      break;
    }
    default: add(&t, "$%d = while {\n", id++); break;
    }
  }
  add(&t, "<i32> $%d = local_load $2\n<i32*> $%d = global_ptr x [$1]\n$%d = global_store $%d $%d\n", id,
      id + 1, id + 2, id + 1, id);
  id += 3;
  for (int i = n - 1; i >= 0; i--) {
    if (i % 3 == 2) add(&t, "$%d = break\n", id++);   /* each while ends with its break */
    add(&t, "}\n");
  }
  add(&t, "}\n");
  return t.s;
}

static void roundtrip(ir_kernel *k) {
  char err[512];
  char *a = ir_print_ex(k, IR_PRINT_FIELDS);
  ir_program *p2 = ir_program_new();
  ir_kernel *k2 = ir_parse(a, p2, err, sizeof err);
  CHECKF(k2 != NULL, "%s", err);
  if (k2) {
    char *b = ir_print_ex(k2, IR_PRINT_FIELDS);
    CHECK(strcmp(a, b) == 0);
    free(b);
  }
  ir_kernel_free(k2);
  ir_program_free(p2);
  free(a);
}

int main(void) {
  char err[512];
  ir_program *p = ir_program_new();

  /* far too deep: a clear error on the line that opens one block too many */
  char *deep = nested_ifs(100000);
  ir_kernel *k = ir_parse(deep, p, err, sizeof err);
  CHECK(k == NULL);
  char want[128];
  snprintf(want, sizeof want, "line %d: blocks nested more than %d deep", IR_MAX_DEPTH + 3, IR_MAX_DEPTH);
  CHECK_CONTAINS(err, want);
  CHECK_CONTAINS(err, "split the kernel or nest less");
  free(deep);

  /* one level too many, and exactly at the limit */
  deep = nested_ifs(IR_MAX_DEPTH + 1);
  CHECK(ir_parse(deep, p, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, want);
  free(deep);
  deep = nested_ifs(IR_MAX_DEPTH);
  k = ir_parse(deep, p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    CHECKF(ir_verify(k, err, sizeof err), "%s", err);
    roundtrip(k);
    CHECKF(ir_compile(k, true, NULL, NULL), "%s", k->error);
    roundtrip(k);
  }
  ir_kernel_free(k);
  free(deep);

  /* the limit, with every kind of block and work for the passes at each level */
  char *mix = nested_mix(IR_MAX_DEPTH);
  k = ir_parse(mix, p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    CHECKF(ir_verify(k, err, sizeof err), "%s", err);
    roundtrip(k);
    CHECKF(ir_compile(k, true, NULL, NULL), "%s", k->error);
    CHECKF(ir_verify_ex(k, IR_VERIFY_TYPES, err, sizeof err), "%s", err);
    roundtrip(k);
  }
  ir_kernel_free(k);
  free(mix);
  ir_program_free(p);
  return check_finish("test_ir_depth");
}
