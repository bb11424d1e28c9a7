/*
** jit.h -- what every backend offers: compile an offloaded kernel, run its
** tasks, move memory; and jit_launch, the one schedule of a kernel call.
**
** A backend folder (src/jit/cpu, src/jit/cuda) implements one jit_backend.
** The shared LLVM code generator lives in src/jit/llvm (llvm_codegen.h);
** launch.c, jit_task.c and jit_sparse.c need no LLVM header.
*/
#ifndef LATTICE_JIT_H
#define LATTICE_JIT_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/ir.h"
#include "../runtime/context.h"
#include "kcache.h"

/* A compiled task: fn(ctx, thread_id, begin, end) runs iterations [begin, end)
** of a range_for task, or the whole serial task when called with (0, 1).
** The sparse tasks (docs/runtime.md, "Code generation for sparse SNodes"):
**   task_clear_list L        fn(ctx, 0, 0, 1) empties L's list
**   task_listgen P->L        elements [begin, end) of P's list (the launcher
**                            builds the root's list itself)
**   task_struct_for S        elements [begin, end) of S's list, every active
**                            cell of each
**   task_deactivate_all D    elements [begin, end) of D's list
**   task_gc D                fn(ctx, worker, stage, nworkers): stages 0 and 2
**                            by every worker 0..nworkers-1, stage 1 once
** (How a backend runs each kind: jit_backend.run_task.) */
typedef void (*jit_task_fn)(rt_context *ctx, int thread_id, int64_t begin, int64_t end);

typedef struct {
  ir_op kind;                   /* the task's op (IR_task_*) */
  ir_task_range range;          /* copied from the IR */
  jit_task_fn fn;
  /* sparse tasks: the level (aux), its parent level, its tree and the
  ** tree's root SNode, and the offset of its container inside a parent
  ** cell (task_listgen) */
  int32_t snode, parent, tree, root;
  int64_t child_offset;
} jit_task;

typedef struct jit_sparse jit_sparse;  /* jit_sparse.h */

/* Whether op is one of the list/struct-for/gc tasks: a task of emit family
** sparse in ops.def (the kinds with an SNode in jit_task). */
static inline bool jit_task_is_sparse(ir_op op) {
  return (ir_op_flags(op) & IR_TASK) && ir_op_emit(op) == IR_EMIT_sparse;
}

/* Fills t's kind, range and (sparse tasks) SNode fields from task s of k;
** fn is the backend's to set (jit_task.c). */
void jit_task_describe(jit_task *t, ir_kernel *k, ir_stmt *s);

typedef struct jit_kernel jit_kernel;
struct jit_kernel {
  const char *name;
  int ntasks;
  jit_task *tasks;
  bool needs_runtime;           /* some task uses rt_context.runtime (sparse SNodes) */
  int64_t gtmp_bytes;           /* size of the global temporaries (rt_context.gtmp) */
  void *impl;                   /* backend-private (e.g. the ORC resource tracker) */
  double compile_ms;            /* making its code: LLVM optimisation and code generation (or
                                   reading the offline cache), and loading it; not the time it
                                   waited for a thread */
  bool cached;                  /* the code came from the offline cache */
  uint64_t cache_hash;          /* its key's hash when it is a cache entry; 0: none */
  int32_t *profile_slots;       /* its records in the profile of profile_id (profile.c); NULL: none yet */
  uint64_t profile_id;
};


/* Frees jk's description (name, tasks, jk itself; NULL: nothing), after its
** backend has let go of what impl holds (jit_task.c). */
void jit_kernel_free(jit_kernel *jk);

typedef struct jit_pending jit_pending;   /* a compilation under way */

struct rt_runtime;
struct rt_request;   /* src/runtime/service.h */

/* ---- device memory --------------------------------------------------------
** Fields, the sparse runtime's pool and ndarrays live in the memory kernels
** see: host memory on the CPU (host_memory true: the functions below are
** memcpy and a device address may be dereferenced), GPU memory on CUDA
** (reached only through these copies; never dereference a device address on
** the host unless be->host_memory). Device addresses are typed char *.
** Every function returns false (or NULL) on failure with the reason in
** be->error; on CUDA a failure can mean the context was lost, after which
** every later call fails too. */

typedef struct jit_backend jit_backend;
struct jit_backend {
  const char *name;             /* "cpu", "cuda" */
  int threads;
  bool host_memory;
  /* zeroed memory; mem_free takes the size given to mem_alloc */
  char *(*mem_alloc)(jit_backend *be, uint64_t bytes);
  void (*mem_free)(jit_backend *be, char *p, uint64_t bytes);
  bool (*mem_read)(jit_backend *be, void *dst, const char *src, size_t n);
  bool (*mem_write)(jit_backend *be, char *dst, const void *src, size_t n);
  bool (*mem_zero)(jit_backend *be, char *dst, size_t n);
  /* Runs rt_serve(rt, req) (src/runtime/service.h) where the memory is: a
  ** direct call on the CPU; one GPU thread on CUDA, req copied there and back. */
  bool (*serve)(jit_backend *be, struct rt_runtime *rt, struct rt_request *req);
  char error[512];              /* why the last call above or launch failed */
  uint64_t default_pool;        /* pool bytes when lt.init sets no device_memory */
  uint64_t memory_bytes;        /* the device's memory (device_memory_fraction) */
  /* Compiles an offloaded kernel; NULL and a message in err on failure. */
  jit_kernel *(*compile)(jit_backend *be, ir_kernel *k, char *err, size_t errlen);
  /* The same in two calls: compile_start begins compiling on another thread
  ** and returns at once (NULL and err only when out of memory); k must stay
  ** unchanged and alive until compile_wait, which finishes the work on the
  ** calling thread and returns what compile would have. Every started
  ** compilation must be waited for. NULL in backends that cannot. */
  jit_pending *(*compile_start)(jit_backend *be, ir_kernel *k, char *err, size_t errlen);
  jit_kernel *(*compile_wait)(jit_backend *be, jit_pending *p, char *err, size_t errlen);

  /* ---- running a kernel: jit_launch (launch.c) calls launch_begin, then
  ** run_task for every task it does not skip, in order (three times for a
  ** task_gc: stage 0, 1, 2), then launch_end. Each returns false only when
  ** the device itself failed (be->error says why); errors of the kernel's
  ** code go to *ctx->error. */
  /* true: a task has finished when run_task returns, and its errors are in
  ** the caller's ctx (the CPU), so the schedule checks after every task.
  ** false: run_task queues the task (CUDA: the device's copy of ctx, whose
  ** entries return at once after an error) and launch_end brings the
  ** results back. */
  bool synchronous;
  /* Before the first task (NULL: nothing to do): e.g. the device's copy of
  ** ctx and what it points to. */
  bool (*launch_begin)(jit_backend *be, jit_kernel *jk, rt_context *ctx);
  /* Task i of jk, by kind (the tasks' signatures at jit_task_fn):
  **   task_serial, task_clear_list   once
  **   task_range_for                 [begin, end) on the backend's workers or
  **                                  grid; bounds in global temporaries
  **                                  (range.begin_gtmp/end_gtmp) as they are now
  **   task_listgen                   the elements of the parent's list (the
  **                                  schedule has set the root's list)
  **   task_struct_for,               the elements of the task level's list
  **   task_deactivate_all
  **   task_gc                        `stage` 0 and 2 by all workers, 1 by
  **                                  one; a backend may skip a GC with
  **                                  nothing recycled (all three stages)
  ** stage is 0 for every other kind. */
  bool (*run_task)(jit_backend *be, jit_kernel *jk, int i, rt_context *ctx, int stage);
  /* After a launch_begin that succeeded: after the last task, or after a
  ** failed run_task (ok false: nothing to wait for; return false). Waits
  ** for the tasks and brings back what the caller's ctx points to (ret,
  ** error, error_info, print records). NULL: nothing to do. */
  bool (*launch_end)(jit_backend *be, jit_kernel *jk, rt_context *ctx, bool ok);
  /* The profiler's clock (jit_launch_profiled, profile.h) on an
  ** asynchronous backend: mark queues time mark `slot` (0, 1, ...) behind
  ** the tasks queued so far (CUDA: an event); after a launch_end that
  ** succeeded, mark_ms gives the milliseconds from mark a to mark b. Each
  ** returns false when the device failed. NULL: the launcher reads the
  ** host's monotonic clock before and after run_task, which is right for a
  ** synchronous backend. */
  bool (*mark)(jit_backend *be, int slot);
  bool (*mark_ms)(jit_backend *be, int a, int b, double *ms);

  void (*release)(jit_backend *be, jit_kernel *jk);
  void (*destroy)(jit_backend *be);
  /* AOT modules on a GPU: the device's SM ("sm_90"), and a kernel made from
  ** PTX compiled elsewhere (entries PREFIX_taskN) for k, its final IR;
  ** released with `release`. NULL on backends without a GPU. */
  const char *device_sm;
  jit_kernel *(*load_ptx)(jit_backend *be, ir_kernel *k, const char *ptx, const char *prefix, char *err,
                          size_t errlen);
  void *impl;
};

/* Runs jk's tasks in order with ctx on be (launch.c): list reuse and the
** root's list through sp (the program's pool and sparse runtime; NULL:
** every list task runs), ctx->runtime taken from sp when NULL. Returns
** false when the launch failed, with *ctx->error saying how:
**   a task's error code (rt_error_code) raised by the kernel's code;
**   RT_ERR_RUNTIME: the sparse runtime recorded a failure (pool exhausted;
**     jit_sparse_take_error has the message), or a kernel that needs the
**     sparse runtime was launched without one;
**   RT_ERR_DEVICE: the device failed (be->error says why). */
bool jit_launch(jit_backend *be, jit_sparse *sp, jit_kernel *jk, rt_context *ctx);
/* The same, timing the launch and each task it runs into profile pf (and
** counting the list tasks it skips), unless pf is NULL (profile.h). */
typedef struct jit_profile jit_profile;
bool jit_launch_profiled(jit_backend *be, jit_sparse *sp, jit_kernel *jk, rt_context *ctx, jit_profile *pf);

/* ---- creating a backend ------------------------------------------------------
** What the program layer tells a backend and the code generator, read from
** the environment in one place (src/program/env.c) and handed down: the jit
** reads no environment variable itself. Strings are used during the call
** they are given to only; NULL or "" means unset. */
typedef struct {
  bool debug;                   /* lt.init{debug = true}: checked indices, ... */
  bool dump_llvm;               /* each kernel's optimised LLVM IR on stderr (CPU) */
  bool dump_ptx;                /* each kernel's PTX on stderr (CUDA) */
  const char *cuda_driver;      /* the driver library (unset: "libcuda.so.1") */
  const char *libdevice;        /* CUDA's libdevice.10.bc: this file only */
  const char *cuda_home;        /* else searched under these toolkits, */
  const char *cuda_path;        /* then the usual places (jit_find_libdevice) */
  const char *tmpdir;           /* for the files of tools (ptxas); unset: /tmp */
  const char *cache_dir;        /* the offline kernel cache (kcache.h); unset: none */
  uint64_t cache_max_bytes;     /* its size limit; 0: the default */
} jit_options;

/* The compiler as the program layer (src/program) reaches it: the IR passes
** (ir_compile), a backend for arch "cpu" or "cuda" (jit_cpu_create,
** jit_cuda_create with the options o), and the test suite's PTX check
** (jit_ptxas_check). liblattice defines jit_default_compiler in
** compiler.c; a library without the compiler defines one that returns NULL,
** and the program layer then says that it cannot compile. */
typedef struct {
  bool (*passes)(ir_kernel *k, bool verify, void (*dump)(const char *after_pass, ir_kernel *k, void *ud), void *ud);
  jit_backend *(*backend)(const char *arch, int threads, const jit_options *o, char *err, size_t errlen);
  bool (*check_ptx)(ir_kernel *k, const char *ptxas, const jit_options *o, char *err, size_t errlen);
  /* AOT modules: the machine code of kernels ks[0..n-1] for x86-64 CPU
  ** `cpu` (jit_cpu_module); NULL without the compiler */
  bool (*cpu_module)(ir_kernel *const *ks, int n, const char *cpu, const jit_options *o, void **so, size_t *len,
                     char *err, size_t errlen);
  /* ... and their PTX (jit_cuda_module_ptx), and the PTX check of it
  ** (jit_ptxas_text) */
  char *(*cuda_module_ptx)(ir_kernel *k, int index, const char *sm, const jit_options *o, char *err, size_t errlen);
  bool (*check_ptx_text)(const char *ptx, const char *sm, const char *what, const char *ptxas, const jit_options *o,
                         char *err, size_t errlen);
} jit_compiler;
const jit_compiler *jit_default_compiler(void);

/* The offline cache's key of the offloaded, final kernel k: `backend` (a
** line naming target, CPU, features, code generator and build), k's
** options, the layouts of the trees it touches and its IR with source
** locations (kernel_key.c). malloc'd text of *len bytes; NULL when out of
** memory. */
char *jit_kernel_key(ir_kernel *k, const char *backend, size_t *len);
/* The GNU build id of the object that holds the compiler, hashed; 0: none. */
uint64_t jit_build_hash(void);
/* A backend's cache (o->cache_dir, o->cache_max_bytes) and the backend line
** of its keys in *line: `target` (what the backend's code depends on: target,
** CPU or SM, LLVM's version, ...) and hashes of the runtime bitcode and of
** the build. false when out of memory (kernel_key.c). */
bool jit_cache_open(jit_cache *c, char **line, const jit_options *o, const char *target, const void *bitcode,
                    size_t bitcode_size);

/* The kernels ks[0..n-1] (offloaded, final) compiled for x86-64 CPU `cpu`
** ("x86-64-v3", not the host's) as position-independent code and linked by
** `cc -shared` into one shared object, malloc'd in *so (*len bytes); the
** tasks of ks[i] are the symbols ltm<i>_task<N>. Temporary files in
** o->tmpdir. false with the message (src/jit/cpu/cpu_aot.c). */
bool jit_cpu_module(ir_kernel *const *ks, int n, const char *cpu, const jit_options *o, void **so, size_t *len,
                    char *err, size_t errlen);

/* threads <= 0: one per core. o: debug and dump_llvm (NULL: all unset). */
jit_backend *jit_cpu_create(int threads, const jit_options *o, char *err, size_t errlen);

/* The CUDA backend on device 0, the driver loaded from o->cuda_driver;
** debug, dump_ptx and libdevice's place from o too (NULL: all unset); NULL
** with the reason in err (no driver, no GPU, a GPU older than sm_70, no
** NVPTX target in this LLVM). src/jit/cuda. */
jit_backend *jit_cuda_create(const jit_options *o, char *err, size_t errlen);
/* The device's copy speed for benchmarks: the median over reps of a
** device-to-device copy of `bytes`, timed with events, in ms; false with
** be->error on failure (be must be the CUDA backend). */
bool jit_cuda_copy_ms(jit_backend *be, uint64_t bytes, int reps, double *ms);

/* Emits PTX text for sm_XX from the same code generator (malloc'd string),
** or NULL with a message in err. Used by tests and by the CUDA backend. */
char *jit_emit_ptx(ir_kernel *k, const char *sm, char *err, size_t errlen);

/* The path of CUDA's libdevice (malloc'd), or NULL when not found:
** o->libdevice when set (and readable), else nvvm/libdevice/libdevice.10.bc
** under o->cuda_home, o->cuda_path, /usr/local/cuda,
** /usr/lib/nvidia-cuda-toolkit, /opt/cuda. o NULL: the usual places only. */
char *jit_find_libdevice(const jit_options *o);

/* Emits k's PTX (sm_70), with libdevice (found as jit_find_libdevice(o)
** does) linked when it is found, and assembles it with the ptxas at
** `ptxas`, its file in o->tmpdir; false with ptxas's complaint in err when
** it does not assemble (ptx_check.c). */
bool jit_ptxas_check(ir_kernel *k, const char *ptxas, const jit_options *o, char *err, size_t errlen);
/* Assembles PTX text made for `sm` with that ptxas (sm_70 as the oldest SM
** it has); false with ptxas's complaint naming `what` (ptx_check.c). */
bool jit_ptxas_text(const char *ptx, const char *sm, const char *what, const char *ptxas, const jit_options *o,
                    char *err, size_t errlen);

/* The PTX of kernel k (offloaded, final) for `sm` as an AOT module holds it:
** entries ltm<index>_task<N>, libdevice linked when it is found (o) and
** needed; malloc'd, or NULL with the message (src/jit/cuda/cuda_aot.c). */
char *jit_cuda_module_ptx(ir_kernel *k, int index, const char *sm, const jit_options *o, char *err, size_t errlen);

#endif
