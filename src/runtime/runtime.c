/*
** runtime.c -- the runtime state in the pool: set-up, SNode registration, the
** bump allocator every other part takes memory from, and error recording.
**
** Device side (freestanding). On the CPU the host calls these directly; on
** CUDA the same code runs as a one-thread task, so every pointer stored in the
** state is a device address.
*/
#include "runtime.h"

/* The state's own arrays, in the order rt_runtime_init carves them. */
static uint64_t state_bytes(int32_t nsnodes, int64_t ambient_bytes) {
  uint64_t n = (uint64_t)nsnodes;
  uint64_t b = rt_align(sizeof(rt_runtime), 64);
  b += rt_align(n * sizeof(rt_meta), 64);
  b += rt_align(n * sizeof(rt_allocator), 64);
  b += rt_align(n * sizeof(rt_list), 64);
  b += rt_align((uint64_t)RT_ACTIVE_STRIPES * (uint64_t)rt_active_stride(nsnodes) * sizeof(int64_t), 64);
  b += rt_align(n * sizeof(int32_t), 64);
  b += 2 * rt_align(ambient_bytes, 64);
  return b;
}

uint64_t rt_runtime_min_pool(int32_t nsnodes, int64_t ambient_bytes) {
  return state_bytes(nsnodes, ambient_bytes);
}

void rt_runtime_fail(rt_runtime *rt, int32_t code, int32_t snode, int64_t bytes) {
  int32_t expected = RT_RTERR_OK;
  if (!__atomic_compare_exchange_n(&rt->error, &expected, code, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  /* Readers look at the details only after the task (a barrier) ended. */
  rt->error_snode = snode;
  rt->error_bytes = bytes;
}

static char *bump_below(rt_runtime *rt, uint64_t bytes, uint64_t align, int32_t snode, uint64_t limit) {
  uint64_t old = __atomic_load_n(&rt->pool_used, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t start = (old + align - 1) & ~(align - 1);
    /* Compare without overflowing: start + bytes > limit. */
    if (start > limit || bytes > limit - start) {
      rt_runtime_fail(rt, RT_RTERR_POOL, snode, (int64_t)bytes);
      return 0;
    }
    if (__atomic_compare_exchange_n(&rt->pool_used, &old, start + bytes, 1, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return rt->pool + start;
  }
}

char *rt_runtime_bump(rt_runtime *rt, uint64_t bytes, uint64_t align, int32_t snode) {
  return bump_below(rt, bytes, align, snode, rt->pool_size);
}

char *rt_runtime_bump_data(rt_runtime *rt, uint64_t bytes, uint64_t align, int32_t snode) {
  uint64_t limit = rt->reserve < rt->pool_size ? rt->pool_size - rt->reserve : 0;
  return bump_below(rt, bytes, align, snode, limit);
}

rt_runtime *rt_runtime_init(char *pool, uint64_t pool_size, int32_t nsnodes, int64_t ambient_bytes) {
  if (!pool || nsnodes < 0 || ambient_bytes < 8 ||
      pool_size < state_bytes(nsnodes, ambient_bytes) || pool_size > RT_MAX_POOL)
    return 0;
  rt_runtime *rt = (rt_runtime *)pool;
  rt->pool = pool;
  rt->pool_size = pool_size;
  rt->pool_used = rt_align(sizeof(rt_runtime), 64);
  rt->nsnodes = nsnodes;
  /* the smallest unit that lets a 32-bit pointer slot reach the whole pool */
  rt->slot_shift = RT_SLOT_MIN_SHIFT;
  while (rt->slot_shift < RT_SLOT_MAX_SHIFT && (pool_size - 1) >> (32 + rt->slot_shift)) rt->slot_shift++;
  rt->ambient_bytes = rt_align(ambient_bytes, 8);
  /* These cannot fail: state_bytes checked the room above. */
  rt->metas = (rt_meta *)rt_runtime_bump(rt, (uint64_t)nsnodes * sizeof(rt_meta), 64, -1);
  rt->allocators = (rt_allocator *)rt_runtime_bump(rt, (uint64_t)nsnodes * sizeof(rt_allocator), 64, -1);
  rt->lists = (rt_list *)rt_runtime_bump(rt, (uint64_t)nsnodes * sizeof(rt_list), 64, -1);
  rt->active_stride = rt_active_stride(nsnodes);
  rt->active = (int64_t *)rt_runtime_bump(
      rt, (uint64_t)RT_ACTIVE_STRIPES * (uint64_t)rt->active_stride * sizeof(int64_t), 64, -1);
  rt->changed = (int32_t *)rt_runtime_bump(rt, (uint64_t)nsnodes * sizeof(int32_t), 64, -1);
  rt->ambient = rt_runtime_bump(rt, (uint64_t)rt->ambient_bytes, 64, -1);
  rt->sink = rt_runtime_bump(rt, (uint64_t)rt->ambient_bytes, 64, -1);
  for (int32_t i = 0; i < nsnodes; i++) rt->metas[i].kind = -1;
  return rt;
}

char *rt_append_table(rt_runtime *rt, int32_t thread) {
  if (!rt->append_tables || thread < 0 || thread >= rt->append_threads) return 0;
  return rt->append_tables + (int64_t)thread * RT_APPEND_TABLE_BYTES;
}

rt_meta *rt_runtime_meta(rt_runtime *rt, int32_t snode) {
  if (snode < 0 || snode >= rt->nsnodes || rt->metas[snode].kind < 0) return 0;
  return &rt->metas[snode];
}

static int valid_meta(const rt_runtime *rt, const rt_meta *m) {
  if (m->snode_id < 0 || m->snode_id >= rt->nsnodes) return 0;
  if (m->kind < 0 || m->kind >= RT_NUM_KINDS) return 0;
  if (m->num_cells <= 0 || m->cell_bytes < 0 || m->naxes < 0 || m->naxes > RT_MAX_AXES) return 0;
  if (m->kind == RT_KIND_DYNAMIC && (m->chunk_cells <= 0 || m->naxes != 1)) return 0;
  /* A read of an inactive cell goes through the ambient cell: it must cover it. */
  if (m->kind != RT_KIND_DENSE && m->cell_bytes > rt->ambient_bytes) return 0;
  int64_t cells = 1;
  for (int32_t k = 0; k < m->naxes; k++) {
    if (m->axis[k] < 0 || m->axis[k] >= RT_MAX_AXES || m->extent[k] <= 0 || m->below[k] <= 0) return 0;
    cells *= m->extent[k];
  }
  return m->naxes == 0 ? m->num_cells == 1 : cells == m->num_cells;
}

int32_t rt_runtime_add_snode(rt_runtime *rt, const rt_meta *m) {
  /* Registering an id twice would orphan its allocator's cells. */
  if (!valid_meta(rt, m) || rt->metas[m->snode_id].kind >= 0) {
    rt_runtime_fail(rt, RT_RTERR_META, m->snode_id, 0);
    return 0;
  }
  int32_t id = m->snode_id;
  rt_meta *dst = &rt->metas[id];
  *dst = *m;
  dst->rt = rt;
  dst->slot_shift = rt->slot_shift;
  /* a dropped SNode's list chunks serve again when they have the same size */
  rt_list *l = &rt->lists[id], fresh;
  rt_list_init(&fresh, (int32_t)sizeof(rt_elem), id, m->containers);
  if (l->chunks && l->elem_bytes == fresh.elem_bytes && l->log2_chunk == fresh.log2_chunk) fresh.chunks = l->chunks;
  *l = fresh;
  int64_t bytes = rt_alloc_bytes(m);
  if (bytes > 0) {
    /* pointer cells and dynamic chunks sit on slot units (rt_slot_cell) */
    if (m->kind == RT_KIND_POINTER || m->kind == RT_KIND_DYNAMIC) bytes = rt_align(bytes, (int64_t)1 << rt->slot_shift);
    /* so do a dropped SNode's cells (zeroed in its free list) */
    rt_allocator *a = &rt->allocators[id];
    if (!a->data.chunks || a->elem_bytes != rt_align(bytes, 8)) rt_allocator_init(a, bytes, id);
  }
  return 1;
}

void rt_runtime_drop_snode(rt_runtime *rt, int32_t snode) {
  if (snode < 0 || snode >= rt->nsnodes) return;
  rt->metas[snode].kind = -1;
  rt->lists[snode].size = 0;
  for (int k = 0; k < RT_ACTIVE_STRIPES; k++)
    __atomic_store_n(&rt->active[(int64_t)k * rt->active_stride + snode], 0, __ATOMIC_RELAXED);
  rt->changed[snode] = 0;
}

int64_t rt_runtime_active(rt_runtime *rt, int32_t snode) {
  int64_t n = 0;
  for (int k = 0; k < RT_ACTIVE_STRIPES; k++)
    n += __atomic_load_n(&rt->active[(int64_t)k * rt->active_stride + snode], __ATOMIC_RELAXED);
  return n;
}
