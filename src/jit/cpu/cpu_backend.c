/*
** cpu_backend.c -- the CPU backend: ORC LLJIT for the host, tasks on the
** thread pool. One LLJIT per backend; each compiled kernel has its own
** resource tracker, so releasing a kernel frees its machine code.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "../../runtime/host/threadpool.h"
#include "../../runtime/runtime.h"
#include "../jit_sparse.h"
#include "../llvm/llvm_codegen.h"
#include "cpu.h"

extern const unsigned char *lt_runtime_bc_x86_64;
extern const size_t lt_runtime_bc_x86_64_size;

/* ---- target hooks --------------------------------------------------------- */

static const char *cpu_math_fn(ir_op op, ir_type t, char *buf, size_t len) {
  const char *sfx = t == IR_f32 ? "f32" : "f64", *f = t == IR_f32 ? "f" : "";
  const char *intrinsic = NULL, *libm = NULL;
  switch (op) {
  case IR_sqrt: intrinsic = "sqrt"; break;
  case IR_sin: intrinsic = "sin"; break;
  case IR_cos: intrinsic = "cos"; break;
  case IR_exp: intrinsic = "exp"; break;
  case IR_log: intrinsic = "log"; break;
  case IR_floor: intrinsic = "floor"; break;
  case IR_ceil: intrinsic = "ceil"; break;
  case IR_round: intrinsic = "round"; break;
  case IR_trunc: intrinsic = "trunc"; break;
  case IR_pow: intrinsic = "pow"; break;
  case IR_tan: libm = "tan"; break;
  case IR_asin: libm = "asin"; break;
  case IR_acos: libm = "acos"; break;
  case IR_atan: libm = "atan"; break;
  case IR_atan2: libm = "atan2"; break;
  default: return NULL;
  }
  if (intrinsic) snprintf(buf, len, "llvm.%s.%s", intrinsic, sfx);
  else snprintf(buf, len, "%s%s", libm, f);   /* tanf / tan: resolved from the process */
  return buf;
}

static const cg_target cpu_target = {"x86_64", &lt_runtime_bc_x86_64, &lt_runtime_bc_x86_64_size,
                                     cpu_math_fn, NULL};

/* ---- backend state ------------------------------------------------------------ */

typedef struct {
  LLVMOrcLLJITRef jit;
  LLVMTargetMachineRef tm;        /* for the optimisation pipeline */
  rt_pool *pool;
  bool debug;
  unsigned serial;                /* makes symbols unique across kernels */
} cpu_impl;

static void fmt_error(LLVMErrorRef e, const char *what, char *err, size_t errlen) {
  char *m = LLVMGetErrorMessage(e);
  snprintf(err, errlen, "%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- compile ------------------------------------------------------------------- */

/* Generates and optimises the module of k in the context of tsc. */
static bool build(cpu_impl *im, ir_kernel *k, LLVMOrcThreadSafeContextRef tsc, cg_module *m, char *err,
                  size_t errlen) {
  char prefix[96];
  int n = cg_symbol_prefix(k, prefix, sizeof prefix);
  snprintf(prefix + n, sizeof prefix - (size_t)n, "_%u", im->serial++);   /* unique symbols */
  if (!cg_build(&cpu_target, LLVMOrcThreadSafeContextGetContext(tsc), k, prefix, m, err, errlen))
    return false;
  LLVMSetDataLayout(m->mod, LLVMOrcLLJITGetDataLayoutStr(im->jit));
  LLVMSetTarget(m->mod, LLVMOrcLLJITGetTripleString(im->jit));
  bool ok = cg_optimize(m->mod, im->tm, err, errlen);
  if (ok && im->debug) {
    char *msg = NULL;
    if (LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &msg)) {
      snprintf(err, errlen, "internal error: LLVM IR invalid after optimisation: %.700s", msg);
      ok = false;
    }
    LLVMDisposeMessage(msg);
  }
  if (!ok) {
    LLVMDisposeModule(m->mod);
    cg_module_free(m);
  }
  return ok;
}

char *jit_cpu_llvm_ir(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  cg_module m;
  char *text = NULL;
  if (build(be->impl, k, tsc, &m, err, errlen)) {
    char *s = LLVMPrintModuleToString(m.mod);
    text = strdup(s);
    LLVMDisposeMessage(s);
    LLVMDisposeModule(m.mod);
    cg_module_free(&m);
    if (!text) snprintf(err, errlen, "out of memory");
  }
  LLVMOrcDisposeThreadSafeContext(tsc);
  return text;
}

/* What the launcher needs to run a sparse task (cpu_sparse.c). */
static void sparse_fields(ir_kernel *k, ir_stmt *s, jit_task *t) {
  t->snode = t->parent = t->tree = t->root = -1;
  if (!cg_is_sparse_task(s->op) || !k->prog || s->aux < 0 || s->aux >= k->prog->nsnodes) return;
  const ir_snode *sn = k->prog->snodes[s->aux];
  const ir_snode *r = sn;
  while (r->parent) r = r->parent;
  t->snode = sn->id;
  t->parent = sn->parent ? sn->parent->id : -1;
  t->tree = sn->tree;
  t->root = r->id;
  t->child_offset = sn->offset;
}

static jit_kernel *cpu_compile(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  cpu_impl *im = be->impl;
  double t0 = now_ms();
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  cg_module m;
  if (!build(im, k, tsc, &m, err, errlen)) {
    LLVMOrcDisposeThreadSafeContext(tsc);
    return NULL;
  }
  if (getenv("LT_DUMP_LLVM")) {   /* debugging aid: the optimised module on stderr */
    char *s = LLVMPrintModuleToString(m.mod);
    fprintf(stderr, "%s\n", s);
    LLVMDisposeMessage(s);
  }

  jit_kernel *jk = calloc(1, sizeof *jk);
  jit_task *tasks = calloc((size_t)(m.ntasks ? m.ntasks : 1), sizeof *tasks);
  char *name = strdup(k->name ? k->name : "kernel");
  if (!jk || !tasks || !name) {
    free(jk); free(tasks); free(name);
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    goto fail_mod;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(im->jit);
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(jd);
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m.mod, tsc);
  LLVMOrcDisposeThreadSafeContext(tsc);   /* the module keeps the context alive */
  LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModuleWithRT(im->jit, rt, tsm);
  if (e) {
    fmt_error(e, "cannot add the kernel to the JIT", err, errlen);   /* tsm is the JIT's now */
    goto fail_rt;
  }
  int i = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next, i++) {
    LLVMOrcExecutorAddress addr = 0;
    e = LLVMOrcLLJITLookup(im->jit, &addr, m.names[i]);
    if (e) {
      fmt_error(e, "JIT compilation failed", err, errlen);
      goto fail_rt;
    }
    tasks[i].kind = s->op;
    tasks[i].range = s->range;
    tasks[i].fn = (jit_task_fn)(uintptr_t)addr;
    sparse_fields(k, s, &tasks[i]);
  }
  jk->name = name;
  jk->ntasks = m.ntasks;
  jk->tasks = tasks;
  jk->needs_runtime = m.needs_runtime;
  jk->impl = rt;
  cg_module_free(&m);
  jk->compile_ms = now_ms() - t0;
  return jk;

fail_rt:
  e = LLVMOrcResourceTrackerRemove(rt);
  if (e) LLVMConsumeError(e);
  LLVMOrcReleaseResourceTracker(rt);
  free(jk); free(tasks); free(name);
  cg_module_free(&m);
  return NULL;
fail_mod:
  LLVMDisposeModule(m.mod);
  LLVMOrcDisposeThreadSafeContext(tsc);
  cg_module_free(&m);
  return NULL;
}

/* ---- launch ---------------------------------------------------------------------- */

typedef struct {
  jit_task_fn fn;
  rt_context *ctx;
} range_job;

static void run_range(void *ud, int thread_id, int64_t begin, int64_t end) {
  range_job *j = ud;
  /* after a failure the remaining chunks are skipped */
  if (__atomic_load_n(j->ctx->error, __ATOMIC_RELAXED) != 0) return;
  j->fn(j->ctx, thread_id, begin, end);
}

static int64_t bound(rt_context *ctx, int gtmp, int64_t constant) {
  if (gtmp < 0) return constant;
  int32_t v;
  memcpy(&v, ctx->gtmp + gtmp, sizeof v);
  return v;
}

/* Turns a failure the sparse runtime recorded (pool exhausted) into the
** task error RT_ERR_RUNTIME; the front end asks jit_sparse_take_error why. */
static bool runtime_failed(rt_context *ctx) {
  if (!ctx->runtime || __atomic_load_n(&ctx->runtime->error, __ATOMIC_ACQUIRE) == RT_RTERR_OK) return false;
  int32_t expected = RT_ERR_OK;
  __atomic_compare_exchange_n(ctx->error, &expected, RT_ERR_RUNTIME, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return true;
}

static bool cpu_launch(jit_backend *be, jit_kernel *jk, rt_context *ctx) {
  cpu_impl *im = be->impl;
  if (!ctx->runtime && be->sparse) ctx->runtime = jit_sparse_runtime(be->sparse);
  if (jk->needs_runtime && !ctx->runtime) {
    *ctx->error = RT_ERR_RUNTIME;   /* a sparse kernel launched without a runtime */
    return false;
  }
  int32_t reused = -1;
  for (int i = 0; i < jk->ntasks; i++) {
    jit_task *t = &jk->tasks[i];
    if (t->kind == IR_task_serial) {
      t->fn(ctx, 0, 0, 1);
    } else if (t->kind != IR_task_range_for) {
      cpu_sparse_task(im->pool, be->sparse, t, ctx, &reused);
    } else {
      int64_t b = bound(ctx, t->range.begin_gtmp, t->range.begin);
      int64_t e = bound(ctx, t->range.end_gtmp, t->range.end);
      range_job j = {t->fn, ctx};
      rt_pool_parallel_for(im->pool, b, e, t->range.block_dim > 0 ? t->range.block_dim : 0, run_range, &j);
    }
    if (__atomic_load_n(ctx->error, __ATOMIC_SEQ_CST) != 0) return false;
    if (runtime_failed(ctx)) return false;
  }
  return true;
}

static void cpu_release(jit_backend *be, jit_kernel *jk) {
  if (!jk) return;
  LLVMOrcResourceTrackerRef rt = jk->impl;
  LLVMErrorRef e = LLVMOrcResourceTrackerRemove(rt);
  if (e) LLVMConsumeError(e);
  LLVMOrcReleaseResourceTracker(rt);
  free((char *)jk->name);
  free(jk->tasks);
  free(jk);
}

static void cpu_destroy(jit_backend *be) {
  if (!be) return;
  cpu_impl *im = be->impl;
  if (im->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(im->jit);
    if (e) LLVMConsumeError(e);
  }
  if (im->tm) LLVMDisposeTargetMachine(im->tm);
  rt_pool_destroy(im->pool);
  free(im);
  free(be);
}

/* ---- create ------------------------------------------------------------------------ */

static bool runtime_ok;
static char runtime_err[512];

static void init_llvm(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  /* every RT_FUNCTIONS entry must be in the bitcode, checked once */
  runtime_ok = cg_runtime_check(&cpu_target, runtime_err, sizeof runtime_err);
}

static bool make_tm(cpu_impl *im, char *err, size_t errlen) {
  char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
  char *msg = NULL;
  LLVMTargetRef target;
  bool ok = !LLVMGetTargetFromTriple(triple, &target, &msg);
  if (ok) im->tm = LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelAggressive,
                                           LLVMRelocDefault, LLVMCodeModelJITDefault);
  else snprintf(err, errlen, "no LLVM target for the host (%s): %s", triple, msg);
  LLVMDisposeMessage(msg);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(feat);
  return ok && im->tm;
}

static bool make_jit(cpu_impl *im, char *err, size_t errlen) {
  LLVMOrcJITTargetMachineBuilderRef jtmb;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) { fmt_error(e, "cannot detect the host for the JIT", err, errlen); return false; }
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, jtmb);
  e = LLVMOrcCreateLLJIT(&im->jit, b);
  if (e) { fmt_error(e, "cannot create the LLVM JIT", err, errlen); im->jit = NULL; return false; }
  /* libm (tanf, atan2, ...) and anything else the process has */
  LLVMOrcDefinitionGeneratorRef gen;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(im->jit), NULL, NULL);
  if (e) { fmt_error(e, "cannot make the process symbols visible to the JIT", err, errlen); return false; }
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(im->jit), gen);
  return true;
}

jit_backend *jit_cpu_create(int threads, bool debug, char *err, size_t errlen) {
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
  im->debug = debug;
  if (!make_tm(im, err, errlen) || !make_jit(im, err, errlen)) { cpu_destroy(be); return NULL; }
  im->pool = rt_pool_create(threads);
  if (!im->pool) {
    snprintf(err, errlen, "cannot start %d worker threads for the CPU backend", threads);
    cpu_destroy(be);
    return NULL;
  }
  be->name = "cpu";
  be->threads = rt_pool_threads(im->pool);
  be->compile = cpu_compile;
  be->launch = cpu_launch;
  be->release = cpu_release;
  be->destroy = cpu_destroy;
  return be;
}
