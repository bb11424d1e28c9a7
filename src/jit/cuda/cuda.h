/*
** cuda.h -- internal to src/jit/cuda: the backend's state and how its files
** divide the work.
**
**   cuda_backend.c  create/destroy, device memory (jit.h), host requests
**                   (serve), turning driver failures into messages
**   cuda_module.c   PTX -> a loaded module and a jit_kernel of its entries
**   cuda_launch.c   the launch block (rt_context and what it points to) and
**                   the tasks as grid launches (the schedule: src/jit/launch.c)
** with the compiler (liblattice; LLVM):
**   cuda_jit.c      jit_cuda_create: the backend that compiles, the PTX of
**                   the runtime's request kernel, the offline cache
**   cuda_compile.c  kernel -> PTX (shared code generator) -> module, off the
**                   Lua thread for compile_start
**   cuda_aot.c      the PTX of AOT modules
** and without (liblattice_rt): cuda_runonly.c. The first four need no LLVM
** header.
*/
#ifndef LATTICE_JIT_CUDA_H
#define LATTICE_JIT_CUDA_H

#include "../jit.h"
#include "cuda_driver.h"

/* The symbol of one PTX entry (one per task), as the code generator names it. */
typedef char cuda_entry_name[160];

/* A test harness's hooks (tests/cuda/cuda_emulate.c, which gives the mock
** driver host builds of the kernels to run): set once per process, before
** any backend is created (NULL: none, the default). attach is called by
** every jit_cuda_create with the driver library's dlopen handle and returns
** the harness's state for that backend, or NULL (then nothing else is
** called for it; err may say why); kernel_loaded after each kernel's module
** is loaded (false: the compilation fails with err); detach when the
** backend is destroyed. */
typedef struct {
  void *(*attach)(void *driver_lib, char *err, size_t errlen);
  bool (*kernel_loaded)(void *state, ir_kernel *k, CUmodule mod, int ntasks, const cuda_entry_name *names,
                        char *err, size_t errlen);
  void (*detach)(void *state);
} cuda_test_hooks;
void cuda_set_test_hooks(const cuda_test_hooks *h);
extern const cuda_test_hooks *cuda_hooks;   /* cuda_backend.c */

typedef struct {
  cuda_driver drv;
  void *hooked;                 /* cuda_hooks' state for this backend; NULL: none */
  cuda_device_info info;
  CUdevice dev;
  CUcontext ctx;
  bool lost;                    /* a fault destroyed the context: every call fails */
  char lost_why[320];           /* the failure that lost it */
  bool debug;
  bool dump_ptx;                /* jit_options.dump_ptx */
  char sm[16];                  /* the PTX target, e.g. "sm_90" */
  char *libdevice;              /* path, or NULL when not found */
  jit_cache cache;              /* the offline cache of PTX (kcache.h); dir NULL: off */
  char *backend_line;           /* its keys' backend line (jit_kernel_key) */
  int block_size;               /* threads per block unless a task sets block_dim */
  /* host requests (serve): lt_serve and a device copy of one rt_request */
  CUmodule service;
  CUfunction serve_fn;
  CUdeviceptr req;
  /* the launch block (cuda_launch.c), grown on demand */
  CUdeviceptr block;
  size_t block_bytes;
  char *host_block;             /* its host copy, filled at each launch, then (at
                                   block_bytes) room for the head read back; page-locked
                                   (cuMemAllocHost) so both copies are asynchronous */
  bool host_pinned;             /* host_block came from cuMemAllocHost, not malloc */
  CUdeviceptr print;            /* device print buffer */
  uint64_t print_cap;
  CUevent *marks;               /* the profiler's marks (cuda_mark), made on first use */
  int nmarks;
} cuda_impl;

/* jit_kernel.impl */
typedef struct {
  CUmodule mod;
  CUfunction *fns;              /* one per task */
  int *max_threads;             /* per task: the most threads a block may have */
} cuda_kernel;

/* Checks a driver call: false with "what: <driver text>" in be->error when r
** is an error, and marks the context lost when the error is one the driver
** cannot recover from (a fault in a kernel). */
bool cuda_check(jit_backend *be, CUresult r, const char *what);
/* false with a message when the context was lost earlier. */
bool cuda_alive(jit_backend *be);

/* cuda_backend.c: the backend on device 0 with the driver of o, without a
** compiler (be->compile NULL); service(sm) gives the PTX of the runtime's
** request kernel lt_serve (malloc'd, or NULL with the message). */
typedef char *(*cuda_service_fn)(const char *sm, char *err, size_t errlen);
jit_backend *cuda_open(const jit_options *o, cuda_service_fn service, char *err, size_t errlen);

/* cuda_runonly.c: the runtime library's backend (no compiler; PTX of AOT
** modules only); jit_default_compiler of compiler_none.c */
jit_backend *jit_cuda_create_runonly(const jit_options *o, char *err, size_t errlen);

/* cuda_compile.c */
jit_kernel *cuda_compile(jit_backend *be, ir_kernel *k, char *err, size_t errlen);
jit_pending *cuda_compile_start(jit_backend *be, ir_kernel *k, char *err, size_t errlen);
jit_kernel *cuda_compile_wait(jit_backend *be, jit_pending *p, char *err, size_t errlen);

/* cuda_module.c: PTX text as a module; false with the driver's log in err */
bool cuda_load_module(jit_backend *be, const char *ptx, const char *what, CUmodule *mod, char *err,
                      size_t errlen);
/* k's kernel from its PTX with entries names[0..ntasks-1] (the test hooks
** see it loaded); NULL with the message */
jit_kernel *cuda_kernel_from_ptx(jit_backend *be, ir_kernel *k, const char *ptx, int ntasks,
                                 const cuda_entry_name *names, bool needs_runtime, char *err, size_t errlen);
void cuda_release(jit_backend *be, jit_kernel *jk);
/* jit_backend.load_ptx: an AOT module's PTX for k (entries PREFIX_taskN) */
jit_kernel *cuda_load_ptx(jit_backend *be, ir_kernel *k, const char *ptx, const char *prefix, char *err,
                          size_t errlen);

/* cuda_launch.c: jit_backend.launch_begin, run_task, launch_end */
bool cuda_launch_begin(jit_backend *be, jit_kernel *jk, rt_context *ctx);
bool cuda_run_task(jit_backend *be, jit_kernel *jk, int i, rt_context *ctx, int stage);
bool cuda_launch_end(jit_backend *be, jit_kernel *jk, rt_context *ctx, bool ok);
void cuda_launch_free(jit_backend *be);
/* jit_backend.mark, mark_ms: the profiler's marks as events on the null stream */
bool cuda_mark(jit_backend *be, int slot);
bool cuda_mark_ms(jit_backend *be, int a, int b, double *ms);

#endif
