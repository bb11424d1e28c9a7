/*
** env.c -- lt_env_read: the only place where Lattice's library reads the
** environment (env.h lists the variables; docs/language.md documents them).
** Everything below reaches the backends, the code generator and the Lua
** module as plain values.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

static const char *get(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

void lt_env_read(lt_env *out) {
  out->arch = get("LT_ARCH");
  out->memory_limit = get("LT_MEMORY_LIMIT");
  out->cuda_driver = get("LT_CUDA_DRIVER");
  out->libdevice = get("LT_LIBDEVICE");
  out->cuda_home = get("CUDA_HOME");
  out->cuda_path = get("CUDA_PATH");
  out->check_ptx = get("LT_CHECK_PTX");
  out->tmpdir = get("TMPDIR");
  out->cache_max = get("LT_CACHE_MAX");
  out->gui = get("LT_GUI");
  out->display = get("DISPLAY") ? get("DISPLAY") : get("WAYLAND_DISPLAY");
  const char *cache = get("LT_CACHE"), *xdg = get("XDG_CACHE_HOME"), *home = get("HOME");
  out->cache_dir[0] = 0;
  bool off = cache && (strcmp(cache, "off") == 0 || strcmp(cache, "0") == 0 || strcmp(cache, "false") == 0 ||
                       strcmp(cache, "no") == 0);
  if (off) {
    /* no cache */
  } else if (cache) {
    snprintf(out->cache_dir, sizeof out->cache_dir, "%s", cache);
  } else if (xdg && xdg[0] == '/') {
    snprintf(out->cache_dir, sizeof out->cache_dir, "%s/lattice", xdg);
  } else if (home) {
    snprintf(out->cache_dir, sizeof out->cache_dir, "%s/.cache/lattice", home);
  }
  /* set at all (even to ""), as getenv was asked before */
  out->dump_llvm = getenv("LT_DUMP_LLVM") != NULL;
  out->dump_ptx = getenv("LT_DUMP_PTX") != NULL;
}

void lt_env_jit_options(const lt_env *e, bool debug, jit_options *out) {
  *out = (jit_options){.debug = debug,
                       .dump_llvm = e->dump_llvm,
                       .dump_ptx = e->dump_ptx,
                       .cuda_driver = e->cuda_driver,
                       .libdevice = e->libdevice,
                       .cuda_home = e->cuda_home,
                       .cuda_path = e->cuda_path,
                       .tmpdir = e->tmpdir,
                       .cache_dir = e->cache_dir[0] ? e->cache_dir : NULL,
                       .cache_max_bytes = e->cache_max ? strtoull(e->cache_max, NULL, 10) : 0};
}
