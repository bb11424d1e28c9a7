/*
** host.c -- a C program that uses Lattice through its C API (docs/embedding.md).
** It creates a runtime, runs a Lua script (the string below) that defines
** kernels and a field and exports them by name, hands its own float arrays
** to the kernels with no copy (lt_ndarray_wrap), calls the kernels with C
** values, reads and writes the field, and checks every result against the
** same arithmetic in plain C.
**
** Against an installed Lattice (docs/install.md), either
**     cc host.c $(pkg-config --cflags --libs lattice) -o host
** (add -Wl,-rpath,PREFIX/lib for a prefix the loader does not search), or
** CMake with this folder's CMakeLists.txt (find_package(Lattice)).
** Run: ./host [N]   (prints one line; exit status 0 when every result matches)
*/
#include <stdio.h>
#include <stdlib.h>

#include <lattice_lua.h>   /* lt_run_string; it includes lattice.h */

/* The Lua side: kernels over ndarrays the host passes in, and a field the
** host reads and writes. lt.export makes them visible to lt_kernel_find and
** lt_field_find. */
static const char script[] =
  "local lt = require 'lattice'\n"
  "lt.init {}   -- takes the runtime that lt_runtime_create made\n"
  "\n"
  "local grid = lt.field(lt.i32, {8, 16})\n"
  "\n"
  "-- y = a * x + y, over arrays the host owns\n"
  "local saxpy = lt.kernel(function(a, x, y)\n"
  "  for i in lt.ndrange(x.shape[1]) do\n"
  "    y[i] = a * x[i] + y[i]\n"
  "  end\n"
  "end, { a = lt.f32, x = lt.ndarray_type(lt.f32, 1), y = lt.ndarray_type(lt.f32, 1) })\n"
  "\n"
  "-- x . y, summed in f64 (a parallel reduction: Lattice makes the += atomic)\n"
  "local dot = lt.kernel(function(x, y)\n"
  "  local s = lt.f64(0)\n"
  "  for i in lt.ndrange(x.shape[1]) do\n"
  "    s = s + lt.f64(x[i]) * lt.f64(y[i])\n"
  "  end\n"
  "  return s\n"
  "end, { x = lt.ndarray_type(lt.f32, 1), y = lt.ndarray_type(lt.f32, 1) })\n"
  "\n"
  "-- grid = grid * k + i - j; returns how many cells are now positive\n"
  "local step = lt.kernel(function(k)\n"
  "  local positive = 0\n"
  "  for i, j in grid do\n"
  "    local v = grid[i][j] * k + i - j\n"
  "    grid[i][j] = v\n"
  "    if v > 0 then positive = positive + 1 end\n"
  "  end\n"
  "  return positive\n"
  "end, { k = lt.i32 })\n"
  "\n"
  "lt.export('saxpy', saxpy)\n"
  "lt.export('dot', dot)\n"
  "lt.export('step', step)\n"
  "lt.export('grid', grid)\n";

enum { ROWS = 8, COLS = 16 };

/* Reports a failed call (with the runtime's message) and says whether it succeeded. */
static int ok(lt_runtime rt, lt_status st, const char *what) {
  if (st != LT_OK) fprintf(stderr, "host: %s: %s (%s)\n", what, lt_last_error(rt), lt_status_name(st));
  return st == LT_OK;
}

/* The release callback of the wrapped arrays: Lattice no longer uses the
** buffer (the host frees it after lt_runtime_destroy, which releases every
** array the host has not). */
static void buffer_released(void *user, void *data) {
  (void)data;
  ++*(int *)user;
}

/* Runs the kernels and checks them; the number of mismatches, or -1 when a
** call failed (the message is printed). x and y hold n floats. */
static int demo(lt_runtime rt, int64_t n, float *x, float *y, float *y_ref, int *released) {
  lt_kernel saxpy, dot, step;
  lt_field grid;
  lt_ndarray xa, ya;
  int bad = 0;
  if (!ok(rt, lt_run_string(rt, script, "=host.c script"), "lt_run_string") ||
      !ok(rt, lt_kernel_find(rt, "saxpy", &saxpy), "lt_kernel_find saxpy") ||
      !ok(rt, lt_kernel_find(rt, "dot", &dot), "lt_kernel_find dot") ||
      !ok(rt, lt_kernel_find(rt, "step", &step), "lt_kernel_find step") ||
      !ok(rt, lt_field_find(rt, "grid", &grid), "lt_field_find grid"))
    return -1;

  /* x and y become ndarrays over the host's buffers: on the CPU the kernels
  ** read and write this very memory (on CUDA they would be copied to the GPU
  ** and released at once; results then come back with lt_ndarray_read) */
  if (!ok(rt, lt_ndarray_wrap(rt, LT_F32, 1, &n, x, (size_t)n * sizeof *x, buffer_released, released, &xa),
          "lt_ndarray_wrap x") ||
      !ok(rt, lt_ndarray_wrap(rt, LT_F32, 1, &n, y, (size_t)n * sizeof *y, buffer_released, released, &ya),
          "lt_ndarray_wrap y"))
    return -1;

  /* saxpy: a float and two arrays in, nothing back; y itself holds the result */
  const float a = 2.5f;
  lt_value args[3] = {lt_float(a), lt_nd(xa), lt_nd(ya)};
  if (!ok(rt, lt_kernel_launch(rt, saxpy, args, 3, NULL), "saxpy")) return -1;
  for (int64_t i = 0; i < n; i++) {
    y_ref[i] = a * x[i] + y_ref[i];
    if (y[i] != y_ref[i] && bad++ < 5)
      fprintf(stderr, "host: saxpy: y[%lld] = %.9g, C gives %.9g\n", (long long)i, y[i], y_ref[i]);
  }

  /* dot: two arrays in, a float (the kernel's f64) back */
  lt_value pair[2] = {lt_nd(xa), lt_nd(ya)}, r;
  if (!ok(rt, lt_kernel_launch(rt, dot, pair, 2, &r), "dot")) return -1;
  double dot_ref = 0;
  for (int64_t i = 0; i < n; i++) dot_ref += (double)x[i] * (double)y_ref[i];
  if (r.kind != LT_VALUE_FLOAT || r.as.f != dot_ref) {
    fprintf(stderr, "host: dot gave %.17g, C gives %.17g\n", r.as.f, dot_ref);
    bad++;
  }

  /* done with the arrays: each release callback runs once, here */
  if (!ok(rt, lt_ndarray_release(rt, xa), "lt_ndarray_release x") ||
      !ok(rt, lt_ndarray_release(rt, ya), "lt_ndarray_release y"))
    return -1;
  if (*released != 2) {
    fprintf(stderr, "host: %d release callbacks ran, expected 2\n", *released);
    bad++;
  }

  /* the field: written from C as a whole box, stepped by a kernel (an int in,
  ** an int back), read back as a box and one element at a time */
  int32_t g[ROWS][COLS], back[ROWS][COLS];
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++) g[i][j] = (i * 7 + j * 3) % 11 - 5;
  int64_t begin[2] = {0, 0}, extent[2] = {ROWS, COLS};
  lt_value k[1] = {lt_int(2)};
  if (!ok(rt, lt_field_write_box(rt, grid, begin, extent, 2, LT_I32, g, sizeof g), "lt_field_write_box") ||
      !ok(rt, lt_kernel_launch(rt, step, k, 1, &r), "step") ||
      !ok(rt, lt_field_read_box(rt, grid, begin, extent, 2, LT_I32, back, sizeof back), "lt_field_read_box"))
    return -1;
  int64_t positive = 0;
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++) {
      g[i][j] = g[i][j] * 2 + i - j;
      positive += g[i][j] > 0;
      if (back[i][j] != g[i][j] && bad++ < 5)
        fprintf(stderr, "host: grid[%d][%d] = %d, C gives %d\n", i, j, back[i][j], g[i][j]);
    }
  if (r.kind != LT_VALUE_INT || r.as.i != positive) {
    fprintf(stderr, "host: step counted %lld positive cells, C counts %lld\n", (long long)r.as.i,
            (long long)positive);
    bad++;
  }
  int64_t at[2] = {3, 4};
  int32_t v = 1234, w = 0;
  if (!ok(rt, lt_field_write(rt, grid, at, 2, LT_I32, &v), "lt_field_write") ||
      !ok(rt, lt_field_read(rt, grid, at, 2, LT_I32, &w), "lt_field_read"))
    return -1;
  if (w != v) {
    fprintf(stderr, "host: grid[3][4] reads %d after writing %d\n", w, v);
    bad++;
  }

  /* a misuse is an error value with a message, not a crash */
  int64_t outside[2] = {ROWS, 0};
  if (lt_field_read(rt, grid, outside, 2, LT_I32, &w) != LT_ERROR_SHAPE) {
    fprintf(stderr, "host: reading grid[%d][0] did not fail\n", ROWS);
    bad++;
  }
  return bad;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 100000;
  if (n < 1) {
    fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
    return 2;
  }
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  float *y_ref = malloc((size_t)n * sizeof *y_ref);
  if (!x || !y || !y_ref) {
    fprintf(stderr, "host: out of memory\n");
    return 1;
  }
  /* values whose products and sums are exact in float and double, so the
  ** kernels and C agree to the bit, whatever order the threads add in */
  for (int64_t i = 0; i < n; i++) {
    x[i] = (float)(i % 1000) / 8;
    y[i] = y_ref[i] = (float)(i % 7) - 3;
  }

  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);   /* the CPU, one thread per core */
  lt_runtime rt = {0};
  int bad = -1, released = 0;
  if (ok(rt, lt_runtime_create(&cfg, &rt), "lt_runtime_create")) {
    bad = demo(rt, n, x, y, y_ref, &released);
    lt_runtime_destroy(rt);   /* releases what is left (after a failure: the arrays) */
  }
  free(x);
  free(y);
  free(y_ref);
  if (bad == 0)
    printf("host: saxpy, dot and step over %lld elements match plain C (Lattice %s)\n", (long long)n, LT_VERSION);
  return bad == 0 ? 0 : 1;
}
