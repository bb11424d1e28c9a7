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
*/
#include "jit.h"

#include "../runtime/runtime.h"
#include "../runtime/service.h"
#include "jit_sparse.h"

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

bool jit_launch(jit_backend *be, jit_sparse *sp, jit_kernel *jk, rt_context *ctx) {
  if (!ctx->runtime && sp) ctx->runtime = jit_sparse_runtime(sp);
  if (jk->needs_runtime && !ctx->runtime) {
    *ctx->error = RT_ERR_RUNTIME;   /* a sparse kernel launched without a runtime */
    return false;
  }
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
      if (runs == 0) continue;
      if (runs < 0) {
        ok = false;
        break;
      }
    }
    if (t->kind == IR_task_gc) {
      for (int stage = 0; stage < 3 && ok; stage++) ok = be->run_task(be, jk, i, ctx, stage);
    } else {
      ok = be->run_task(be, jk, i, ctx, 0);
    }
    if (!ok) break;
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
