/*
** cpu_compile.c -- compiling a kernel for the CPU backend, in two halves:
**
**   objects  IR -> LLVM modules -> optimised -> machine code (object files
**            in memory). The kernel's tasks are split into groups of about
**            equal cost (plan_groups, from the IR alone); each group is one
**            module, built in an LLVM context and with a target machine of
**            its own, so the groups of one kernel compile on several threads
**            at once. Touches nothing shared but the scheduler below, and
**            the kernel's IR read-only.
**   link     every group's object into the backend's LLJIT under one
**            resource tracker (the kernel's), and the task symbols looked
**            up; on the Lua thread.
**
** Every symbol a group defines besides its tasks' functions is internal (the
** runtime bitcode, the parts of split tasks: cg_build_tasks), so the objects
** of one kernel link side by side, each with its own copy of what it uses.
**
** be->compile runs the groups on the calling thread and on helper threads
** where cores are free, then links; compile_start queues them for the
** scheduler's threads and returns, and compile_wait works on the rest of
** them itself, waits and links. lt.compile uses that to compile several
** kernels at once (docs/language.md).
*/
#include <pthread.h>
#include <sched.h>
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
#include "cpu_payload.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The tasks' symbol prefix: the cache key's hash (ltk_<hash>), so an object
** compiled in one run links in another next to kernels compiled there; else
** the kernel's name and a serial number, unique in the backend. */
static void symbol_prefix(const ir_kernel *k, unsigned serial, uint64_t hash, char *out, size_t len) {
  if (hash) {
    snprintf(out, len, "ltk_%016llx", (unsigned long long)hash);
  } else {
    int n = cg_symbol_prefix(k, out, len);
    snprintf(out + n, len - (size_t)n, "_%u", serial);
  }
}

bool cpu_build(ir_kernel *k, const char *prefix, const char *triple, bool verify, LLVMContextRef ctx,
               LLVMTargetMachineRef tm, const unsigned char *only, cg_module *m, char *err, size_t errlen) {
  if (!cg_build_tasks(&cpu_target, ctx, k, prefix, only, m, err, errlen)) return false;
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

/* ---- groups of tasks ------------------------------------------------------------
** What LLVM spends on a task, roughly, in units of 50 us (x86-64 at O2,
** fitted to mpm88's tasks here): TASK_COST for a function; LOOP_COST more
** for the loop of a range_for or struct_for task (vectorised with run-time
** checks, interleaved, strength-reduced: a task looping over x[i] = x[i] + 1
** takes 7 ms, one of a few serial statements 1 ms); a unit per statement,
** and IN_LOOP units per statement inside a loop of the task (a loop body
** the vectorizer works on: mpm88's grid update, 29 statements in its row
** loop, takes 20 ms; its G2P, 304 statements and no inner loop, 29) or per
** atomic read-modify-write (a compare-exchange loop for a float: mpm88's
** P2G, 227 statements of which 36 atomic adds, takes 39 ms). The
** tasks that use the sparse runtime stay together, one item of the plan:
** the runtime functions they call are optimised at O3 and inlined once per
** module (about 100 ms for a struct-for), which splitting would repeat. A
** module costs 2.5 ms of its own, so a kernel is split only where each
** group gets at least CPU_GROUP_MIN, into at most CPU_MAX_GROUPS, the items
** dealt largest first to the group with the least so far (ties: the lower
** index), so group 0 is the largest: a plan from the IR alone, the same on
** every machine, so the cache holds the same objects whatever the core
** count. */
enum {
  TASK_COST = 20, LOOP_COST = 120, IN_LOOP = 10, RUNTIME_COST = 2000,
  CPU_GROUP_MIN = 200, CPU_MAX_GROUPS = CPU_PAYLOAD_MAX_OBJECTS
};

static long block_cost(const ir_block *blk, bool in_loop) {
  long n = 0;
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    bool rmw = (ir_op_flags(s->op) & (IR_LOAD | IR_STORE)) == (IR_LOAD | IR_STORE);   /* the atomics */
    n += in_loop || rmw ? IN_LOOP : 1;
    bool loop = in_loop || s->op == IR_range_for || s->op == IR_while;
    n += block_cost(s->blocks[0], loop) + block_cost(s->blocks[1], loop);
  }
  return n;
}

static long task_cost(const ir_stmt *task) {
  bool loop = task->op == IR_task_range_for || task->op == IR_task_struct_for;
  return TASK_COST + (loop ? LOOP_COST : 0) + block_cost(task->blocks[0], false);
}

static int count_tasks(const ir_kernel *k) {
  int n = 0;
  for (const ir_stmt *s = k->body->first; s; s = s->next) n++;
  return n;
}

/* group[i]: the group of task i; returns the number of groups (0: out of memory). */
static int plan_groups(ir_kernel *k, int ntasks, unsigned char *group) {
  if (ntasks <= 1) {
    if (ntasks) group[0] = 0;
    return 1;
  }
  /* items: a task that does not use the runtime, or all that do (item[i]) */
  long *cost = calloc((size_t)ntasks, sizeof *cost);
  int *item = calloc((size_t)ntasks, sizeof *item), *order = calloc((size_t)ntasks, sizeof *order);
  if (!cost || !item || !order) {
    free(cost);
    free(item);
    free(order);
    return 0;
  }
  long total = 0;
  int nitems = 0, rt_item = -1, i = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next, i++) {
    if (cg_task_runtime(k, s) != CG_RUNTIME_SPARSE) {
      item[i] = nitems++;
    } else {
      if (rt_item < 0) {
        rt_item = nitems++;
        cost[rt_item] = RUNTIME_COST;
      }
      item[i] = rt_item;
    }
    cost[item[i]] += task_cost(s);
  }
  for (int a = 0; a < nitems; a++) {
    total += cost[a];
    order[a] = a;
  }
  long g = total / CPU_GROUP_MIN;
  int ngroups = (int)(g < 1 ? 1 : g > CPU_MAX_GROUPS ? CPU_MAX_GROUPS : g);
  if (ngroups > nitems) ngroups = nitems;
  /* largest first (insertion sort: a kernel has a few tasks), stable */
  for (int a = 1; a < nitems; a++)
    for (int b = a; b > 0 && cost[order[b]] > cost[order[b - 1]]; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  /* each item to the group with the least so far; cost[] becomes the item's group */
  long load[CPU_MAX_GROUPS] = {0};
  for (int a = 0; a < nitems; a++) {
    int best = 0;
    for (int b = 1; b < ngroups; b++)
      if (load[b] < load[best]) best = b;
    load[best] += cost[order[a]];
    cost[order[a]] = best;
  }
  for (i = 0; i < ntasks; i++) group[i] = (unsigned char)cost[item[i]];
  free(cost);
  free(item);
  free(order);
  return ngroups;
}

/* One group's module, optimised and made into an object (obj), or a message. */
typedef struct {
  unsigned char *only;             /* [ntasks]: the tasks of this group */
  LLVMMemoryBufferRef obj;
  bool needs_runtime;
  double ms;                       /* the time it took */
} cpu_group;

/* ---- a compilation ----------------------------------------------------------------- */

struct jit_pending {
  cpu_impl *im;
  ir_kernel *k;
  int ntasks;
  char prefix[96];                 /* of the tasks' symbols */
  bool verify;
  bool dump_llvm;
  int ngroups;
  cpu_group *groups;
  /* the scheduler's (under sched_mu) */
  int next;                        /* groups claimed */
  int done;                        /* groups finished */
  int reserved;                    /* threads started for it that have not claimed a group yet */
  pthread_t *threads;              /* started for it (at most ngroups); joined by the waiter */
  int nthreads;
  bool queued;
  jit_pending *qnext;
  bool failed;                     /* a group failed: the others are skipped */
  char err[1024];                  /* the first failure's message */
  /* the offline cache: the key (NULL: not cached), its hash, and whether
  ** the objects came from it */
  char *key;
  size_t keylen;
  uint64_t hash;
  bool hit;
};

static pthread_mutex_t sched_mu = PTHREAD_MUTEX_INITIALIZER;   /* the scheduler's, below */

static void group_work(jit_pending *p, int g) {
  cpu_group *gr = &p->groups[g];
  double t = now_ms();
  char err[1024] = "";
  LLVMTargetMachineRef tm = cpu_host_take_tm(&p->im->host);
  LLVMContextRef ctx = tm ? LLVMContextCreate() : NULL;
  cg_module m;
  if (!tm) {
    snprintf(err, sizeof err, "cannot create a target machine for %s", p->im->host.triple);
  } else if (cpu_build(p->k, p->prefix, p->im->host.triple, p->verify, ctx, tm, gr->only, &m, err, sizeof err)) {
    if (p->dump_llvm) {   /* debugging aid: the optimised module on stderr */
      char *s = LLVMPrintModuleToString(m.mod);
      fprintf(stderr, "%s\n", s);
      LLVMDisposeMessage(s);
    }
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m.mod, LLVMObjectFile, &msg, &gr->obj)) {
      snprintf(err, sizeof err, "machine code generation for kernel '%s' failed: %s", p->k->name, msg);
      LLVMDisposeMessage(msg);
      gr->obj = NULL;
    }
    gr->needs_runtime = m.needs_runtime;
    LLVMDisposeModule(m.mod);
    cg_module_free(&m);
  }
  if (ctx) LLVMContextDispose(ctx);
  cpu_host_give_tm(&p->im->host, tm);
  gr->ms = now_ms() - t;
  if (!gr->obj) {
    pthread_mutex_lock(&sched_mu);   /* the first message wins */
    if (!p->failed) snprintf(p->err, sizeof p->err, "%s", err);
    p->failed = true;
    pthread_mutex_unlock(&sched_mu);
  }
}

/* ---- the scheduler ------------------------------------------------------------------
** Compiling threads run at most one per core (`width`), whichever kernels
** they work for: all at once they would share the cores and all finish
** late. Compilations wait in a queue in the order they were started
** (lt.compile's order), and a kernel the Lua thread needs now goes to its
** front; a free core goes to the first kernel in the queue with a group that
** no thread has claimed or is about to. A thread works for one kernel,
** claiming its groups until none is left, then hands its core on (starting
** the queue's next thread) and ends; its kernel's waiter joins it. The Lua
** thread, compiling a kernel now (be->compile) or waiting for one
** (compile_wait), works on that kernel's groups too when a core is free,
** counted like the others, so lt.compile's threads, the groups' threads and
** the Lua thread together never outnumber the cores. */
static pthread_cond_t sched_cv = PTHREAD_COND_INITIALIZER;   /* a group done, a core free */
static jit_pending *queue;          /* in start order, the ones needed now first */
static int busy, width;             /* threads compiling; the cores */

static int cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (int)n;
}

static void dequeue(jit_pending *p) {
  for (jit_pending **q = &queue; *q; q = &(*q)->qnext)
    if (*q == p) {
      *q = p->qnext;
      break;
    }
  p->queued = false;
  p->qnext = NULL;
}

/* at the end of the queue, or at its front when urgent */
static void enqueue(jit_pending *p, bool urgent) {
  if (p->queued) dequeue(p);
  jit_pending **q = &queue;
  if (!urgent)
    while (*q) q = &(*q)->qnext;
  p->qnext = *q;
  *q = p;
  p->queued = true;
}

static void *group_thread(void *arg);

/* Starts threads for the queue's first kernels while cores are free (sched_mu held). */
static void schedule(void) {
  if (!width) width = cores();
  while (busy < width) {
    jit_pending *p = queue;
    while (p && p->ngroups - p->next - p->reserved <= 0) p = p->qnext;
    if (!p) return;
    p->reserved++;
    busy++;
    if (pthread_create(&p->threads[p->nthreads], NULL, group_thread, p) != 0) {
      p->reserved--;   /* no thread to be had: the waiter does the work */
      busy--;
      pthread_cond_broadcast(&sched_cv);
      return;
    }
    p->nthreads++;
  }
}

/* Claims and compiles p's groups until none is left (sched_mu held; it is
** released while a group compiles). */
static void claim_groups(jit_pending *p) {
  while (p->next < p->ngroups) {
    int g = p->next++;
    if (p->next == p->ngroups) dequeue(p);
    if (!p->failed) {
      pthread_mutex_unlock(&sched_mu);
      group_work(p, g);
      pthread_mutex_lock(&sched_mu);
    }
    if (++p->done == p->ngroups) pthread_cond_broadcast(&sched_cv);
  }
}

static void *group_thread(void *arg) {
  jit_pending *p = arg;
  pthread_mutex_lock(&sched_mu);
  p->reserved--;
  claim_groups(p);
  busy--;
  schedule();
  pthread_cond_broadcast(&sched_cv);
  pthread_mutex_unlock(&sched_mu);
  return NULL;
}

/* On the Lua thread: p to the queue's front, its groups worked on here while
** a core is free, and the wait for the others. */
static void finish_groups(jit_pending *p) {
  pthread_mutex_lock(&sched_mu);
  if (!width) width = cores();
  if (p->next < p->ngroups) enqueue(p, true);
  for (;;) {
    if (p->next < p->ngroups && busy < width) {
      busy++;
      schedule();   /* helpers on the other free cores */
      claim_groups(p);
      busy--;
      schedule();
    } else if (p->done == p->ngroups) {
      break;
    } else {
      pthread_cond_wait(&sched_cv, &sched_mu);
    }
  }
  pthread_mutex_unlock(&sched_mu);
  for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  p->nthreads = 0;
}

/* ---- the offline cache ------------------------------------------------------------
** An entry's payload: the group objects, with a header (cpu_payload.h). */

/* p's objects from the cache; false on a miss (a malformed payload too). */
static bool from_cache(jit_pending *p) {
  void *payload = NULL;
  size_t n = 0;
  if (!jit_cache_get(&p->im->cache, p->key, p->keylen, &payload, &n)) return false;
  cpu_payload pl;
  bool ok = cpu_payload_parse(payload, n, p->ntasks, &pl);
  int nobj = ok ? pl.nobjects : 0;
  cpu_group *gs = ok ? calloc((size_t)nobj, sizeof *gs) : NULL;
  for (int i = 0; gs && i < nobj; i++) {
    gs[i].obj = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)pl.object[i], pl.size[i], "lattice cache entry");
    gs[i].needs_runtime = pl.needs_runtime;
    if (!gs[i].obj) ok = false;
  }
  free(payload);
  if (!gs || !ok) {
    for (int i = 0; gs && i < nobj; i++)
      if (gs[i].obj) LLVMDisposeMemoryBuffer(gs[i].obj);
    free(gs);
    return false;
  }
  p->groups = gs;
  p->ngroups = p->next = p->done = nobj;
  p->hit = true;
  return true;
}

static void to_cache(jit_pending *p) {
  size_t bytes = 0;
  bool rt = false;
  for (int g = 0; g < p->ngroups; g++) {
    bytes += LLVMGetBufferSize(p->groups[g].obj);
    rt |= p->groups[g].needs_runtime;
  }
  size_t n = cpu_payload_bytes(p->ngroups, bytes);
  unsigned char *b = malloc(n);
  if (!b) return;
  size_t at = cpu_payload_put_header(b, p->ntasks, rt, p->ngroups);
  for (int g = 0; g < p->ngroups; g++)
    at = cpu_payload_put_object(b, at, LLVMGetBufferStart(p->groups[g].obj), LLVMGetBufferSize(p->groups[g].obj));
  char why[256];
  jit_cache_put(&p->im->cache, p->key, p->keylen, b, n, why, sizeof why);   /* best effort */
  free(b);
}

/* ---- the second half: into the JIT --------------------------------------------------- */

static void drop_groups(jit_pending *p) {
  for (int g = 0; g < p->ngroups; g++) {
    if (p->groups[g].obj) LLVMDisposeMemoryBuffer(p->groups[g].obj);
    free(p->groups[g].only);
  }
  free(p->groups);
  free(p->threads);
  p->groups = NULL;
  p->threads = NULL;
  p->ngroups = p->next = p->done = 0;
}

static void pending_free(jit_pending *p) {
  drop_groups(p);
  free(p->key);
  free(p);
}

/* p's groups, planned (plan_groups) and not yet compiled; false when out of memory. */
static bool plan(jit_pending *p) {
  unsigned char *member = calloc((size_t)(p->ntasks ? p->ntasks : 1), 1);
  int ng = member ? plan_groups(p->k, p->ntasks, member) : 0;
  p->groups = ng ? calloc((size_t)ng, sizeof *p->groups) : NULL;
  p->threads = ng ? calloc((size_t)ng, sizeof *p->threads) : NULL;
  bool ok = p->groups && p->threads;
  p->ngroups = ok ? ng : 0;
  for (int g = 0; ok && g < ng; g++) {
    unsigned char *only = calloc((size_t)(p->ntasks ? p->ntasks : 1), 1);
    ok = only != NULL;
    for (int i = 0; only && i < p->ntasks; i++) only[i] = member[i] == g;
    p->groups[g].only = only;
  }
  free(member);
  if (!ok) drop_groups(p);
  return ok;
}

/* p's objects into the JIT under a resource tracker of their own, and jk's
** tasks from them (the objects are the JIT's then); NULL with the message
** when the JIT cannot link them, with nothing of them left in it. */
static jit_kernel *link_groups(jit_pending *p, char *err, size_t errlen) {
  double t0 = now_ms();
  cpu_impl *im = p->im;
  ir_kernel *k = p->k;
  jit_kernel *jk = calloc(1, sizeof *jk);
  jit_task *tasks = calloc((size_t)(p->ntasks ? p->ntasks : 1), sizeof *tasks);
  char *name = strdup(k->name ? k->name : "kernel");
  if (!jk || !tasks || !name) {
    free(jk); free(tasks); free(name);
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    return NULL;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(im->host.jit);
  LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(jd);
  LLVMErrorRef e = NULL;
  double work = 0;
  bool needs_runtime = false;
  for (int g = 0; g < p->ngroups; g++) {
    work += p->groups[g].ms;
    needs_runtime |= p->groups[g].needs_runtime;
    if (!e) e = LLVMOrcLLJITAddObjectFileWithRT(im->host.jit, rt, p->groups[g].obj);   /* takes it */
    else LLVMDisposeMemoryBuffer(p->groups[g].obj);
    p->groups[g].obj = NULL;
  }
  int i = 0;
  for (ir_stmt *s = k->body->first; !e && s; s = s->next, i++) {
    char sym[160];
    snprintf(sym, sizeof sym, "%s_task%d", p->prefix, i);
    LLVMOrcExecutorAddress addr = 0;
    e = LLVMOrcLLJITLookup(im->host.jit, &addr, sym);
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
    return NULL;
  }
  jk->name = name;
  jk->ntasks = p->ntasks;
  jk->tasks = tasks;
  jk->needs_runtime = needs_runtime;
  jk->gtmp_bytes = k->gtmp_size;
  jk->impl = rt;
  jk->compile_ms = work + (now_ms() - t0);
  jk->cached = p->hit;
  jk->cache_hash = p->key ? p->hash : 0;
  return jk;
}

/* Links p's objects (after finish_groups); frees p. A cache entry the JIT
** cannot link (a foreign or damaged object behind a right checksum) is a
** miss like any other: the kernel is compiled here and the entry rewritten. */
static jit_kernel *link_object(jit_pending *p, char *err, size_t errlen) {
  jit_kernel *jk = NULL;
  if (p->failed) {
    snprintf(err, errlen, "%s", p->err);
  } else {
    if (p->key && !p->hit) to_cache(p);
    jk = link_groups(p, err, errlen);
    if (!jk && p->hit) {
      drop_groups(p);
      p->hit = false;
      if (plan(p)) {
        finish_groups(p);
        if (p->failed) {
          snprintf(err, errlen, "%s", p->err);
        } else {
          to_cache(p);
          jk = link_groups(p, err, errlen);
        }
      }
    }
  }
  if (!jk && p->key) cpu_live_remove(p->im, p->hash);
  pending_free(p);
  return jk;
}

/* ---- the backend's entry points ---------------------------------------------------- */

/* A compilation of k: its key and its cache entry, else its groups planned;
** NULL when out of memory. */
static jit_pending *pending_new(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  cpu_impl *im = be->impl;
  jit_pending *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    return NULL;
  }
  p->im = im;
  p->k = k;
  p->ntasks = count_tasks(k);
  p->verify = im->debug;
  p->dump_llvm = im->dump_llvm;
  unsigned serial = im->serial++;
  if (im->cache.dir) {
    p->key = jit_kernel_key(k, im->backend_line, &p->keylen);
    p->hash = p->key ? jit_hash(jit_hash_init, p->key, p->keylen) : 0;
    /* one kernel per key at a time: another one's symbols would clash */
    if (!p->hash || cpu_live_has(im, p->hash) || !cpu_live_add(im, p->hash)) {
      free(p->key);
      p->key = NULL;
    }
  }
  symbol_prefix(k, serial, p->key ? p->hash : 0, p->prefix, sizeof p->prefix);
  double t = now_ms();
  if (p->key && from_cache(p)) {
    p->groups[0].ms = now_ms() - t;
    return p;
  }
  if (!plan(p)) {
    if (p->key) cpu_live_remove(im, p->hash);
    pending_free(p);
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    return NULL;
  }
  return p;
}

jit_kernel *cpu_compile(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = pending_new(be, k, err, errlen);
  if (!p) return NULL;
  finish_groups(p);
  return link_object(p, err, errlen);
}

jit_pending *cpu_compile_start(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = pending_new(be, k, err, errlen);
  if (!p) return NULL;
  if (p->next < p->ngroups) {
    pthread_mutex_lock(&sched_mu);
    enqueue(p, false);
    schedule();
    pthread_mutex_unlock(&sched_mu);
  }
  return p;
}

jit_kernel *cpu_compile_wait(jit_backend *be, jit_pending *p, char *err, size_t errlen) {
  (void)be;
  finish_groups(p);
  return link_object(p, err, errlen);
}

/* ---- for tests and inspection ------------------------------------------------------ */

char *jit_cpu_llvm_ir(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  cpu_impl *im = be->impl;
  int ntasks = count_tasks(k);
  unsigned char *member = calloc((size_t)(ntasks ? ntasks : 1), 1), *only = calloc((size_t)(ntasks ? ntasks : 1), 1);
  int ng = member && only ? plan_groups(k, ntasks, member) : 0;
  char prefix[96];
  symbol_prefix(k, im->serial++, 0, prefix, sizeof prefix);
  char *text = NULL;
  size_t len = 0;
  bool ok = ng > 0;
  if (!ok) snprintf(err, errlen, "out of memory");
  /* the modules the kernel is compiled as, one after the other */
  for (int g = 0; ok && g < ng; g++) {
    for (int i = 0; i < ntasks; i++) only[i] = member[i] == g;
    LLVMTargetMachineRef tm = cpu_host_take_tm(&im->host);
    if (!tm) {
      snprintf(err, errlen, "cannot create a target machine for %s", im->host.triple);
      ok = false;
      break;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    cg_module m;
    ok = cpu_build(k, prefix, im->host.triple, im->debug, ctx, tm, only, &m, err, errlen);
    if (ok) {
      char *s = LLVMPrintModuleToString(m.mod);
      size_t n = strlen(s);
      char *t = realloc(text, len + n + 1);
      if (t) {
        memcpy(t + len, s, n + 1);
        text = t;
        len += n;
      } else {
        snprintf(err, errlen, "out of memory");
        ok = false;
      }
      LLVMDisposeMessage(s);
      LLVMDisposeModule(m.mod);
      cg_module_free(&m);
    }
    LLVMContextDispose(ctx);
    cpu_host_give_tm(&im->host, tm);
  }
  free(member);
  free(only);
  if (!ok) {
    free(text);
    return NULL;
  }
  return text;
}
