/* service_ptx.c -- build-time tool: writes the PTX of the sparse runtime's
** request kernel lt_serve (cg_ptx_service) for one SM to a file, for the
** runtime library's CUDA backend, which has no code generator
** (src/jit/cuda/cuda_runonly.c embeds it).
**   service_ptx OUT.ptx SM
** Without an NVPTX target in this LLVM the file is empty: the runtime
** library then says that its CUDA backend is missing. */
#include <stdio.h>
#include <stdlib.h>

#include "jit/llvm/llvm_codegen.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: service_ptx OUT.ptx SM\n");
    return 1;
  }
  char err[1024] = "";
  char *ptx = cg_ptx_service(argv[2], err, sizeof err);
  FILE *f = fopen(argv[1], "w");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  if (ptx) fputs(ptx, f);
  else fprintf(stderr, "service_ptx: no PTX for %s (%s); liblattice_rt will have no CUDA backend\n", argv[2], err);
  free(ptx);
  return fclose(f) == 0 ? 0 : 1;
}
