/*
** cuda_jit.c -- jit_cuda_create: the CUDA backend of liblattice, which
** compiles kernels (cuda_compile.c). On top of the backend that runs PTX
** (cuda_backend.c): the PTX of the runtime's request kernel made by the code
** generator (once per process and SM), libdevice, and the offline cache.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../llvm/llvm_codegen.h"
#include "cuda.h"

extern const unsigned char *lt_runtime_bc_nvptx64;   /* the runtime's bitcode (cmake/embed.c) */
extern const size_t lt_runtime_bc_nvptx64_size;

/* lt_serve's PTX (cg_ptx_service): a few hundred ms (the whole runtime at
** O3), so made once per process and SM and kept for later lt.init calls. */
static pthread_mutex_t service_mu = PTHREAD_MUTEX_INITIALIZER;
static char *service_ptx, service_sm[16];

static char *service(const char *sm, char *err, size_t errlen) {
  pthread_mutex_lock(&service_mu);
  if (!service_ptx || strcmp(service_sm, sm) != 0) {
    free(service_ptx);
    service_ptx = cg_ptx_service(sm, err, errlen);
    snprintf(service_sm, sizeof service_sm, "%s", sm);
  }
  char *copy = service_ptx ? strdup(service_ptx) : NULL;
  pthread_mutex_unlock(&service_mu);
  if (service_ptx && !copy) snprintf(err, errlen, "out of memory");
  return copy;
}

/* The offline cache of PTX and the backend line of its keys: the target SM,
** libdevice (its path and size), LLVM, the runtime bitcode and the build. The
** driver keeps its own cache of the machine code it makes from the PTX. */
static bool cache_setup(cuda_impl *im, const jit_options *o, char *err, size_t errlen) {
  char target[1024];
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  long long ldsize = -1;
  FILE *f = im->libdevice ? fopen(im->libdevice, "rb") : NULL;
  if (f) {
    if (fseek(f, 0, SEEK_END) == 0) ldsize = ftell(f);
    fclose(f);
  }
  snprintf(target, sizeof target, "cuda %s libdevice %s %lld llvm %u.%u.%u", im->sm, im->libdevice ? im->libdevice : "-",
           ldsize, major, minor, patch);
  if (!jit_cache_open(&im->cache, &im->backend_line, o, target, lt_runtime_bc_nvptx64, lt_runtime_bc_nvptx64_size)) {
    snprintf(err, errlen, "out of memory creating the CUDA backend");
    return false;
  }
  return true;
}

jit_backend *jit_cuda_create(const jit_options *o, char *err, size_t errlen) {
  jit_backend *be = cuda_open(o, service, err, errlen);
  if (!be) return NULL;
  cuda_impl *im = be->impl;
  im->libdevice = jit_find_libdevice(o);
  if (o && o->cache_dir && *o->cache_dir && !cache_setup(im, o, err, errlen)) {
    be->destroy(be);
    return NULL;
  }
  be->compile = cuda_compile;
  be->compile_start = cuda_compile_start;
  be->compile_wait = cuda_compile_wait;
  return be;
}
