/*
** rt_host.c -- a host linked against the runtime library alone
** (liblattice_rt: no LLVM, no Lua; docs/aot.md). It makes a runtime, fills an
** ndarray and reads it back, and shows what the library says where the full
** liblattice would compile: there is no kernel to find until AOT modules load
** (examples/aot/heat_host.c loads one).
** tests/cli/runtime_lib.sh builds it against the shared library and the
** static archive and checks that neither pulls in LLVM or Lua.
**   cc rt_host.c -I<prefix>/include -L<prefix>/lib -llattice_rt -o rt_host
*/
#include <stdio.h>
#include <string.h>

#include "lattice.h"

static int fails = 0;
static void check(const char *what, int ok) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) fails++;
}

int main(void) {
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 2;
  lt_runtime rt;
  lt_status st = lt_runtime_create(&cfg, &rt);
  check("a CPU runtime", st == LT_OK);
  if (st != LT_OK) {
    printf("  %s\n", lt_last_error(rt));
    return 1;
  }

  int64_t shape[2] = {3, 4};
  lt_ndarray a;
  check("an ndarray", lt_ndarray_create(rt, LT_F32, 2, shape, &a) == LT_OK);
  float in[12], out[12];
  for (int i = 0; i < 12; i++) in[i] = (float)i * 0.5f;
  check("written", lt_ndarray_write(rt, a, in, sizeof in) == LT_OK);
  check("read back", lt_ndarray_read(rt, a, out, sizeof out) == LT_OK && memcmp(in, out, sizeof in) == 0);
  check("released", lt_ndarray_release(rt, a) == LT_OK);

  lt_kernel k;
  st = lt_kernel_find(rt, "step", &k);
  check("no kernel without a module", st == LT_ERROR_NOT_FOUND);
  printf("  %s\n", lt_last_error(rt));
  check("destroyed", lt_runtime_destroy(rt) == LT_OK);

  /* the library's CUDA backend runs modules' PTX: a runtime where a GPU and
  ** its driver are, else the reason there is none */
  cfg.arch = LT_ARCH_CUDA;
  st = lt_runtime_create(&cfg, &rt);
  check("CUDA: a runtime, or the reason there is none", st == LT_OK || st == LT_ERROR_BACKEND);
  if (st == LT_OK) check("destroyed (CUDA)", lt_runtime_destroy(rt) == LT_OK);
  else printf("  %s\n", lt_last_error(rt));
  printf("%d failed\n", fails);
  return fails ? 1 : 0;
}
