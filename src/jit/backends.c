/*
** backends.c -- jit_backend_create: the backend for an arch name. The program
** layer (src/program) reaches the backends only through this function and
** the jit_backend's function pointers.
*/
#include <stdio.h>
#include <string.h>

#include "jit.h"

jit_backend *jit_backend_create(const char *arch, int threads, bool debug, const char *cuda_driver, char *err,
                                size_t errlen) {
  if (strcmp(arch, "cpu") == 0) return jit_cpu_create(threads, debug, err, errlen);
  if (strcmp(arch, "cuda") == 0) return jit_cuda_create(cuda_driver, debug, err, errlen);
  snprintf(err, errlen, "unknown arch '%s'", arch);
  return NULL;
}
