/*
** heat_host.c -- a C host that runs the sparse heat module saved by
** sparse_heat.lua with the runtime library alone (liblattice_rt: no LLVM,
** no Lua): load the module, make an instance of its tree type, launch its
** kernels, read the fields back, write them out.
**
**   heat_host MODULE.ltm OUT_PREFIX [STEPS] [THREADS]
**
** Writes OUT_PREFIX.u.raw (u, then the flux's x component, as f32,
** row-major: the bytes `lattice sparse_heat.lua --run` writes),
** OUT_PREFIX.totals.txt (the total heat after each step) and
** OUT_PREFIX.pgm (u as a grey image). With HEAT_HOST_MEMORY=MiB in the
** environment the runtime's memory pool is a block of this program's own
** memory of that size, and the tree's fixed part another
** (lt_runtime_config.pool_memory, lt_tree_create_in). With HEAT_HOST_ARCH=cuda
** the runtime runs on the GPU (the module must hold PTX: sparse_heat.lua
** --cuda; liblattice, as liblattice_rt runs on the CPU only so far). Build
** (docs/aot.md):
**   cc heat_host.c -I<prefix>/include -L<prefix>/lib -llattice_rt -o heat_host
*/
#define _POSIX_C_SOURCE 200809L   /* clock_gettime under -std=c17 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lattice.h"

#define N 128

static lt_runtime rt;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int check(lt_status st, const char *what) {
  if (st == LT_OK) return 0;
  fprintf(stderr, "heat_host: %s: %s (%s)\n", what, lt_last_error(rt), lt_status_name(st));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: heat_host MODULE.ltm OUT_PREFIX [STEPS] [THREADS]\n");
    return 2;
  }
  int steps = argc > 3 ? atoi(argv[3]) : 200;
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = argc > 4 ? atoi(argv[4]) : 1;
  const char *arch = getenv("HEAT_HOST_ARCH");
  if (arch && arch[0] == 'c' && arch[1] == 'u') cfg.arch = LT_ARCH_CUDA;
  const char *host_mib = getenv("HEAT_HOST_MEMORY");
  void *pool = NULL;
  if (host_mib) {
    cfg.device_memory = (uint64_t)atoi(host_mib) << 20;
    pool = aligned_alloc(64, cfg.device_memory);
    if (!pool) return 1;
    cfg.pool_memory = pool;
  }
  check(lt_runtime_create(&cfg, &rt), "lt_runtime_create");

  double t0 = now_ms();             /* load to first launch: what a host waits before it computes */
  lt_module m;
  check(lt_module_load(rt, argv[1], &m), "lt_module_load");
  uint64_t bytes = 0;
  check(lt_module_tree_type(rt, m, "grid", &bytes), "lt_module_tree_type");
  lt_tree g;
  void *block = NULL;
  if (host_mib) {
    block = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!block) return 1;
    check(lt_tree_create_in(rt, m, "grid", block, bytes, &g), "lt_tree_create_in");
  } else {
    check(lt_tree_create(rt, m, "grid", &g), "lt_tree_create");
  }
  lt_kernel init, step, commit;
  check(lt_module_kernel(rt, m, "init", &init), "init");
  check(lt_module_kernel(rt, m, "step", &step), "step");
  check(lt_module_kernel(rt, m, "commit", &commit), "commit");

  lt_value a[5] = {lt_tree_value(g), lt_int(64), lt_int(64), lt_int(50), lt_float(100.0)};
  check(lt_kernel_launch(rt, init, a, 5, NULL), "launch init");
  double first = now_ms() - t0;
  char path[4096];
  snprintf(path, sizeof path, "%s.totals.txt", argv[2]);
  FILE *t = fopen(path, "w");
  if (!t) return 1;
  for (int s = 1; s <= steps; s++) {
    lt_value sa[2] = {lt_tree_value(g), lt_float(0.2)};
    check(lt_kernel_launch(rt, step, sa, 2, NULL), "launch step");
    lt_value total;
    check(lt_kernel_launch(rt, commit, sa, 1, &total), "launch commit");
    fprintf(t, "%d %.9g\n", s, total.as.f);
  }
  fclose(t);

  /* the fields back: u, then the flux's x component (a vector field's component by name) */
  lt_field u, fx;
  check(lt_tree_field(rt, g, "u", &u), "field u");
  check(lt_tree_field(rt, g, "flux.x", &fx), "field flux.x");
  static float buf[2][N * N];
  int64_t begin[2] = {0, 0}, extent[2] = {N, N};
  check(lt_field_read_box(rt, u, begin, extent, 2, LT_F32, buf[0], sizeof buf[0]), "read u");
  check(lt_field_read_box(rt, fx, begin, extent, 2, LT_F32, buf[1], sizeof buf[1]), "read flux.x");
  snprintf(path, sizeof path, "%s.u.raw", argv[2]);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, sizeof buf, 1, f) != 1) return 1;
  fclose(f);

  snprintf(path, sizeof path, "%s.pgm", argv[2]);
  f = fopen(path, "wb");
  if (!f) return 1;
  fprintf(f, "P5\n%d %d\n255\n", N, N);
  for (int j = N - 1; j >= 0; j--)
    for (int i = 0; i < N; i++) {
      float v = buf[0][i * N + j] / 10.0f;
      fputc(v <= 0 ? 0 : v >= 1 ? 255 : (int)(v * 255.0f + 0.5f), f);
    }
  fclose(f);
  printf("ran %d steps of %s (tree 'grid': %llu bytes fixed): %s.u.raw, %s.pgm\n", steps, argv[1],
         (unsigned long long)bytes, argv[2], argv[2]);
  printf("load to first launch: %.2f ms\n", first);

  check(lt_tree_destroy(rt, g), "lt_tree_destroy");
  check(lt_module_free(rt, m), "lt_module_free");
  lt_runtime_destroy(rt);
  free(block);                     /* the host's again */
  free(pool);
  return 0;
}
