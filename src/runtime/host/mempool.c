/*
** mempool.c -- reserving the sparse runtime's pool and describing its failures
** (host side).
*/
#include "mempool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>

#include "../runtime.h"

char *rt_mempool_reserve(uint64_t bytes, char *err, size_t errlen) {
  if (bytes == 0) {
    snprintf(err, errlen, "the memory pool size must be positive");
    return NULL;
  }
  /* Private anonymous memory is zero on first touch; NORESERVE lets a pool
  ** larger than RAM + swap be reserved, pages committed only when written. */
  void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    snprintf(err, errlen, "the system refused %llu bytes of address space (%s; is `ulimit -v` set?); "
             "ask for a smaller pool", (unsigned long long)bytes, strerror(errno));
    return NULL;
  }
  return p;
}

/* The number in a cgroup file; UINT64_MAX for "max" (no limit) or none. */
static uint64_t cgroup_limit(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return UINT64_MAX;
  uint64_t v;
  if (fscanf(f, "%" SCNu64, &v) != 1) v = UINT64_MAX;
  fclose(f);
  return v;
}

void rt_host_memory(uint64_t *ram, uint64_t *total) {
  struct sysinfo si;
  *ram = *total = 0;
  if (sysinfo(&si) != 0) return;
  uint64_t unit = si.mem_unit ? si.mem_unit : 1;
  *ram = (uint64_t)si.totalram * unit;
  uint64_t swap = (uint64_t)si.totalswap * unit;
  *total = *ram + swap;
  /* a container's limit: cgroup v2 (memory and swap apart), else v1 (memsw
  ** counts both; v1 writes "no limit" as a huge number) */
  uint64_t cg = cgroup_limit("/sys/fs/cgroup/memory.max");
  if (cg != UINT64_MAX) {
    uint64_t cg_swap = cgroup_limit("/sys/fs/cgroup/memory.swap.max");
    cg += cg_swap < swap ? cg_swap : swap;
  } else {
    cg = cgroup_limit("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes");
    if (cg == UINT64_MAX) cg = cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  }
  if (cg < *total) *total = cg;
}

void rt_mempool_release(char *pool, uint64_t bytes) {
  if (pool) munmap(pool, (size_t)bytes);
}

uint64_t rt_mempool_used(const rt_runtime *rt) {
  return __atomic_load_n(&rt->pool_used, __ATOMIC_ACQUIRE);
}

int rt_runtime_describe_error(const rt_runtime *rt, const char *snode_label, char *buf, size_t len) {
  char name[32];
  if (!snode_label) {
    snprintf(name, sizeof name, "S%d", (int)rt->error_snode);
    snode_label = name;
  }
  switch (rt->error) {
  case RT_RTERR_OK:
    return 0;
  case RT_RTERR_POOL:
    snprintf(buf, len,
             "out of sparse memory: SNode %s requested %lld bytes, but the memory pool of %llu "
             "bytes has %llu left; give lt.init a larger pool or deactivate cells sooner",
             snode_label, (long long)rt->error_bytes, (unsigned long long)rt->pool_size,
             (unsigned long long)(rt->pool_size - rt_mempool_used(rt)));
    break;
  case RT_RTERR_CAPACITY:
    snprintf(buf, len,
             "SNode %s needs more than %lld cells or list entries, the most one of its lists "
             "holds; use larger cells (e.g. a dense level under it)",
             snode_label, (long long)rt->error_bytes);
    break;
  case RT_RTERR_META:
    snprintf(buf, len,
             "internal error: SNode %s was described to the runtime with an invalid meta "
             "(kind, cells, axes or a cell larger than the ambient cell)",
             snode_label);
    break;
  default:
    snprintf(buf, len, "unknown sparse runtime error %d at SNode %s", (int)rt->error, snode_label);
    break;
  }
  return 1;
}
