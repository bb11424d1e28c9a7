/*
** cpu_run.c -- how the CPU backend runs each kind of task (jit.h lists
** their function signatures; the schedule is launch.c's): on the calling
** thread, or as ranges on the thread pool, with list sizes read on the host
** and garbage collection's parallel stages split among the workers.
*/
#include <stdlib.h>
#include <string.h>

#include "../../runtime/runtime.h"
#include "cpu_exec.h"

typedef struct {
  jit_task_fn fn;
  rt_context *ctx;
  int64_t stage, nworkers;   /* task_gc */
} range_job;

static void run_range(void *ud, int thread_id, int64_t begin, int64_t end) {
  range_job *j = ud;
  /* after a failure the remaining chunks are skipped */
  if (__atomic_load_n(j->ctx->error, __ATOMIC_RELAXED) != 0) return;
  j->fn(j->ctx, thread_id, begin, end);
}

/* Each index of [begin, end) is one GC worker. */
static void run_workers(void *ud, int thread_id, int64_t begin, int64_t end) {
  range_job *j = ud;
  for (int64_t w = begin; w < end; w++) j->fn(j->ctx, (int)w, j->stage, j->nworkers);
}

static int64_t bound(rt_context *ctx, int gtmp, int64_t constant) {
  if (gtmp < 0) return constant;
  int32_t v;
  memcpy(&v, ctx->gtmp + gtmp, sizeof v);
  return v;
}

static void over_list(rt_pool *pool, const jit_task *t, rt_context *ctx, int32_t list) {
  int64_t n = rt_listgen_size(ctx->runtime, list);
  if (n <= 0) return;
  range_job j = {t->fn, ctx, 0, 0};
  rt_pool_parallel_for(pool, 0, n, t->range.block_dim > 0 ? t->range.block_dim : 0, run_range, &j);
}

/* Below this many recycled cells GC runs on the calling thread. */
#define GC_PARALLEL_MIN 4096

/* One stage of a GC. Stage 0 picks the workers for all three: none when
** nothing was freed since the last GC, one (this thread) for a few cells. */
static void gc(cpu_exec *im, const jit_task *t, rt_context *ctx, int stage) {
  if (stage == 0) {
    int32_t recycled = ctx->runtime->allocators[t->snode].recycled.size;
    im->gc_workers = recycled == 0 ? 0 : recycled < GC_PARALLEL_MIN ? 1 : rt_pool_threads(im->pool);
  }
  int64_t nw = im->gc_workers;
  if (nw == 0) return;
  if (nw == 1 || stage == 1) {
    t->fn(ctx, 0, stage, nw);
    return;
  }
  range_job j = {t->fn, ctx, stage, nw};
  rt_pool_parallel_for(im->pool, 0, nw, 1, run_workers, &j);
}

/* Points the runtime at the threads' append tables (runtime.h, "buffered
** appends"), made on first need; calloc's pages of zeros are mapped only
** once a thread writes to its table. None for a pool of one thread: its
** appends never meet another thread's, and the plain append is faster
** there. LT_APPEND_TABLES=off leaves them out too (the tests run the plain
** path of the same code so). */
static void append_tables(cpu_exec *im, rt_context *ctx) {
  rt_runtime *rt = ctx->runtime;
  if (!rt) return;
  if (!im->append_tried) {
    im->append_tried = true;
    const char *env = getenv("LT_APPEND_TABLES");
    if (rt_pool_threads(im->pool) > 1 && (!env || strcmp(env, "off") != 0))
      im->append_tables = calloc((size_t)rt_pool_threads(im->pool), RT_APPEND_TABLE_BYTES);
  }
  if (rt->append_tables != im->append_tables) {
    rt->append_tables = im->append_tables;
    rt->append_threads = im->append_tables ? rt_pool_threads(im->pool) : 0;
  }
}

void cpu_exec_free(cpu_exec *ex) {
  free(ex->append_tables);
  ex->append_tables = NULL;
}

bool cpu_run_task(jit_backend *be, jit_kernel *jk, int i, rt_context *ctx, int stage) {
  cpu_exec *im = be->impl;
  const jit_task *t = &jk->tasks[i];
  append_tables(im, ctx);
  switch (t->kind) {
  case IR_task_serial:
  case IR_task_clear_list:
    t->fn(ctx, 0, 0, 1);
    break;
  case IR_task_range_for: {
    int64_t b = bound(ctx, t->range.begin_gtmp, t->range.begin);
    int64_t e = bound(ctx, t->range.end_gtmp, t->range.end);
    range_job j = {t->fn, ctx, 0, 0};
    rt_pool_parallel_for(im->pool, b, e, t->range.block_dim > 0 ? t->range.block_dim : 0, run_range, &j);
    break;
  }
  case IR_task_listgen:
    over_list(im->pool, t, ctx, t->parent);
    break;
  case IR_task_struct_for:
  case IR_task_deactivate_all:
    over_list(im->pool, t, ctx, t->snode);
    break;
  case IR_task_gc:
    gc(im, t, ctx, stage);
    break;
  default:
    break;
  }
  return true;
}
