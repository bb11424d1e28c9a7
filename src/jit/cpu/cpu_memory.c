/*
** cpu_memory.c -- the CPU backend's device memory (jit.h): the host's own
** memory, so the copies are memcpy and a request runs as a direct call of
** rt_serve. The pool is address space reserved with MAP_NORESERVE
** (rt_mempool_reserve): zero pages, committed only when touched.
*/
#include <string.h>

#include "../../runtime/host/mempool.h"
#include "../../runtime/service.h"
#include "../jit_sparse.h"
#include "cpu_exec.h"

static char *cpu_mem_alloc(jit_backend *be, uint64_t bytes) {
  return rt_mempool_reserve(bytes, be->error, sizeof be->error);
}

static void cpu_mem_free(jit_backend *be, char *p, uint64_t bytes) { rt_mempool_release(p, bytes); }

static bool cpu_mem_read(jit_backend *be, void *dst, const char *src, size_t n) {
  memcpy(dst, src, n);
  return true;
}

static bool cpu_mem_write(jit_backend *be, char *dst, const void *src, size_t n) {
  memcpy(dst, src, n);
  return true;
}

static bool cpu_mem_zero(jit_backend *be, char *dst, size_t n) {
  memset(dst, 0, n);
  return true;
}

static bool cpu_serve(jit_backend *be, struct rt_runtime *rt, struct rt_request *req) {
  rt_serve(rt, req);
  return true;
}

void cpu_memory_init(jit_backend *be) {
  be->host_memory = true;
  be->mem_alloc = cpu_mem_alloc;
  be->mem_free = cpu_mem_free;
  be->mem_read = cpu_mem_read;
  be->mem_write = cpu_mem_write;
  be->mem_zero = cpu_mem_zero;
  be->serve = cpu_serve;
  be->default_pool = JIT_SPARSE_DEFAULT_POOL;
  uint64_t ram, total;
  rt_host_memory(&ram, &total);   /* device_memory_fraction: a share of the RAM */
  be->memory_bytes = ram;
}
