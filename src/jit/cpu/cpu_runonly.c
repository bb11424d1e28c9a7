/*
** cpu_runonly.c -- the CPU backend of the runtime library: it runs kernels
** whose machine code was made elsewhere (AOT modules, docs/aot.md) on the
** thread pool, in host memory, and cannot compile (be->compile is NULL). It
** shares cpu_run.c and cpu_memory.c with the compiling backend and needs no
** LLVM.
*/
#include <stdio.h>
#include <stdlib.h>

#include "cpu_exec.h"

/* A kernel's code belongs to whoever made the jit_kernel (a module); the
** backend frees only the description. */
static void runonly_release(jit_backend *be, jit_kernel *jk) {
  (void)be;
  jit_kernel_free(jk);
}

static void runonly_destroy(jit_backend *be) {
  if (!be) return;
  cpu_exec *ex = be->impl;
  if (ex) {
    rt_pool_destroy(ex->pool);
    cpu_exec_free(ex);
  }
  free(ex);
  free(be);
}

jit_backend *jit_cpu_create_runonly(int threads, char *err, size_t errlen) {
  jit_backend *be = calloc(1, sizeof *be);
  cpu_exec *ex = calloc(1, sizeof *ex);
  if (!be || !ex) {
    free(be);
    free(ex);
    snprintf(err, errlen, "out of memory creating the CPU backend");
    return NULL;
  }
  be->impl = ex;
  ex->pool = rt_pool_create(threads);
  if (!ex->pool) {
    snprintf(err, errlen, "cannot start %d worker threads for the CPU backend", threads);
    runonly_destroy(be);
    return NULL;
  }
  be->name = "cpu";
  be->threads = rt_pool_threads(ex->pool);
  cpu_memory_init(be);
  be->synchronous = true;
  be->run_task = cpu_run_task;
  be->release = runonly_release;
  be->destroy = runonly_destroy;
  return be;
}
