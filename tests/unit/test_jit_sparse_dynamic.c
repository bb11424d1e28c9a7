/*
** test_jit_sparse_dynamic.c -- dense -> dynamic lists (append from parallel
** rows, length, struct-for over the elements with their indices, appending
** past capacity with and without debug, clearing a list + GC, host append)
** and a two-level pointer tree (struct-for sums, deactivate_all of a whole
** tree and of its lower level), checked against plain C models.
*/
#include "test_jit_sparse_world.h"

static char LD[64], L1[64], L2[64], L3[64];

/* ---- dense(i:4) -> dynamic(j:64, chunks of 8) -> l ------------------------------ */

static int32_t lm[4][64];
static int lnum[4];

static void check_l(sw *w, jit_kernel *lens, const char *when) {
  CHECK(sw_launch(w, lens, NULL, 0));
  ir_snode *dyn = sw_level(w, "l", 1);
  for (int i = 0; i < 4; i++) {
    int64_t idx = i;
    CHECKF(sw_get_i32(w, "len", i, 0) == lnum[i], "%s: length of row %d is %lld, model %d", when, i,
           (long long)sw_get_i32(w, "len", i, 0), lnum[i]);
    CHECK(jit_sparse_snode_op(w->sp, dyn, w->roots[dyn->tree], &idx, JIT_SN_LENGTH) == lnum[i]);
    for (int j = 0; j < 64; j++) {
      int64_t want = j < lnum[i] ? lm[i][j] : 0;
      CHECKF(sw_get_i32(w, "l", i, j) == want, "%s: l[%d][%d] = %lld, model %lld", when, i, j,
             (long long)sw_get_i32(w, "l", i, j), (long long)want);
    }
  }
}

static void test_dynamic(void) {
  sw w;
  if (!sw_init(&w, 0, 4)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field l <i32> dense [i:4] dynamic [j:64] chunk=8\n"
                       "field len <i32>, rows <i32> dense [i:4]\nfield fails <i32>\nfield visits <i32>\n"), "%s", w.err);
  ir_snode *dyn = sw_level(&w, "l", 1);
  ir_snode_label(dyn, LD, sizeof LD);
  memset(lm, 0, sizeof lm);
  memset(lnum, 0, sizeof lnum);
  jit_kernel *lens = sw_compile(&w,
      "kernel lens() {\n  <i32> $0 = const 0\n  <i32> $1 = const 4\n  $2 = range_for $0 $1 {\n"
      "    <i32> $3 = loop_index $2\n    <i32> $4 = snode_length %s [$3]\n    <i32*> $5 = global_ptr len [$3]\n"
      "    $6 = global_store $5 $4\n  }\n}\n", LD);
  /* rows in parallel, each row's appends in order: row i gets 10 i + 3 elements */
  jit_kernel *fill = sw_compile(&w,
      "kernel fill() {\n  <i32> $0 = const 0\n  <i32> $1 = const 4\n  $2 = range_for $0 $1 {\n"
      "    <i32> $3 = loop_index $2\n    <i32> $4 = const 10\n    <i32> $5 = mul $3 $4\n    <i32> $6 = const 3\n"
      "    <i32> $7 = add $5 $6\n    <i32> $8 = const 0\n    $9 = range_for $8 $7 {\n"
      "      <i32> $10 = loop_index $9\n      <i32> $11 = const 1000\n      <i32> $12 = mul $3 $11\n"
      "      <i32> $13 = add $12 $10\n      <i32> $14 = snode_append %s [$3] $13\n    }\n  }\n}\n", LD);
  /* l[i][j] += j, rows[i] += the new value, one visit counted per element */
  jit_kernel *walk = sw_compile(&w,
      "kernel walk() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n    <i32> $2 = loop_index $0 1\n"
      "    <i32*> $3 = global_ptr l [$1, $2]\n    <i32> $4 = global_load $3\n    <i32> $5 = add $4 $2\n"
      "    $6 = global_store $3 $5\n    <i32*> $7 = global_ptr rows [$1]\n    <i32> $8 = atomic_add $7 $5\n"
      "    <i32*> $9 = global_ptr visits []\n    <i32> $10 = const 1\n    <i32> $11 = atomic_add $9 $10\n  }\n}\n", LD);
  /* n appends of v to row i, counting the ones that found the list full */
  const char *push_text =
      "kernel push(i32 i, i32 n, i32 v) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n  <i32> $2 = arg 2\n"
      "  <i32> $3 = const 0\n  $4 = range_for $3 $1 {\n    <i32> $5 = snode_append %s [$0] $2\n"
      "    <i32> $6 = const 0\n    <i1> $7 = cmp_lt $5 $6\n    $8 = if $7 {\n      <i32*> $9 = global_ptr fails []\n"
      "      <i32> $10 = const 1\n      <i32> $11 = atomic_add $9 $10\n    }\n  }\n}\n";
  jit_kernel *push = sw_compile(&w, push_text, LD);
  jit_kernel *clear = sw_compile(&w, "kernel clear(i32 i) {\n  <i32> $0 = arg 0\n  $1 = snode_deactivate %s [$0]\n}\n", LD);
  w.debug = true;
  jit_kernel *push_debug = sw_compile(&w, push_text, LD);
  w.debug = false;
  if (!lens || !fill || !walk || !push || !clear || !push_debug) { CHECK(0); goto out; }

  check_l(&w, lens, "fresh");
  CHECK(sw_launch(&w, fill, NULL, 0));
  for (int i = 0; i < 4; i++) {
    lnum[i] = 10 * i + 3;
    for (int k = 0; k < lnum[i]; k++) lm[i][k] = 1000 * i + k;
  }
  check_l(&w, lens, "after fill");
  CHECK(jit_sparse_active_cells(w.sp, dyn->id) == 3 + 13 + 23 + 33);

  CHECK(sw_launch(&w, walk, NULL, 0));
  int64_t rows[4] = {0}, visits = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < lnum[i]; j++) { lm[i][j] += j; rows[i] += lm[i][j]; visits++; }
  check_l(&w, lens, "after walk");
  for (int i = 0; i < 4; i++)
    CHECKF(sw_get_i32(&w, "rows", i, 0) == rows[i], "row %d sum %lld, model %lld", i,
           (long long)sw_get_i32(&w, "rows", i, 0), (long long)rows[i]);
  CHECK(sw_get_i32(&w, "visits", 0, 0) == visits);

  /* past capacity: 70 more to row 3 (33 long): 31 land, 39 are dropped */
  int64_t a[3] = {3, 70, -7};
  CHECK(sw_launch(&w, push, a, 3));
  for (int k = lnum[3]; k < 64; k++) lm[3][k] = -7;
  lnum[3] = 64;
  CHECKF(sw_get_i32(&w, "fails", 0, 0) == 39, "%lld appends failed", (long long)sw_get_i32(&w, "fails", 0, 0));
  check_l(&w, lens, "after overflow");
  /* the same in a debug kernel is an error naming the dynamic SNode */
  a[1] = 1;
  CHECK(!sw_launch(&w, push_debug, a, 3));
  CHECK(w.code == RT_ERR_APPEND && w.info[0] == dyn->id);

  /* clearing a list frees its chunks (GC runs); appends start from zero */
  int64_t gc0 = sw_stats(&w).gc_runs;
  int64_t one = 1;
  CHECK(sw_launch(&w, clear, &one, 1));
  CHECK(sw_stats(&w).gc_runs == gc0 + 1);
  lnum[1] = 0;
  memset(lm[1], 0, sizeof lm[1]);
  check_l(&w, lens, "after clearing row 1");
  int64_t b[3] = {1, 5, 42};
  CHECK(sw_launch(&w, push, b, 3));
  for (int k = 0; k < 5; k++) lm[1][k] = 42;
  lnum[1] = 5;
  check_l(&w, lens, "after refilling row 1");

  /* host append agrees with the kernels */
  int64_t row = 0;
  int32_t at = -2;
  char *cell = jit_sparse_append(w.sp, dyn, w.roots[dyn->tree], &row, &at);
  CHECK(cell && at == lnum[0]);
  if (cell) *(int32_t *)(cell + dyn->children[0]->offset) = 4242;
  lm[0][lnum[0]++] = 4242;
  check_l(&w, lens, "after a host append");
out:
  if (lens) w.be->release(w.be, lens);
  if (fill) w.be->release(w.be, fill);
  if (walk) w.be->release(w.be, walk);
  if (push) w.be->release(w.be, push);
  if (clear) w.be->release(w.be, clear);
  if (push_debug) w.be->release(w.be, push_debug);
  sw_free(&w);
}

/* ---- pointer(i:4) -> pointer(i:4) -> dense(i:4) -> q ------------------------------ */

static int32_t qm[64];

/* upper: active cells of the upper pointer level, -1: as the model implies */
static void check_q(sw *w, const char *when, int64_t upper) {
  bool b1[4] = {0}, b2[16] = {0};
  for (int i = 0; i < 64; i++) {
    CHECKF(sw_get_i32(w, "q", i, 0) == qm[i], "%s: q[%d] = %lld, model %d", when, i,
           (long long)sw_get_i32(w, "q", i, 0), qm[i]);
    if (qm[i]) b1[i / 16] = b2[i / 4] = true;
  }
  int64_t n1 = 0, n2 = 0;
  for (int i = 0; i < 16; i++) { n1 += i < 4 && b1[i]; n2 += b2[i]; }
  CHECK(jit_sparse_active_cells(w->sp, sw_level(w, "q", 3)->id) == (upper >= 0 ? upper : n1));
  CHECK(jit_sparse_active_cells(w->sp, sw_level(w, "q", 2)->id) == n2);
}

static void test_two_pointers(void) {
  sw w;
  if (!sw_init(&w, 0, 4)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field q <i32> pointer [i:4] pointer [i:4] dense [i:4]\nfield qs <i32>\n"), "%s", w.err);
  ir_snode_label(sw_level(&w, "q", 3), L1, sizeof L1);
  ir_snode_label(sw_level(&w, "q", 2), L2, sizeof L2);
  ir_snode_label(sw_level(&w, "q", 1), L3, sizeof L3);
  memset(qm, 0, sizeof qm);
  jit_kernel *put = sw_compile(&w, "kernel put(i32 i, i32 v) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n"
                                   "  <i32*> $2 = global_ptr q [$0]\n  $3 = global_store $2 $1\n}\n");
  /* q[i] = 2 q[i] + 1 over every cell of every active dense block, summing the results */
  jit_kernel *twice = sw_compile(&w,
      "kernel twice() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n    <i32*> $2 = global_ptr q [$1]\n"
      "    <i32> $3 = global_load $2\n    <i32> $4 = const 2\n    <i32> $5 = mul $3 $4\n    <i32> $6 = const 1\n"
      "    <i32> $7 = add $5 $6\n    $8 = global_store $2 $7\n    <i32*> $9 = global_ptr qs []\n"
      "    <i32> $10 = atomic_add $9 $7\n  }\n}\n", L3);
  jit_kernel *all1 = sw_compile(&w, "kernel all1() {\n  $0 = snode_deactivate_all %s\n}\n", L1);
  jit_kernel *all2 = sw_compile(&w, "kernel all2() {\n  $0 = snode_deactivate_all %s\n}\n", L2);
  if (!put || !twice || !all1 || !all2) { CHECK(0); goto out; }

  static const int at[] = {0, 5, 17, 18, 40, 63};
  for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
    int64_t a[2] = {at[k], 10 + at[k]};
    CHECK(sw_launch(&w, put, a, 2));
    qm[at[k]] = 10 + at[k];
  }
  check_q(&w, "after puts", -1);
  CHECK(sw_launch(&w, twice, NULL, 0));
  bool blk[16] = {0};
  for (int i = 0; i < 64; i++) if (qm[i]) blk[i / 4] = true;
  int64_t sum = 0;
  for (int i = 0; i < 64; i++) if (blk[i / 4]) { qm[i] = 2 * qm[i] + 1; sum += qm[i]; }
  check_q(&w, "after twice", -1);
  CHECK(sw_get_i32(&w, "qs", 0, 0) == sum);

  /* the lower pointer level only: the upper cells stay active, empty */
  CHECK(sw_launch(&w, all2, NULL, 0));
  memset(qm, 0, sizeof qm);
  for (int i = 0; i < 64; i++) CHECK(sw_get_i32(&w, "q", i, 0) == 0);
  CHECK(jit_sparse_active_cells(w.sp, sw_level(&w, "q", 2)->id) == 0);
  CHECK(jit_sparse_active_cells(w.sp, sw_level(&w, "q", 3)->id) == 4);
  int64_t a[2] = {7, 3};
  CHECK(sw_launch(&w, put, a, 2));
  qm[7] = 3;
  check_q(&w, "after a write into a cleared block", 4);
  /* the whole tree */
  CHECK(sw_launch(&w, all1, NULL, 0));
  memset(qm, 0, sizeof qm);
  check_q(&w, "after deactivate_all", -1);
  a[0] = 62; a[1] = 9;
  CHECK(sw_launch(&w, put, a, 2));
  qm[62] = 9;
  check_q(&w, "after writing again", -1);
out:
  if (put) w.be->release(w.be, put);
  if (twice) w.be->release(w.be, twice);
  if (all1) w.be->release(w.be, all1);
  if (all2) w.be->release(w.be, all2);
  sw_free(&w);
}

int main(void) {
  test_dynamic();
  test_two_pointers();
  return check_finish("test_jit_sparse_dynamic");
}
