/*
** compiler.c -- jit_default_compiler: the compiler as the program layer
** (src/program) reaches it -- the IR passes, a backend per arch, the test
** suite's PTX check. liblattice links this file; a library built without
** the compiler supplies its own jit_default_compiler (returning NULL), so
** the program layer never names the compiler's functions.
*/
#include <stdio.h>
#include <string.h>

#include "../ir/passes/passes.h"
#include "jit.h"

static jit_backend *backend_create(const char *arch, int threads, const jit_options *o, char *err, size_t errlen) {
  if (strcmp(arch, "cpu") == 0) return jit_cpu_create(threads, o, err, errlen);
  if (strcmp(arch, "cuda") == 0) return jit_cuda_create(o, err, errlen);
  snprintf(err, errlen, "unknown arch '%s'", arch);
  return NULL;
}

static const jit_compiler compiler = {
  .passes = ir_compile,
  .backend = backend_create,
  .check_ptx = jit_ptxas_check,
  .cpu_module = jit_cpu_module,
  .cuda_module_ptx = jit_cuda_module_ptx,
  .check_ptx_text = jit_ptxas_text,
};

const jit_compiler *jit_default_compiler(void) { return &compiler; }
