/*
** program.c -- prog_program: the state of one program (IR program, the memory
** pool with every tree's memory, backend, compiled kernels), what keeps its
** trees, and the messages of the sparse runtime's failures.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/host/mempool.h"
#include "env.h"
#include "program.h"

char *prog_tree_memory(prog_program *p, const ir_snode *s) {
  if (!p->ir || s->tree < 0 || s->tree >= IR_MAX_TREES) return NULL;
  return p->mem[s->tree];
}

bool prog_take_error(prog_program *p, char *msg, size_t len) {
  return p->sparse && p->ir && jit_sparse_take_error(p->sparse, p->ir, msg, len);
}

void prog_reclaim_trees(prog_program *p) {
  if (!p->ir) return;
  for (int t = 0; t < p->ir->ntrees; t++) {
    if (!p->ir->trees[t].root || p->tree_holds[t] > 0) continue;
    if (p->mem[t]) jit_sparse_free_instance(p->sparse, p->ir, t, p->mem[t]);
    p->mem[t] = NULL;
    jit_sparse_drop_tree(p->sparse, p->ir, t);
    ir_tree_free(p->ir, t);
    p->tree_holds[t] = 0;
  }
}

void prog_set_profile(prog_program *p, jit_profile *pf) {
  if (pf) jit_profile_retain(pf);
  jit_profile_release(p->profile);
  p->profile = pf;
}

void prog_reset(prog_program *p) {
  prog_set_profile(p, NULL);
  while (p->compiled) prog_kernel_release(p->compiled);
  for (int i = 0; i < IR_MAX_TREES; i++) p->mem[i] = NULL;   /* in the pool */
  if (p->sparse) jit_sparse_destroy(p->sparse);   /* frees the pool through p->be */
  p->sparse = NULL;
  if (p->be) p->be->destroy(p->be);
  p->be = NULL;
  if (p->ir) ir_program_free(p->ir);
  p->ir = NULL;
  free(p->check_ptxas);
  p->check_ptxas = NULL;
  prog_builtins_free(p);
}

void prog_retain(prog_program *p) { p->refs++; }

void prog_release(prog_program *p) {
  if (!p || --p->refs > 0) return;
  prog_reset(p);
  free(p);
}

/* The pool's size and where it comes from, for messages: pool_bytes, else a
** share of the device's memory, else the backend's default (jit.h,
** default_pool). false with a message when the share is not a byte. */
static bool pool_size(const jit_backend *be, const prog_config *cfg, uint64_t *bytes, char *src, size_t srclen) {
  const char *dev = be->host_memory ? "RAM" : "device memory";
  if (cfg->pool_bytes > 0) {
    *bytes = (uint64_t)cfg->pool_bytes;
    snprintf(src, srclen, "lt.init{device_memory = %lld}", (long long)cfg->pool_bytes);
  } else if (cfg->pool_fraction > 0) {
    *bytes = (uint64_t)(cfg->pool_fraction * (double)be->memory_bytes);
    snprintf(src, srclen, "lt.init{device_memory_fraction = %.17g} of %llu bytes of %s", cfg->pool_fraction,
             (unsigned long long)be->memory_bytes, dev);
    if (*bytes == 0) return false;
  } else {
    *bytes = be->default_pool ? be->default_pool : JIT_SPARSE_DEFAULT_POOL;
    snprintf(src, srclen, "the default size; set lt.init{device_memory = ...} to change it");
  }
  return true;
}

/* The memory the pool may take on the host (the CPU backend): RAM + swap, or
** limit (LT_MEMORY_LIMIT) when set. Warns once per process when a pool the
** program asked for is larger than that. */
static void host_memory_limit(prog_program *p, int64_t limit, uint64_t pool, bool asked, const char *src) {
  static _Atomic bool warned;
  uint64_t ram, total;
  const char *found = "RAM + swap";
  if (limit > 0) {
    total = (uint64_t)limit;
    found = "LT_MEMORY_LIMIT";
  } else {
    rt_host_memory(&ram, &total);
  }
  if (!total) return;   /* unknown: nothing to check against */
  jit_sparse_set_commit_limit(p->sparse, total, found);
  if (asked && pool > total && !warned) {
    warned = true;
    char a[32], b[32];
    jit_sparse_format_bytes(pool, a, sizeof a);
    jit_sparse_format_bytes(total, b, sizeof b);
    fprintf(stderr,
            "lattice: warning: the memory pool of %llu bytes (%s; %s) is larger than the %s of memory "
            "found (%s); it is address space used only where touched, so sparse trees may still fit, "
            "but a tree whose dense part does not fit is an error, and filling the pool beyond that "
            "gets the process killed\n",
            (unsigned long long)pool, a, src, b, found);
    fflush(stderr);
  }
}

void prog_config_from_env(prog_config *cfg) {
  lt_env env;
  lt_env_read(&env);
  cfg->cuda_driver = env.cuda_driver;   /* tests point it at the mock driver */
  cfg->check_ptxas = env.check_ptx;     /* tests: ptxas checks every kernel's PTX */
  lt_env_jit_options(&env, cfg->debug, &cfg->jit);
  snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s", env.cache_dir);   /* env is gone after this call */
  cfg->jit.cache_dir = cfg->cache_dir[0] ? cfg->cache_dir : NULL;
  const char *limit = env.memory_limit;
  if (limit) {
    char *end;
    long long n = strtoll(limit, &end, 10);
    if (*end == 0 && n > 0) cfg->memory_limit = n;
  }
}

prog_program *prog_create(const prog_config *cfg, char *err, size_t errlen) {
  bool cuda = cfg->arch && strcmp(cfg->arch, "cuda") == 0;
  if (!cuda && cfg->arch && strcmp(cfg->arch, "cpu") != 0) {
    snprintf(err, errlen, "unknown arch '%s'", cfg->arch);
    return NULL;
  }
  prog_program *p = calloc(1, sizeof *p);
  char *ptxas = cfg->check_ptxas && *cfg->check_ptxas ? strdup(cfg->check_ptxas) : NULL;
  if (!p || (cfg->check_ptxas && *cfg->check_ptxas && !ptxas)) {
    free(p);
    free(ptxas);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  p->refs = 1;
  p->check_ptxas = ptxas;
  p->compiler = jit_default_compiler();
  char why[768] = "this library was built without the compiler";
  jit_options jo = cfg->jit;
  jo.debug = cfg->debug;
  jo.cuda_driver = cfg->cuda_driver;
  p->be = p->compiler ? p->compiler->backend(cuda ? "cuda" : "cpu", cfg->threads, &jo, why, sizeof why) : NULL;
  if (!p->be) {
    snprintf(err, errlen, "cannot start the %s backend: %s", cuda ? "CUDA" : "CPU", why);
    free(ptxas);
    free(p);
    return NULL;
  }
  uint64_t bytes = 0;
  char src[160];
  bool sized = pool_size(p->be, cfg, &bytes, src, sizeof src);
  p->sparse = !sized ? NULL
              : cfg->pool_memory ? jit_sparse_create_in(p->be, bytes, cfg->pool_memory, why, sizeof why)
                                 : jit_sparse_create(p->be, bytes, why, sizeof why);
  if (!p->sparse) {
    if (!sized)
      snprintf(err, errlen, "%s is less than one byte; give a larger share, or device_memory in bytes", src);
    else
      snprintf(err, errlen, "cannot reserve the memory pool of %llu bytes (%s): %s", (unsigned long long)bytes,
               src, why);
    p->be->destroy(p->be);
    free(ptxas);
    free(p);
    return NULL;
  }
  if (p->be->host_memory && !cfg->pool_memory)
    host_memory_limit(p, cfg->memory_limit, bytes, cfg->pool_bytes > 0 || cfg->pool_fraction > 0, src);
  p->ir = ir_program_new();
  p->debug = cfg->debug;
  p->fma = cfg->fma || cfg->fast_math;
  p->fast_math = cfg->fast_math;
  if (!p->ir || !prog_builtins_setup(p, 0, 0, err, errlen)) {
    if (!p->ir) snprintf(err, errlen, "out of memory");
    prog_release(p);
    return NULL;
  }
  return p;
}
