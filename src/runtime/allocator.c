/*
** allocator.c -- chunked lists, the per-SNode cell allocator and its garbage
** collection (device side, freestanding).
**
** A cell released during a task goes to the recycled list, not the free list,
** so no thread of the same task can be handed memory another thread may still
** be reading. GC runs between tasks: it zero-fills the recycled cells and
** makes them the free list's tail, so every cell handed out is zero.
*/
#include "runtime.h"

/* ---- chunked lists ------------------------------------------------------------ */

void rt_list_init(rt_list *l, int32_t elem_bytes, int32_t snode_id) {
  int32_t per_chunk = 1, log2 = 0;
  /* Elements per chunk: a power of two, so an index splits with a shift. */
  while ((int64_t)per_chunk * 2 * elem_bytes <= RT_LIST_CHUNK_BYTES && log2 < 20) {
    per_chunk *= 2;
    log2++;
  }
  l->size = 0;
  l->lock = 0;
  l->elem_bytes = (int32_t)rt_align(elem_bytes, 8);
  l->log2_chunk = log2;
  l->max_chunks = RT_LIST_MAX_CHUNKS;
  l->snode_id = snode_id;
  l->data = 0;
  l->chunks = 0;
}

/* Double-checked locking: the common case (chunk exists) takes no lock. */
static int touch_chunk(rt_runtime *rt, rt_list *l, int32_t c) {
  if (rt_ld_acq(&l->chunks[c])) return 1;
  rt_lock(&l->lock);
  int ok = 1;
  if (!rt_ld_acq(&l->chunks[c])) {
    uint64_t bytes = (uint64_t)l->elem_bytes << l->log2_chunk;
    char *p = l->data ? rt_runtime_bump_data(rt, bytes, 64, l->snode_id)
                      : rt_runtime_bump(rt, bytes, 64, l->snode_id);
    if (p)
      rt_st_rel(&l->chunks[c], p);
    else
      ok = 0;
  }
  rt_unlock(&l->lock);
  return ok;
}

int32_t rt_list_reserve(rt_runtime *rt, rt_list *l) {
  int64_t cap = (int64_t)l->max_chunks << l->log2_chunk;
  if (cap > 0x7fffffff) cap = 0x7fffffff;
  int32_t i = __atomic_load_n(&l->size, __ATOMIC_RELAXED);
  /* The chunk is made before the index is claimed, and the claim is a CAS, so
  ** `size` never counts an element without memory (GC reads every counted
  ** element) nor runs past the end of a full list. */
  for (;;) {
    if (i >= cap) {
      rt_runtime_fail(rt, RT_RTERR_CAPACITY, l->snode_id, cap);
      return -1;
    }
    if (!touch_chunk(rt, l, i >> l->log2_chunk)) return -1;
    if (__atomic_compare_exchange_n(&l->size, &i, i + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return i;
  }
}

char *rt_list_get(const rt_list *l, int32_t i) {
  char *chunk = rt_ld_acq(&l->chunks[i >> l->log2_chunk]);
  return chunk + (int64_t)l->elem_bytes * (i & ((1 << l->log2_chunk) - 1));
}

int32_t rt_list_size(const rt_list *l) { return rt_ld_acq(&l->size); }

/* ---- the cell allocator --------------------------------------------------------- */

void rt_allocator_init(rt_allocator *a, int64_t elem_bytes, int32_t snode_id) {
  a->elem_bytes = rt_align(elem_bytes, 8);
  rt_list_init(&a->data, (int32_t)a->elem_bytes, snode_id);
  a->data.data = 1;
  rt_list_init(&a->free, 8, snode_id);
  rt_list_init(&a->recycled, 8, snode_id);
  a->free_used = 0;
  a->recycled_backup = 0;
}

char *rt_allocator_allocate(rt_runtime *rt, int32_t snode) {
  rt_allocator *a = &rt->allocators[snode];
  /* free_used may run past the free list's end; GC stage 1 resets it. */
  int32_t k = __atomic_fetch_add(&a->free_used, 1, __ATOMIC_RELAXED);
  if (k < rt_list_size(&a->free)) return *(char **)rt_list_get(&a->free, k);
  int32_t i = rt_list_reserve(rt, &a->data);
  return i < 0 ? 0 : rt_list_get(&a->data, i);
}

void rt_allocator_recycle(rt_runtime *rt, int32_t snode, char *cell) {
  rt_allocator *a = &rt->allocators[snode];
  int32_t i = rt_list_reserve(rt, &a->recycled);
  /* On failure the cell leaks (the error is recorded and reported). */
  if (i >= 0) *(char **)rt_list_get(&a->recycled, i) = cell;
}

/* ---- garbage collection ------------------------------------------------------------ */

static int32_t unused_free(const rt_allocator *a) {
  int32_t n = a->free.size - a->free_used;
  return n > 0 ? n : 0;
}

void rt_gc_stage0(rt_runtime *rt, int32_t snode, int32_t worker, int32_t nworkers) {
  rt_allocator *a = &rt->allocators[snode];
  int32_t used = a->free_used, n = unused_free(a);
  if (n == 0 || used == 0) return;
  if (used >= n) {
    /* Source [used, used+n) and destination [0, n) are disjoint: split freely. */
    for (int32_t i = worker; i < n; i += nworkers)
      *(char **)rt_list_get(&a->free, i) = *(char **)rt_list_get(&a->free, used + i);
  } else if (worker == 0) {
    /* Overlapping ranges: a forward copy is safe because dst < src, but only
    ** if one thread does it in order. */
    for (int32_t i = 0; i < n; i++)
      *(char **)rt_list_get(&a->free, i) = *(char **)rt_list_get(&a->free, used + i);
  }
}

void rt_gc_stage1(rt_runtime *rt, int32_t snode) {
  rt_allocator *a = &rt->allocators[snode];
  a->free.size = unused_free(a);
  a->free_used = 0;
  a->recycled_backup = a->recycled.size;
  /* Clearing only resets the count: stage 2 still reads the entries. */
  a->recycled.size = 0;
  __atomic_fetch_add(&rt->gc_runs, 1, __ATOMIC_RELAXED);
}

void rt_gc_stage2(rt_runtime *rt, int32_t snode, int32_t worker, int32_t nworkers, int32_t lane,
                  int32_t nlanes) {
  rt_allocator *a = &rt->allocators[snode];
  int64_t words = a->elem_bytes / 8;
  for (int32_t i = worker; i < a->recycled_backup; i += nworkers) {
    char *cell = *(char **)rt_list_get(&a->recycled, i);
    uint64_t *w = (uint64_t *)cell;     /* cells are 8-byte aligned, sizes multiples of 8 */
    for (int64_t k = lane; k < words; k += nlanes) w[k] = 0;
    if (lane == 0) {
      int32_t j = rt_list_reserve(rt, &a->free);
      if (j >= 0) *(char **)rt_list_get(&a->free, j) = cell;
    }
  }
}

void rt_gc(rt_runtime *rt, int32_t snode) {
  rt_gc_stage0(rt, snode, 0, 1);
  rt_gc_stage1(rt, snode);
  rt_gc_stage2(rt, snode, 0, 1, 0, 1);
}
