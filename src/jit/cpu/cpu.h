/*
** cpu.h -- what the CPU backend offers beyond jit.h (jit_cpu_create).
*/
#ifndef LATTICE_JIT_CPU_H
#define LATTICE_JIT_CPU_H

#include <pthread.h>

#include <llvm-c/LLJIT.h>

#include "../jit.h"
#include "cpu_exec.h"
#include "../llvm/llvm_codegen.h"

/* The optimised LLVM IR that be (from jit_cpu_create) would run for k, as
** malloc'd text (the modules k's tasks are compiled as, one after another);
** NULL with a message in err on failure. For tests (checking that loops
** vectorize) and for inspecting generated code. */
char *jit_cpu_llvm_ir(jit_backend *be, ir_kernel *k, char *err, size_t errlen);

/* ---- internal to src/jit/cpu ---- */

/* Sets, once per process, the LLVM options all of the backend's code is made
** with (before the first compilation: cpu_host_open and the AOT compiler call
** it). */
void cpu_llvm_options(void);

/* An ORC JIT for the host, with the process's symbols (libm) visible, and
** the host's triple, CPU and features for each compilation's target machine
** (cpu_backend.c; the test suite's mock-GPU builds use one too,
** tests/cuda/cuda_emulate.c). Target machines are kept for reuse, up to
** CPU_SPARE_TMS: making one costs about 1.3 ms (the X86 subtarget's
** tables), a third of what an empty kernel costs to compile. A target
** machine must not be used by two threads at once, so a compiling thread
** takes one and gives it back. */
enum { CPU_SPARE_TMS = 16 };

typedef struct {
  LLVMOrcLLJITRef jit;
  char *triple, *cpu, *features;
  pthread_mutex_t tm_mu;           /* guards spare_tm */
  LLVMTargetMachineRef spare_tm[CPU_SPARE_TMS];
  int nspare_tm;
} cpu_host;
bool cpu_host_open(cpu_host *h, char *err, size_t errlen);
void cpu_host_close(cpu_host *h);
/* A target machine for the host, for this thread alone until given back
** (a spare one, else a new one); NULL if LLVM cannot make one. PIC and the
** small code model suit the JIT's linker (calls into libm go through its
** stubs). */
LLVMTargetMachineRef cpu_host_take_tm(cpu_host *h);
void cpu_host_give_tm(cpu_host *h, LLVMTargetMachineRef tm);   /* NULL: nothing */

typedef struct {
  cpu_exec exec;                  /* first: cpu_run.c and cpu_memory.c see only this */
  cpu_host host;
  bool debug;
  bool dump_llvm;                 /* jit_options.dump_llvm */
  unsigned serial;                /* makes symbols unique across kernels */
  /* the offline cache (kcache.h): entries' symbols are ltk_<key hash>_taskN,
  ** so a key already linked here is compiled afresh under a serial name */
  jit_cache cache;                /* dir NULL: off */
  char *backend_line;             /* the key's backend line (jit_kernel_key) */
  uint64_t *live;                 /* key hashes of the linked cached kernels */
  int nlive, live_cap;
} cpu_impl;

extern const cg_target cpu_target;  /* cpu_backend.c: math functions, runtime bitcode */
/* err = "what: <the message of e>"; consumes e (cpu_backend.c) */
void cpu_llvm_error(LLVMErrorRef e, const char *what, char *err, size_t errlen);

/* cpu_compile.c: k's optimised LLVM module for target machine tm (of
** `triple`), symbols PREFIX_taskN, with the tasks i where only[i] is set
** (NULL: every task; cg_build_tasks); verify: check the IR LLVM made. false
** with the message (nothing to free then). Shared with cpu_aot.c, which
** makes one module of every task. */
bool cpu_build(ir_kernel *k, const char *prefix, const char *triple, bool verify, LLVMContextRef ctx,
               LLVMTargetMachineRef tm, const unsigned char *only, cg_module *m, char *err, size_t errlen);

/* cpu_compile.c: jit_backend.compile, compile_start, compile_wait */
jit_kernel *cpu_compile(jit_backend *be, ir_kernel *k, char *err, size_t errlen);
jit_pending *cpu_compile_start(jit_backend *be, ir_kernel *k, char *err, size_t errlen);
jit_kernel *cpu_compile_wait(jit_backend *be, jit_pending *p, char *err, size_t errlen);

/* cpu_backend.c: the set of cache keys whose kernels are linked (or being
** compiled); add is false when out of memory */
bool cpu_live_has(const cpu_impl *im, uint64_t hash);
bool cpu_live_add(cpu_impl *im, uint64_t hash);
void cpu_live_remove(cpu_impl *im, uint64_t hash);


#endif
