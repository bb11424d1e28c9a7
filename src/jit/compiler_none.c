/*
** compiler_none.c -- jit_default_compiler of the runtime library
** (liblattice_rt, docs/aot.md): no IR passes and no code generation, only
** the run-only backends (CPU; CUDA, which runs the PTX of modules). The program layer then refuses to compile a
** kernel with a message saying so; the library's kernels come ready-made.
** liblattice links compiler.c instead.
*/
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_exec.h"
#include "cuda/cuda.h"
#include "jit.h"

static jit_backend *backend_create(const char *arch, int threads, const jit_options *o, char *err, size_t errlen) {
  if (strcmp(arch, "cpu") == 0) return jit_cpu_create_runonly(threads, err, errlen);
  if (strcmp(arch, "cuda") == 0) return jit_cuda_create_runonly(o, err, errlen);
  snprintf(err, errlen, "unknown arch '%s'", arch);
  return NULL;
}

static const jit_compiler compiler = {.passes = NULL, .backend = backend_create, .check_ptx = NULL, .cpu_module = NULL};

const jit_compiler *jit_default_compiler(void) { return &compiler; }
