/*
** test_embed.c -- the C API with Lua running in the runtime (lattice_lua.h):
** lt_run_string / lt_run_file and their errors (LT_ERROR_SCRIPT naming the
** chunk and line), kernels and fields a script exported with lt.export,
** launched and accessed from C and checked against the same arithmetic in C,
** every misuse of a launch or a field access, lt.init in the script
** invalidating the old handles, ndarrays pushed into Lua, and a second
** thread refused (LT_ERROR_BUSY) while the first is inside a script that
** waits for the test. test_capi.c has the cases without Lua.
*/
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "check.h"
#include "lattice_lua.h"

#define CHECK_ST(call, want)                                                             \
  do {                                                                                   \
    lt_status st_ = (call);                                                              \
    CHECKF(st_ == (want), "%s gave %s, expected %s (%s)", #call, lt_status_name(st_), lt_status_name(want), \
           lt_last_error(rt));                                                           \
  } while (0)

static lt_runtime make_rt(int debug) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 2;
  cfg.device_memory = 64 << 20;
  cfg.debug = debug;
  if (lt_runtime_create(&cfg, &rt) != LT_OK) {
    fprintf(stderr, "lt_runtime_create: %s\n", lt_last_error(rt));
    exit(1);
  }
  return rt;
}

/* The script every case starts from (line numbers matter: the errors name them). */
static const char script[] =
  "local lt = require 'lattice'\n"                                            /* 1 */
  "lt.init { threads = 2 }\n"                                                 /* 2 */
  "grid = lt.field(lt.f32, {4, 6})\n"                                         /* 3 */
  "local total = lt.field(lt.i64, {})\n"                                      /* 4 */
  "local sp = lt.field(lt.f64)\n"                                             /* 5 */
  "lt.root:pointer(lt.i, 4):dense(lt.i, 8):place(sp)\n"                       /* 6 */
  "local mix = lt.kernel(function(n, s, x, y)\n"                              /* 7 */
  "  local acc = lt.f64(0)\n"                                                 /* 8 */
  "  for i in lt.ndrange(x.shape[1]) do\n"                                    /* 9 */
  "    x[i] = x[i] * s + n\n"                                                 /* 10 */
  "    acc = acc + lt.f64(x[i])\n"                                            /* 11 */
  "  end\n"                                                                   /* 12 */
  "  for i, j in lt.ndrange(y.shape[1], y.shape[2]) do\n"                     /* 13 */
  "    y[i][j] = y[i][j] + i * 10 + j + n\n"                                  /* 14 */
  "  end\n"                                                                   /* 15 */
  "  return acc\n"                                                            /* 16 */
  "end, { n = lt.i32, s = lt.f64, x = lt.ndarray_type(lt.f32, 1), y = lt.ndarray_type(lt.i64, 2) })\n"
  "local ident = lt.kernel(function(n) return n end, { n = lt.i32 })\n"       /* 18 */
  "local half = lt.kernel(function(v) return v / 2 end, { v = lt.f32 })\n"    /* 19 */
  "local sum_grid = lt.kernel(function(k)\n"                                  /* 20 */
  "  for i, j in grid do lt.atomic_add(total.value, lt.i64(grid[i][j]) * k) end\n"
  "end, { k = lt.i64 })\n"                                                    /* 22 */
  "local poke = lt.kernel(function(i) grid[i][0] = 1 end, { i = lt.i32 })\n"  /* 23 */
  "local broken = lt.kernel(function() for i in lt.ndrange(4) do grid[i][0] = no_such.value end end)\n"
  "lt.export('mix', mix)\n"
  "lt.export('ident', ident)\n"
  "lt.export('half', half)\n"
  "lt.export('sum_grid', sum_grid)\n"
  "lt.export('poke', poke)\n"
  "lt.export('broken', broken)\n"
  "lt.export('grid', grid)\n"
  "lt.export('total', total)\n"
  "lt.export('sp', sp)\n";

static lt_runtime load(int debug) {
  lt_runtime rt = make_rt(debug);
  CHECK_ST(lt_run_string(rt, script, "=embed_test"), LT_OK);
  return rt;
}

/* ---- running code ------------------------------------------------------------------ */

static void test_run_errors(void) {
  lt_runtime rt = make_rt(0);
  CHECK_ST(lt_run_string(rt, "local x = = 1\n", "=embed_syntax"), LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "lt_run_string: ");
  CHECK_CONTAINS(lt_last_error(rt), "embed_syntax:1:");
  CHECK_ST(lt_run_string(rt, "local a = 1\nlocal b = a + 1\nerror('boom at three')\n", "=embed_runtime"),
           LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "embed_runtime:3: boom at three");
  CHECK_CONTAINS(lt_last_error(rt), "stack traceback");
  CHECK_ST(lt_run_string(rt, "local t = nil\nreturn t.x\n", NULL), LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "(host):2:");   /* NULL: the chunk is "=(host)" */
  CHECK_ST(lt_run_string(rt, "error({})", "=embed_table"), LT_ERROR_SCRIPT);   /* not a string */
  CHECK(strlen(lt_last_error(rt)) > strlen("lt_run_string: "));
  CHECK_ST(lt_run_string(rt, NULL, "=x"), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "source is NULL");
  CHECK_ST(lt_run_file(rt, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_run_file(rt, "/nonexistent/dir/script.lua"), LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "lt_run_file: ");
  CHECK_CONTAINS(lt_last_error(rt), "/nonexistent/dir/script.lua");
  /* the state survives its errors */
  CHECK_ST(lt_run_string(rt, "counter = (counter or 0) + 1", "=ok"), LT_OK);
  CHECK_STREQ(lt_last_error(rt), "");
  /* lt.export misuse, and lt.init changing what the runtime was created with */
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\nlt.export(42, 1)\n", "=embed_export"), LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "embed_export:2:");
  CHECK_CONTAINS(lt_last_error(rt), "lt.export");
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\nlt.export('x', {})\n", "=embed_export"), LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "must be a kernel or a scalar field");
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\n\nlt.init { threads = 3 }\n", "=embed_init"),
           LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "embed_init:3:");
  CHECK_CONTAINS(lt_last_error(rt), "lt_runtime_create");
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\nlt.init { arch = 'cuda' }\n", "=embed_init"),
           LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "arch");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);

  lt_runtime stale = rt;
  CHECK(lt_run_string(stale, "x = 1", NULL) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_lua_state(stale) == NULL);
}

static void test_run_file(void) {
  lt_runtime rt = make_rt(0);
  char path[] = "/tmp/lattice_test_embed_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  const char *text =
    "local lt = require 'lattice'\n"
    "local sq = lt.kernel(function(n)\n"
    "  local s = 0\n"
    "  for i in lt.ndrange(n) do s = s + i * i end\n"
    "  return s\n"
    "end, { n = lt.i32 })\n"
    "lt.export('sq', sq)\n";
  CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  CHECK_ST(lt_run_file(rt, path), LT_OK);
  lt_kernel k;
  CHECK_ST(lt_kernel_find(rt, "sq", &k), LT_OK);
  lt_value args[1] = {lt_int(1000)}, r;
  CHECK_ST(lt_kernel_launch(rt, k, args, 1, &r), LT_OK);
  int64_t want = 0;
  for (int64_t i = 0; i < 1000; i++) want += i * i;
  CHECK(r.kind == LT_VALUE_INT && r.as.i == want);
  unlink(path);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* ---- kernels -------------------------------------------------------------------------- */

typedef struct {
  int calls;
} counter;

static void count_release(void *user, void *data) { ((counter *)user)->calls++; }

static void test_kernels(void) {
  lt_runtime rt = load(0);
  lt_kernel mix, ident, half, none;
  CHECK_ST(lt_kernel_find(rt, "mix", &mix), LT_OK);
  CHECK_ST(lt_kernel_find(rt, "ident", &ident), LT_OK);
  CHECK_ST(lt_kernel_find(rt, "half", &half), LT_OK);
  CHECK_ST(lt_kernel_find(rt, "grid", &none), LT_ERROR_TYPE);   /* a field */
  CHECK_CONTAINS(lt_last_error(rt), "'grid'");
  CHECK_ST(lt_kernel_find(rt, "nothing", &none), LT_ERROR_NOT_FOUND);

  /* ints, floats and ndarrays: x wraps the host's buffer (no copy on the CPU), y is the runtime's */
  enum { NX = 1000, R = 3, C = 5 };
  float *x = malloc(NX * sizeof(float)), *xc = malloc(NX * sizeof(float));
  for (int i = 0; i < NX; i++) x[i] = xc[i] = (float)(i % 37) * 0.25f;
  counter released = {0};
  lt_ndarray xa, ya;
  int64_t nx = NX, ys[2] = {R, C};
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 1, &nx, x, NX * sizeof(float), count_release, &released, &xa), LT_OK);
  CHECK_ST(lt_ndarray_create(rt, LT_I64, 2, ys, &ya), LT_OK);
  int64_t y0[R * C], y1[R * C];
  for (int i = 0; i < R * C; i++) y0[i] = 1000 * i - 7;
  CHECK_ST(lt_ndarray_write(rt, ya, y0, sizeof y0), LT_OK);
  lt_value args[4] = {lt_int(3), lt_float(1.5), lt_nd(xa), lt_nd(ya)}, r = {.kind = 99};
  for (int round = 0; round < 2; round++) {   /* compiled once, launched twice */
    CHECK_ST(lt_kernel_launch(rt, mix, args, 4, &r), LT_OK);
    double acc = 0;
    for (int i = 0; i < NX; i++) {
      xc[i] = (float)((double)xc[i] * 1.5 + 3);
      acc += (double)xc[i];
    }
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++) y0[i * C + j] += i * 10 + j + 3;
    CHECK(r.kind == LT_VALUE_FLOAT && r.as.f == acc);
    int bad = 0;
    for (int i = 0; i < NX; i++) bad += x[i] != xc[i];   /* the host's own buffer holds the results */
    CHECKF(bad == 0, "%d elements of x differ from C", bad);
    CHECK_ST(lt_ndarray_read(rt, ya, y1, sizeof y1), LT_OK);
    CHECK(memcmp(y0, y1, sizeof y0) == 0);
  }
  CHECK(released.calls == 0);

  /* conversions: integers wrap to the parameter's type, an integral float
  ** is an integer, an integer is a float; results come back by type */
  lt_value a1[1] = {lt_int(((int64_t)1 << 32) + 5)};
  CHECK_ST(lt_kernel_launch(rt, ident, a1, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_INT && r.as.i == 5);
  a1[0] = lt_int(-((int64_t)1 << 31) - 1);
  CHECK_ST(lt_kernel_launch(rt, ident, a1, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_INT && r.as.i == INT32_MAX);
  a1[0] = lt_float(-12.0);
  CHECK_ST(lt_kernel_launch(rt, ident, a1, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_INT && r.as.i == -12);
  a1[0] = lt_int(7);
  CHECK_ST(lt_kernel_launch(rt, half, a1, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_FLOAT && r.as.f == 3.5);
  a1[0] = lt_float(0.1);   /* rounded to f32 on the way in, as the kernel's Lua call does */
  CHECK_ST(lt_kernel_launch(rt, half, a1, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_FLOAT && r.as.f == (double)(0.1f / 2));
  CHECK_ST(lt_kernel_launch(rt, half, a1, 1, NULL), LT_OK);   /* result may be NULL */
  lt_kernel sum_grid;
  CHECK_ST(lt_kernel_find(rt, "sum_grid", &sum_grid), LT_OK);
  lt_value k1[1] = {lt_int(2)};
  r = lt_int(99);
  CHECK_ST(lt_kernel_launch(rt, sum_grid, k1, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_NONE);   /* returns nothing */

  /* misuse: counts, kinds, types, handles */
  CHECK_ST(lt_kernel_launch(rt, mix, args, 3, &r), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "lt_kernel_launch: ");
  CHECK_CONTAINS(lt_last_error(rt), "expects 4 arguments");
  CHECK_ST(lt_kernel_launch(rt, ident, NULL, 0, &r), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_kernel_launch(rt, ident, NULL, 1, &r), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "args is NULL");
  CHECK_ST(lt_kernel_launch(rt, ident, a1, -1, &r), LT_ERROR_INVALID_ARGUMENT);
  lt_value odd[1] = {{.kind = (lt_value_kind)99}};
  CHECK_ST(lt_kernel_launch(rt, ident, odd, 1, &r), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 1");
  a1[0] = lt_float(2.5);
  CHECK_ST(lt_kernel_launch(rt, ident, a1, 1, &r), LT_ERROR_TYPE);   /* fractional for an i32 */
  CHECK_CONTAINS(lt_last_error(rt), "'n'");
  lt_value wrong[4] = {lt_int(3), lt_float(1.5), lt_nd(ya), lt_nd(ya)};   /* i64 array for the f32 one */
  CHECK_ST(lt_kernel_launch(rt, mix, wrong, 4, &r), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "'x'");
  CHECK_CONTAINS(lt_last_error(rt), "f32");
  wrong[2] = lt_float(1);   /* a number for an ndarray */
  CHECK_ST(lt_kernel_launch(rt, mix, wrong, 4, &r), LT_ERROR_TYPE);
  wrong[2] = lt_nd(xa);
  wrong[0] = lt_nd(xa);   /* an ndarray for a number */
  CHECK_ST(lt_kernel_launch(rt, mix, wrong, 4, &r), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "'n'");
  lt_ndarray gone;
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 1, &nx, &gone), LT_OK);
  CHECK_ST(lt_ndarray_release(rt, gone), LT_OK);
  wrong[0] = lt_int(3);
  wrong[2] = lt_nd(gone);
  CHECK_ST(lt_kernel_launch(rt, mix, wrong, 4, &r), LT_ERROR_INVALID_HANDLE);
  lt_kernel zero = {0};
  CHECK_ST(lt_kernel_launch(rt, zero, args, 4, &r), LT_ERROR_INVALID_HANDLE);

  /* a kernel whose tracing fails: an error naming the script's line, and the runtime goes on */
  lt_kernel broken;
  CHECK_ST(lt_kernel_find(rt, "broken", &broken), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, broken, NULL, 0, &r), LT_ERROR_SCRIPT);
  CHECK_CONTAINS(lt_last_error(rt), "embed_test:24:");
  CHECK_ST(lt_kernel_launch(rt, ident, a1 + 0, 0, &r), LT_ERROR_INVALID_ARGUMENT);
  a1[0] = lt_int(4);
  CHECK_ST(lt_kernel_launch(rt, ident, a1, 1, &r), LT_OK);
  CHECK(r.as.i == 4);

  /* the launches keep no reference: the host's release is the last one, its callback runs now */
  CHECK_ST(lt_ndarray_release(rt, xa), LT_OK);
  CHECK(released.calls == 1);
  CHECK_ST(lt_run_string(rt, "collectgarbage() collectgarbage()", "=gc"), LT_OK);
  CHECK(released.calls == 1);
  CHECK_ST(lt_ndarray_release(rt, ya), LT_OK);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  CHECK(released.calls == 1);
  free(x);
  free(xc);
}

/* A kernel's failure at run time (debug mode's index check) is
** LT_ERROR_RUNTIME and the runtime stays usable. */
static void test_runtime_failure(void) {
  lt_runtime rt = load(1);
  lt_kernel poke;
  CHECK_ST(lt_kernel_find(rt, "poke", &poke), LT_OK);
  lt_value a[1] = {lt_int(9)};
  CHECK_ST(lt_kernel_launch(rt, poke, a, 1, NULL), LT_ERROR_RUNTIME);
  CHECK_CONTAINS(lt_last_error(rt), "index 9 out of range");
  CHECK_CONTAINS(lt_last_error(rt), "embed_test:23");
  a[0] = lt_int(2);
  CHECK_ST(lt_kernel_launch(rt, poke, a, 1, NULL), LT_OK);
  lt_field grid;
  CHECK_ST(lt_field_find(rt, "grid", &grid), LT_OK);
  int64_t idx[2] = {2, 0};
  float v = 0;
  CHECK_ST(lt_field_read(rt, grid, idx, 2, LT_F32, &v), LT_OK);
  CHECK(v == 1);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* ---- fields ---------------------------------------------------------------------------- */

static void test_fields(void) {
  lt_runtime rt = load(0);
  lt_field grid, total, sp, none;
  CHECK_ST(lt_field_find(rt, "grid", &grid), LT_OK);
  CHECK_ST(lt_field_find(rt, "total", &total), LT_OK);
  CHECK_ST(lt_field_find(rt, "sp", &sp), LT_OK);
  CHECK_ST(lt_field_find(rt, "mix", &none), LT_ERROR_TYPE);   /* a kernel */
  lt_dtype dt;
  int nd;
  int64_t shape[LT_MAX_DIMS];
  CHECK_ST(lt_field_shape(rt, grid, &dt, &nd, shape), LT_OK);
  CHECK(dt == LT_F32 && nd == 2 && shape[0] == 4 && shape[1] == 6 && shape[2] == 0);
  CHECK_ST(lt_field_shape(rt, total, &dt, &nd, shape), LT_OK);
  CHECK(dt == LT_I64 && nd == 0);
  CHECK_ST(lt_field_shape(rt, sp, &dt, &nd, shape), LT_OK);
  CHECK(dt == LT_F64 && nd == 1 && shape[0] == 32);

  /* element writes, seen by a kernel and by Lua; whole-box reads and writes */
  float g[4][6];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) {
      g[i][j] = (float)(i * 6 + j) - 5.5f;
      int64_t idx[2] = {i, j};
      CHECK_ST(lt_field_write(rt, grid, idx, 2, LT_F32, &g[i][j]), LT_OK);
    }
  CHECK_ST(lt_run_string(rt, "assert(grid[3][5] == 17.5 and grid[0][1] == -4.5)", "=check"), LT_OK);
  lt_kernel sum_grid;
  CHECK_ST(lt_kernel_find(rt, "sum_grid", &sum_grid), LT_OK);
  lt_value k3[1] = {lt_int(3)};
  CHECK_ST(lt_kernel_launch(rt, sum_grid, k3, 1, NULL), LT_OK);
  int64_t want = 0, got = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) want += (int64_t)g[i][j] * 3;   /* the kernel's lt.i64() truncates too */
  CHECK_ST(lt_field_read(rt, total, NULL, 0, LT_I64, &got), LT_OK);
  CHECK(got == want);
  int64_t seven = 7;
  CHECK_ST(lt_field_write(rt, total, NULL, 0, LT_I64, &seven), LT_OK);
  CHECK_ST(lt_field_read(rt, total, NULL, 0, LT_I64, &got), LT_OK);
  CHECK(got == 7);

  int64_t begin[2] = {1, 2}, extent[2] = {2, 3};
  float box[6], all[24];
  CHECK_ST(lt_field_read_box(rt, grid, begin, extent, 2, LT_F32, box, sizeof box), LT_OK);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) CHECK(box[i * 3 + j] == g[1 + i][2 + j]);
  for (int k = 0; k < 6; k++) box[k] = 100.0f + (float)k;
  CHECK_ST(lt_field_write_box(rt, grid, begin, extent, 2, LT_F32, box, sizeof box), LT_OK);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) g[1 + i][2 + j] = 100.0f + (float)(i * 3 + j);
  int64_t b0[2] = {0, 0}, ext[2] = {4, 6};
  CHECK_ST(lt_field_read_box(rt, grid, b0, ext, 2, LT_F32, all, sizeof all), LT_OK);
  CHECK(memcmp(all, g, sizeof all) == 0);
  int64_t end[2] = {4, 6}, empty[2] = {0, 0}, row0[2] = {2, 0};   /* empty boxes: nothing to copy */
  CHECK_ST(lt_field_read_box(rt, grid, end, empty, 2, LT_F32, all, 0), LT_OK);
  CHECK_ST(lt_field_write_box(rt, grid, begin, row0, 2, LT_F32, all, 0), LT_OK);

  /* a sparse field: inactive cells read as zero, writes activate */
  double d = -1;
  int64_t i5 = 5, i31 = 31;
  CHECK_ST(lt_field_read(rt, sp, &i5, 1, LT_F64, &d), LT_OK);
  CHECK(d == 0);
  d = 2.25;
  CHECK_ST(lt_field_write(rt, sp, &i31, 1, LT_F64, &d), LT_OK);
  CHECK_ST(lt_run_string(rt, "", "=nothing"), LT_OK);
  d = 0;
  CHECK_ST(lt_field_read(rt, sp, &i31, 1, LT_F64, &d), LT_OK);
  CHECK(d == 2.25);

  /* misuse */
  int64_t idx[3] = {4, 0, 0};
  float v;
  CHECK_ST(lt_field_read(rt, grid, idx, 2, LT_F32, &v), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_field_read: index 4 out of range for axis 0 of field 'grid' with shape (4, 6)");
  idx[0] = 0;
  idx[1] = -1;
  CHECK_ST(lt_field_write(rt, grid, idx, 2, LT_F32, &v), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "axis 1");
  idx[1] = 0;
  CHECK_ST(lt_field_read(rt, grid, idx, 3, LT_F32, &v), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "2 indices, got 3");
  CHECK_ST(lt_field_read(rt, grid, idx, 1, LT_F32, &v), LT_ERROR_SHAPE);
  double dv;
  CHECK_ST(lt_field_read(rt, grid, idx, 2, LT_F64, &dv), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "f32");
  CHECK_ST(lt_field_write(rt, grid, idx, 2, (lt_dtype)77, &dv), LT_ERROR_TYPE);
  CHECK_ST(lt_field_read(rt, grid, NULL, 2, LT_F32, &v), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_field_read(rt, grid, idx, 2, LT_F32, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_field_write(rt, grid, idx, 2, LT_F32, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_field_read_box(rt, grid, begin, extent, 2, LT_F32, box, sizeof box - 4), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "has 20 bytes; the box's 6 f32 elements take 24");
  CHECK_ST(lt_field_write_box(rt, grid, begin, extent, 2, LT_F32, box, sizeof box + 4), LT_ERROR_SHAPE);
  int64_t over[2] = {2, 5};
  CHECK_ST(lt_field_read_box(rt, grid, begin, over, 2, LT_F32, all, 10 * sizeof(float)), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "the box [2, 7) on axis 1");
  CHECK_CONTAINS(lt_last_error(rt), "outside field 'grid'");
  int64_t negext[2] = {-1, 2};
  CHECK_ST(lt_field_read_box(rt, grid, begin, negext, 2, LT_F32, all, 0), LT_ERROR_SHAPE);
  CHECK_ST(lt_field_read_box(rt, grid, begin, NULL, 2, LT_F32, all, 0), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_field_read_box(rt, grid, begin, extent, 2, LT_I32, box, sizeof box), LT_ERROR_TYPE);
  /* nothing written by the refused calls */
  CHECK_ST(lt_field_read_box(rt, grid, b0, ext, 2, LT_F32, all, sizeof all), LT_OK);
  CHECK(memcmp(all, g, sizeof all) == 0);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  CHECK(lt_field_read(rt, grid, idx, 2, LT_F32, &v) == LT_ERROR_INVALID_HANDLE);
}

/* ---- handles across lt.export and lt.init ------------------------------------------------ */

static void test_reinit(void) {
  lt_runtime rt = load(0);
  lt_kernel ident, ident2;
  lt_field grid, grid2;
  CHECK_ST(lt_kernel_find(rt, "ident", &ident), LT_OK);
  CHECK_ST(lt_field_find(rt, "grid", &grid), LT_OK);
  lt_value a[1] = {lt_int(11)}, r;
  CHECK_ST(lt_kernel_launch(rt, ident, a, 1, &r), LT_OK);

  /* exporting another value under a name replaces it: the old handle goes */
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\n"
                             "lt.export('ident', lt.kernel(function(n) return n + 1 end, { n = lt.i32 }))\n",
                         "=reexport"),
           LT_OK);
  CHECK_ST(lt_kernel_launch(rt, ident, a, 1, &r), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "invalid");
  CHECK_ST(lt_kernel_find(rt, "ident", &ident2), LT_OK);
  CHECK(ident2.id != ident.id);
  CHECK_ST(lt_kernel_launch(rt, ident2, a, 1, &r), LT_OK);
  CHECK(r.kind == LT_VALUE_INT && r.as.i == 12);

  /* lt.init again: a new program; every export of the old one is gone */
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\nlt.init { threads = 2 }\n", "=reinit"), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, ident2, a, 1, &r), LT_ERROR_INVALID_HANDLE);
  int64_t idx[2] = {0, 0};
  float v;
  CHECK_ST(lt_field_read(rt, grid, idx, 2, LT_F32, &v), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_shape(rt, grid, NULL, NULL, NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_kernel_find(rt, "ident", &ident2), LT_ERROR_NOT_FOUND);
  CHECK_ST(lt_field_find(rt, "grid", &grid2), LT_ERROR_NOT_FOUND);
  /* the script again: new handles work, the old stay invalid */
  CHECK_ST(lt_run_string(rt, script, "=embed_test"), LT_OK);
  CHECK_ST(lt_field_find(rt, "grid", &grid2), LT_OK);
  CHECK_ST(lt_kernel_find(rt, "ident", &ident2), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, ident2, a, 1, &r), LT_OK);
  CHECK(r.as.i == 11);
  v = 4.5f;
  CHECK_ST(lt_field_write(rt, grid2, idx, 2, LT_F32, &v), LT_OK);
  CHECK_ST(lt_field_read(rt, grid, idx, 2, LT_F32, &v), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_kernel_launch(rt, ident, a, 1, &r), LT_ERROR_INVALID_HANDLE);

  /* a kernel handle of one runtime in another (same slot numbers) */
  lt_runtime other = load(0);
  lt_kernel oi;
  CHECK(lt_kernel_find(other, "ident", &oi) == LT_OK);
  CHECK(lt_kernel_launch(other, ident2, a, 1, &r) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_field_read(other, grid2, idx, 2, LT_F32, &v) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_runtime_destroy(other) == LT_OK);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* ---- ndarrays in Lua --------------------------------------------------------------------- */

static void test_push_ndarray(void) {
  lt_runtime rt = make_rt(0);
  int32_t host[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  counter released = {0};
  lt_ndarray a;
  CHECK_ST(lt_ndarray_wrap(rt, LT_I32, 2, shape, host, sizeof host, count_release, &released, &a), LT_OK);
  lua_State *L = lt_lua_state(rt);
  CHECK(L != NULL);
  CHECK(lt_lua_state(rt) == L);
  CHECK_ST(lt_push_ndarray(rt, L, a), LT_OK);
  lua_setglobal(L, "host_array");
  CHECK_ST(lt_run_string(rt,
                         "local lt = require 'lattice'\n"
                         "assert(host_array.ndim == 2 and host_array.shape[1] == 2 and host_array.shape[2] == 3)\n"
                         "assert(host_array.dtype == lt.i32 and host_array[1][2] == 6)\n"
                         "host_array[0][0] = 40\n",
                         "=push"),
           LT_OK);
  CHECK(host[0] == 40);   /* Lua wrote into the host's buffer */
  lua_State *other = luaL_newstate();
  CHECK_ST(lt_push_ndarray(rt, other, a), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "lt_lua_state");
  CHECK_ST(lt_push_ndarray(rt, NULL, a), LT_ERROR_INVALID_ARGUMENT);
  lua_close(other);
  CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
  CHECK(released.calls == 0);   /* Lua still holds it */
  CHECK_ST(lt_push_ndarray(rt, L, a), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_run_string(rt, "host_array[1][0] = 41\nhost_array = nil\ncollectgarbage()\ncollectgarbage()\n", "=drop"),
           LT_OK);
  CHECK(host[3] == 41 && released.calls == 1);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  CHECK(released.calls == 1);
}

/* ---- threads -------------------------------------------------------------------------------- */

/* The script calls hold(), a C function that, inside the runtime, lets a
** second thread try the runtime (refused at once: BUSY), then uses the
** runtime itself (this thread may), then returns. */
typedef struct {
  lt_runtime rt;
  lt_kernel k;
  lt_status launch, run, destroy, find;
  char message[512];
  lua_State *state;
} busy_ctx;

static busy_ctx busy;

static void *other_thread(void *arg) {
  lt_value a[1] = {lt_int(1)};
  busy.launch = lt_kernel_launch(busy.rt, busy.k, a, 1, NULL);
  snprintf(busy.message, sizeof busy.message, "%s", lt_last_error(busy.rt));
  busy.run = lt_run_string(busy.rt, "x = 1", NULL);
  busy.destroy = lt_runtime_destroy(busy.rt);
  lt_kernel k;
  busy.find = lt_kernel_find(busy.rt, "ident", &k);
  busy.state = lt_lua_state(busy.rt);
  return NULL;
}

static int hold(lua_State *L) {
  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);
  /* this thread is inside the runtime: it may call it again */
  lt_value a[1] = {lt_int(21)}, r;
  lt_status st = lt_kernel_launch(busy.rt, busy.k, a, 1, &r);
  lua_pushboolean(L, st == LT_OK && r.as.i == 21);
  lua_pushinteger(L, lt_runtime_destroy(busy.rt));   /* not from inside: BUSY */
  return 2;
}

static void test_busy(void) {
  lt_runtime rt = busy.rt = load(0);
  CHECK_ST(lt_kernel_find(rt, "ident", &busy.k), LT_OK);
  busy.state = (lua_State *)&busy;   /* must become NULL */
  lua_State *L = lt_lua_state(rt);
  lua_register(L, "hold", hold);
  char text[200];
  snprintf(text, sizeof text, "local ok, destroyed = hold()\nassert(ok, 'reentrant launch')\nassert(destroyed == %d)\n",
           (int)LT_ERROR_BUSY);
  CHECK_ST(lt_run_string(rt, text, "=busy"), LT_OK);
  CHECK(busy.launch == LT_ERROR_BUSY);
  CHECK_CONTAINS(busy.message, "lt_kernel_launch: ");
  CHECK_CONTAINS(busy.message, "in use by another thread");
  CHECK(busy.run == LT_ERROR_BUSY);
  CHECK(busy.destroy == LT_ERROR_BUSY);
  CHECK(busy.find == LT_ERROR_BUSY);
  CHECK(busy.state == NULL);
  /* and afterwards the runtime is free */
  lt_value a[1] = {lt_int(5)}, r;
  CHECK_ST(lt_kernel_launch(rt, busy.k, a, 1, &r), LT_OK);
  CHECK(r.as.i == 5);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

int main(void) {
  test_run_errors();
  test_run_file();
  test_kernels();
  test_runtime_failure();
  test_fields();
  test_reinit();
  test_push_ndarray();
  test_busy();
  return check_finish("test_embed");
}
