/*
** cuda_launch.c -- running a compiled kernel's tasks on the GPU (jit.h's
** launch_begin, run_task, launch_end; the schedule is launch.c's).
**
** The launch block: one device allocation holding the rt_context the tasks
** receive and everything it points to (roots, arguments, return value, error
** word and details, the builtins state, the global temporaries). The host
** fills a copy and sends it with one copy; the tasks run as grid launches on
** the null stream, back to back; one synchronisation at the end; then the
** results (return value, error, print records) come back.
**
** How each task kind is launched (the kernel entries are cg_ptx.c's):
**   serial, clear_list        one thread
**   range_for                 a grid-stride loop: blocks of block_dim (or
**                             the default) threads, enough blocks to cover
**                             the range, at most 32 per multiprocessor
**   listgen, struct_for,      end = -1: the entry reads its list's size on
**   deactivate_all            the device, so no copy back between tasks
**   gc                        stage 0 every thread, stage 1 one thread,
**                             stage 2 one cell per block (its threads zero it)
** The schedule skips lists still valid as on the CPU (the change flags it
** reads are small copies, ordered after the tasks before), and sets the
** root's list by a host request when the instance changes.
**
** The profiler's marks (cuda_mark) are events recorded on the null stream
** between the task launches, so the time between two is the GPU's; they are
** read after launch_end's synchronisation, never waited for one by one.
*/
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/builtins.h"
#include "../../runtime/runtime.h"
#include "../../ir/snode.h"
#include "cuda.h"

/* The fixed part of the launch block; the global temporaries follow it. */
typedef struct {
  rt_context ctx;
  char *roots[IR_MAX_TREES];
  uint64_t args[RT_MAX_ARGS];
  uint64_t ret;
  int32_t error, pad;
  int64_t info[4];
  rt_builtins builtins;
} launch_head;

#define GTMP_OFFSET ((sizeof(launch_head) + 63) / 64 * 64)

static void free_host_block(cuda_impl *im) {
  if (im->host_pinned) im->drv.cuMemFreeHost(im->host_block);
  else free(im->host_block);
  im->host_block = NULL;
  im->host_pinned = false;
}

void cuda_launch_free(jit_backend *be) {
  cuda_impl *im = be->impl;
  free_host_block(im);
  if (im->block) im->drv.cuMemFree(im->block);
  if (im->print) im->drv.cuMemFree(im->print);
  im->block = im->print = 0;
  im->block_bytes = 0;
  im->print_cap = 0;
  for (int i = 0; i < im->nmarks; i++) im->drv.cuEventDestroy(im->marks[i]);
  free(im->marks);
  im->marks = NULL;
  im->nmarks = 0;
}

/* jit_backend.mark: event `slot` recorded behind the tasks queued so far. */
bool cuda_mark(jit_backend *be, int slot) {
  cuda_impl *im = be->impl;
  if (slot >= im->nmarks) {
    int n = slot < 16 ? 32 : 2 * slot;
    CUevent *m = realloc(im->marks, (size_t)n * sizeof *m);
    if (!m) {
      snprintf(be->error, sizeof be->error, "out of memory for the profiler's events");
      return false;
    }
    im->marks = m;
    for (; im->nmarks < n; im->nmarks++)
      if (!cuda_check(be, im->drv.cuEventCreate(&im->marks[im->nmarks], 0), "cuEventCreate (profiler)")) return false;
  }
  return cuda_check(be, im->drv.cuEventRecord(im->marks[slot], NULL), "cuEventRecord (profiler)");
}

/* jit_backend.mark_ms: after the launch's synchronisation, so both are done. */
bool cuda_mark_ms(jit_backend *be, int a, int b, double *ms) {
  cuda_impl *im = be->impl;
  float f = 0;
  if (a < 0 || b < 0 || a >= im->nmarks || b >= im->nmarks) return false;
  if (!cuda_check(be, im->drv.cuEventElapsedTime(&f, im->marks[a], im->marks[b]), "cuEventElapsedTime (profiler)"))
    return false;
  *ms = f;
  return true;
}

/* Makes the launch block at least `bytes` and the print buffer `print_cap`. */
static bool reserve(jit_backend *be, size_t bytes, uint64_t print_cap) {
  cuda_impl *im = be->impl;
  if (im->block_bytes < bytes) {
    if (im->block) im->drv.cuMemFree(im->block);
    free_host_block(im);
    im->block = 0;
    im->block_bytes = 0;
    size_t want = bytes < 4096 ? 4096 : bytes * 2;
    /* page-locked, so the copies need not wait; plain memory if the driver has none to give */
    void *host = NULL;
    im->host_pinned = im->drv.cuMemAllocHost(&host, want + sizeof(launch_head)) == CUDA_SUCCESS && host;
    im->host_block = im->host_pinned ? host : malloc(want + sizeof(launch_head));
    if (!im->host_block) {
      snprintf(be->error, sizeof be->error, "out of memory for a launch block of %zu bytes", want);
      return false;
    }
    if (!cuda_check(be, im->drv.cuMemAlloc(&im->block, want), "allocating the launch block")) return false;
    im->block_bytes = want;
  }
  if (im->print_cap < print_cap) {
    if (im->print) im->drv.cuMemFree(im->print);
    im->print = 0;
    im->print_cap = 0;
    if (!cuda_check(be, im->drv.cuMemAlloc(&im->print, print_cap), "allocating the print buffer")) return false;
    im->print_cap = print_cap;
  }
  return true;
}

static bool run(jit_backend *be, CUfunction f, unsigned blocks, unsigned threads, CUdeviceptr ctx, int64_t begin,
                int64_t end, const char *kernel) {
  cuda_impl *im = be->impl;
  void *params[3] = {&ctx, &begin, &end};
  char what[240];
  snprintf(what, sizeof what, "launching kernel %s", kernel);
  return cuda_check(be, im->drv.cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, NULL, params, NULL), what);
}

/* jit_backend.run_task: queues task i of jk (GC: stage `stage`). */
bool cuda_run_task(jit_backend *be, jit_kernel *jk, int i, rt_context *ctx, int stage) {
  cuda_impl *im = be->impl;
  cuda_kernel *ck = jk->impl;
  jit_task *t = &jk->tasks[i];
  CUfunction f = ck->fns[i];
  CUdeviceptr dctx = im->block;
  int threads = t->range.block_dim > 0 ? t->range.block_dim : im->block_size;
  if (threads > ck->max_threads[i]) threads = ck->max_threads[i];
  if (threads < 1) threads = 1;
  unsigned most = (unsigned)im->info.multiprocessors * 32u;
  switch (t->kind) {
  case IR_task_serial:
  case IR_task_clear_list:
    return run(be, f, 1, 1, dctx, 0, 1, jk->name);
  case IR_task_range_for: {
    /* bounds held in global temporaries are read by the entry (cg_ptx.c) */
    bool on_device = t->range.begin_gtmp >= 0 || t->range.end_gtmp >= 0;
    int64_t b = t->range.begin, e = t->range.end;
    unsigned blocks = most;
    if (!on_device) {
      if (e <= b) return true;
      int64_t need = (e - b + threads - 1) / threads;
      if (need < (int64_t)blocks) blocks = (unsigned)need;
    }
    return run(be, f, blocks, (unsigned)threads, dctx, b, e, jk->name);
  }
  case IR_task_listgen:
    return run(be, f, most / 4 ? most / 4 : 1, (unsigned)threads, dctx, 0, -1, jk->name);
  case IR_task_struct_for:
  case IR_task_deactivate_all:
    return run(be, f, most, (unsigned)threads, dctx, 0, -1, jk->name);
  case IR_task_gc:
    /* begin is the stage: 0 every thread, 1 one thread, 2 blocks as workers */
    if (stage == 1) return run(be, f, 1, 1, dctx, 1, 0, jk->name);
    return run(be, f, most / 4 ? most / 4 : 1, stage == 0 ? 128 : 64, dctx, stage, 0, jk->name);
  default:
    snprintf(be->error, sizeof be->error, "kernel %s: task kind %d cannot run on CUDA", jk->name, (int)t->kind);
    return false;
  }
}

/* jit_backend.launch_begin: the launch block as the device sees it, sent. */
bool cuda_launch_begin(jit_backend *be, jit_kernel *jk, rt_context *ctx) {
  cuda_impl *im = be->impl;
  if (!cuda_alive(be)) return false;
  rt_builtins *hb = ctx->builtins;
  size_t gtmp = jk->gtmp_bytes > 0 ? (size_t)jk->gtmp_bytes : 8;
  size_t bytes = GTMP_OFFSET + gtmp;
  if (!reserve(be, bytes, hb && hb->print_cap ? hb->print_cap : 8)) return false;

  char *host = im->host_block;
  memset(host, 0, bytes);
  launch_head *h = (launch_head *)host;
  char *base = (char *)(uintptr_t)im->block;
  memcpy(h->roots, ctx->roots, sizeof h->roots);
  memcpy(h->args, ctx->args, sizeof h->args);
  if (hb) {
    h->builtins = *hb;
    h->builtins.print_data = (char *)(uintptr_t)im->print;
    h->builtins.print_used = h->builtins.print_dropped = 0;
  }
  h->ctx.roots = (char **)(base + offsetof(launch_head, roots));
  h->ctx.args = (uint64_t *)(base + offsetof(launch_head, args));
  h->ctx.ret = (uint64_t *)(base + offsetof(launch_head, ret));
  h->ctx.gtmp = base + GTMP_OFFSET;
  h->ctx.error = (int32_t *)(base + offsetof(launch_head, error));
  h->ctx.error_info = (int64_t *)(base + offsetof(launch_head, info));
  h->ctx.runtime = ctx->runtime;
  h->ctx.builtins = (rt_builtins *)(base + offsetof(launch_head, builtins));
  /* queued before the tasks on the same (default) stream; launch_end synchronises */
  return cuda_check(be, im->drv.cuMemcpyHtoDAsync(im->block, host, bytes, NULL), "sending the launch block");
}

/* jit_backend.launch_end: one synchronisation, then the results back. */
bool cuda_launch_end(jit_backend *be, jit_kernel *jk, rt_context *ctx, bool ok) {
  cuda_impl *im = be->impl;
  if (!ok) return false;
  char what[240];
  snprintf(what, sizeof what, "kernel %s", jk->name);
  /* the head comes back behind the tasks, then one synchronisation; a fault
  ** of a task is reported by either call, so both name the kernel */
  launch_head *head = (launch_head *)(void *)(im->host_block + im->block_bytes);
  if (!cuda_check(be, im->drv.cuMemcpyDtoHAsync(head, im->block, sizeof *head, NULL), what)) return false;
  if (!cuda_check(be, im->drv.cuCtxSynchronize(), what)) return false;
  launch_head back = *head;
  *ctx->ret = back.ret;
  *ctx->error = back.error;
  memcpy(ctx->error_info, back.info, sizeof back.info);
  rt_builtins *hb = ctx->builtins;
  if (hb) {
    hb->print_used = back.builtins.print_used;
    hb->print_dropped = back.builtins.print_dropped;
    uint64_t n = hb->print_used < hb->print_cap ? hb->print_used : hb->print_cap;
    if (n && !cuda_check(be, im->drv.cuMemcpyDtoH(hb->print_data, im->print, n), "reading the print buffer"))
      return false;
  }
  return true;
}
