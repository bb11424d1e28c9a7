/*
** cuda_aot.c -- PTX for AOT modules (docs/aot.md): a kernel's entries for a
** named SM under the module's symbol names (ltm<K>_task<N>), with libdevice
** linked in as the CUDA backend links it, so that the module's PTX needs
** nothing but the driver. The module loader hands it back to the backend
** (cuda_load_ptx, cuda_compile.c).
*/
#include <stdio.h>
#include <stdlib.h>

#include "../llvm/llvm_codegen.h"
#include "cuda.h"

char *jit_cuda_module_ptx(ir_kernel *k, int index, const char *sm, const jit_options *o, char *err, size_t errlen) {
  char *libdevice = jit_find_libdevice(o);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "ltm%d", index);
  cg_module info;
  char *ptx = cg_ptx_kernel(k, sm, libdevice != NULL, libdevice, prefix, &info, err, errlen);
  free(libdevice);
  if (ptx) cg_module_free(&info);
  return ptx;
}
