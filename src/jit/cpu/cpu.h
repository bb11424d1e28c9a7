/*
** cpu.h -- what the CPU backend offers beyond jit.h (jit_cpu_create).
*/
#ifndef LATTICE_JIT_CPU_H
#define LATTICE_JIT_CPU_H

#include "../jit.h"

/* The optimised LLVM IR that be (from jit_cpu_create) would run for k, as
** malloc'd text; NULL with a message in err on failure. For tests (checking
** that loops vectorize) and for inspecting generated code. */
char *jit_cpu_llvm_ir(jit_backend *be, ir_kernel *k, char *err, size_t errlen);

#endif
