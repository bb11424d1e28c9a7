/*
** cpu_sparse.c -- how the CPU backend runs the sparse tasks (jit.h lists
** their function signatures): list sizes computed on the host, lists that
** are still valid skipped (jit_list_task_runs), the root's list built on
** the host, and garbage collection in three stages on the thread pool.
*/
#include "../../runtime/runtime.h"
#include "../jit_sparse.h"
#include "cpu.h"

typedef struct {
  jit_task_fn fn;
  rt_context *ctx;
  int64_t stage, nworkers;   /* task_gc */
} sparse_job;

static void run_chunk(void *ud, int thread_id, int64_t begin, int64_t end) {
  sparse_job *j = ud;
  if (__atomic_load_n(j->ctx->error, __ATOMIC_RELAXED) != 0) return;
  j->fn(j->ctx, thread_id, begin, end);
}

/* Each index of [begin, end) is one GC worker. */
static void run_workers(void *ud, int thread_id, int64_t begin, int64_t end) {
  sparse_job *j = ud;
  for (int64_t w = begin; w < end; w++) j->fn(j->ctx, (int)w, j->stage, j->nworkers);
}

static void over_list(rt_pool *pool, const jit_task *t, rt_context *ctx, int32_t list) {
  int64_t n = rt_listgen_size(ctx->runtime, list);
  if (n <= 0) return;
  sparse_job j = {t->fn, ctx, 0, 0};
  rt_pool_parallel_for(pool, 0, n, t->range.block_dim > 0 ? t->range.block_dim : 0, run_chunk, &j);
}

/* Below this many recycled cells GC runs on the calling thread. */
#define GC_PARALLEL_MIN 4096

static void gc(rt_pool *pool, const jit_task *t, rt_context *ctx) {
  int32_t recycled = ctx->runtime->allocators[t->snode].recycled.size;
  if (recycled == 0) return;   /* nothing was freed since the last GC */
  int64_t nw = recycled < GC_PARALLEL_MIN ? 1 : rt_pool_threads(pool);
  sparse_job j = {t->fn, ctx, 0, nw};
  if (nw == 1) {
    for (j.stage = 0; j.stage < 3; j.stage++) t->fn(ctx, 0, j.stage, 1);
    return;
  }
  rt_pool_parallel_for(pool, 0, nw, 1, run_workers, &j);
  t->fn(ctx, 0, 1, nw);
  j.stage = 2;
  rt_pool_parallel_for(pool, 0, nw, 1, run_workers, &j);
}

void cpu_sparse_task(rt_pool *pool, jit_sparse *sp, const jit_task *t, rt_context *ctx, int32_t *reused) {
  rt_runtime *rt = ctx->runtime;
  char *root = ctx->roots[t->tree];
  if (!jit_list_task_runs(sp, t, root, reused)) return;
  switch (t->kind) {
  case IR_task_clear_list:
    t->fn(ctx, 0, 0, 1);
    return;
  case IR_task_listgen:
    if (!sp && t->parent == t->root) rt_listgen_root(rt, t->root, root);
    over_list(pool, t, ctx, t->parent);
    jit_list_task_done(sp, t, root, rt->error == RT_RTERR_OK);
    return;
  case IR_task_struct_for:
  case IR_task_deactivate_all:
    over_list(pool, t, ctx, t->snode);
    return;
  case IR_task_gc:
    gc(pool, t, ctx);
    return;
  default:
    return;
  }
}
