/*
** test_jit_sparse_pool.c -- running out of the memory pool (a kernel's
** activations, a tree instance, a pool too small to start) gives messages
** naming the SNode, the sizes and lt.init{device_memory=...}, and the program
** stays usable; the host access functions of jit_sparse.h agree with
** kernels; instances of one tree are independent (and lists are never
** reused across them); freed instances come back zeroed.
*/
#include "test_jit_sparse_world.h"

static char L1[64], L2[64];

static void test_too_small(void) {
  char err[512] = "";
  jit_backend *be = jit_cpu_create(1, NULL, err, sizeof err);
  if (!be) { CHECKF(0, "%s", err); return; }
  jit_sparse *s = jit_sparse_create(be, 1 << 20, err, sizeof err);
  CHECK(s == NULL);
  CHECK_CONTAINS(err, "device_memory");
  jit_sparse_destroy(s);
  be->destroy(be);
}

/* pointer(i:4096) -> dense(i:1024) of i32: 4 KiB a block, far more than the pool */
static void test_exhaustion(void) {
  sw w;
  uint64_t pool = rt_runtime_min_pool(IR_MAX_SNODES, JIT_SPARSE_AMBIENT_BYTES) + (6u << 20);
  if (!sw_init(&w, pool, 4)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field big <i32> pointer [i:4096] dense [i:1024]\nfield n <i32>\n"), "%s", w.err);
  ir_snode_label(sw_level(&w, "big", 1), L2, sizeof L2);
  ir_snode *ptr = sw_level(&w, "big", 2);
  /* big[1024 b] = b + 1 for blocks b in [lo, hi) */
  jit_kernel *fill = sw_compile(&w,
      "kernel fill(i32 lo, i32 hi) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n  $2 = range_for $0 $1 {\n"
      "    <i32> $3 = loop_index $2\n    <i32> $4 = const 1024\n    <i32> $5 = mul $3 $4\n"
      "    <i32*> $6 = global_ptr big [$5]\n    <i32> $7 = const 1\n    <i32> $8 = add $3 $7\n"
      "    $9 = global_store $6 $8\n  }\n}\n");
  jit_kernel *count = sw_compile(&w,
      "kernel count() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n    <i32*> $2 = global_ptr n []\n"
      "    <i32> $3 = const 1\n    <i32> $4 = atomic_add $2 $3\n  }\n}\n", L2);
  jit_kernel *clear = sw_compile(&w, "kernel clear() {\n  $0 = snode_deactivate_all %s\n}\n",
                                 ir_snode_label(ptr, L1, sizeof L1));
  if (!fill || !count || !clear) { CHECK(0); goto out; }
  int64_t a[2] = {0, 64};
  CHECK(sw_launch(&w, fill, a, 2));          /* 256 KiB: fits */
  a[0] = 64; a[1] = 4096;
  CHECK(!sw_launch(&w, fill, a, 2));         /* 16 MiB: does not */
  CHECK(w.code == RT_ERR_RUNTIME);
  char msg[768] = "";
  CHECK(jit_sparse_take_error(w.sp, w.p, msg, sizeof msg));
  CHECK_CONTAINS(msg, "S1pointer");
  CHECK_CONTAINS(msg, "big");
  CHECK_CONTAINS(msg, "device_memory");
  CHECK(!jit_sparse_take_error(w.sp, w.p, msg, sizeof msg));   /* taken */
  /* every block either holds its value or is inactive (reads zero); the first 64 all hold */
  int64_t active = 0;
  for (int b = 0; b < 4096; b++) {
    int64_t v = sw_get_i32(&w, "big", (int64_t)b * 1024, 0);
    CHECKF(v == b + 1 || (v == 0 && b >= 64), "block %d reads %lld", b, (long long)v);
    active += v != 0;
  }
  CHECK(jit_sparse_active_cells(w.sp, ptr->id) == active);
  CHECK(sw_launch(&w, count, NULL, 0));
  CHECKF(sw_get_i32(&w, "n", 0, 0) == active * 1024, "struct-for visited %lld cells, %lld blocks active",
         (long long)sw_get_i32(&w, "n", 0, 0), (long long)active);
  /* still usable: free everything, then the same memory serves new blocks */
  CHECK(sw_launch(&w, clear, NULL, 0));
  CHECK(jit_sparse_active_cells(w.sp, ptr->id) == 0);
  a[0] = 1000; a[1] = 1000 + active;
  CHECK(sw_launch(&w, fill, a, 2));
  for (int b = 1000; b < 1000 + active; b++) CHECK(sw_get_i32(&w, "big", (int64_t)b * 1024 + 5, 0) == 0);
  for (int b = 1000; b < 1000 + active; b++) CHECK(sw_get_i32(&w, "big", (int64_t)b * 1024, 0) == b + 1);
  CHECK(sw_get_i32(&w, "big", 0, 0) == 0);
  /* a tree that does not fit at all is refused when it is instantiated */
  CHECK(!sw_fields(&w, "field huge <i32> dense [i:10000000]\n"));
  CHECK_CONTAINS(w.err, "device_memory");
out:
  if (fill) w.be->release(w.be, fill);
  if (count) w.be->release(w.be, count);
  if (clear) w.be->release(w.be, clear);
  sw_free(&w);
}

/* Host writes, kernel reads; instances of one tree. */
static void test_host_and_instances(void) {
  sw w;
  if (!sw_init(&w, 0, 2)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field y <i32> pointer [i:16] bitmasked [i:8]\nfield ys <i32>\n"), "%s", w.err);
  ir_snode *place = sw_place(&w, "y"), *bm = place->parent, *ptr = bm->parent;
  ir_snode_label(bm, L2, sizeof L2);
  jit_kernel *sum = sw_compile(&w,
      "kernel sum() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n    <i32*> $2 = global_ptr y [$1]\n"
      "    <i32> $3 = global_load $2\n    <i32*> $4 = global_ptr ys []\n    <i32> $5 = atomic_add $4 $3\n  }\n}\n", L2);
  if (!sum) { CHECK(0); goto out; }
  char *inst[2] = {w.roots[place->tree], NULL};
  inst[1] = jit_sparse_new_instance(w.sp, w.p, place->tree, w.err, sizeof w.err);
  CHECK(inst[1] != NULL && inst[1] != inst[0]);
  if (!inst[1]) goto out;
  /* instance k: y[i] = (k + 1) * i for i = 3, 10, 50, 127 */
  static const int at[] = {3, 10, 50, 127};
  int64_t want[2] = {0, 0};
  for (int k = 0; k < 2; k++)
    for (int n = 0; n < 4; n++) {
      int64_t i = at[n];
      int32_t *p = (int32_t *)jit_sparse_element(w.sp, place, inst[k], &i, true);
      CHECK(p != NULL);
      if (p) *p = (k + 1) * (int32_t)i;
      want[k] += (k + 1) * i;
    }
  int64_t i = 50;
  CHECK(jit_sparse_snode_op(w.sp, bm, inst[0], &i, JIT_SN_IS_ACTIVE) == 1);
  i = 51;
  CHECK(jit_sparse_snode_op(w.sp, bm, inst[0], &i, JIT_SN_IS_ACTIVE) == 0);
  CHECK(jit_sparse_element(w.sp, place, inst[0], &i, false) == NULL);
  CHECK(jit_sparse_snode_op(w.sp, ptr, inst[0], &i, JIT_SN_IS_ACTIVE) == 1);   /* 51 shares 50's block */
  /* alternate instances: lists built for one are never reused for the other */
  for (int r = 0; r < 4; r++) {
    int k = r % 2;
    w.roots[place->tree] = inst[k];
    int32_t *total = (int32_t *)jit_sparse_element(w.sp, sw_place(&w, "ys"), w.roots[sw_place(&w, "ys")->tree], NULL, true);
    *total = 0;
    CHECK(sw_run(&w, "kernel sum2() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n"
                     "    <i32*> $2 = global_ptr y [$1]\n    <i32> $3 = global_load $2\n    <i32*> $4 = global_ptr ys []\n"
                     "    <i32> $5 = atomic_add $4 $3\n  }\n}\n", L2));
    CHECKF(*total == want[k], "instance %d: sum %d, want %lld", k, *total, (long long)want[k]);
    *total = 0;
    CHECK(sw_launch(&w, sum, NULL, 0));
    CHECKF(*total == want[k], "instance %d (compiled once): sum %d, want %lld", k, *total, (long long)want[k]);
  }
  /* host deactivation of one cell, then of everything under the pointer level */
  i = 10;
  jit_sparse_snode_op(w.sp, bm, inst[1], &i, JIT_SN_DEACTIVATE);
  CHECK(jit_sparse_element(w.sp, place, inst[1], &i, false) == NULL);
  jit_sparse_deactivate_all(w.sp, ptr, inst[1]);
  i = 3;
  CHECK(jit_sparse_snode_op(w.sp, ptr, inst[1], &i, JIT_SN_IS_ACTIVE) == 0);
  /* a freed instance comes back empty */
  jit_sparse_free_instance(w.sp, w.p, place->tree, inst[0]);
  char *again = jit_sparse_new_instance(w.sp, w.p, place->tree, w.err, sizeof w.err);
  CHECK(again == inst[0]);
  for (int n = 0; n < 4; n++) {
    i = at[n];
    CHECK(jit_sparse_element(w.sp, place, again, &i, false) == NULL);
  }
  CHECK(jit_sparse_active_cells(w.sp, bm->id) == 0);
  w.roots[place->tree] = again;
out:
  if (sum) w.be->release(w.be, sum);
  sw_free(&w);
}

int main(void) {
  test_too_small();
  test_exhaustion();
  test_host_and_instances();
  return check_finish("test_jit_sparse_pool");
}
