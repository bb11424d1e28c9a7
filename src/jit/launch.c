/*
** launch.c -- jit_launch: the schedule of one kernel call, the same for every
** backend. A backend only runs a task (jit_backend.run_task: on the CPU's
** worker threads, as grid launches on CUDA) and moves memory; this file
** decides everything else:
**
**   - the sparse runtime: ctx->runtime from the program's jit_sparse, and a
**     kernel that needs one refused without it (RT_ERR_RUNTIME);
**   - the order: every task in the kernel's order, a task_gc as its three
**     stages (allocator.h: each finished before the next starts);
**   - list reuse: a task_clear_list whose level's list is still valid for
**     the instance (jit_sparse_list_stale) is skipped, and so is the
**     task_listgen after it; before a listgen from the root the root's list
**     is made to hold the instance; a listgen that ran is recorded
**     (jit_sparse_list_built), or forgotten when the runtime failed;
**   - failures as the launch's result (*ctx->error): the kernel's own error
**     codes; the sparse runtime's recorded failure as RT_ERR_RUNTIME; the
**     device's failure (be->error) as RT_ERR_DEVICE.
**
** A synchronous backend (the CPU) is checked after every task, so nothing
** runs after a failure and a listgen the runtime failed in is forgotten at
** once. On an asynchronous one (CUDA) every task entry returns at once when
** the device's error word is set, the errors come back with launch_end, and
** a runtime failure then forgets every list the kernel builds (which of them
** it hit is not known).
**
** Profiling (jit_launch_profiled with a profile, profile.h): the launch's
** wall-clock time, each task's time (a task_gc's three stages as one) and
** each list task skipped for reuse. Marks are taken right before and after
** run_task, so the schedule's own work between tasks (list validity, the
** root's list) counts for the kernel but for no task. Without a profile
** the launch tests for one once (schedule()).
*/
#include "jit.h"

#include "../runtime/runtime.h"
#include "../runtime/service.h"
#include "jit_sparse.h"
#include "profile.h"

static bool device_failed(rt_context *ctx) {
  if (*ctx->error == RT_ERR_OK) *ctx->error = RT_ERR_DEVICE;
  return false;
}

/* Whether the sparse runtime recorded a failure, into *failed; false when
** the backend could not read it (the device failed). */
static bool runtime_error(jit_backend *be, rt_context *ctx, bool *failed) {
  int32_t e = RT_RTERR_OK;
  if (!ctx->runtime) {
    e = RT_RTERR_OK;
  } else if (be->host_memory) {
    e = __atomic_load_n(&ctx->runtime->error, __ATOMIC_ACQUIRE);
  } else if (!be->mem_read(be, &e, (const char *)&ctx->runtime->error, sizeof e)) {
    return false;
  }
  *failed = e != RT_RTERR_OK;
  return true;
}

/* Whether list task t (task_clear_list, task_listgen) must run over
** instance `root`: 1 yes, 0 no (its list is kept), -1 the device failed.
** *reused carries the level whose list is kept from a clear_list to its
** listgen (-1: none). Without sp there is no bookkeeping: every list task
** runs, and the root's list is set at every listgen from the root. */
static int list_task_runs(jit_backend *be, jit_sparse *sp, const jit_task *t, rt_context *ctx, char *root,
                          int32_t *reused) {
  if (!sp) {
    if (t->kind != IR_task_listgen || t->parent != t->root) return 1;
    rt_request req = {.op = RT_REQ_LIST_ROOT, .snode = t->root, .root = root};
    return be->serve(be, ctx->runtime, &req) ? 1 : -1;
  }
  if (t->kind == IR_task_clear_list) {
    /* a valid list skips this task and the listgen after it */
    *reused = jit_sparse_list_stale(sp, NULL, t->snode, root) ? -1 : t->snode;
    return *reused < 0;
  }
  if (*reused == t->snode) {
    *reused = -1;
    return 0;
  }
  if (t->parent == t->root) jit_sparse_root_list(sp, t->root, root);
  return 1;
}

/* Listgen t ran: its list holds `root`'s containers, or (ok false: the
** runtime failed in it) may be incomplete and is forgotten. */
static void list_task_done(jit_sparse *sp, const jit_task *t, char *root, bool ok) {
  if (sp) jit_sparse_list_built(sp, NULL, t->snode, ok ? root : NULL);
}

/* One launch's profiling: its records, and the marks of the tasks timed. */
typedef struct {
  jit_profile *pf;              /* NULL: not profiling */
  const int32_t *slots;         /* the kernel's records: [0] the kernel, [1 + i] task i */
  double *times;                /* host clock: two marks per timed task (no be->mark) */
  int *tasks;                   /* the task of each timed pair */
  int n;                        /* tasks timed so far */
  bool marks_ok;                /* false: a mark failed, no task is timed */
  double begin;
} timing;

static void timing_begin(timing *tm, jit_profile *pf, jit_kernel *jk) {
  tm->slots = jit_profile_slots(pf, jk);
  tm->pf = tm->slots && jit_profile_marks(pf, jk->ntasks, &tm->times, &tm->tasks) ? pf : NULL;
  tm->n = 0;
  tm->marks_ok = true;
  tm->begin = jit_profile_now_ms();
}

static void mark(jit_backend *be, timing *tm, int slot) {
  if (!be->mark) tm->times[slot] = jit_profile_now_ms();
  else if (!be->mark(be, slot)) tm->marks_ok = false;
}

/* Records the launch, and its tasks' times when the device could give them
** (after launch_end; ok false: it failed). */
static void timing_end(jit_backend *be, timing *tm, bool ok) {
  for (int k = 0; k < tm->n && ok && tm->marks_ok; k++) {
    double ms;
    if (!be->mark_ms) ms = tm->times[2 * k + 1] - tm->times[2 * k];
    else if (!be->mark_ms(be, 2 * k, 2 * k + 1, &ms)) break;
    jit_profile_add(tm->pf, tm->slots[1 + tm->tasks[k]], ms);
  }
  jit_profile_add(tm->pf, tm->slots[0], jit_profile_now_ms() - tm->begin);
}

/* The schedule; timed when pf is not NULL. Inlined twice into
** jit_launch_profiled, once with pf NULL, where every test of tm.pf folds
** away: a launch without a profile pays one branch for the profiler. */
static inline __attribute__((always_inline)) bool schedule(jit_backend *be, jit_sparse *sp, jit_kernel *jk,
                                                           rt_context *ctx, jit_profile *pf) {
  if (!ctx->runtime && sp) ctx->runtime = jit_sparse_runtime(sp);
  if (jk->needs_runtime && !ctx->runtime) {
    *ctx->error = RT_ERR_RUNTIME;   /* a sparse kernel launched without a runtime */
    return false;
  }
  timing tm = {.pf = NULL};
  if (pf) timing_begin(&tm, pf, jk);
  const bool timed = pf && tm.pf;   /* a plain local, so that it folds where pf is NULL */
  if (be->launch_begin && !be->launch_begin(be, jk, ctx)) return device_failed(ctx);
  bool ok = true, rt_failed = false;
  int32_t reused = -1;
  for (int i = 0; i < jk->ntasks; i++) {
    const jit_task *t = &jk->tasks[i];
    bool listgen = t->kind == IR_task_listgen;
    char *root = NULL;
    if (listgen || t->kind == IR_task_clear_list) {
      root = t->tree >= 0 ? ctx->roots[t->tree] : NULL;
      int runs = list_task_runs(be, sp, t, ctx, root, &reused);
      if (runs == 0) {
        if (timed) jit_profile_reuse(tm.pf, tm.slots[1 + i]);
        continue;
      }
      if (runs < 0) {
        ok = false;
        break;
      }
    }
    if (timed) mark(be, &tm, 2 * tm.n);
    if (t->kind == IR_task_gc) {
      for (int stage = 0; stage < 3 && ok; stage++) ok = be->run_task(be, jk, i, ctx, stage);
    } else {
      ok = be->run_task(be, jk, i, ctx, 0);
    }
    if (!ok) break;
    if (timed) {
      mark(be, &tm, 2 * tm.n + 1);
      tm.tasks[tm.n++] = i;
    }
    if (!be->synchronous) {
      if (listgen) list_task_done(sp, t, root, true);   /* forgotten below if the runtime failed */
      continue;
    }
    if (!runtime_error(be, ctx, &rt_failed)) {
      ok = false;
      break;
    }
    if (listgen) list_task_done(sp, t, root, !rt_failed);
    if (*ctx->error != RT_ERR_OK || rt_failed) break;
  }
  if (be->launch_end && !be->launch_end(be, jk, ctx, ok)) ok = false;
  if (timed) timing_end(be, &tm, ok);
  if (!ok) return device_failed(ctx);
  if (*ctx->error != RT_ERR_OK) return false;
  if (!be->synchronous) {
    if (!runtime_error(be, ctx, &rt_failed)) return device_failed(ctx);
    /* a list built in this launch may be incomplete */
    if (rt_failed)
      for (int i = 0; i < jk->ntasks; i++)
        if (jk->tasks[i].kind == IR_task_listgen) list_task_done(sp, &jk->tasks[i], NULL, false);
  }
  if (!rt_failed) return true;
  int32_t expected = RT_ERR_OK;   /* the sparse runtime's failure: jit_sparse_take_error says why */
  __atomic_compare_exchange_n(ctx->error, &expected, RT_ERR_RUNTIME, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return false;
}

bool jit_launch_profiled(jit_backend *be, jit_sparse *sp, jit_kernel *jk, rt_context *ctx, jit_profile *pf) {
  return pf ? schedule(be, sp, jk, ctx, pf) : schedule(be, sp, jk, ctx, NULL);
}

bool jit_launch(jit_backend *be, jit_sparse *sp, jit_kernel *jk, rt_context *ctx) {
  return schedule(be, sp, jk, ctx, NULL);
}
