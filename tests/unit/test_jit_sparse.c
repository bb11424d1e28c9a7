/*
** test_jit_sparse.c -- sparse SNodes compiled and run on the CPU, checked
** cell by cell against plain C models: pointer -> dense (activating writes,
** struct-for increments and sums, is_active of both levels, deactivation +
** GC then reactivation reading zeros, list reuse counters), a 2-D
** bitmasked level (snode_activate/deactivate, float struct-for) and 2-D
** pointer grids in row- and column-major order (struct-for indices).
*/
#include <unistd.h>

#include "test_jit_sparse_world.h"

static char L1[64], L2[64];   /* labels of the levels used in kernel texts */

static const char *label(ir_snode *s, char *buf) { return ir_snode_label(s, buf, 64); }

/* ---- pointer(i:8) -> dense(i:4) -> x ------------------------------------------- */

static int32_t xm[32];       /* model of x */
static bool xblk[8];         /* model of the pointer cells */

static void check_x(sw *w, jit_kernel *read, const char *when) {
  CHECK(sw_launch(w, read, NULL, 0));
  ir_snode *ptr = sw_level(w, "x", 2), *dense = sw_level(w, "x", 1);
  int64_t nblk = 0;
  for (int i = 0; i < 32; i++) {
    int64_t want = xblk[i / 4] ? xm[i] : 0;
    CHECKF(sw_get_i32(w, "out", i, 0) == want, "%s: x[%d] = %lld in a kernel, model %lld", when, i,
           (long long)sw_get_i32(w, "out", i, 0), (long long)want);
    CHECKF(sw_get_i32(w, "x", i, 0) == want, "%s: x[%d] = %lld on the host, model %lld", when, i,
           (long long)sw_get_i32(w, "x", i, 0), (long long)want);
    CHECKF(sw_get_i32(w, "act", i, 0) == xblk[i / 4], "%s: is_active(pointer, %d)", when, i);
    CHECKF(sw_get_i32(w, "act2", i, 0) == xblk[i / 4], "%s: is_active(dense under pointer, %d)", when, i);
    int64_t idx = i;
    CHECK(jit_sparse_snode_op(w->sp, ptr, w->roots[ptr->tree], &idx, JIT_SN_IS_ACTIVE) == xblk[i / 4]);
    CHECK(jit_sparse_snode_op(w->sp, dense, w->roots[ptr->tree], &idx, JIT_SN_IS_ACTIVE) == 1 ||
          !xblk[i / 4]);
  }
  for (int b = 0; b < 8; b++) nblk += xblk[b];
  CHECKF(jit_sparse_active_cells(w->sp, ptr->id) == nblk, "%s: %lld active pointer cells, model %lld",
         when, (long long)jit_sparse_active_cells(w->sp, ptr->id), (long long)nblk);
}

static void test_pointer_dense(void) {
  sw w;
  if (!sw_init(&w, 0, 4)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field x <i32> pointer [i:8] dense [i:4]\n"
                       "field out <i32>, act <i32>, act2 <i32> dense [i:32]\n"
                       "field total <i32>\nfield cnt <i32>\n"), "%s", w.err);
  label(sw_level(&w, "x", 2), L1);
  label(sw_level(&w, "x", 1), L2);
  memset(xm, 0, sizeof xm);
  memset(xblk, 0, sizeof xblk);

  jit_kernel *read = sw_compile(&w,
      "kernel read() {\n  <i32> $0 = const 0\n  <i32> $1 = const 32\n  $2 = range_for $0 $1 {\n"
      "    <i32> $3 = loop_index $2\n    <i32*> $4 = global_ptr x [$3]\n    <i32> $5 = global_load $4\n"
      "    <i32*> $6 = global_ptr out [$3]\n    $7 = global_store $6 $5\n"
      "    <i1> $8 = snode_is_active %s [$3]\n    <i32> $9 = cast $8\n"
      "    <i32*> $10 = global_ptr act [$3]\n    $11 = global_store $10 $9\n"
      "    <i1> $12 = snode_is_active %s [$3]\n    <i32> $13 = cast $12\n"
      "    <i32*> $14 = global_ptr act2 [$3]\n    $15 = global_store $14 $13\n  }\n}\n", L1, L2);
  jit_kernel *fill = sw_compile(&w,
      "kernel fill(i32 m) {\n  <i32> $0 = arg 0\n  <i32> $1 = const 0\n  <i32> $2 = const 32\n"
      "  $3 = range_for $1 $2 {\n    <i32> $4 = loop_index $3\n    <i32> $5 = mod $4 $0\n"
      "    <i32> $6 = const 0\n    <i1> $7 = cmp_eq $5 $6\n    $8 = if $7 {\n"
      "      <i32*> $9 = global_ptr x [$4]\n      <i32> $10 = const 10\n      <i32> $11 = mul $4 $10\n"
      "      <i32> $12 = const 1\n      <i32> $13 = add $11 $12\n      $14 = global_store $9 $13\n"
      "    }\n  }\n}\n");
  jit_kernel *inc = sw_compile(&w,
      "kernel inc() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n"
      "    <i32*> $2 = global_ptr x [$1]\n    <i32> $3 = global_load $2\n    <i32> $4 = const 1\n"
      "    <i32> $5 = add $3 $4\n    <i32*> $6 = global_ptr x [$1]\n    $7 = global_store $6 $5\n  }\n}\n", L2);
  jit_kernel *sum = sw_compile(&w,
      "kernel sum() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n"
      "    <i32*> $2 = global_ptr x [$1]\n    <i32> $3 = global_load $2\n    <i32*> $4 = global_ptr total []\n"
      "    <i32> $5 = atomic_add $4 $3\n    <i32*> $6 = global_ptr cnt []\n    <i32> $7 = const 1\n"
      "    <i32> $8 = atomic_add $6 $7\n  }\n}\n", L2);
  jit_kernel *put = sw_compile(&w,
      "kernel put(i32 i, i32 v) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n"
      "  <i32*> $2 = global_ptr x [$0]\n  $3 = global_store $2 $1\n}\n");
  jit_kernel *deact = sw_compile(&w,
      "kernel deact() {\n  <i32> $0 = const 0\n  <i32> $1 = const 8\n  $2 = range_for $0 $1 {\n"
      "    <i32> $3 = loop_index $2\n    <i32> $4 = const 2\n    <i32> $5 = mod $3 $4\n"
      "    <i32> $6 = const 1\n    <i1> $7 = cmp_eq $5 $6\n    $8 = if $7 {\n"
      "      <i32> $9 = const 4\n      <i32> $10 = mul $3 $9\n      $11 = snode_deactivate %s [$10]\n"
      "    }\n  }\n}\n", L1);
  if (!read || !fill || !inc || !sum || !put || !deact) { CHECK(0); goto out; }

  check_x(&w, read, "fresh");
  /* activating writes from a parallel loop: every ninth element (blocks 0, 2, 4, 6) */
  int64_t m = 9;
  CHECK(sw_launch(&w, fill, &m, 1));
  for (int i = 0; i < 32; i += 9) { xm[i] = i * 10 + 1; xblk[i / 4] = true; }
  check_x(&w, read, "after fill");
  /* struct-for over the dense level: every cell of every active block */
  CHECK(sw_launch(&w, inc, NULL, 0));
  for (int i = 0; i < 32; i++) if (xblk[i / 4]) xm[i]++;
  check_x(&w, read, "after inc");
  /* the second run changes no structure: both lists are reused */
  jit_sparse_stats a = sw_stats(&w);
  CHECK(sw_launch(&w, inc, NULL, 0));
  for (int i = 0; i < 32; i++) if (xblk[i / 4]) xm[i]++;
  jit_sparse_stats b = sw_stats(&w);
  CHECKF(b.lists_built == a.lists_built && b.lists_reused == a.lists_reused + 2,
         "second inc: built %lld -> %lld, reused %lld -> %lld", (long long)a.lists_built,
         (long long)b.lists_built, (long long)a.lists_reused, (long long)b.lists_reused);
  check_x(&w, read, "after inc twice");
  /* sum and count over active cells */
  CHECK(sw_launch(&w, sum, NULL, 0));
  int64_t total = 0, cnt = 0;
  for (int i = 0; i < 32; i++) if (xblk[i / 4]) { total += xm[i]; cnt++; }
  CHECKF(sw_get_i32(&w, "total", 0, 0) == total, "sum %lld, model %lld", (long long)sw_get_i32(&w, "total", 0, 0), (long long)total);
  CHECK(sw_get_i32(&w, "cnt", 0, 0) == cnt);
  /* activating new blocks rebuilds the dense level's list only */
  int64_t pv[2] = {5, 77};    /* block 1, new */
  CHECK(sw_launch(&w, put, pv, 2));
  xm[5] = 77;
  xblk[1] = true;
  pv[0] = 9; pv[1] = -4;      /* block 2, active */
  CHECK(sw_launch(&w, put, pv, 2));
  xm[9] = -4;
  pv[0] = 29; pv[1] = 5;      /* block 7, new */
  a = sw_stats(&w);
  CHECK(sw_launch(&w, put, pv, 2));
  xm[29] = 5;
  xblk[7] = true;
  CHECK(sw_launch(&w, inc, NULL, 0));
  for (int i = 0; i < 32; i++) if (xblk[i / 4]) xm[i]++;
  b = sw_stats(&w);
  CHECKF(b.lists_built == a.lists_built + 1 && b.lists_reused == a.lists_reused + 1,
         "inc after an activation: built +%lld, reused +%lld", (long long)(b.lists_built - a.lists_built),
         (long long)(b.lists_reused - a.lists_reused));
  check_x(&w, read, "after put + inc");
  /* deactivate the odd blocks (the kernel ends with GC), then write one cell of
  ** block 1 again: its other cells read zero */
  int64_t gc0 = sw_stats(&w).gc_runs;
  CHECK(sw_launch(&w, deact, NULL, 0));
  CHECK(sw_stats(&w).gc_runs > gc0);
  for (int b2 = 1; b2 < 8; b2 += 2) {
    xblk[b2] = false;
    for (int i = 0; i < 4; i++) xm[b2 * 4 + i] = 0;
  }
  check_x(&w, read, "after deactivating odd blocks");
  pv[0] = 6; pv[1] = 600;
  CHECK(sw_launch(&w, put, pv, 2));
  xm[6] = 600;
  xblk[1] = true;
  check_x(&w, read, "after reactivating block 1");
  CHECK(sw_launch(&w, inc, NULL, 0));
  for (int i = 0; i < 32; i++) if (xblk[i / 4]) xm[i]++;
  check_x(&w, read, "after the last inc");
  /* a block activated now gets a recycled cell: it reads zero but for the write */
  pv[0] = 13; pv[1] = 1300;
  CHECK(sw_launch(&w, put, pv, 2));
  xm[12] = xm[14] = xm[15] = 0;
  xm[13] = 1300;
  xblk[3] = true;
  check_x(&w, read, "after activating block 3");
out:
  if (read) w.be->release(w.be, read);
  if (fill) w.be->release(w.be, fill);
  if (inc) w.be->release(w.be, inc);
  if (sum) w.be->release(w.be, sum);
  if (put) w.be->release(w.be, put);
  if (deact) w.be->release(w.be, deact);
  sw_free(&w);
}

/* ---- dense(i:4, j:4) -> bitmasked(i:4, j:4) -> b (16 x 16, f32) ---------------- */

static float bm[16][16];
static bool bon[16][16];

static void check_b(sw *w, const char *when) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double want = bon[i][j] ? bm[i][j] : 0.0;
      CHECKF(sw_get_f32(w, "b", i, j) == want, "%s: b[%d][%d] = %g, model %g", when, i, j,
             sw_get_f32(w, "b", i, j), want);
      ir_snode *lvl = sw_level(w, "b", 1);
      int64_t idx[2] = {i, j};
      CHECKF(jit_sparse_snode_op(w->sp, lvl, w->roots[lvl->tree], idx, JIT_SN_IS_ACTIVE) == bon[i][j],
             "%s: is_active(%d, %d)", when, i, j);
    }
}

static void test_bitmasked_2d(void) {
  sw w;
  if (!sw_init(&w, 0, 3)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field b <f32> dense [i:4, j:4] bitmasked [i:4, j:4]\nfield n <i32>\n"), "%s", w.err);
  label(sw_level(&w, "b", 1), L1);
  jit_kernel *act = sw_compile(&w, "kernel act(i32 i, i32 j) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n"
                                   "  $2 = snode_activate %s [$0, $1]\n}\n", L1);
  jit_kernel *deact = sw_compile(&w, "kernel deact(i32 i, i32 j) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n"
                                     "  $2 = snode_deactivate %s [$0, $1]\n}\n", L1);
  jit_kernel *put = sw_compile(&w, "kernel put(i32 i, i32 j, i32 v) {\n  <i32> $0 = arg 0\n  <i32> $1 = arg 1\n"
                                   "  <i32> $2 = arg 2\n  <f32> $3 = cast $2\n  <f32*> $4 = global_ptr b [$0, $1]\n"
                                   "  $5 = global_store $4 $3\n}\n");
  /* b[i][j] += 100 i + j over active cells, counting them */
  jit_kernel *bump = sw_compile(&w,
      "kernel bump() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n    <i32> $2 = loop_index $0 1\n"
      "    <f32*> $3 = global_ptr b [$1, $2]\n    <f32> $4 = global_load $3\n    <i32> $5 = const 100\n"
      "    <i32> $6 = mul $1 $5\n    <i32> $7 = add $6 $2\n    <f32> $8 = cast $7\n    <f32> $9 = add $4 $8\n"
      "    <f32*> $10 = global_ptr b [$1, $2]\n    $11 = global_store $10 $9\n    <i32*> $12 = global_ptr n []\n"
      "    <i32> $13 = const 1\n    <i32> $14 = atomic_add $12 $13\n  }\n}\n", L1);
  if (!act || !deact || !put || !bump) { CHECK(0); goto out; }
  memset(bm, 0, sizeof bm);
  memset(bon, 0, sizeof bon);
  uint64_t seed = 12345;
  for (int r = 0; r < 60; r++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    int64_t a[3] = {(int64_t)(seed >> 33) % 16, (int64_t)(seed >> 45) % 16, (int64_t)(seed >> 20) % 1000};
    switch (r % 3) {
    case 0: CHECK(sw_launch(&w, act, a, 2)); bon[a[0]][a[1]] = true; break;
    case 1: CHECK(sw_launch(&w, put, a, 3)); bon[a[0]][a[1]] = true; bm[a[0]][a[1]] = (float)a[2]; break;
    default:
      if (r % 9 == 2) {   /* deactivation zero-fills the cell */
        CHECK(sw_launch(&w, deact, a, 2));
        bon[a[0]][a[1]] = false;
        bm[a[0]][a[1]] = 0;
      }
      break;
    }
  }
  check_b(&w, "after random activity");
  int64_t cnt = 0;
  CHECK(sw_launch(&w, bump, NULL, 0));
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++)
      if (bon[i][j]) { bm[i][j] += (float)(100 * i + j); cnt++; }
  check_b(&w, "after bump");
  CHECKF(sw_get_i32(&w, "n", 0, 0) == cnt, "bump visited %lld cells, %lld active",
         (long long)sw_get_i32(&w, "n", 0, 0), (long long)cnt);
  CHECK(jit_sparse_active_cells(w.sp, sw_level(&w, "b", 1)->id) == cnt);
out:
  if (act) w.be->release(w.be, act);
  if (deact) w.be->release(w.be, deact);
  if (put) w.be->release(w.be, put);
  if (bump) w.be->release(w.be, bump);
  sw_free(&w);
}

/* ---- pointer(4 x 4) -> dense(8 x 8) in both orders: struct-for indices -------- */

static void test_pointer_2d(const char *decl) {
  sw w;
  if (!sw_init(&w, 0, 2)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, decl), "%s", w.err);
  label(sw_level(&w, "g", 1), L2);
  /* the diagonal activates the 4 diagonal blocks; the struct-for writes
  ** 1000 i + j into every cell of them */
  bool ok = sw_run(&w, "kernel diag() {\n  <i32> $0 = const 0\n  <i32> $1 = const 32\n  $2 = range_for $0 $1 {\n"
                       "    <i32> $3 = loop_index $2\n    <i32*> $4 = global_ptr g [$3, $3]\n    <i32> $5 = const 1\n"
                       "    $6 = global_store $4 $5\n  }\n}\n") &&
            sw_run(&w, "kernel idx() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n"
                       "    <i32> $2 = loop_index $0 1\n    <i32*> $3 = global_ptr g [$1, $2]\n"
                       "    <i32> $4 = const 1000\n    <i32> $5 = mul $1 $4\n    <i32> $6 = add $5 $2\n"
                       "    $7 = global_store $3 $6\n  }\n}\n", L2);
  CHECKF(ok, "%s: kernels failed", decl);
  int bad = 0;
  for (int i = 0; i < 32; i++)
    for (int j = 0; j < 32; j++) {
      int64_t want = i / 8 == j / 8 ? 1000 * i + j : 0;
      if (sw_get_i32(&w, "g", i, j) != want && bad++ < 5)
        CHECKF(0, "%s: g[%d][%d] = %lld, want %lld", decl, i, j, (long long)sw_get_i32(&w, "g", i, j), (long long)want);
    }
  CHECK(bad == 0);
  CHECK(jit_sparse_active_cells(w.sp, sw_level(&w, "g", 2)->id) == 4);
  sw_free(&w);
}

/* ---- pointer(i:64) -> z: a struct-for over the pointer level itself ----------- */

static void test_pointer_leaf(void) {
  sw w;
  if (!sw_init(&w, 0, 2)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field z <i32> pointer [i:64]\nfield zs <i32>\n"), "%s", w.err);
  label(sw_level(&w, "z", 1), L1);
  /* z[i] = i + 1 for i = 0, 7, 14, ...; then z[i] += 1000 i over the active ones */
  bool ok = sw_run(&w, "kernel w() {\n  <i32> $0 = const 0\n  <i32> $1 = const 64\n  $2 = range_for $0 $1 {\n"
                       "    <i32> $3 = loop_index $2\n    <i32> $4 = const 7\n    <i32> $5 = mod $3 $4\n"
                       "    <i32> $6 = const 0\n    <i1> $7 = cmp_eq $5 $6\n    $8 = if $7 {\n"
                       "      <i32*> $9 = global_ptr z [$3]\n      <i32> $10 = const 1\n      <i32> $11 = add $3 $10\n"
                       "      $12 = global_store $9 $11\n    }\n  }\n}\n") &&
            sw_run(&w, "kernel s() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n"
                       "    <i32*> $2 = global_ptr z [$1]\n    <i32> $3 = global_load $2\n    <i32> $4 = const 1000\n"
                       "    <i32> $5 = mul $1 $4\n    <i32> $6 = add $3 $5\n    $7 = global_store $2 $6\n"
                       "    <i32*> $8 = global_ptr zs []\n    <i32> $9 = atomic_add $8 $6\n  }\n}\n", L1);
  CHECK(ok);
  int64_t sum = 0;
  for (int i = 0; i < 64; i++) {
    int64_t want = i % 7 == 0 ? i + 1 + 1000 * i : 0;
    sum += want;
    CHECKF(sw_get_i32(&w, "z", i, 0) == want, "z[%d] = %lld, want %lld", i, (long long)sw_get_i32(&w, "z", i, 0), (long long)want);
  }
  CHECK(sw_get_i32(&w, "zs", 0, 0) == sum);
  sw_free(&w);
}

/* The same code generator emits PTX for sparse kernels: every task is an
** entry, and ptxas (LT_PTXAS, when the toolkit is there) assembles it. */
static void ptxas_check(const char *ptx) {
  const char *tool = getenv("LT_PTXAS");
  if (!tool || !*tool || access(tool, X_OK) != 0) return;
  char src[128], cmd[512];
  snprintf(src, sizeof src, "/tmp/lt_test_jit_sparse_%d.ptx", (int)getpid());
  FILE *f = fopen(src, "w");
  if (!f) return;
  fputs(ptx, f);
  fclose(f);
  /* sm_75: the oldest target recent ptxas versions know */
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_75 -c '%s' -o /dev/null", tool, src);
  CHECKF(system(cmd) == 0, "ptxas rejected the sparse kernel's PTX (%s kept)", src);
  remove(src);
}

static void test_ptx(void) {
  ir_program *p = ir_program_new();
  char err[1024];
  ir_kernel *k = ir_parse("field x <f32> pointer [i:8] dense [i:4]\n"
                          "kernel sf() {\n  $0 = struct_for S2dense {\n    <i32> $1 = loop_index $0 0\n"
                          "    <f32*> $2 = global_ptr x [$1]\n    <f32> $3 = global_load $2\n"
                          "    <i32> $4 = const 1\n    <i32> $5 = add $1 $4\n    <f32*> $6 = global_ptr x [$5]\n"
                          "    $7 = global_store $6 $3\n    $8 = snode_deactivate S1pointer [$1]\n  }\n}\n",
                          p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k && ir_compile(k, true, NULL, NULL)) {
    char *ptx = jit_emit_ptx(k, "sm_70", err, sizeof err);
    CHECKF(ptx != NULL, "%s", err);
    CHECK_CONTAINS(ptx, ".entry sf_task");
    for (int t = 0; t < 6; t++) {   /* clear+listgen twice, struct_for, gc */
      char entry[32];
      snprintf(entry, sizeof entry, ".entry sf_task%d", t);
      CHECK_CONTAINS(ptx, entry);
    }
    if (ptx) ptxas_check(ptx);
    free(ptx);
  }
  if (k) ir_kernel_free(k);
  ir_program_free(p);
}

int main(void) {
  test_pointer_leaf();
  test_ptx();
  test_pointer_dense();
  test_bitmasked_2d();
  test_pointer_2d("field g <i32> pointer [i:4, j:4] dense [i:8, j:8]\n");
  test_pointer_2d("field g <i32> pointer [j:4, i:4] dense [j:8, i:8]\n");
  return check_finish("test_jit_sparse");
}
