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

void rt_list_init(rt_list *l, int32_t elem_bytes, int32_t snode_id, int64_t max_elems) {
  elem_bytes = (int32_t)rt_align(elem_bytes, 8);
  int64_t most = (int64_t)RT_LIST_MAX_CHUNKS * (RT_LIST_CHUNK_BYTES / elem_bytes > 0 ? RT_LIST_CHUNK_BYTES / elem_bytes : 1);
  if (max_elems <= 0 || max_elems > most) max_elems = most;
  if (max_elems > 0x7fffffff) max_elems = 0x7fffffff;
  /* Elements per chunk: a power of two (an index splits with a shift), no
  ** more than fit in RT_LIST_CHUNK_BYTES, nor than the list can ever hold. */
  int32_t log2 = 0;
  while ((int64_t)elem_bytes << (log2 + 1) <= RT_LIST_CHUNK_BYTES && ((int64_t)1 << log2) < max_elems && log2 < 20)
    log2++;
  l->size = 0;
  l->lock = 0;
  l->elem_bytes = elem_bytes;
  l->log2_chunk = log2;
  l->cap = (int32_t)max_elems;
  l->snode_id = snode_id;
  l->data = 0;
  l->pad0 = 0;
  l->chunks = 0;
}

static char **load_table(rt_list *l) {
  char **tab = __atomic_load_n(&l->chunks, RT_MO_ACQ);
  rt_fence_after_acquire();
  return tab;
}

static int64_t table_cap(char **tab) { return tab ? ((int64_t *)tab)[-1] : 0; }

/* Under l->lock: a table with room for chunk c (doubling, at least 8). */
static int grow_table(rt_runtime *rt, rt_list *l, int32_t c) {
  char **old = l->chunks;
  int64_t n = table_cap(old), want = n ? 2 * n : 8;
  while (want <= c) want *= 2;
  char *mem = rt_runtime_bump(rt, (uint64_t)(want + 1) * sizeof(char *), 64, l->snode_id);
  if (!mem) return 0;
  *(int64_t *)mem = want;
  char **tab = (char **)mem + 1;
  for (int64_t i = 0; i < n; i++) tab[i] = old[i];
  rt_fence_before_release();
  __atomic_store_n(&l->chunks, tab, RT_MO_REL);
  return 1;
}

/* Double-checked locking: the common case (chunk exists) takes no lock. */
static int touch_chunk(rt_runtime *rt, rt_list *l, int32_t c) {
  char **tab = load_table(l);
  if (c < table_cap(tab) && rt_ld_acq(&tab[c])) return 1;
  rt_lock(&l->lock);
  int ok = c < table_cap(l->chunks) || grow_table(rt, l, c);
  if (ok && !rt_ld_acq(&l->chunks[c])) {
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
  int32_t i = __atomic_load_n(&l->size, __ATOMIC_RELAXED);
  /* The chunk is made before the index is claimed, and the claim is a CAS, so
  ** `size` never counts an element without memory (GC reads every counted
  ** element) nor runs past the end of a full list. */
  for (;;) {
    if (i >= l->cap) {
      rt_runtime_fail(rt, RT_RTERR_CAPACITY, l->snode_id, l->cap);
      return -1;
    }
    if (!touch_chunk(rt, l, i >> l->log2_chunk)) return -1;
    if (__atomic_compare_exchange_n(&l->size, &i, i + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return i;
  }
}

char *rt_list_get(const rt_list *l, int32_t i) {
  char **tab = __atomic_load_n(&l->chunks, RT_MO_ACQ);
  rt_fence_after_acquire();
  char *chunk = rt_ld_acq(&tab[i >> l->log2_chunk]);
  return chunk + (int64_t)l->elem_bytes * (i & ((1 << l->log2_chunk) - 1));
}

int32_t rt_list_size(const rt_list *l) { return rt_ld_acq(&l->size); }

/* ---- the cell allocator --------------------------------------------------------- */

void rt_allocator_init(rt_allocator *a, int64_t elem_bytes, int32_t snode_id) {
  a->elem_bytes = rt_align(elem_bytes, 8);
  rt_list_init(&a->data, (int32_t)a->elem_bytes, snode_id, 0);
  a->data.data = 1;
  rt_list_init(&a->free, 8, snode_id, 0);
  rt_list_init(&a->recycled, 8, snode_id, 0);
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
  /* a GC with nothing to collect (the GPU launches the stages without asking
  ** the host first) is not counted */
  if (a->recycled_backup > 0) __atomic_fetch_add(&rt->gc_runs, 1, __ATOMIC_RELAXED);
  a->recycled.size = 0;
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
