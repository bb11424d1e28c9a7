/*
** test_jit_cpu.c -- the CPU backend on hand-built offloaded kernels: serial
** and range_for tasks writing fields (checked against C loops and the host
** address formula ir_snode_offset), control flow, locals, arguments, return
** values, atomics from many threads, bounds in global temporaries, bounds
** checks raising errors, kernel release and many kernels in one backend.
** And the LLVM options the backend sets: a saturating conversion in a loop
** keeps its fix-ups as conditional moves (cpu_llvm_options).
*/
#include <stdio.h>

#include <llvm-c/IRReader.h>

#include "check.h"
#include "jit/cpu/cpu.h"
#include "jit_helpers.h"

static jit_backend *be;
static char err[1024];

static ir_stmt *ci32(ir_builder *b, int64_t v) { return ir_b_const_int(b, IR_i32, v); }
static ir_stmt *bin(ir_builder *b, ir_op op, ir_type t, ir_stmt *x, ir_stmt *y) {
  ir_stmt *o[2] = {x, y};
  return ir_b_op(b, op, t, 2, o);
}

static jit_kernel *compile(ir_kernel *k) {
  jit_kernel *jk = be->compile(be, k, err, sizeof err);
  CHECKF(jk != NULL, "compiling %s: %s", k->name, err);
  return jk;
}

/* serial task: y[3] = 42; y[0] = sum of odd i in 1..9 via while/if/break/continue;
** y[1] = sum of i for i in range_for(0, 10) */
static void test_serial_control(void) {
  ir_program *p = ir_program_new();
  ir_snode *y = h_field1(p, IR_i32, 8, "y");
  ir_kernel *k = ir_kernel_new("serial", p);
  ir_builder b;
  ir_builder_init(&b, k);
  h_task(&b, IR_task_serial, 0, 0);
  ir_block *top = b.block;
  ir_b_global_store(&b, h_ptr(&b, y, ci32(&b, 3)), ci32(&b, 42));
  ir_stmt *s = ir_b_alloca(&b, IR_i32), *i = ir_b_alloca(&b, IR_i32);
  ir_stmt *w = ir_b_while(&b);
  b.block = w->blocks[0];
  ir_stmt *iv = ir_b_local_load(&b, i);
  ir_stmt *brk = ir_b_if(&b, bin(&b, IR_cmp_ge, IR_i1, iv, ci32(&b, 10)), false);
  b.block = brk->blocks[0];
  ir_b_jump(&b, IR_break, NULL);
  b.block = w->blocks[0];
  ir_stmt *i1 = bin(&b, IR_add, IR_i32, iv, ci32(&b, 1));
  ir_b_local_store(&b, i, i1);
  ir_stmt *even = bin(&b, IR_cmp_eq, IR_i1, bin(&b, IR_mod, IR_i32, i1, ci32(&b, 2)), ci32(&b, 0));
  ir_stmt *cont = ir_b_if(&b, even, false);
  b.block = cont->blocks[0];
  ir_b_jump(&b, IR_continue, NULL);
  b.block = w->blocks[0];
  ir_b_local_store(&b, s, bin(&b, IR_add, IR_i32, ir_b_local_load(&b, s), i1));
  b.block = top;
  ir_b_global_store(&b, h_ptr(&b, y, ci32(&b, 0)), ir_b_local_load(&b, s));
  /* serial range_for with an if/else inside */
  ir_stmt *t = ir_b_alloca(&b, IR_i32);
  ir_stmt *rf = ir_b_range_for(&b, ci32(&b, 0), ci32(&b, 10));
  b.block = rf->blocks[0];
  ir_stmt *li = ir_b_loop_index(&b, rf);
  ir_stmt *ie = ir_b_if(&b, bin(&b, IR_cmp_lt, IR_i1, li, ci32(&b, 5)), true);
  b.block = ie->blocks[0];
  ir_b_local_store(&b, t, bin(&b, IR_add, IR_i32, ir_b_local_load(&b, t), li));
  b.block = ie->blocks[1];
  ir_b_local_store(&b, t, bin(&b, IR_add, IR_i32, ir_b_local_load(&b, t), bin(&b, IR_mul, IR_i32, li, ci32(&b, 100))));
  b.block = top;
  ir_b_global_store(&b, h_ptr(&b, y, ci32(&b, 1)), ir_b_local_load(&b, t));

  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int sum_odd = 0, t_ref = 0;
    for (int q = 1; q <= 9; q += 2) sum_odd += q;
    for (int q = 0; q < 10; q++) t_ref += q < 5 ? q : q * 100;
    CHECK(*(int32_t *)h_elem(&h, y, 3) == 42);
    CHECKF(*(int32_t *)h_elem(&h, y, 0) == sum_odd, "got %d", *(int32_t *)h_elem(&h, y, 0));
    CHECKF(*(int32_t *)h_elem(&h, y, 1) == t_ref, "got %d", *(int32_t *)h_elem(&h, y, 1));
    CHECK(jk->ntasks == 1 && jk->compile_ms > 0);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* range_for over 2^20 elements: x[i] = i * 0.5 + arg0 (f32), every element
** compared with a C loop */
static void test_range_big(void) {
  const int64_t n = 1 << 20;
  ir_program *p = ir_program_new();
  ir_snode *x = h_field1(p, IR_f32, n, "x");
  ir_kernel *k = ir_kernel_new("fill", p);
  k->nargs = 1;
  k->arg_types[0] = IR_f32;
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *task = h_task(&b, IR_task_range_for, 0, n);
  ir_stmt *i = ir_b_loop_index(&b, task);
  ir_stmt *v = bin(&b, IR_add, IR_f32, bin(&b, IR_mul, IR_f32, ir_b_cast(&b, IR_f32, i), ir_b_const_float(&b, IR_f32, 0.5)),
                   ir_b_arg(&b, 0));
  ir_b_global_store(&b, h_ptr(&b, x, i), v);
  /* the task's loop is vectorized for the host (the reason it loops itself) */
  char *ir = jit_cpu_llvm_ir(be, k, err, sizeof err);
  CHECKF(ir != NULL, "%s", err);
  CHECK_CONTAINS(ir, "x float> ");
  CHECK_CONTAINS(ir, "store <");
  free(ir);
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    float a = 3.25f;
    uint32_t bits;
    memcpy(&bits, &a, 4);
    h.args[0] = bits;
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int64_t bad = 0;
    for (int64_t q = 0; q < n; q++) {
      float ref = (float)q * 0.5f + a;
      if (*(float *)h_elem(&h, x, q) != ref) bad++;
    }
    CHECKF(bad == 0, "%lld of %lld elements wrong", (long long)bad, (long long)n);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* A 2-D field through two levels with a column-major inner level:
** root.dense(ij, {4, 6}).dense(ji, {5, 3}).place(a: i32, b: f64);
** a[i][j] = i * 1000 + j, b = -(a); the host reads via ir_snode_offset. */
static void test_layout_2d(void) {
  ir_program *p = ir_program_new();
  char e[256];
  ir_snode *root = ir_snode_root(p);
  int ax1[2] = {0, 1}, ax2[2] = {1, 0};
  int64_t sh1[2] = {4, 6}, sh2[2] = {5, 3};
  ir_snode *d1 = ir_snode_dense(p, root, 2, ax1, sh1, e, sizeof e);
  ir_snode *d2 = ir_snode_dense(p, d1, 2, ax2, sh2, e, sizeof e);
  ir_snode *pa = ir_snode_place(p, d2, IR_i32, "a", e, sizeof e);
  ir_snode *pb = ir_snode_place(p, d2, IR_f64, "b", e, sizeof e);
  CHECK(pa && pb && ir_snode_layout(p, root, e, sizeof e));
  if (!pa || !pb) return;
  int64_t ni = pa->total_shape[0], nj = pa->total_shape[1];
  CHECK(ni == 12 && nj == 30);
  ir_kernel *k = ir_kernel_new("grid", p);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *task = h_task(&b, IR_task_range_for, 0, ni * nj);
  ir_stmt *lin = ir_b_loop_index(&b, task);
  ir_stmt *i = bin(&b, IR_floordiv, IR_i32, lin, ci32(&b, nj)), *j = bin(&b, IR_mod, IR_i32, lin, ci32(&b, nj));
  ir_stmt *idx[2] = {i, j};
  ir_stmt *v = bin(&b, IR_add, IR_i32, bin(&b, IR_mul, IR_i32, i, ci32(&b, 1000)), j);
  ir_b_global_store(&b, ir_b_global_ptr(&b, pa->id, 2, idx), v);
  ir_b_global_store(&b, ir_b_global_ptr(&b, pb->id, 2, idx), ir_b_unary(&b, IR_neg, ir_b_cast(&b, IR_f64, v)));
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int bad = 0;
    for (int64_t q = 0; q < ni; q++)
      for (int64_t r = 0; r < nj; r++) {
        int64_t ix[2] = {q, r};
        int32_t got = *(int32_t *)(h.roots[0] + ir_snode_offset(pa, ix));
        double gb = *(double *)(h.roots[0] + ir_snode_offset(pb, ix));
        if (got != q * 1000 + r || gb != -(double)(q * 1000 + r)) bad++;
      }
    CHECKF(bad == 0, "%d of %lld cells wrong", bad, (long long)(ni * nj));
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* A data-dependent while loop per iteration of a parallel task, with locals
** declared inside the task (zeroed on every iteration), if/else, continue
** and break: Collatz step counts (capped at 100), compared with C. */
static void test_loop_per_element(void) {
  const int64_t n = 20000;
  ir_program *p = ir_program_new();
  ir_snode *out = h_field1(p, IR_i32, n, "steps");
  ir_kernel *k = ir_kernel_new("collatz", p);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *task = h_task(&b, IR_task_range_for, 0, n);
  ir_block *body = b.block;
  ir_stmt *i = ir_b_loop_index(&b, task);
  ir_stmt *steps = ir_b_alloca(&b, IR_i32), *v = ir_b_alloca(&b, IR_i64);
  ir_b_local_store(&b, v, ir_b_cast(&b, IR_i64, bin(&b, IR_add, IR_i32, i, ci32(&b, 1))));
  ir_stmt *w = ir_b_while(&b);
  b.block = w->blocks[0];
  ir_stmt *vv = ir_b_local_load(&b, v);
  ir_stmt *one = ir_b_const_int(&b, IR_i64, 1), *two = ir_b_const_int(&b, IR_i64, 2);
  ir_stmt *done = ir_b_if(&b, bin(&b, IR_cmp_eq, IR_i1, vv, one), false);
  b.block = done->blocks[0];
  ir_b_jump(&b, IR_break, NULL);
  b.block = w->blocks[0];
  ir_b_local_store(&b, steps, bin(&b, IR_add, IR_i32, ir_b_local_load(&b, steps), ci32(&b, 1)));
  ir_stmt *cap = ir_b_if(&b, bin(&b, IR_cmp_ge, IR_i1, ir_b_local_load(&b, steps), ci32(&b, 100)), false);
  b.block = cap->blocks[0];
  ir_b_jump(&b, IR_break, NULL);
  b.block = w->blocks[0];
  ir_stmt *even = ir_b_if(&b, bin(&b, IR_cmp_eq, IR_i1, bin(&b, IR_mod, IR_i64, vv, two), ir_b_const_int(&b, IR_i64, 0)), true);
  b.block = even->blocks[0];
  ir_b_local_store(&b, v, bin(&b, IR_floordiv, IR_i64, vv, two));
  ir_b_jump(&b, IR_continue, NULL);
  b.block = even->blocks[1];
  ir_b_local_store(&b, v, bin(&b, IR_add, IR_i64, bin(&b, IR_mul, IR_i64, vv, ir_b_const_int(&b, IR_i64, 3)), one));
  b.block = body;
  ir_b_global_store(&b, h_ptr(&b, out, i), ir_b_local_load(&b, steps));
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int64_t bad = 0;
    for (int64_t q = 0; q < n; q++) {
      int64_t x = q + 1;
      int s = 0;
      while (x != 1) {
        if (++s >= 100) break;
        x = x % 2 == 0 ? x / 2 : 3 * x + 1;
      }
      if (*(int32_t *)h_elem(&h, out, q) != s) bad++;
    }
    CHECKF(bad == 0, "%lld of %lld step counts wrong", (long long)bad, (long long)n);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* Atomics from many threads: out[i] = atomic_add(cnt[0], 1) over N
** iterations gives cnt == N and old values that are a permutation of 0..N-1;
** f32 add of 1.0 is exact below 2^24; min/max of i - N/2 over signed i32. */
static void test_atomics(void) {
  const int64_t n = 300000;
  ir_program *p = ir_program_new();
  ir_snode *cnt = h_field1(p, IR_i32, 4, "cnt"), *out = h_field1(p, IR_i32, n, "out");
  ir_snode *fs = h_field1(p, IR_f32, 2, "fs"), *u = h_field1(p, IR_u32, 2, "u");
  ir_kernel *k = ir_kernel_new("atomics", p);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *task = h_task(&b, IR_task_range_for, 0, n);
  task->range.block_dim = 64;   /* many small chunks: more contention */
  ir_stmt *i = ir_b_loop_index(&b, task);
  ir_stmt *old = ir_b_atomic(&b, IR_atomic_add, h_ptr(&b, cnt, ci32(&b, 0)), ci32(&b, 1));
  ir_b_global_store(&b, h_ptr(&b, out, i), old);
  ir_b_atomic(&b, IR_atomic_sub, h_ptr(&b, cnt, ci32(&b, 1)), ci32(&b, 2));
  ir_stmt *c = bin(&b, IR_sub, IR_i32, i, ci32(&b, n / 2));
  ir_b_atomic(&b, IR_atomic_min, h_ptr(&b, cnt, ci32(&b, 2)), c);
  ir_b_atomic(&b, IR_atomic_max, h_ptr(&b, cnt, ci32(&b, 3)), c);
  ir_b_atomic(&b, IR_atomic_add, h_ptr(&b, fs, ci32(&b, 0)), ir_b_const_float(&b, IR_f32, 1.0));
  ir_b_atomic(&b, IR_atomic_max, h_ptr(&b, fs, ci32(&b, 1)), ir_b_cast(&b, IR_f32, c));
  /* unsigned: max of (i - n/2) as u32 is the wrapped -1 */
  ir_b_atomic(&b, IR_atomic_max, h_ptr(&b, u, ci32(&b, 0)), ir_b_cast(&b, IR_u32, c));
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    CHECKF(*(int32_t *)h_elem(&h, cnt, 0) == n, "count %d", *(int32_t *)h_elem(&h, cnt, 0));
    CHECK(*(int32_t *)h_elem(&h, cnt, 1) == -2 * n);
    CHECK(*(int32_t *)h_elem(&h, cnt, 2) == -n / 2);
    CHECK(*(int32_t *)h_elem(&h, cnt, 3) == n / 2 - 1);
    CHECK(*(float *)h_elem(&h, fs, 0) == (float)n);
    CHECK(*(float *)h_elem(&h, fs, 1) == (float)(n / 2 - 1));
    CHECK(*(uint32_t *)h_elem(&h, u, 0) == UINT32_MAX);
    char *seen = calloc((size_t)n, 1);
    int64_t bad = 0;
    for (int64_t q = 0; q < n; q++) {
      int32_t o = *(int32_t *)h_elem(&h, out, q);
      if (o < 0 || o >= n || seen[o]++) bad++;
    }
    CHECKF(bad == 0, "%lld old values repeated or out of range", (long long)bad);
    free(seen);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* Task 0 (serial) writes the bounds of task 1 into global temporaries. */
static void test_gtmp_bounds(void) {
  ir_program *p = ir_program_new();
  ir_snode *x = h_field1(p, IR_i32, 1000, "x");
  ir_kernel *k = ir_kernel_new("gtmp", p);
  k->gtmp_size = 8;
  k->nargs = 1;
  k->arg_types[0] = IR_i32;
  ir_builder b;
  ir_builder_init(&b, k);
  h_task(&b, IR_task_serial, 0, 0);
  ir_stmt *g0 = ir_b_op(&b, IR_global_tmp, IR_i32, 0, NULL), *g1 = ir_b_op(&b, IR_global_tmp, IR_i32, 0, NULL);
  g0->aux = 0;
  g1->aux = 4;
  ir_b_global_store(&b, g0, ci32(&b, 5));
  ir_b_global_store(&b, g1, ir_b_arg(&b, 0));
  ir_stmt *t = h_task(&b, IR_task_range_for, 0, 0);
  t->range.begin_gtmp = 0;
  t->range.end_gtmp = 4;
  ir_stmt *i = ir_b_loop_index(&b, t);
  ir_b_global_store(&b, h_ptr(&b, x, i), bin(&b, IR_add, IR_i32, i, ci32(&b, 1)));
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    h.args[0] = 777;
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int bad = 0;
    for (int q = 0; q < 1000; q++)
      if (*(int32_t *)h_elem(&h, x, q) != (q >= 5 && q < 777 ? q + 1 : 0)) bad++;
    CHECKF(bad == 0, "%d wrong", bad);
    CHECK(jk->ntasks == 2 && jk->tasks[1].kind == IR_task_range_for);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* return: (arg0 * 3) as i64 from inside an if; a second kernel returns an f64
** and a third an f32 (encodings of context.h). */
static void test_return(void) {
  static const ir_type types[] = {IR_i64, IR_f64, IR_f32, IR_i8};
  for (size_t q = 0; q < sizeof types / sizeof types[0]; q++) {
    ir_type t = types[q];
    ir_kernel *k = ir_kernel_new("ret", NULL);
    k->nargs = 1;
    k->arg_types[0] = t;
    k->ret_type = t;
    ir_builder b;
    ir_builder_init(&b, k);
    h_task(&b, IR_task_serial, 0, 0);
    ir_block *top = b.block;
    ir_stmt *a = ir_b_arg(&b, 0);
    ir_stmt *three = ir_type_is_float(t) ? ir_b_const_float(&b, t, 3) : ir_b_const_int(&b, t, 3);
    ir_stmt *cond = bin(&b, IR_cmp_ne, IR_i1, a, three);
    ir_stmt *f = ir_b_if(&b, cond, false);
    b.block = f->blocks[0];
    ir_b_jump(&b, IR_return, bin(&b, IR_mul, t, a, three));
    b.block = top;
    ir_b_jump(&b, IR_return, three);   /* arg == 3 returns 3 */
    jit_kernel *jk = compile(k);
    if (jk) {
      h_ctx h;
      memset(&h, 0, sizeof h);
      h.ctx.args = h.args;
      h.ctx.ret = h.ret;
      h.ctx.error = &h.error;
      h.ctx.error_info = h.error_info;
      if (t == IR_i64) {
        h.args[0] = (uint64_t)(int64_t)-5000000000;
        CHECK(jit_launch(be, NULL, jk, &h.ctx) && (int64_t)h.ret[0] == -15000000000);
      } else if (t == IR_i8) {
        h.args[0] = (uint64_t)(int64_t)-100;   /* -300 wraps to -44 as i8, sign-extended */
        CHECK(jit_launch(be, NULL, jk, &h.ctx) && (int64_t)h.ret[0] == (int8_t)(-300 & 0xff));
      } else if (t == IR_f64) {
        double d = 1.5, r;
        memcpy(&h.args[0], &d, 8);
        CHECK(jit_launch(be, NULL, jk, &h.ctx));
        memcpy(&r, &h.ret[0], 8);
        CHECK(r == 4.5);
      } else {
        float fa = 3.0f, r;
        uint32_t u;
        memcpy(&u, &fa, 4);
        h.args[0] = u;
        CHECK(jit_launch(be, NULL, jk, &h.ctx));
        u = (uint32_t)h.ret[0];
        memcpy(&r, &u, 4);
        CHECK(r == 3.0f && (h.ret[0] >> 32) == 0);
      }
      be->release(be, jk);
    }
    ir_kernel_free(k);
  }
}

/* check_index: x[i + 5] over i in [0, 100) on a field of 100 raises an index
** error naming the field, the axis, the index and the line; the backend keeps
** working afterwards. */
static void test_check_index(void) {
  ir_program *p = ir_program_new();
  ir_snode *x = h_field1(p, IR_i32, 100, "x");
  ir_kernel *k = ir_kernel_new("oob", p);
  k->debug = true;
  ir_builder b;
  ir_builder_init(&b, k);
  b.loc.line = 77;
  ir_stmt *t = h_task(&b, IR_task_range_for, 0, 100);
  ir_stmt *i = bin(&b, IR_add, IR_i32, ir_b_loop_index(&b, t), ci32(&b, 5));
  ir_stmt *chk = ir_b_op(&b, IR_check_index, IR_void, 1, &i);
  chk->aux = x->id;
  chk->imm.ival = 0;
  ir_b_global_store(&b, h_ptr(&b, x, i), ci32(&b, 1));
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    CHECK(!jit_launch(be, NULL, jk, &h.ctx));
    CHECK(h.error == RT_ERR_INDEX);
    CHECK(h.error_info[0] == x->id && h.error_info[1] == 0);
    CHECKF(h.error_info[2] >= 100 && h.error_info[2] < 105, "index %lld", (long long)h.error_info[2]);
    CHECK(h.error_info[3] == 77);
    /* in-range elements before the failure point may be written; none beyond */
    for (int q = 0; q < 5; q++) CHECK(*(int32_t *)h_elem(&h, x, q) == 0);
    h.error = 0;
    be->release(be, jk);
    h_ctx_free(&h, p);
  }
  ir_kernel_free(k);
  ir_program_free(p);
  test_serial_control();   /* still usable */
}

/* Many kernels in one backend, each returning its own constant; half are
** released early and the rest still run. */
static void test_many_kernels(void) {
  enum { N = 40 };
  jit_kernel *jks[N] = {0};
  ir_kernel *ks[N];
  for (int q = 0; q < N; q++) {
    ks[q] = ir_kernel_new(q % 2 ? "same_name" : "k-with.odd chars", NULL);
    ks[q]->ret_type = IR_i32;
    ir_builder b;
    ir_builder_init(&b, ks[q]);
    h_task(&b, IR_task_serial, 0, 0);
    ir_b_jump(&b, IR_return, ci32(&b, q * 7 - 3));
    jks[q] = compile(ks[q]);
  }
  for (int q = 0; q < N; q += 2) {
    if (jks[q]) be->release(be, jks[q]);
    jks[q] = NULL;
  }
  for (int q = 1; q < N; q += 2) {
    if (!jks[q]) continue;
    h_ctx h;
    memset(&h, 0, sizeof h);
    h.ctx.ret = h.ret;
    h.ctx.error = &h.error;
    CHECK(jit_launch(be, NULL, jks[q], &h.ctx));
    CHECK((int64_t)h.ret[0] == q * 7 - 3);
    be->release(be, jks[q]);
  }
  for (int q = 0; q < N; q++) ir_kernel_free(ks[q]);
}

/* Bad input gives a message, not a crash. */
static void test_errors(void) {
  ir_kernel *k = ir_kernel_new("notoffloaded", NULL);
  ir_builder b;
  ir_builder_init(&b, k);
  ci32(&b, 1);
  CHECK(be->compile(be, k, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "offload");
  ir_kernel_free(k);
  /* global_ptr to an SNode the kernel's program does not have */
  k = ir_kernel_new("nosnode", NULL);
  ir_builder_init(&b, k);
  h_task(&b, IR_task_serial, 0, 0);
  ir_stmt *z = ci32(&b, 0);
  ir_stmt *gp = ir_b_global_ptr(&b, 12, 1, &z);
  gp->type = IR_i32;
  ir_b_global_store(&b, gp, z);
  CHECK(be->compile(be, k, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "SNode 12");
  ir_kernel_free(k);
}

/* A loop like bench/dynamic.lua's append: a float scaled and converted to a
** saturated index, an atomic add there. LLVM's cmov-to-branch pass turned
** the conversion's range test into a jump; with the backend's options the
** loop's one conditional jump is its back edge. */
static const char cmov_ir[] =
    "define void @f(ptr noalias %a, ptr noalias %cnt, i64 %n) {\n"
    "entry:\n  br label %loop\n"
    "loop:\n"
    "  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]\n"
    "  %pa = getelementptr float, ptr %a, i64 %i\n"
    "  %x = load float, ptr %pa, align 4\n"
    "  %y = fmul float %x, 3.200000e+01\n"
    "  %k = call i32 @llvm.fptosi.sat.i32.f32(float %y)\n"
    "  %ks = sext i32 %k to i64\n"
    "  %pc = getelementptr i32, ptr %cnt, i64 %ks\n"
    "  %old = atomicrmw add ptr %pc, i32 1 acq_rel, align 4\n"
    "  %i1 = add i64 %i, 1\n"
    "  %done = icmp eq i64 %i1, %n\n"
    "  br i1 %done, label %exit, label %loop\n"
    "exit:\n  ret void\n}\n"
    "declare i32 @llvm.fptosi.sat.i32.f32(float)\n";

static void test_llvm_options(void) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef in = LLVMCreateMemoryBufferWithMemoryRangeCopy(cmov_ir, sizeof cmov_ir - 1, "cmov");
  LLVMModuleRef m = NULL;
  char *msg = NULL;
  CHECKF(!LLVMParseIRInContext(ctx, in, &m, &msg), "parsing the loop: %s", msg ? msg : "");
  LLVMDisposeMessage(msg);
  msg = NULL;
  /* the target machine the JIT compiles with (cpu_host_open sets the options) */
  cpu_host h;
  bool host = cpu_host_open(&h, err, sizeof err);
  CHECKF(host, "%s", err);
  LLVMTargetMachineRef tm = host ? cpu_host_take_tm(&h) : NULL;
  LLVMMemoryBufferRef out = NULL;
  CHECKF(m && tm && !LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &msg, &out), "emitting: %s",
         msg ? msg : "");
  LLVMDisposeMessage(msg);
  if (out) {
    /* the text of @f: count its conditional jumps and conditional moves */
    size_t n = LLVMGetBufferSize(out);
    char *text = malloc(n + 1);
    memcpy(text, LLVMGetBufferStart(out), n);
    text[n] = 0;
    int jcc = 0, cmov = 0;
    char *f = strstr(text, "\nf:");
    for (char *line = f; line && *line; line = strchr(line + 1, '\n')) {
      const char *t = line + 1 + strspn(line + 1, " \t");
      if (strncmp(t, "ret", 3) == 0) break;
      if (t[0] == 'j' && strncmp(t, "jmp", 3) != 0) jcc++;
      if (strncmp(t, "cmov", 4) == 0) cmov++;
    }
    CHECKF(f && jcc == 1 && cmov >= 1, "the loop has %d conditional jumps and %d conditional moves:\n%s", jcc, cmov,
           f ? f : text);
    free(text);
    LLVMDisposeMemoryBuffer(out);
  }
  if (host) {
    cpu_host_give_tm(&h, tm);
    cpu_host_close(&h);
  }
  if (m) LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
}

int main(void) {
  be = jit_cpu_create(4, &(jit_options){.debug = true}, err, sizeof err);
  CHECKF(be != NULL, "%s", err);
  if (!be) return check_finish("test_jit_cpu");
  CHECK(be->threads == 4 && strcmp(be->name, "cpu") == 0);
  test_serial_control();
  test_range_big();
  test_layout_2d();
  test_loop_per_element();
  test_atomics();
  test_gtmp_bounds();
  test_return();
  test_check_index();
  test_many_kernels();
  test_errors();
  test_llvm_options();
  be->destroy(be);
  /* threads <= 0: one per core */
  be = jit_cpu_create(0, NULL, err, sizeof err);
  CHECKF(be && be->threads >= 1, "%s", err);
  if (be) {
    test_range_big();
    be->destroy(be);
  }
  return check_finish("test_jit_cpu");
}
