/*
** test_fast_math.c -- the kernel's float mode (ir_kernel.fma, .fast_math;
** docs/arithmetic.md) from the IR to the machine: one kernel (a serial
** reduction sum(x[i] * x[i] / d) and a range_for writing x[i] / d, sqrt(x[i])
** and whether x[i] / d is NaN) compiled in the three modes. The LLVM IR has
** no fast-math flag by default, `contract` alone with fma, and
** reassoc/nsz/arcp/contract/afn (and a vectorised reduction) in fast math;
** every mode's results agree with C within a tolerance (the default exactly)
** and NaN and the infinities survive fast math; the PTX divides and takes
** square roots with div.rn/sqrt.rn by default and div.approx/sqrt.approx in
** fast math, and ptxas (LT_PTXAS) assembles both; the cache keys of the
** modes differ, and a kernel compiled in two modes is two cache entries.
*/
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "jit/cpu/cpu.h"
#include "jit_helpers.h"

enum { N = 4096 };
enum { EXACT, FMA, FAST, NMODES };
static const char *const mode_name[NMODES] = {"default", "fma", "fast_math"};

static char err[1024];

typedef struct {
  ir_program *p;
  ir_snode *x, *sum, *q, *r, *nan;
} world;

static void world_init(world *w) {
  w->p = ir_program_new();
  w->x = h_field1(w->p, IR_f32, N, "x");
  w->sum = h_field1(w->p, IR_f32, 1, "sum");
  w->q = h_field1(w->p, IR_f32, N, "q");
  w->r = h_field1(w->p, IR_f32, N, "r");
  w->nan = h_field1(w->p, IR_i32, N, "nan");
}

/* kernel(d: f32):
**   task_serial     { s = 0; for i in 0..N: s = s + x[i] * x[i] / d; sum[0] = s }
**   task_range_for  i in 0..N: q[i] = x[i] / d; r[i] = sqrt(x[i]) * 0.5 / 3.0;
**                              nan[i] = q[i] ~= q[i] */
static ir_kernel *make(world *w, int mode) {
  ir_kernel *k = ir_kernel_new("fm", w->p);
  k->nargs = 1;
  k->arg_types[0] = IR_f32;
  k->fma = mode != EXACT;
  k->fast_math = mode == FAST;
  ir_builder b;
  ir_builder_init(&b, k);
  h_task(&b, IR_task_serial, 0, 1);
  ir_block *top = b.block;
  ir_stmt *s = ir_b_alloca(&b, IR_f32);
  ir_b_local_store(&b, s, ir_b_const_float(&b, IR_f32, 0));
  ir_stmt *loop = ir_b_range_for(&b, ir_b_const_int(&b, IR_i32, 0), ir_b_const_int(&b, IR_i32, N));
  b.block = loop->blocks[0];
  ir_stmt *i = ir_b_loop_index(&b, loop);
  ir_stmt *xi = ir_b_global_load(&b, h_ptr(&b, w->x, i));
  ir_stmt *t = ir_b_binary(&b, IR_div, ir_b_binary(&b, IR_mul, xi, xi), ir_b_arg(&b, 0));
  ir_b_local_store(&b, s, ir_b_binary(&b, IR_add, ir_b_local_load(&b, s), t));
  b.block = top;
  ir_b_global_store(&b, h_ptr(&b, w->sum, ir_b_const_int(&b, IR_i32, 0)), ir_b_local_load(&b, s));

  ir_stmt *task = h_task(&b, IR_task_range_for, 0, N);
  i = ir_b_loop_index(&b, task);
  xi = ir_b_global_load(&b, h_ptr(&b, w->x, i));
  ir_stmt *q = ir_b_binary(&b, IR_div, xi, ir_b_arg(&b, 0));
  ir_b_global_store(&b, h_ptr(&b, w->q, i), q);
  ir_stmt *r = ir_b_binary(&b, IR_div, ir_b_binary(&b, IR_mul, ir_b_unary(&b, IR_sqrt, xi), ir_b_const_float(&b, IR_f32, 0.5)),
                           ir_b_const_float(&b, IR_f32, 3.0));
  ir_b_global_store(&b, h_ptr(&b, w->r, i), r);
  ir_stmt *isnan = ir_b_binary(&b, IR_cmp_ne, q, q);
  ir_b_global_store(&b, h_ptr(&b, w->nan, i),
                    ir_b_select(&b, isnan, ir_b_const_int(&b, IR_i32, 1), ir_b_const_int(&b, IR_i32, 0)));
  return k;
}

static float xval(int i) {
  if (i == 7) return NAN;
  if (i == 8) return INFINITY;
  return (float)((i * 37) % 1000) * 0.013f + 0.25f;
}

/* ---- LLVM IR: the flags reach it only when asked for ---------------------------- */

static void test_llvm_ir(jit_backend *be) {
  world w;
  world_init(&w);
  for (int mode = 0; mode < NMODES; mode++) {
    ir_kernel *k = make(&w, mode);
    char *ir = jit_cpu_llvm_ir(be, k, err, sizeof err);
    CHECKF(ir != NULL, "%s: %s", mode_name[mode], err);
    if (ir) {
      bool contract = strstr(ir, " contract ") != NULL, reassoc = strstr(ir, " reassoc ") != NULL;
      bool fast = strstr(ir, "fmul reassoc nsz arcp contract afn") != NULL;
      CHECKF(contract == (mode != EXACT), "%s: contract %d", mode_name[mode], contract);
      CHECKF(reassoc == (mode == FAST) && fast == (mode == FAST), "%s: reassoc %d, all five %d", mode_name[mode],
             reassoc, fast);
      CHECKF(!strstr(ir, " nnan ") && !strstr(ir, " ninf ") && !strstr(ir, " fast "), "%s: nnan/ninf/fast",
             mode_name[mode]);
      /* the serial sum vectorises only when it may be regrouped */
      bool reduce = strstr(ir, "llvm.vector.reduce.fadd") != NULL;
      CHECKF(reduce == (mode == FAST), "%s: vectorised reduction %d", mode_name[mode], reduce);
    }
    free(ir);
    ir_kernel_free(k);
  }
  ir_program_free(w.p);
}

/* ---- results: within a tolerance of C; NaN and infinities survive ------------------ */

static void test_results(jit_backend *be) {
  world w;
  world_init(&w);
  const float d = 1.7f;
  /* the reference: in order, each operation rounded (the default mode exactly) */
  float ref = 0;
  double dref = 0;
  for (int i = 0; i < N; i++) {
    float x = i == 7 || i == 8 ? 1.0f : xval(i);   /* finite in the first launch */
    volatile float sq = x * x;
    volatile float t = sq / d;
    ref = ref + t;
    dref += (double)x * x / d;
  }
  float sums[NMODES];
  for (int mode = 0; mode < NMODES; mode++) {
    ir_kernel *k = make(&w, mode);
    jit_kernel *jk = be->compile(be, k, err, sizeof err);
    CHECKF(jk != NULL, "%s: %s", mode_name[mode], err);
    if (!jk) {
      ir_kernel_free(k);
      continue;
    }
    h_ctx h;
    h_ctx_init(&h, w.p);
    for (int i = 0; i < N; i++) *(float *)h_elem(&h, w.x, i) = i == 7 || i == 8 ? 1.0f : xval(i);
    memcpy(&h.args[0], &d, sizeof d);
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    sums[mode] = *(float *)h_elem(&h, w.sum, 0);
    /* NaN and infinity in: NaN out of x / d, of the NaN check and of the sum */
    for (int i = 0; i < N; i++) *(float *)h_elem(&h, w.x, i) = xval(i);
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    float *q7 = h_elem(&h, w.q, 7), *q8 = h_elem(&h, w.q, 8), *r8 = h_elem(&h, w.r, 8);
    CHECKF(isnan(*q7) && *(int32_t *)h_elem(&h, w.nan, 7) == 1, "%s: NaN / d = %g, flagged %d", mode_name[mode],
           *q7, *(int32_t *)h_elem(&h, w.nan, 7));
    CHECKF(isinf(*q8) && *q8 > 0 && isinf(*r8) && *(int32_t *)h_elem(&h, w.nan, 8) == 0, "%s: inf / d = %g, %g",
           mode_name[mode], *q8, *r8);
    CHECKF(isnan(*(float *)h_elem(&h, w.sum, 0)), "%s: a sum with NaN and inf in it is %g", mode_name[mode],
           *(float *)h_elem(&h, w.sum, 0));
    int bad = 0;
    for (int i = 0; i < N; i++) {
      if (i == 7 || i == 8) continue;
      float want_q = xval(i) / d, want_r = sqrtf(xval(i)) * 0.5f / 3.0f;
      float got_q = *(float *)h_elem(&h, w.q, i), got_r = *(float *)h_elem(&h, w.r, i);
      float tol = mode == EXACT ? 0 : 4e-7f;
      if (fabsf(got_q - want_q) > tol * fabsf(want_q) || fabsf(got_r - want_r) > tol * fabsf(want_r) ||
          *(int32_t *)h_elem(&h, w.nan, i) != 0)
        if (bad++ < 3)
          fprintf(stderr, "  %s: x[%d] = %g: q %.9g (want %.9g), r %.9g (want %.9g)\n", mode_name[mode], i, xval(i),
                  got_q, want_q, got_r, want_r);
    }
    CHECKF(bad == 0, "%s: %d elements off", mode_name[mode], bad);
    h_ctx_free(&h, w.p);
    be->release(be, jk);
    ir_kernel_free(k);
  }
  CHECKF(sums[EXACT] == ref, "default: %.9g, C in order %.9g", sums[EXACT], ref);
  for (int mode = FMA; mode < NMODES; mode++)
    CHECKF(fabs(sums[mode] - dref) <= 1e-5 * fabs(dref), "%s: %.9g, exact %.12g (default %.9g)", mode_name[mode],
           sums[mode], dref, sums[EXACT]);
  printf("test_fast_math: sums default %.9g fma %.9g fast_math %.9g exact %.12g\n", sums[EXACT], sums[FMA], sums[FAST],
         dref);
  ir_program_free(w.p);
}

/* ---- PTX: approximate division and square root in fast math only ----------------- */

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p++) n++;
  return n;
}

static void test_ptx(void) {
  world w;
  world_init(&w);
  const char *ptxas = getenv("LT_PTXAS");
  for (int mode = 0; mode < NMODES; mode++) {
    ir_kernel *k = make(&w, mode);
    char *ptx = jit_emit_ptx(k, "sm_70", err, sizeof err);
    CHECKF(ptx != NULL, "%s: %s", mode_name[mode], err);
    if (ptx) {
      int rn = count(ptx, "div.rn.f32"), approx = count(ptx, "div.approx.f32");
      int srn = count(ptx, "sqrt.rn.f32"), sapprox = count(ptx, "sqrt.approx.f32");
      if (mode == FAST) {
        CHECKF(rn == 0 && approx >= 1 && srn == 0 && sapprox == 1, "fast_math: div.rn %d div.approx %d sqrt.rn %d "
               "sqrt.approx %d", rn, approx, srn, sapprox);
      } else {
        /* x / d, x * x / d and * 0.5 / 3.0 (a constant divisor stays a division when exact) */
        CHECKF(rn >= 2 && approx == 0 && srn == 1 && sapprox == 0, "%s: div.rn %d div.approx %d sqrt.rn %d "
               "sqrt.approx %d", mode_name[mode], rn, approx, srn, sapprox);
      }
      if (ptxas && *ptxas && access(ptxas, X_OK) == 0)
        CHECKF(jit_ptxas_text(ptx, "sm_70", mode_name[mode], ptxas, NULL, err, sizeof err), "%s", err);
    }
    free(ptx);
    ir_kernel_free(k);
  }
  ir_program_free(w.p);
}

/* ---- the cache: the modes are three keys and two compilations two entries --------- */

static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) n += strstr(e->d_name, ".ltk") != NULL;
  if (d) closedir(d);
  return n;
}

static void test_cache(void) {
  world w;
  world_init(&w);
  char *keys[NMODES];
  size_t lens[NMODES];
  for (int mode = 0; mode < NMODES; mode++) {
    ir_kernel *k = make(&w, mode);
    ir_kernel *copy = ir_kernel_clone(k);   /* as adjoints are made: the mode goes along */
    keys[mode] = jit_kernel_key(k, "backend", &lens[mode]);
    size_t clen = 0;
    char *ckey = jit_kernel_key(copy, "backend", &clen);
    CHECK(keys[mode] && ckey && clen == lens[mode] && memcmp(ckey, keys[mode], clen) == 0);
    free(ckey);
    ir_kernel_free(k);
    ir_kernel_free(copy);
  }
  CHECK_CONTAINS(keys[EXACT], "debug 0 fma 0 fast_math 0\n");
  CHECK_CONTAINS(keys[FMA], "debug 0 fma 1 fast_math 0\n");
  CHECK_CONTAINS(keys[FAST], "debug 0 fma 1 fast_math 1\n");
  for (int a = 0; a < NMODES; a++) {
    for (int b = a + 1; b < NMODES; b++)
      CHECKF(lens[a] != lens[b] || memcmp(keys[a], keys[b], lens[a]) != 0, "%s and %s have one key", mode_name[a],
             mode_name[b]);
  }
  for (int mode = 0; mode < NMODES; mode++) free(keys[mode]);

  char dir[] = "/tmp/lattice_test_fast_math_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  jit_options o = {.cache_dir = dir};
  jit_backend *be = jit_cpu_create(2, &o, err, sizeof err);
  CHECKF(be != NULL, "%s", err);
  if (be) {
    const int order[3] = {EXACT, FAST, FAST};
    for (int n = 0; n < 3; n++) {
      ir_kernel *k = make(&w, order[n]);
      jit_kernel *jk = be->compile(be, k, err, sizeof err);
      CHECKF(jk != NULL, "%s", err);
      if (jk) {
        CHECKF(jk->cached == (n == 2), "compilation %d: cached %d", n, jk->cached);
        be->release(be, jk);
      }
      CHECKF(entries(dir) == (n == 0 ? 1 : 2), "after compilation %d: %d entries", n, entries(dir));
      ir_kernel_free(k);
    }
    be->destroy(be);
  }
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    remove(path);
  }
  if (d) closedir(d);
  rmdir(dir);
  ir_program_free(w.p);
}

int main(void) {
  jit_backend *be = jit_cpu_create(2, NULL, err, sizeof err);
  if (!be) {
    fprintf(stderr, "test_fast_math: %s\n", err);
    return 1;
  }
  test_llvm_ir(be);
  test_results(be);
  be->destroy(be);
  test_ptx();
  test_cache();
  return check_finish("test_fast_math");
}
