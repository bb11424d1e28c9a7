/*
** cuda_backend.c -- the CUDA backend: device 0's primary context, device
** memory through the driver's copies, host requests to the sparse runtime
** run as a one-thread kernel, and driver failures as messages.
**
** The driver is loaded at run time (cuda_driver.c), so nothing here needs the
** CUDA toolkit to build. Everything runs on the null stream, so copies,
** requests and kernels are ordered without explicit synchronisation; a
** launch ends with a synchronisation (cuda_launch.c), so when a kernel call
** returns to Lua its writes are visible to Lua-scope reads.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/runtime.h"
#include "../../runtime/service.h"
#include "cuda.h"

#define DEV(p) ((CUdeviceptr)(uintptr_t)(p))

/* ---- failures ------------------------------------------------------------------ */

/* Errors after which the context is unusable: a kernel faulted. */
static bool sticky(CUresult r) {
  return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED || (r >= 702 && r <= 718) ||
         r == 999;
}

bool cuda_check(jit_backend *be, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return true;
  cuda_impl *im = be->impl;
  char text[320];
  cuda_error(&im->drv, r, what, text, sizeof text);
  if (sticky(r)) {
    if (!im->lost) snprintf(im->lost_why, sizeof im->lost_why, "%s", text);
    im->lost = true;
    snprintf(be->error, sizeof be->error,
             "%s; the GPU context is lost, so no more kernels can run in this process: fix the "
             "fault (run with lt.init{debug = true} to check indices) and restart", text);
  } else {
    snprintf(be->error, sizeof be->error, "%s", text);
  }
  return false;
}

bool cuda_alive(jit_backend *be) {
  cuda_impl *im = be->impl;
  if (!im->lost) return true;
  snprintf(be->error, sizeof be->error,
           "the GPU context was lost after an earlier fault (%s); restart the program", im->lost_why);
  return false;
}

/* ---- device memory (jit.h) ----------------------------------------------------------- */

static char *cuda_mem_alloc(jit_backend *be, uint64_t bytes) {
  cuda_impl *im = be->impl;
  if (!cuda_alive(be)) return NULL;
  CUdeviceptr p = 0;
  CUresult r = im->drv.cuMemAlloc(&p, bytes ? bytes : 1);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free_b = 0, total = 0;
    im->drv.cuMemGetInfo(&free_b, &total);
    snprintf(be->error, sizeof be->error,
             "out of GPU memory: cannot allocate %llu bytes on %s (%llu of %llu bytes free); "
             "lower lt.init{device_memory = ...} or device_memory_fraction",
             (unsigned long long)bytes, im->info.name, (unsigned long long)free_b,
             (unsigned long long)total);
    return NULL;
  }
  if (!cuda_check(be, r, "cuMemAlloc")) return NULL;
  /* the runtime expects zeroed memory (runtime.h) */
  if (!cuda_check(be, im->drv.cuMemsetD8(p, 0, bytes), "cuMemsetD8")) {
    im->drv.cuMemFree(p);
    return NULL;
  }
  return (char *)(uintptr_t)p;
}

static void cuda_mem_free(jit_backend *be, char *p, uint64_t bytes) {
  cuda_impl *im = be->impl;
  (void)bytes;
  if (p) im->drv.cuMemFree(DEV(p));   /* fails harmlessly once the context is lost */
}

static bool cuda_mem_read(jit_backend *be, void *dst, const char *src, size_t n) {
  cuda_impl *im = be->impl;
  return n == 0 || (cuda_alive(be) && cuda_check(be, im->drv.cuMemcpyDtoH(dst, DEV(src), n), "reading GPU memory"));
}

static bool cuda_mem_write(jit_backend *be, char *dst, const void *src, size_t n) {
  cuda_impl *im = be->impl;
  return n == 0 || (cuda_alive(be) && cuda_check(be, im->drv.cuMemcpyHtoD(DEV(dst), src, n), "writing GPU memory"));
}

static bool cuda_mem_zero(jit_backend *be, char *dst, size_t n) {
  cuda_impl *im = be->impl;
  return n == 0 || (cuda_alive(be) && cuda_check(be, im->drv.cuMemsetD8(DEV(dst), 0, n), "clearing GPU memory"));
}

/* rt_serve(rt, req) on one GPU thread: the request goes there and back. */
static bool cuda_serve(jit_backend *be, rt_runtime *rt, rt_request *req) {
  cuda_impl *im = be->impl;
  if (!cuda_alive(be)) return false;
  if (!cuda_check(be, im->drv.cuMemcpyHtoD(im->req, req, sizeof *req), "sending a runtime request")) return false;
  CUdeviceptr rtp = DEV(rt), reqp = im->req;
  void *params[2] = {&rtp, &reqp};
  if (!cuda_check(be, im->drv.cuLaunchKernel(im->serve_fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
                  "launching a runtime request (lt_serve)"))
    return false;
  if (!cuda_check(be, im->drv.cuCtxSynchronize(), "a runtime request (lt_serve)")) return false;
  return cuda_check(be, im->drv.cuMemcpyDtoH(req, im->req, sizeof *req), "reading a runtime request back");
}

/* ---- create / destroy ------------------------------------------------------------------ */

static void cuda_destroy(jit_backend *be) {
  if (!be) return;
  cuda_impl *im = be->impl;
  if (im->drv.lib) {
    cuda_launch_free(be);
    if (im->req) im->drv.cuMemFree(im->req);
    if (im->service) im->drv.cuModuleUnload(im->service);
    if (im->ctx) im->drv.cuDevicePrimaryCtxRelease(im->dev);
    if (im->hooked) cuda_hooks->detach(im->hooked);
    cuda_driver_unload(&im->drv);
  }
  free(im->libdevice);
  free((char *)im->cache.dir);
  free(im->backend_line);
  free(im);
  free(be);
}

/* The newest PTX target Lattice's LLVM knows that the GPU runs (the
** driver's JIT takes PTX for an older sm on a newer GPU). */
static void pick_sm(cuda_impl *im) {
  int sm = im->info.sm > 90 ? 90 : im->info.sm;
  snprintf(im->sm, sizeof im->sm, "sm_%d", sm);
}

/* lt_serve: the kernel that runs host requests, from `service`. */
static bool load_service(jit_backend *be, cuda_service_fn service, char *err, size_t errlen) {
  cuda_impl *im = be->impl;
  char *ptx = service(im->sm, err, errlen);
  bool ok = ptx && cuda_load_module(be, ptx, "the runtime's request kernel", &im->service, err, errlen);
  free(ptx);
  if (!ok) return false;
  if (!cuda_check(be, im->drv.cuModuleGetFunction(&im->serve_fn, im->service, "lt_serve"), "cuModuleGetFunction(lt_serve)") ||
      !cuda_check(be, im->drv.cuMemAlloc(&im->req, sizeof(rt_request)), "cuMemAlloc (runtime request)")) {
    snprintf(err, errlen, "%s", be->error);
    return false;
  }
  return true;
}

const cuda_test_hooks *cuda_hooks;

void cuda_set_test_hooks(const cuda_test_hooks *h) { cuda_hooks = h; }

jit_backend *cuda_open(const jit_options *o, cuda_service_fn service, char *err, size_t errlen) {
  jit_backend *be = calloc(1, sizeof *be);
  cuda_impl *im = calloc(1, sizeof *im);
  if (!be || !im) {
    free(be); free(im);
    snprintf(err, errlen, "out of memory creating the CUDA backend");
    return NULL;
  }
  be->impl = im;
  im->debug = o && o->debug;
  im->dump_ptx = o && o->dump_ptx;
  im->block_size = 256;
  const char *driver = o && o->cuda_driver && *o->cuda_driver ? o->cuda_driver : NULL;
  if (!cuda_driver_load(&im->drv, driver, err, errlen) || !cuda_probe(&im->drv, &im->info, err, errlen)) {
    cuda_destroy(be);
    return NULL;
  }
  if (!cuda_check(be, im->drv.cuDeviceGet(&im->dev, 0), "cuDeviceGet") ||
      !cuda_check(be, im->drv.cuDevicePrimaryCtxRetain(&im->ctx, im->dev), "cuDevicePrimaryCtxRetain") ||
      !cuda_check(be, im->drv.cuCtxSetCurrent(im->ctx), "cuCtxSetCurrent")) {
    snprintf(err, errlen, "%s", be->error);
    cuda_destroy(be);
    return NULL;
  }
  pick_sm(im);
  if (cuda_hooks) im->hooked = cuda_hooks->attach(im->drv.lib, err, errlen);
  if (!load_service(be, service, err, errlen)) {
    cuda_destroy(be);
    return NULL;
  }
  size_t free_b = 0, total = 0;
  im->drv.cuMemGetInfo(&free_b, &total);
  be->name = "cuda";
  be->threads = im->info.multiprocessors * 2048;   /* resident threads, for lt.stats */
  be->host_memory = false;
  be->memory_bytes = total;
  /* half the free memory, at most 4 GiB, unless lt.init says otherwise */
  be->default_pool = free_b / 2 < (4ull << 30) ? free_b / 2 : (4ull << 30);
  be->mem_alloc = cuda_mem_alloc;
  be->mem_free = cuda_mem_free;
  be->mem_read = cuda_mem_read;
  be->mem_write = cuda_mem_write;
  be->mem_zero = cuda_mem_zero;
  be->serve = cuda_serve;
  be->synchronous = false;
  be->launch_begin = cuda_launch_begin;
  be->run_task = cuda_run_task;
  be->launch_end = cuda_launch_end;
  be->mark = cuda_mark;
  be->mark_ms = cuda_mark_ms;
  be->release = cuda_release;
  be->load_ptx = cuda_load_ptx;
  be->device_sm = im->sm;
  be->destroy = cuda_destroy;
  return be;
}

/* ---- benchmarks ------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bool jit_cuda_copy_ms(jit_backend *be, uint64_t bytes, int reps, double *ms) {
  cuda_impl *im = be->impl;
  if (strcmp(be->name, "cuda") != 0 || reps < 1 || reps > 1000) {
    snprintf(be->error, sizeof be->error, "a device copy benchmark needs the CUDA backend and 1..1000 reps");
    return false;
  }
  if (!cuda_alive(be)) return false;
  CUdeviceptr a = 0, b = 0;
  CUevent e0 = NULL, e1 = NULL;
  double t[1000];
  bool ok = cuda_check(be, im->drv.cuMemAlloc(&a, bytes), "cuMemAlloc") &&
            cuda_check(be, im->drv.cuMemAlloc(&b, bytes), "cuMemAlloc") &&
            cuda_check(be, im->drv.cuEventCreate(&e0, 0), "cuEventCreate") &&
            cuda_check(be, im->drv.cuEventCreate(&e1, 0), "cuEventCreate") &&
            cuda_check(be, im->drv.cuMemcpyDtoD(b, a, bytes), "cuMemcpyDtoD");   /* warm-up */
  for (int r = 0; ok && r < reps; r++) {
    float f = 0;
    ok = cuda_check(be, im->drv.cuEventRecord(e0, NULL), "cuEventRecord") &&
         cuda_check(be, im->drv.cuMemcpyDtoD(b, a, bytes), "cuMemcpyDtoD") &&
         cuda_check(be, im->drv.cuEventRecord(e1, NULL), "cuEventRecord") &&
         cuda_check(be, im->drv.cuEventSynchronize(e1), "cuEventSynchronize") &&
         cuda_check(be, im->drv.cuEventElapsedTime(&f, e0, e1), "cuEventElapsedTime");
    t[r] = f;
  }
  if (ok) {
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *ms = t[reps / 2];
  }
  if (e0) im->drv.cuEventDestroy(e0);
  if (e1) im->drv.cuEventDestroy(e1);
  if (a) im->drv.cuMemFree(a);
  if (b) im->drv.cuMemFree(b);
  return ok;
}
