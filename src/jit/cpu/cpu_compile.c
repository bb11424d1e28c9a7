/*
** cpu_compile.c -- compiling a kernel for the CPU backend, in two halves:
**
**   object   IR -> LLVM module -> optimised -> machine code (an object file
**            in memory). Touches nothing shared: its own LLVM context and
**            target machine, and the kernel's IR read-only. So it may run on
**            another thread (compile_start) while Lua goes on.
**   link     the object into the backend's LLJIT under a resource tracker of
**            its own, and the task symbols looked up; on the Lua thread.
**
** be->compile does both in a row; compile_start runs the first half on a
** thread of its own and compile_wait joins it and links. lt.compile uses
** that to compile several kernels at once (docs/language.md).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "../llvm/llvm_codegen.h"
#include "cpu.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A target machine for the host: one per compilation, as a target machine
** must not be shared between threads. PIC and the small code model suit
** the JIT's linker (calls into libm go through its stubs). */
static LLVMTargetMachineRef host_tm(const cpu_impl *im) {
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(im->host.triple, &target, &msg)) {
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return LLVMCreateTargetMachine(target, im->host.triple, im->host.cpu, im->host.features, LLVMCodeGenLevelDefault,
                                 LLVMRelocPIC, LLVMCodeModelSmall);
}

/* Symbols of a cache entry: named by its key, so an object compiled in one
** run links in another next to kernels compiled there. */
static void cache_prefix(uint64_t hash, char *out, size_t len) {
  snprintf(out, len, "ltk_%016llx", (unsigned long long)hash);
}

/* The optimised module of k in ctx; symbols PREFIX_taskN, where PREFIX is
** the kernel's name and serial, or the cache key's when hash is not 0. */
static bool build(const cpu_impl *im, ir_kernel *k, unsigned serial, uint64_t hash, LLVMContextRef ctx,
                  LLVMTargetMachineRef tm, cg_module *m, char *err, size_t errlen) {
  char prefix[96];
  if (hash) {
    cache_prefix(hash, prefix, sizeof prefix);
  } else {
    int n = cg_symbol_prefix(k, prefix, sizeof prefix);
    snprintf(prefix + n, sizeof prefix - (size_t)n, "_%u", serial);   /* unique symbols */
  }
  return cpu_build(k, prefix, im->host.triple, im->debug, ctx, tm, m, err, errlen);
}

bool cpu_build(ir_kernel *k, const char *prefix, const char *triple, bool verify, LLVMContextRef ctx,
               LLVMTargetMachineRef tm, cg_module *m, char *err, size_t errlen) {
  if (!cg_build(&cpu_target, ctx, k, prefix, m, err, errlen)) return false;
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m->mod, dl);
  LLVMDisposeTargetData(dl);
  LLVMSetTarget(m->mod, triple);
  bool ok = cg_optimize(m->mod, tm, m->needs_runtime, err, errlen);
  if (ok && verify) {
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
  cpu_impl *im = be->impl;
  LLVMTargetMachineRef tm = host_tm(im);
  if (!tm) {
    snprintf(err, errlen, "cannot create a target machine for %s", im->host.triple);
    return NULL;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  cg_module m;
  char *text = NULL;
  if (build(im, k, im->serial++, 0, ctx, tm, &m, err, errlen)) {
    char *s = LLVMPrintModuleToString(m.mod);
    text = strdup(s);
    LLVMDisposeMessage(s);
    LLVMDisposeModule(m.mod);
    cg_module_free(&m);
    if (!text) snprintf(err, errlen, "out of memory");
  }
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return text;
}

/* ---- the first half: IR to an object file ----------------------------------------- */

struct jit_pending {
  cpu_impl *im;
  ir_kernel *k;
  unsigned serial;
  double object_ms;                /* make_object's own time, for compile_ms */
  /* results */
  bool ok;
  LLVMMemoryBufferRef obj;
  cg_module m;                     /* names, ntasks, needs_runtime (the module is gone) */
  char err[1024];
  /* compile_start */
  pthread_t thread;
  bool threaded;
  uint64_t ticket;                 /* start order (object_thread) */
  /* the offline cache: the key (NULL: not cached), its hash, and whether the
  ** object came from it */
  char *key;
  size_t keylen;
  uint64_t hash;
  bool hit;
};

/* ---- the offline cache ------------------------------------------------------------
** An entry's payload: u32 ntasks, u32 needs_runtime, then the object file. */

static int count_tasks(const ir_kernel *k) {
  int n = 0;
  for (const ir_stmt *s = k->body->first; s; s = s->next) n++;
  return n;
}

static uint32_t get32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

/* The object of p's kernel from the cache, with what building would have
** given (names, ntasks, needs_runtime); false on a miss. */
static bool from_cache(jit_pending *p) {
  void *payload = NULL;
  size_t n = 0;
  if (!jit_cache_get(&p->im->cache, p->key, p->keylen, &payload, &n)) return false;
  const unsigned char *b = payload;
  int ntasks = n >= 8 ? (int)get32(b) : -1;
  bool ok = ntasks == count_tasks(p->k) && get32(b + 4) <= 1 && n > 8;
  char (*names)[160] = ok ? calloc((size_t)(ntasks ? ntasks : 1), sizeof *names) : NULL;
  if (names) {
    char prefix[40];
    cache_prefix(p->hash, prefix, sizeof prefix);
    for (int i = 0; i < ntasks; i++) snprintf(names[i], sizeof names[i], "%s_task%d", prefix, i);
    p->obj = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)b + 8, n - 8, "lattice cache entry");
    p->m = (cg_module){.mod = NULL, .ntasks = ntasks, .names = names, .needs_runtime = get32(b + 4) != 0};
  }
  free(payload);
  if (!names || !p->obj) {
    free(names);
    return false;
  }
  p->ok = p->hit = true;
  return true;
}

static void to_cache(jit_pending *p) {
  size_t n = LLVMGetBufferSize(p->obj);
  unsigned char *b = malloc(n + 8);
  if (!b) return;
  put32(b, (uint32_t)p->m.ntasks);
  put32(b + 4, p->m.needs_runtime ? 1 : 0);
  memcpy(b + 8, LLVMGetBufferStart(p->obj), n);
  char why[256];
  jit_cache_put(&p->im->cache, p->key, p->keylen, b, n + 8, why, sizeof why);   /* best effort */
  free(b);
}

static void make_object_timed(jit_pending *p);

/* compile_ms counts the work, not the wait for a thread or for the first call */
static void make_object(jit_pending *p) {
  double t = now_ms();
  make_object_timed(p);
  p->object_ms = now_ms() - t;
}

static void make_object_timed(jit_pending *p) {
  if (p->key && from_cache(p)) return;
  LLVMTargetMachineRef tm = host_tm(p->im);
  if (!tm) {
    snprintf(p->err, sizeof p->err, "cannot create a target machine for %s", p->im->host.triple);
    return;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  if (build(p->im, p->k, p->serial, p->key ? p->hash : 0, ctx, tm, &p->m, p->err, sizeof p->err)) {
    if (p->im->dump_llvm) {   /* debugging aid: the optimised module on stderr */
      char *s = LLVMPrintModuleToString(p->m.mod);
      fprintf(stderr, "%s\n", s);
      LLVMDisposeMessage(s);
    }
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, p->m.mod, LLVMObjectFile, &msg, &p->obj)) {
      snprintf(p->err, sizeof p->err, "machine code generation for kernel '%s' failed: %s", p->k->name, msg);
      LLVMDisposeMessage(msg);
      cg_module_free(&p->m);
    } else {
      p->ok = true;
      if (p->key) to_cache(p);
    }
    LLVMDisposeModule(p->m.mod);
    p->m.mod = NULL;
  }
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
}

/* Background compilations run at most one per core, started in the order
** lt.compile asked for them: all at once they would share the cores and all
** finish late, while in order the kernels a script calls first are ready
** first and the last ones compile while the first ones run. A ticket is
** taken on the Lua thread (compile_start); a compilation starts when fewer
** than `width` compilations before it are unfinished (approximately: they
** may end out of order). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static uint64_t gate_next, gate_done;

static void gate_leave(void) {
  pthread_mutex_lock(&gate_mu);
  gate_done++;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
}

static void *object_thread(void *arg) {
  jit_pending *p = arg;
  long width = sysconf(_SC_NPROCESSORS_ONLN);
  if (width < 1) width = 1;
  pthread_mutex_lock(&gate_mu);
  while (p->ticket >= gate_done + (uint64_t)width) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  make_object(p);
  gate_leave();
  return NULL;
}

/* ---- the second half: into the JIT --------------------------------------------------- */

/* Links p's object; frees p. */
static jit_kernel *link_object(jit_pending *p, char *err, size_t errlen) {
  double t0 = now_ms();
  cpu_impl *im = p->im;
  ir_kernel *k = p->k;
  jit_kernel *jk = NULL;
  if (!p->ok) {
    snprintf(err, errlen, "%s", p->err);
    goto done;
  }
  jk = calloc(1, sizeof *jk);
  jit_task *tasks = calloc((size_t)(p->m.ntasks ? p->m.ntasks : 1), sizeof *tasks);
  char *name = strdup(k->name ? k->name : "kernel");
  if (!jk || !tasks || !name) {
    free(jk); free(tasks); free(name);
    jk = NULL;
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    goto done;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(im->host.jit);
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(jd);
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(im->host.jit, rt, p->obj);
  p->obj = NULL;   /* the JIT's now */
  int i = 0;
  for (ir_stmt *s = k->body->first; !e && s; s = s->next, i++) {
    LLVMOrcExecutorAddress addr = 0;
    e = LLVMOrcLLJITLookup(im->host.jit, &addr, p->m.names[i]);
    if (e) break;
    jit_task_describe(&tasks[i], k, s);
    tasks[i].fn = (jit_task_fn)(uintptr_t)addr;
  }
  if (e) {
    cpu_llvm_error(e, "JIT linking failed", err, errlen);
    e = LLVMOrcResourceTrackerRemove(rt);
    if (e) LLVMConsumeError(e);
    LLVMOrcReleaseResourceTracker(rt);
    free(jk); free(tasks); free(name);
    jk = NULL;
    goto done;
  }
  jk->name = name;
  jk->ntasks = p->m.ntasks;
  jk->tasks = tasks;
  jk->needs_runtime = p->m.needs_runtime;
  jk->gtmp_bytes = k->gtmp_size;
  jk->impl = rt;
  jk->compile_ms = p->object_ms + (now_ms() - t0);
  jk->cached = p->hit;
  jk->cache_hash = p->key ? p->hash : 0;
done:
  if (!jk && p->key) cpu_live_remove(im, p->hash);
  free(p->key);
  if (p->obj) LLVMDisposeMemoryBuffer(p->obj);
  if (p->ok) cg_module_free(&p->m);
  free(p);
  return jk;
}

/* ---- the backend's entry points ---------------------------------------------------- */

static jit_pending *pending_new(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  cpu_impl *im = be->impl;
  jit_pending *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    return NULL;
  }
  p->im = im;
  p->k = k;
  p->serial = im->serial++;
  if (im->cache.dir) {
    p->key = jit_kernel_key(k, im->backend_line, &p->keylen);
    p->hash = p->key ? jit_hash(jit_hash_init, p->key, p->keylen) : 0;
    /* one kernel per key at a time: another one's symbols would clash */
    if (!p->hash || cpu_live_has(im, p->hash) || !cpu_live_add(im, p->hash)) {
      free(p->key);
      p->key = NULL;
    }
  }
  return p;
}

jit_kernel *cpu_compile(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = pending_new(be, k, err, errlen);
  if (!p) return NULL;
  make_object(p);
  return link_object(p, err, errlen);
}

jit_pending *cpu_compile_start(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = pending_new(be, k, err, errlen);
  if (!p) return NULL;
  pthread_mutex_lock(&gate_mu);
  p->ticket = gate_next++;
  pthread_mutex_unlock(&gate_mu);
  if (pthread_create(&p->thread, NULL, object_thread, p) == 0) {
    p->threaded = true;
  } else {
    make_object(p);   /* no thread to be had: compile now */
    gate_leave();
  }
  return p;
}

jit_kernel *cpu_compile_wait(jit_backend *be, jit_pending *p, char *err, size_t errlen) {
  (void)be;
  if (p->threaded) pthread_join(p->thread, NULL);
  return link_object(p, err, errlen);
}
