/*
** test_field_box.c -- lt_field_read_box / lt_field_write_box against element
** reads and a plain C model: a box inside an AoS field pair under two dense
** levels (the span-copy path: directly in host memory on the CPU, one copy
** each way on a device), a small box (element by element on a device), and
** a sparse field; on the CPU and, with LT_MOCK_CUDA_DRIVER, on the mock GPU
** (whose kernels do not run: the fields are filled from C).
*/
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"
#include "lattice_lua.h"

#define NI 20
#define NJ 10

static double model_a(int i, int j) { return i * 100 + j; }

static void fill(lt_runtime rt, lt_field a, lt_field b) {
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      int64_t idx[2] = {i, j};
      double v = model_a(i, j);
      int32_t w = -i;
      CHECK(lt_field_write(rt, a, idx, 2, LT_F64, &v) == LT_OK);
      CHECK(lt_field_write(rt, b, idx, 2, LT_I32, &w) == LT_OK);
    }
}

/* Reads and writes the box [bi, bi + ei) x [bj, bj + ej) and checks every
** element of both fields against the model afterwards. */
static void box(lt_runtime rt, lt_field a, lt_field b, int bi, int bj, int ei, int ej, const char *what) {
  int64_t beg[2] = {bi, bj}, ext[2] = {ei, ej};
  size_t n = (size_t)(ei * ej);
  double *buf = malloc(n * sizeof *buf);
  CHECKF(lt_field_read_box(rt, a, beg, ext, 2, LT_F64, buf, n * sizeof *buf) == LT_OK, "%s: %s", what,
         lt_last_error(rt));
  int bad = 0;
  for (int i = 0; i < ei; i++)
    for (int j = 0; j < ej; j++) bad += buf[i * ej + j] != model_a(bi + i, bj + j);
  CHECKF(bad == 0, "%s: %d elements read wrong", what, bad);
  for (size_t k = 0; k < n; k++) buf[k] = -(double)k - 0.5;
  CHECKF(lt_field_write_box(rt, a, beg, ext, 2, LT_F64, buf, n * sizeof *buf) == LT_OK, "%s: %s", what,
         lt_last_error(rt));
  bad = 0;
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      int64_t idx[2] = {i, j};
      double v = 0;
      int32_t w = 0;
      CHECK(lt_field_read(rt, a, idx, 2, LT_F64, &v) == LT_OK);
      CHECK(lt_field_read(rt, b, idx, 2, LT_I32, &w) == LT_OK);
      bool in = i >= bi && i < bi + ei && j >= bj && j < bj + ej;
      double want = in ? -(double)((i - bi) * ej + (j - bj)) - 0.5 : model_a(i, j);
      bad += v != want || w != -i;   /* b shares a's cells: a write of a's box keeps it */
    }
  CHECKF(bad == 0, "%s: %d elements wrong after the write", what, bad);
  free(buf);
  fill(rt, a, b);
}

static void run(lt_arch arch) {
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.arch = arch;
  cfg.device_memory = 256 << 20;
  lt_runtime rt;
  if (lt_runtime_create(&cfg, &rt) != LT_OK) {
    CHECKF(0, "runtime: %s", lt_last_error(rt));
    return;
  }
  lt_status st = lt_run_string(rt,
    "local lt = require 'lattice'\n"
    "local a, b, s = lt.field(lt.f64), lt.field(lt.i32), lt.field(lt.f32)\n"
    "lt.root:dense(lt.ij, {4, 2}):dense(lt.ij, {5, 5}):place(a, b)\n"
    "lt.root:pointer(lt.ij, {2, 2}):dense(lt.ij, {4, 4}):place(s)\n"
    "lt.export('a', a); lt.export('b', b); lt.export('s', s)\n", "=test_field_box");
  CHECKF(st == LT_OK, "script: %s", lt_last_error(rt));
  lt_field a, b, s;
  CHECK(lt_field_find(rt, "a", &a) == LT_OK && lt_field_find(rt, "b", &b) == LT_OK &&
        lt_field_find(rt, "s", &s) == LT_OK);
  fill(rt, a, b);
  box(rt, a, b, 2, 3, 15, 6, "a 15x6 box");
  box(rt, a, b, 0, 0, NI, NJ, "the whole field");
  box(rt, a, b, 7, 1, 2, 3, "a 2x3 box");
  box(rt, a, b, 19, 9, 1, 1, "the last element");
  /* sparse: an inactive block reads as zeros; a box write activates its cells */
  int64_t beg[2] = {2, 2}, ext[2] = {4, 4};
  float vals[16], back[16];
  CHECK(lt_field_read_box(rt, s, beg, ext, 2, LT_F32, back, sizeof back) == LT_OK);
  int nonzero = 0;
  for (int k = 0; k < 16; k++) nonzero += back[k] != 0;
  CHECK(nonzero == 0);
  for (int k = 0; k < 16; k++) vals[k] = (float)k + 0.25f;
  CHECK(lt_field_write_box(rt, s, beg, ext, 2, LT_F32, vals, sizeof vals) == LT_OK);
  CHECK(lt_field_read_box(rt, s, beg, ext, 2, LT_F32, back, sizeof back) == LT_OK);
  CHECK(memcmp(vals, back, sizeof vals) == 0);
  int64_t outside[2] = {6, 6};
  float v = -1;
  CHECK(lt_field_read(rt, s, outside, 2, LT_F32, &v) == LT_OK && v == 0);
  lt_runtime_destroy(rt);
}

int main(void) {
  run(LT_ARCH_CPU);
  const char *mock = getenv("LT_MOCK_CUDA_DRIVER");
  if (mock && *mock) {
    setenv("LT_CUDA_DRIVER", mock, 1);
    run(LT_ARCH_CUDA);
  } else {
    printf("test_field_box: the CUDA run is skipped (LT_MOCK_CUDA_DRIVER is not set)\n");
  }
  return check_finish("test_field_box");
}
