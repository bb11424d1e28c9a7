/*
** cuda_runonly.c -- the CUDA backend of the runtime library (liblattice_rt,
** docs/aot.md): it runs the PTX of AOT modules (jit_backend.load_ptx) and
** compiles nothing (be->compile is NULL). The runtime's request kernel
** lt_serve is PTX for sm_70 made when Lattice was built (cmake/service_ptx.c)
** and embedded here; the driver's JIT runs it on any later GPU.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

extern const unsigned char *lt_service_ptx_sm70;   /* cmake/service_ptx.c via cmake/embed.c */
extern const size_t lt_service_ptx_sm70_size;

static char *service(const char *sm, char *err, size_t errlen) {
  (void)sm;   /* sm_70 PTX runs on every GPU Lattice supports */
  if (lt_service_ptx_sm70_size == 0) {
    snprintf(err, errlen, "this runtime library was built without an NVPTX target in LLVM, so it has no request "
             "kernel for GPUs: it runs on the CPU only");
    return NULL;
  }
  char *ptx = strdup((const char *)lt_service_ptx_sm70);
  if (!ptx) snprintf(err, errlen, "out of memory");
  return ptx;
}

jit_backend *jit_cuda_create_runonly(const jit_options *o, char *err, size_t errlen) {
  return cuda_open(o, service, err, errlen);
}
