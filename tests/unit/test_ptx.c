/*
** test_ptx.c -- jit_emit_ptx on a few kernels (a range_for writing a field,
** a serial task with control flow, atomics and a bounds check, math calls).
** Each PTX text must name its kernel entries; when LT_PTXAS names an existing
** ptxas, it must also assemble (jit_ptxas_check). Without ptxas the test
** is skipped (exit 77) after the text checks.
*/
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "jit_helpers.h"

static ir_stmt *ci32(ir_builder *b, int64_t v) { return ir_b_const_int(b, IR_i32, v); }
static ir_stmt *bin(ir_builder *b, ir_op op, ir_type t, ir_stmt *x, ir_stmt *y) {
  ir_stmt *o[2] = {x, y};
  return ir_b_op(b, op, t, 2, o);
}

static const char *ptxas(void) {
  const char *p = getenv("LT_PTXAS");
  return p && *p && access(p, X_OK) == 0 ? p : NULL;
}

static void check_kernel(ir_kernel *k, const char *const *entries, int n) {
  char err[1024];
  char *ptx = jit_emit_ptx(k, "sm_70", err, sizeof err);
  CHECKF(ptx != NULL, "%s: %s", k->name, err);
  if (!ptx) return;
  CHECK_CONTAINS(ptx, ".target sm_70");
  for (int i = 0; i < n; i++) {
    char want[200];
    snprintf(want, sizeof want, ".entry %s(", entries[i]);
    CHECK_CONTAINS(ptx, want);
  }
  if (ptxas()) CHECKF(jit_ptxas_check(k, ptxas(), NULL, err, sizeof err), "%s", err);
  free(ptx);
}

int main(void) {
  ir_program *p = ir_program_new();
  ir_snode *x = h_field1(p, IR_f32, 4096, "x"), *cnt = h_field1(p, IR_i32, 4, "cnt");

  /* fill: range_for x[i] = sqrt(i) * arg0 + floor(i / 3) */
  ir_kernel *k = ir_kernel_new("fill", p);
  k->nargs = 1;
  k->arg_types[0] = IR_f32;
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *t = h_task(&b, IR_task_range_for, 0, 4096);
  ir_stmt *i = ir_b_loop_index(&b, t);
  ir_stmt *fi = ir_b_cast(&b, IR_f32, i);
  ir_stmt *v = bin(&b, IR_mul, IR_f32, ir_b_unary(&b, IR_sqrt, fi), ir_b_arg(&b, 0));
  v = bin(&b, IR_add, IR_f32, v, ir_b_unary(&b, IR_floor, bin(&b, IR_div, IR_f32, fi, ir_b_const_float(&b, IR_f32, 3))));
  ir_b_global_store(&b, h_ptr(&b, x, i), v);
  const char *fill_entries[] = {"fill_task0"};
  check_kernel(k, fill_entries, 1);
  ir_kernel_free(k);

  /* two tasks: a serial loop with integer floor division and a return that
  ** also writes the next task's end into a global temporary, then a range_for
  ** with atomics, a bounds check and a libdevice math call */
  k = ir_kernel_new("mixed", p);
  k->ret_type = IR_i32;
  k->debug = true;
  ir_builder_init(&b, k);
  h_task(&b, IR_task_serial, 0, 0);
  ir_block *top = b.block;
  ir_stmt *s = ir_b_alloca(&b, IR_i32);
  ir_stmt *rf = ir_b_range_for(&b, ci32(&b, 0), ci32(&b, 100));
  b.block = rf->blocks[0];
  ir_stmt *li = ir_b_loop_index(&b, rf);
  ir_b_local_store(&b, s, bin(&b, IR_add, IR_i32, ir_b_local_load(&b, s), bin(&b, IR_floordiv, IR_i32, li, ci32(&b, -7))));
  b.block = top;
  ir_stmt *g = ir_b_op(&b, IR_global_tmp, IR_i32, 0, NULL);   /* the next task's end */
  ir_b_global_store(&b, g, ci32(&b, 4096));
  k->gtmp_size = 4;
  ir_b_jump(&b, IR_return, bin(&b, IR_shl, IR_i32, ir_b_local_load(&b, s), ci32(&b, 3)));
  t = h_task(&b, IR_task_range_for, 0, 0);
  t->range.end_gtmp = 0;
  i = ir_b_loop_index(&b, t);
  ir_stmt *chk = ir_b_op(&b, IR_check_index, IR_void, 1, &i);
  chk->aux = x->id;
  ir_b_atomic(&b, IR_atomic_add, h_ptr(&b, cnt, ci32(&b, 0)), ci32(&b, 1));
  ir_b_atomic(&b, IR_atomic_max, h_ptr(&b, cnt, ci32(&b, 1)), i);
  ir_stmt *px = h_ptr(&b, x, i);
  ir_b_global_store(&b, px, ir_b_unary(&b, IR_sin, ir_b_global_load(&b, px)));
  const char *mixed_entries[] = {"mixed_task0", "mixed_task1"};
  check_kernel(k, mixed_entries, 2);
  ir_kernel_free(k);

  /* a float % calls libdevice's exact fmod: NVPTX's own lowering of frem,
  ** a - trunc(a/b)*b, was off by 1e22 for 1e30 % 7 on an H200 */
  k = ir_kernel_new("fmodk", p);
  ir_builder_init(&b, k);
  t = h_task(&b, IR_task_range_for, 0, 4096);
  i = ir_b_loop_index(&b, t);
  px = h_ptr(&b, x, i);
  ir_b_global_store(&b, px, bin(&b, IR_mod, IR_f32, ir_b_global_load(&b, px), ir_b_const_float(&b, IR_f32, 3.5)));
  {
    char ferr[512];
    char *fptx = jit_emit_ptx(k, "sm_70", ferr, sizeof ferr);
    CHECKF(fptx != NULL, "fmodk: %s", ferr);
    if (fptx) {
      CHECK_CONTAINS(fptx, "__nv_fmodf");
      CHECK(strstr(fptx, "cvt.rzi") == NULL);   /* no trunc of the quotient */
      /* the field is read and written as global memory (cg_global), not
      ** through generic addresses */
      CHECK_CONTAINS(fptx, "ld.global.f32");
      CHECK_CONTAINS(fptx, "st.global.f32");
      CHECK(strstr(fptx, "\tld.f32") == NULL && strstr(fptx, "\tst.f32") == NULL);
      free(fptx);
    }
  }
  const char *fmod_entries[] = {"fmodk_task0"};
  check_kernel(k, fmod_entries, 1);
  ir_kernel_free(k);

  /* a bad architecture name is an error with a message */
  char err[256];
  k = ir_kernel_new("bad", p);
  CHECK(jit_emit_ptx(k, "volta", err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "sm_70");
  ir_kernel_free(k);
  ir_program_free(p);

  if (!ptxas()) {
    int rc = check_finish("test_ptx");
    if (rc == 0) printf("test_ptx: ptxas not found (LT_PTXAS unset): assembly not checked, skipped\n");
    return rc ? rc : 77;
  }
  return check_finish("test_ptx");
}
