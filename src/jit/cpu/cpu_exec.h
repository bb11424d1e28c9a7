/*
** cpu_exec.h -- the half of the CPU backend that runs code and moves memory,
** without LLVM: the thread pool, the task kinds (cpu_run.c) and host memory
** (cpu_memory.c). The compiling backend (cpu_backend.c) and the run-only one
** of the runtime library (cpu_runonly.c) both start their impl with it.
*/
#ifndef LATTICE_JIT_CPU_EXEC_H
#define LATTICE_JIT_CPU_EXEC_H

#include "../../runtime/host/threadpool.h"
#include "../jit.h"

/* The first member of every CPU backend's impl: be->impl points to one. */
typedef struct {
  rt_pool *pool;
  int64_t gc_workers;             /* of the task_gc being run (cpu_run.c) */
  /* a table per pool thread for buffered appends (rt_append_table), made
  ** when a task first runs against a sparse runtime; NULL before, and for
  ** good with one thread or no memory (appends are then the plain ones) */
  char *append_tables;
  bool append_tried;
} cpu_exec;

/* Frees what cpu_run.c made (the append tables); the pool is the owner's. */
void cpu_exec_free(cpu_exec *ex);

/* cpu_memory.c: sets be's device-memory functions (host memory) */
void cpu_memory_init(jit_backend *be);

/* cpu_run.c: jit_backend.run_task, every kind on the calling thread or the pool */
bool cpu_run_task(jit_backend *be, jit_kernel *jk, int i, rt_context *ctx, int stage);

/* cpu_runonly.c: a CPU backend that runs kernels compiled elsewhere (AOT
** modules) and has no compiler: be->compile is NULL. threads <= 0: one per
** core. For the runtime library (jit_default_compiler of compiler_none.c). */
jit_backend *jit_cpu_create_runonly(int threads, char *err, size_t errlen);

#endif
