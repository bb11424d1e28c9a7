/*
** mempool.c -- reserving the sparse runtime's pool and describing its failures
** (host side).
*/
#include "mempool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

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
    snprintf(err, errlen, "cannot reserve a memory pool of %llu bytes: %s; ask for a smaller pool",
             (unsigned long long)bytes, strerror(errno));
    return NULL;
  }
  return p;
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
