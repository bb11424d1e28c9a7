/*
** test_module_fast_math.c -- a kernel's float mode in AOT modules
** (docs/aot.md, the KERNEL section's maths flags): a script saves one kernel
** (y = x / d + sqrt(x)) with lt.init{fast_math = true}, with fma and with the
** default; the reader gives back each mode (prog_module_read), a runtime loads
** each module and its kernel computes y within a tolerance of C (the default
** exactly); flags an older Lattice wrote (0 and 1) still load, and flags that
** are no mode (2, 4, 7, 0x80000003) are refused naming them, never loaded.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lattice_lua.h"
#include "program/module.h"

enum { N = 256 };
enum { EXACT, FMA, FAST, NMODES };
static const char *const mode_name[NMODES] = {"default", "fma", "fast_math"};
static const char *const init[NMODES] = {"{}", "{fma = true}", "{fast_math = true}"};
static char dir[] = "/tmp/lattice_test_module_fm_XXXXXX";
static char path[NMODES][128];

static const char script[] =
  "local lt = require 'lattice'\n"
  "lt.init(INIT)\n"
  "local T = lt.tree { fields = { x = lt.f32, y = lt.f32 }, lt.dense(lt.i, 256) { 'x', 'y' } }\n"
  "local k = lt.kernel(function(g, d)\n"
  "  for i in lt.ndrange(256) do g.y[i] = g.x[i] / d + lt.sqrt(g.x[i]) end\n"
  "end, { g = T })\n"
  "local m = lt.aot.module {}\n"
  "m:add_tree_type('t', T)\n"
  "m:add_kernel('k', k, { d = lt.f32 })\n"
  "m:save(PATH)\n";

static lt_runtime make_rt(void) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 1;
  cfg.device_memory = 16 << 20;
  if (lt_runtime_create(&cfg, &rt) != LT_OK) {
    fprintf(stderr, "lt_runtime_create: %s\n", lt_last_error(rt));
    exit(1);
  }
  return rt;
}

static void save(int mode) {
  lt_runtime rt = make_rt();
  char set[600];
  snprintf(set, sizeof set, "INIT = %s; PATH = '%s'", init[mode], path[mode]);
  if (lt_run_string(rt, set, "=set") != LT_OK || lt_run_string(rt, script, "=save_script") != LT_OK) {
    fprintf(stderr, "saving the %s module failed: %s\n", mode_name[mode], lt_last_error(rt));
    exit(1);
  }
  lt_runtime_destroy(rt);
}

static unsigned char *read_all(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) exit(1);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len);
  if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) exit(1);
  fclose(f);
  *n = (size_t)len;
  return b;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
/* the trailer's checksum made right (FNV-1a of every byte before it) */
static void fix_up(unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; i++) p[n - 8 + i] = (unsigned char)(h >> (8 * i));
}

/* Where the one kernel's maths flags are: the KERNEL section's payload is
** its name, file and IR (u32 length + bytes each), then the flags. */
static size_t flags_at(const unsigned char *p, size_t n) {
  size_t at = 32;
  for (uint32_t s = 0, ns = get_u32(p + 12); s < ns && at + 16 <= n; s++) {
    uint64_t len = get_u64(p + at + 8);
    if (get_u32(p + at) == MOD_SEC_KERNEL) {
      size_t q = at + 16;
      for (int str = 0; str < 3; str++) q += 4 + get_u32(p + q);
      return q;
    }
    at += 16 + (size_t)len;
  }
  return 0;
}

/* The modes the reader finds in the module of n bytes at p; false when it refuses it. */
static bool read_mode(const unsigned char *p, size_t n, bool *fma, bool *fast, char *err, size_t errlen) {
  prog_module *m = prog_module_read(p, n, "fm.ltm", err, errlen);
  if (!m) return false;
  bool ok = m->nkernels == 1;
  if (ok) {
    *fma = m->kernels[0].fma;
    *fast = m->kernels[0].fast_math;
  }
  prog_module_free_data(m);
  return ok;
}

/* Loads the module, runs k on x and checks y against C. */
static void run(const unsigned char *p, size_t n, int mode) {
  lt_runtime rt = make_rt();
  lt_module m;
  lt_status st = lt_module_load_memory(rt, p, n, mode_name[mode], &m);
  CHECKF(st == LT_OK, "%s: %s", mode_name[mode], lt_last_error(rt));
  if (st == LT_OK) {
    lt_tree t;
    lt_field x, y;
    lt_kernel k;
    CHECK(lt_tree_create(rt, m, "t", &t) == LT_OK && lt_tree_field(rt, t, "x", &x) == LT_OK &&
          lt_tree_field(rt, t, "y", &y) == LT_OK && lt_module_kernel(rt, m, "k", &k) == LT_OK);
    float xs[N], ys[N];
    for (int i = 0; i < N; i++) xs[i] = (float)((i * 37) % 251) * 0.0137f + 0.01f;
    int64_t begin = 0, extent = N;
    CHECK(lt_field_write_box(rt, x, &begin, &extent, 1, LT_F32, xs, sizeof xs) == LT_OK);
    const float d = 1.7f;
    lt_value args[2] = {lt_tree_value(t), lt_float(d)};
    CHECKF(lt_kernel_launch(rt, k, args, 2, NULL) == LT_OK, "%s", lt_last_error(rt));
    CHECK(lt_field_read_box(rt, y, &begin, &extent, 1, LT_F32, ys, sizeof ys) == LT_OK);
    int bad = 0;
    for (int i = 0; i < N; i++) {
      volatile float q = xs[i] / d, r = sqrtf(xs[i]);
      float want = q + r, tol = mode == EXACT ? 0 : 3e-7f * fabsf(want);
      if (fabsf(ys[i] - want) > tol && bad++ < 3)
        fprintf(stderr, "  %s: y[%d] = %.9g, want %.9g\n", mode_name[mode], i, ys[i], want);
    }
    CHECKF(bad == 0, "%s: %d elements off", mode_name[mode], bad);
    lt_module_free(rt, m);
  }
  lt_runtime_destroy(rt);
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  for (int mode = 0; mode < NMODES; mode++) {
    snprintf(path[mode], sizeof path[mode], "%s/%s.ltm", dir, mode_name[mode]);
    save(mode);
  }
  char err[1024];
  for (int mode = 0; mode < NMODES; mode++) {
    size_t n;
    unsigned char *p = read_all(path[mode], &n);
    size_t at = flags_at(p, n);
    CHECKF(at > 0 && at + 4 < n, "%s: no KERNEL section", mode_name[mode]);
    if (!at) continue;
    CHECKF(get_u32(p + at) == (uint32_t)(mode == EXACT ? 0 : mode == FMA ? 1 : 3), "%s: flags %u", mode_name[mode],
           get_u32(p + at));
    /* the round trip keeps the mode, and the kernel runs in it */
    bool fma = false, fast = false;
    CHECKF(read_mode(p, n, &fma, &fast, err, sizeof err), "%s: %s", mode_name[mode], err);
    CHECKF(fma == (mode != EXACT) && fast == (mode == FAST), "%s: read back fma %d fast_math %d", mode_name[mode],
           fma, fast);
    run(p, n, mode);

    /* what older Lattices wrote (0, 1) reads as exact and fma */
    for (uint32_t old = 0; old < 2; old++) {
      put_u32(p + at, old);
      fix_up(p, n);
      CHECKF(read_mode(p, n, &fma, &fast, err, sizeof err) && fma == (old == 1) && !fast, "flags %u: %s", old, err);
    }
    /* flags that are no mode: refused by the reader and by lt_module_load, naming them */
    const uint32_t bad[] = {2, 4, 7, 0x80000003u};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      put_u32(p + at, bad[b]);
      fix_up(p, n);
      err[0] = 0;
      CHECKF(!read_mode(p, n, &fma, &fast, err, sizeof err), "flags 0x%x were read", bad[b]);
      char want[64];
      snprintf(want, sizeof want, "maths flags 0x%x", bad[b]);
      CHECK_CONTAINS(err, want);
      CHECK_CONTAINS(err, "(KERNEL) 'k': ");
      lt_runtime rt = make_rt();
      lt_module m = {77};
      CHECK(lt_module_load_memory(rt, p, n, "bad.ltm", &m) == LT_ERROR_MODULE && m.id == 0);
      CHECK_CONTAINS(lt_last_error(rt), want);
      lt_runtime_destroy(rt);
    }
    free(p);
    remove(path[mode]);
  }
  rmdir(dir);
  return check_finish("test_module_fast_math");
}
