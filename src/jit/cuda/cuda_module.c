/*
** cuda_module.c -- PTX text to a loaded module and a jit_kernel whose tasks
** are its entries: for kernels the backend compiled (cuda_compile.c) and
** for the PTX of AOT modules (jit_backend.load_ptx, docs/aot.md). No LLVM:
** the runtime library's backend (cuda_runonly.c) uses it too.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

bool cuda_load_module(jit_backend *be, const char *ptx, const char *what, CUmodule *mod, char *err,
                      size_t errlen) {
  cuda_impl *im = be->impl;
  if (!cuda_alive(be)) {
    snprintf(err, errlen, "%s", be->error);
    return false;
  }
  char log[2048] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = im->drv.cuModuleLoadDataEx(mod, ptx, 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    cuda_check(be, r, "cuModuleLoadDataEx");
    snprintf(err, errlen, "the CUDA driver cannot load the PTX of %s: %s%s%.1200s", what, be->error,
             log[0] ? "; its log: " : "", log);
    return false;
  }
  return true;
}

static void free_kernel(cuda_impl *im, jit_kernel *jk) {
  cuda_kernel *ck = jk->impl;
  if (ck) {
    if (ck->mod) im->drv.cuModuleUnload(ck->mod);
    free(ck->fns);
    free(ck->max_threads);
    free(ck);
  }
  jit_kernel_free(jk);
}

jit_kernel *cuda_kernel_from_ptx(jit_backend *be, ir_kernel *k, const char *ptx, int n,
                                 const cuda_entry_name *names, bool needs_runtime, char *err, size_t errlen) {
  cuda_impl *im = be->impl;
  jit_kernel *jk = calloc(1, sizeof *jk);
  cuda_kernel *ck = calloc(1, sizeof *ck);
  jit_task *tasks = calloc((size_t)(n ? n : 1), sizeof *tasks);
  CUfunction *fns = calloc((size_t)(n ? n : 1), sizeof *fns);
  int *maxt = calloc((size_t)(n ? n : 1), sizeof *maxt);
  char *name = strdup(k->name ? k->name : "kernel");
  if (jk) {
    jk->impl = ck;
    jk->tasks = tasks;
    jk->name = name;
  }
  if (ck) {
    ck->fns = fns;
    ck->max_threads = maxt;
  }
  char what[200];
  snprintf(what, sizeof what, "kernel '%s'", k->name);
  if (!jk || !ck || !tasks || !fns || !maxt || !name) {
    snprintf(err, errlen, "out of memory loading kernel '%s'", k->name);
    goto fail;
  }
  if (!cuda_load_module(be, ptx, what, &ck->mod, err, errlen)) goto fail;
  if (im->hooked && !cuda_hooks->kernel_loaded(im->hooked, k, ck->mod, n, names, err, errlen)) goto fail;
  int i = 0;
  for (ir_stmt *s = k->body->first; s && i < n; s = s->next, i++) {
    jit_task_describe(&tasks[i], k, s);
    if (!cuda_check(be, im->drv.cuModuleGetFunction(&fns[i], ck->mod, names[i]), "cuModuleGetFunction") ||
        !cuda_check(be, im->drv.cuFuncGetAttribute(&maxt[i], CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fns[i]),
                    "cuFuncGetAttribute")) {
      snprintf(err, errlen, "kernel '%s', task %d: %s", k->name, i, be->error);
      goto fail;
    }
  }
  if (i != n) {
    snprintf(err, errlen, "kernel '%s' has %d tasks, its PTX %d entries", k->name, i, n);
    goto fail;
  }
  jk->ntasks = n;
  jk->needs_runtime = needs_runtime;
  jk->gtmp_bytes = k->gtmp_size;
  return jk;
fail:
  if (jk) free_kernel(im, jk);
  else {
    free(ck); free(tasks); free(fns); free(maxt); free(name);
  }
  return NULL;
}

jit_kernel *cuda_load_ptx(jit_backend *be, ir_kernel *k, const char *ptx, const char *prefix, char *err,
                          size_t errlen) {
  int n = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next) n++;
  cuda_entry_name *names = calloc((size_t)(n ? n : 1), sizeof *names);
  if (!names) {
    snprintf(err, errlen, "out of memory loading kernel '%s'", k->name);
    return NULL;
  }
  for (int i = 0; i < n; i++) snprintf(names[i], sizeof names[i], "%s_task%d", prefix, i);
  jit_kernel *jk = cuda_kernel_from_ptx(be, k, ptx, n, names, true, err, errlen);
  free(names);
  return jk;
}

void cuda_release(jit_backend *be, jit_kernel *jk) {
  if (jk) free_kernel(be->impl, jk);
}
