/*
** cpu_backend.c -- the CPU backend: ORC LLJIT for the host, tasks on the
** thread pool (cpu_run.c). One LLJIT per backend; each compiled kernel
** (cpu_compile.c) has its own resource tracker, so releasing a kernel frees
** its machine code.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/Support.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "../../runtime/host/threadpool.h"
#include "../../runtime/runtime.h"
#include "../llvm/llvm_codegen.h"
#include "cpu.h"

extern const unsigned char *lt_runtime_bc_x86_64;
extern const size_t lt_runtime_bc_x86_64_size;

/* ---- target hooks --------------------------------------------------------- */

/* Math as ops.def's cpu column says: LLVM intrinsics, or libm's tanf / tan
** resolved from the process. */
static const char *cpu_math_fn(ir_op op, ir_type t, char *buf, size_t len) {
  return cg_math_name(ir_op_cpu_math(op), "", op, t, buf, len);
}

const cg_target cpu_target = {.name = "x86_64",
                              .bc = &lt_runtime_bc_x86_64,
                              .bc_size = &lt_runtime_bc_x86_64_size,
                              .math_fn = cpu_math_fn,
                              .buffer_appends = true};

/* ---- backend state ------------------------------------------------------------ */

void cpu_llvm_error(LLVMErrorRef e, const char *what, char *err, size_t errlen) {
  char *m = LLVMGetErrorMessage(e);
  snprintf(err, errlen, "%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
}

/* ---- kernels -------------------------------------------------------------------- */

bool cpu_live_has(const cpu_impl *im, uint64_t hash) {
  for (int i = 0; i < im->nlive; i++)
    if (im->live[i] == hash) return true;
  return false;
}

bool cpu_live_add(cpu_impl *im, uint64_t hash) {
  if (im->nlive == im->live_cap) {
    int cap = im->live_cap ? 2 * im->live_cap : 16;
    uint64_t *l = realloc(im->live, (size_t)cap * sizeof *l);
    if (!l) return false;
    im->live = l;
    im->live_cap = cap;
  }
  im->live[im->nlive++] = hash;
  return true;
}

void cpu_live_remove(cpu_impl *im, uint64_t hash) {
  for (int i = 0; i < im->nlive; i++)
    if (im->live[i] == hash) {
      im->live[i] = im->live[--im->nlive];
      return;
    }
}

static void cpu_release(jit_backend *be, jit_kernel *jk) {
  if (!jk) return;
  if (jk->cache_hash) cpu_live_remove(be->impl, jk->cache_hash);
  LLVMOrcResourceTrackerRef rt = jk->impl;
  LLVMErrorRef e = LLVMOrcResourceTrackerRemove(rt);
  if (e) LLVMConsumeError(e);
  LLVMOrcReleaseResourceTracker(rt);
  jit_kernel_free(jk);
}

static void cpu_destroy(jit_backend *be) {
  if (!be) return;
  cpu_impl *im = be->impl;
  cpu_host_close(&im->host);
  rt_pool_destroy(im->exec.pool);
  cpu_exec_free(&im->exec);
  free((char *)im->cache.dir);
  free(im->backend_line);
  free(im->live);
  free(im);
  free(be);
}

/* ---- create ------------------------------------------------------------------------ */

static bool runtime_ok;
static char runtime_err[512];

/* LLVM's x86 pass that turns conditional moves into branches, where it
** judges a branch cheaper, makes the two fix-ups of a saturating float ->
** int conversion (past the largest int: that int; NaN: 0) into branches. In
** bench/dynamic.lua's append loop that made a taken jump after each of the
** two conversions and cost 5% at one thread (docs/performance_changes.md,
** "Dynamic appends: the conversions' fix-ups"); as conditional moves they
** are two instructions off the loop's critical path. The option is LLVM's
** process-wide state: set once, before any code is made.
** LLVMParseCommandLineOptions neither prints nor exits on an error (an LLVM
** without the x86 target has no such option, and nothing changes). */
static void set_llvm_options(void) {
  static const char *const args[] = {"lattice", "-x86-cmov-converter=false"};
  LLVMParseCommandLineOptions(2, args, NULL);
}

void cpu_llvm_options(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, set_llvm_options);
}

static void init_llvm(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  /* every RT_FUNCTIONS entry must be in the bitcode, checked once */
  runtime_ok = cg_runtime_check(&cpu_target, runtime_err, sizeof runtime_err);
}

bool cpu_host_open(cpu_host *h, char *err, size_t errlen) {
  cpu_llvm_options();
  memset(h, 0, sizeof *h);
  pthread_mutex_init(&h->tm_mu, NULL);
  h->triple = LLVMGetDefaultTargetTriple();
  h->cpu = LLVMGetHostCPUName();
  h->features = LLVMGetHostCPUFeatures();
  char *msg = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(h->triple, &target, &msg)) {
    snprintf(err, errlen, "no LLVM target for the host (%s): %s", h->triple, msg);
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMOrcJITTargetMachineBuilderRef jtmb;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) { cpu_llvm_error(e, "cannot detect the host for the JIT", err, errlen); return false; }
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, jtmb);
  e = LLVMOrcCreateLLJIT(&h->jit, b);
  if (e) { cpu_llvm_error(e, "cannot create the LLVM JIT", err, errlen); h->jit = NULL; return false; }
  /* libm (tanf, atan2, ...) and anything else the process has */
  LLVMOrcDefinitionGeneratorRef gen;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(h->jit), NULL, NULL);
  if (e) { cpu_llvm_error(e, "cannot make the process symbols visible to the JIT", err, errlen); return false; }
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(h->jit), gen);
  return true;
}

void cpu_host_close(cpu_host *h) {
  if (h->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(h->jit);
    if (e) LLVMConsumeError(e);
  }
  for (int i = 0; i < h->nspare_tm; i++) LLVMDisposeTargetMachine(h->spare_tm[i]);
  pthread_mutex_destroy(&h->tm_mu);
  LLVMDisposeMessage(h->triple);
  LLVMDisposeMessage(h->cpu);
  LLVMDisposeMessage(h->features);
  memset(h, 0, sizeof *h);
}

LLVMTargetMachineRef cpu_host_take_tm(cpu_host *h) {
  LLVMTargetMachineRef tm = NULL;
  pthread_mutex_lock(&h->tm_mu);
  if (h->nspare_tm) tm = h->spare_tm[--h->nspare_tm];
  pthread_mutex_unlock(&h->tm_mu);
  if (tm) return tm;
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(h->triple, &target, &msg)) {
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return LLVMCreateTargetMachine(target, h->triple, h->cpu, h->features, LLVMCodeGenLevelDefault, LLVMRelocPIC,
                                 LLVMCodeModelSmall);
}

void cpu_host_give_tm(cpu_host *h, LLVMTargetMachineRef tm) {
  if (!tm) return;
  pthread_mutex_lock(&h->tm_mu);
  if (h->nspare_tm < CPU_SPARE_TMS) {
    h->spare_tm[h->nspare_tm++] = tm;
    tm = NULL;
  }
  pthread_mutex_unlock(&h->tm_mu);
  if (tm) LLVMDisposeTargetMachine(tm);
}

/* The offline cache's directory and the backend line of its keys: what
** decides the machine code besides the kernel (kernel_key.c). */
static bool cache_setup(cpu_impl *im, const jit_options *o, char *err, size_t errlen) {
  char target[1024];
  unsigned major = 0, minor = 0, patch = 0;
  LLVMGetVersion(&major, &minor, &patch);
  snprintf(target, sizeof target, "cpu %s %s %s llvm %u.%u.%u", im->host.triple, im->host.cpu, im->host.features,
           major, minor, patch);
  if (!jit_cache_open(&im->cache, &im->backend_line, o, target, lt_runtime_bc_x86_64, lt_runtime_bc_x86_64_size)) {
    snprintf(err, errlen, "out of memory creating the CPU backend");
    return false;
  }
  return true;
}

jit_backend *jit_cpu_create(int threads, const jit_options *o, char *err, size_t errlen) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_llvm);
  if (!runtime_ok) {
    snprintf(err, errlen, "%s", runtime_err);
    return NULL;
  }
  jit_backend *be = calloc(1, sizeof *be);
  cpu_impl *im = calloc(1, sizeof *im);
  if (!be || !im) {
    free(be); free(im);
    snprintf(err, errlen, "out of memory creating the CPU backend");
    return NULL;
  }
  be->impl = im;
  im->debug = o && o->debug;
  im->dump_llvm = o && o->dump_llvm;
  if (!cpu_host_open(&im->host, err, errlen)) { cpu_destroy(be); return NULL; }
  if (o && o->cache_dir && *o->cache_dir && !cache_setup(im, o, err, errlen)) {
    cpu_destroy(be);
    return NULL;
  }
  im->exec.pool = rt_pool_create(threads);
  if (!im->exec.pool) {
    snprintf(err, errlen, "cannot start %d worker threads for the CPU backend", threads);
    cpu_destroy(be);
    return NULL;
  }
  be->name = "cpu";
  be->threads = rt_pool_threads(im->exec.pool);
  cpu_memory_init(be);
  be->compile = cpu_compile;
  be->compile_start = cpu_compile_start;
  be->compile_wait = cpu_compile_wait;
  be->synchronous = true;
  be->run_task = cpu_run_task;
  be->release = cpu_release;
  be->destroy = cpu_destroy;
  return be;
}
