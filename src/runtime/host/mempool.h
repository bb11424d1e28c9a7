/*
** mempool.h -- the host side of the sparse runtime's memory: one pool
** reserved at start-up, and turning a recorded runtime failure into a message.
**
** On the CPU the pool is address space reserved with MAP_NORESERVE: the OS
** commits (and zero-fills) a page the first time it is touched, so a large
** pool costs nothing until used. The device side sees only the bump pointer in
** rt_runtime (src/runtime/runtime.h), which it advances atomically.
*/
#ifndef LATTICE_RT_MEMPOOL_H
#define LATTICE_RT_MEMPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_runtime rt_runtime;

/* Reserves `bytes` of zeroed memory; NULL with a message in err on failure. */
char *rt_mempool_reserve(uint64_t bytes, char *err, size_t errlen);
void rt_mempool_release(char *pool, uint64_t bytes);
/* The machine's memory, read here and nowhere else: *ram the physical RAM,
** *total what a process can commit (RAM + swap, no more than the limit of its
** memory cgroup). Either is 0 when it cannot be found. */
void rt_host_memory(uint64_t *ram, uint64_t *total);
/* Bytes of the pool the runtime has taken so far (its high-water mark). */
uint64_t rt_mempool_used(const rt_runtime *rt);

/* Writes the runtime's recorded failure as a user-facing message (what, which
** SNode, what to do) into buf; returns 0 when none is recorded. snode_label
** names the SNode (e.g. "S3pointer"); NULL prints its id. */
int rt_runtime_describe_error(const rt_runtime *rt, const char *snode_label, char *buf, size_t len);

#endif
