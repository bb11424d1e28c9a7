/*
** threadpool.h -- worker threads created once, shared by every parallel task.
**
** rt_pool_parallel_for splits [begin, end) into chunks; the calling thread
** and the workers take chunks from one atomic counter until none is left, and
** the call returns when every chunk has run. Thread ids are 0 (the caller)
** to rt_pool_threads(pool) - 1. One parallel_for runs at a time per pool;
** concurrent callers wait their turn.
*/
#ifndef LATTICE_RT_THREADPOOL_H
#define LATTICE_RT_THREADPOOL_H

#include <stdint.h>

typedef struct rt_pool rt_pool;
typedef void (*rt_pool_fn)(void *ud, int thread_id, int64_t begin, int64_t end);

/* threads <= 0: one per online core. NULL when threads cannot be started. */
rt_pool *rt_pool_create(int threads);
void rt_pool_destroy(rt_pool *pool);      /* joins the workers */
int rt_pool_threads(const rt_pool *pool);
/* The chunk size used when chunk <= 0: about 8 chunks per thread, at least
** 1 and at most 1 << 16 iterations. */
int64_t rt_pool_default_chunk(const rt_pool *pool, int64_t n);
void rt_pool_parallel_for(rt_pool *pool, int64_t begin, int64_t end, int64_t chunk, rt_pool_fn fn,
                          void *ud);

#endif
