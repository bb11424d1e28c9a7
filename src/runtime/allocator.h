/*
** allocator.h -- chunked lists and the per-SNode cell allocator with its
** three-stage garbage collection (allocator.c). Device side, freestanding;
** included by runtime.h, which defines rt_runtime.
*/
#ifndef LATTICE_RT_ALLOCATOR_H
#define LATTICE_RT_ALLOCATOR_H

#include <stdint.h>

typedef struct rt_runtime rt_runtime;

/* ---- chunked lists (allocator.c) ---------------------------------------------
** An unbounded-looking array of fixed-size elements: a table of chunk
** pointers, each chunk taken from the pool the first time an index in it is
** reserved (double-checked locking on `lock`). Elements never move, so a
** pointer to one stays valid while other threads append. The table starts
** small and doubles when a chunk past its end is needed (under the lock; the
** old tables stay valid for readers that still hold them), so an empty list
** costs no pool memory and a small one little. */
typedef struct rt_list {
  int32_t size;                    /* elements in use (atomic) */
  int32_t lock;                    /* guards chunk and table creation */
  int32_t elem_bytes;              /* multiple of 8 */
  int32_t log2_chunk;              /* elements per chunk = 1 << log2_chunk */
  int32_t cap;                     /* most elements the list may hold */
  int32_t snode_id;                /* for error reports */
  int32_t data;                    /* an allocator's cells: chunks stop short of the
                                      pool's reserve (rt_runtime_bump_data) */
  int32_t pad0;
  char **chunks;                   /* the table, in the pool; its capacity (int64) is
                                      the 8 bytes before it; NULL until first used */
} rt_list;

#define RT_LIST_MAX_CHUNKS (1 << 20)
#define RT_LIST_CHUNK_BYTES 16384  /* most bytes of one chunk */

/* ---- the per-SNode cell allocator (allocator.c) ------------------------------
** data: the cells themselves. free: pointers (u64) to zeroed cells ready for
** reuse; entries [0, free_used) of it are taken. recycled: pointers to cells
** released since the last GC; GC zero-fills them and moves them to free. */
typedef struct rt_allocator {
  rt_list data;
  rt_list free;
  rt_list recycled;
  int32_t free_used;               /* atomic cursor into free */
  int32_t recycled_backup;         /* GC stage 1 -> stage 2 hand-over */
  int64_t elem_bytes;              /* bytes of one allocation (multiple of 8) */
} rt_allocator;

/* ---- allocator.c -------------------------------------------------------------- */
/* max_elems: the most elements the list will ever hold (chunks are no larger
** than that needs), or 0 for as many as RT_LIST_MAX_CHUNKS chunks allow. */
void rt_list_init(rt_list *l, int32_t elem_bytes, int32_t snode_id, int64_t max_elems);
/* Reserves one more element, creating its chunk if needed; -1 on failure (recorded). */
int32_t rt_list_reserve(rt_runtime *rt, rt_list *l);
char *rt_list_get(const rt_list *l, int32_t i);
int32_t rt_list_size(const rt_list *l);

void rt_allocator_init(rt_allocator *a, int64_t elem_bytes, int32_t snode_id);   /* elem_bytes: a multiple of 8 */
/* A zeroed cell of the SNode's allocator, or NULL when the pool is exhausted
** (recorded). Cells released during a task are not reused before GC. */
char *rt_allocator_allocate(rt_runtime *rt, int32_t snode);
void rt_allocator_recycle(rt_runtime *rt, int32_t snode, char *cell);
/* Garbage collection of one SNode's allocator, in three stages that the host
** runs one after the other (each stage finished by every worker before the
** next starts):
**   stage 0, parallel: move the free-list entries not yet used to its front;
**   stage 1, one thread: resize the free list, hand the recycled count over;
**   stage 2, parallel: zero-fill each recycled cell and append it to the free
**           list. Workers take cells strided by worker/nworkers; within a cell,
**           lanes (the threads of a GPU block; 1 on the CPU) take 8-byte words. */
void rt_gc_stage0(rt_runtime *rt, int32_t snode, int32_t worker, int32_t nworkers);
void rt_gc_stage1(rt_runtime *rt, int32_t snode);
void rt_gc_stage2(rt_runtime *rt, int32_t snode, int32_t worker, int32_t nworkers, int32_t lane,
                  int32_t nlanes);
void rt_gc(rt_runtime *rt, int32_t snode);     /* all three stages on one thread */

#endif
