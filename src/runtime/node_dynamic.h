/*
** node_dynamic.h -- dynamic: a 1-D list of up to num_cells cells stored as a
** singly linked list of chunks of chunk_cells cells, from the SNode's allocator.
** Included once, by nodes.c; the prototypes are in runtime.h.
**
**   node:  [i32 lock][i32 n][u64 first chunk][u64 tail][u64 0]     32 bytes
**   chunk: [u64 next chunk][i64 its number][cell 0]...[cell chunk_cells-1]
**
** Cells 0..n-1 are active. append reserves index n; activate(i) makes the
** list at least i+1 long. deactivate clears the whole list (every chunk goes
** back to the allocator), whatever i is. Appending and deactivating the same
** list in one task is a race the caller must avoid. A dynamic level is always
** the last level, so no list depends on its cells: unlike bitmasked and
** pointer it never calls rt_mark_changed, and append stays one atomic add
** (its count goes to the appending thread's stripe, or into a register of
** the generated task that adds the sum once: rt_dynamic_count).
**
** tail names the last chunk and its number in one word (number << 32 | the
** chunk's pool slot, rt_cell_slot), so an append (whose index is nearly
** always in the last chunk) finds its cell from the node's own cache line:
** no walk from the head (a chain of dependent loads, each a cache miss in a
** long list), and no read of the chunk's header, a line other threads may be
** writing cells into. One word, so a reader never pairs a chunk with another
** chunk's number. Chunks are made in order, under the list's lock, and each
** is published (release) after its header is written. The node is padded to
** 32 bytes so that it never straddles two cache lines (n and tail in one
** line); neighbouring lists' nodes written by different threads share a line
** at most two to a line.
*/

typedef struct {
  int32_t lock;
  int32_t n;
  char *head;
  uint64_t tail;                   /* the last chunk: its number << 32 | its pool slot
                                      (rt_cell_slot), or 0 */
  uint64_t pad;                    /* to 32 bytes (rt_container_bytes) */
} rt_dynamic_node;

_Static_assert(sizeof(rt_dynamic_node) == 32, "rt_container_bytes gives a dynamic node 32 bytes");

int32_t rt_dynamic_get_num_elements(const rt_meta *m, char *node) { return m->num_cells; }

int32_t rt_dynamic_length(const rt_meta *m, char *node) {
  int32_t n = rt_ld_acq(&((rt_dynamic_node *)node)->n);
  return n < m->num_cells ? n : m->num_cells;   /* appends to a full list in flight */
}

/* Chunk number c of the list, created (with any missing chunk before it)
** under the list's lock if needed; NULL when the pool is exhausted. The walk
** starts at `tail` when c is not before it: the list's last chunk as the
** caller loaded it, maybe since overtaken by a newer one, which only makes
** the walk longer (chunks before the last never change). Out of line: an append
** comes here once per chunk, and inlined, the walk and the allocation took
** registers from the generated loop around every append. */
__attribute__((noinline, cold)) static char *dyn_walk(const rt_meta *m, rt_dynamic_node *d, int32_t c,
                                                      int create, uint64_t tail) {
  char **link = &d->head;
  int32_t k = 0;
  if (tail && (int32_t)(tail >> 32) < c) {
    link = (char **)rt_slot_cell(m->rt, (uint32_t)tail);
    k = (int32_t)(tail >> 32) + 1;
  }
  for (;; k++) {
    char *chunk = rt_ld_acq(link);
    if (!chunk) {
      if (!create) return 0;
      rt_lock(&d->lock);
      chunk = rt_ld_acq(link);
      if (!chunk) {
        chunk = rt_allocator_allocate(m->rt, m->snode_id);
        if (chunk) {
          *(int64_t *)(chunk + 8) = k;
          rt_st_rel(link, chunk);
          /* made in order: the newest is the last */
          rt_st_rel(&d->tail, (uint64_t)k << 32 | rt_cell_slot(m->rt, chunk));
        }
      }
      rt_unlock(&d->lock);
      if (!chunk) return 0;
    }
    if (k == c) return chunk;
    link = (char **)chunk;
  }
}

/* The same, answered from the node's tail word when c is the last chunk
** (nearly always). */
static inline char *dyn_chunk(const rt_meta *m, rt_dynamic_node *d, int32_t c, int create) {
  uint64_t tail = rt_ld_acq(&d->tail);
  if (tail && (int32_t)(tail >> 32) == c) return rt_meta_slot_cell(m, (uint32_t)tail);
  return dyn_walk(m, d, c, create, tail);
}

static char *dyn_cell(const rt_meta *m, char *chunk, int32_t i, int32_t chunk_cells) {
  return chunk + RT_CHUNK_HEADER + (int64_t)((uint32_t)i % (uint32_t)chunk_cells) * m->cell_bytes;   /* i >= 0 */
}

char *rt_dynamic_activate(const rt_meta *m, char *node, int32_t i) {
  rt_dynamic_node *d = (rt_dynamic_node *)node;
  /* Bounds are the caller's job, but a bad i here would grow n past capacity. */
  if (i < 0 || i >= m->num_cells) return m->rt->sink;
  char *chunk = dyn_chunk(m, d, i / m->chunk_cells, 1);
  if (!chunk) return m->rt->sink;
  int32_t n = __atomic_load_n(&d->n, __ATOMIC_RELAXED);
  while (n < i + 1) {
    if (__atomic_compare_exchange_n(&d->n, &n, i + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      rt_count_active(m->rt, m->snode_id, rt_addr_stripe(node), i + 1 - n);
      break;
    }
  }
  return dyn_cell(m, chunk, i, m->chunk_cells);
}

/* Reserves index n with one atomic add (an add, unlike a compare-and-swap
** loop, takes the node's cache line once, whichever thread held it), then
** finds or makes its chunk. A list already full gives the index back, so n
** passes num_cells only by the appends in flight (rt_dynamic_length reads
** at most num_cells). chunk_cells is m->chunk_cells, passed by generated
** code as a constant so the division by it folds. The element is counted
** in stripe `stripe`; when stripe < 0 the caller counts it (generated code
** sums a task's appends in a register and calls rt_dynamic_count once, as
** it returns). */
char *rt_dynamic_append_cell(const rt_meta *m, char *node, int32_t chunk_cells, int32_t stripe,
                             int32_t *index) {
  rt_dynamic_node *d = (rt_dynamic_node *)node;
  int32_t n = __atomic_fetch_add(&d->n, 1, __ATOMIC_ACQ_REL);
  if (n >= m->num_cells) {
    __atomic_fetch_sub(&d->n, 1, __ATOMIC_RELAXED);
    *index = -1;
    return 0;
  }
  if (stripe >= 0) rt_count_active(m->rt, m->snode_id, (uint32_t)stripe, 1);
  *index = n;
  /* Without its chunk the element is written to the sink and reads as zero;
  ** the pool error is recorded. */
  /* unsigned: n is never negative, and saying so makes the division a shift */
  char *chunk = dyn_chunk(m, d, (int32_t)((uint32_t)n / (uint32_t)chunk_cells), 1);
  return chunk ? dyn_cell(m, chunk, n, chunk_cells) : m->rt->sink;
}

/* One add reserves all k; past capacity the surplus is given back, as
** rt_dynamic_append_cell gives back one. The values go in chunk by chunk (a
** batch of RT_APPEND_VALUE_BYTES spans at most two), each run of cells a
** strided copy, a plain one when cells are values. Out of line: it runs
** once per batch, and inlined, it took the registers of the loop around
** the append; the generated code's constant arguments still reach it (one
** copy of the runtime per module, every call passing the same). */
__attribute__((noinline)) int32_t rt_dynamic_append_many(const rt_meta *m, char *node, int32_t chunk_cells,
                                                          int64_t cell_bytes, const char *values, int32_t k,
                                                          int32_t value_bytes, int64_t offset) {
  rt_dynamic_node *d = (rt_dynamic_node *)node;
  if (k <= 0) return 0;
  int32_t n = __atomic_fetch_add(&d->n, k, __ATOMIC_ACQ_REL);
  int32_t room = n < m->num_cells ? m->num_cells - n : 0;
  int32_t stored = k < room ? k : room;
  if (stored < k) __atomic_fetch_sub(&d->n, k - stored, __ATOMIC_RELAXED);
  for (int32_t i = 0; i < stored;) {
    uint32_t at = (uint32_t)(n + i), c = at / (uint32_t)chunk_cells, first = at % (uint32_t)chunk_cells;
    int32_t run = (int32_t)((uint32_t)chunk_cells - first);
    if (run > stored - i) run = stored - i;
    /* Without its chunk the elements read as zero; the pool error is recorded. */
    char *chunk = dyn_chunk(m, d, (int32_t)c, 1);
    if (chunk) {
      char *to = chunk + RT_CHUNK_HEADER + (int64_t)first * cell_bytes + offset;
      const char *from = values + (int64_t)i * value_bytes;
      for (int32_t j = 0; j < run; j++, to += cell_bytes, from += value_bytes) {
        switch (value_bytes) {
        case 1: *to = *from; break;
        case 2: __builtin_memcpy(to, from, 2); break;
        case 4: __builtin_memcpy(to, from, 4); break;
        default: __builtin_memcpy(to, from, 8); break;
        }
      }
    }
    i += run;
  }
  return stored;
}

void rt_dynamic_count(const rt_meta *m, int32_t stripe, int64_t n) {
  if (n) rt_count_active(m->rt, m->snode_id, (uint32_t)stripe, n);
}

int32_t rt_dynamic_append(const rt_meta *m, char *node) {
  int32_t i;
  rt_dynamic_append_cell(m, node, m->chunk_cells, (int32_t)rt_addr_stripe(node), &i);
  return i;
}

int32_t rt_dynamic_is_active(const rt_meta *m, char *node, int32_t i) {
  return i < rt_dynamic_length(m, node);
}

char *rt_dynamic_lookup_element(const rt_meta *m, char *node, int32_t i) {
  rt_dynamic_node *d = (rt_dynamic_node *)node;
  if (i >= rt_dynamic_length(m, node)) return m->rt->ambient;
  char *chunk = dyn_chunk(m, d, i / m->chunk_cells, 0);
  return chunk ? dyn_cell(m, chunk, i, m->chunk_cells) : m->rt->ambient;
}

void rt_dynamic_deactivate(const rt_meta *m, char *node, int32_t i) {
  rt_dynamic_node *d = (rt_dynamic_node *)node;
  if (!rt_ld_acq(&d->head) && !rt_ld_acq(&d->n))
    return;
  rt_lock(&d->lock);
  char *chunk = __atomic_exchange_n(&d->head, (char *)0, __ATOMIC_ACQ_REL);
  rt_st_rel(&d->tail, (uint64_t)0);
  int32_t n = __atomic_exchange_n(&d->n, 0, __ATOMIC_ACQ_REL);
  if (n > m->num_cells) n = m->num_cells;   /* a full list's failed appends, undone */
  rt_count_active(m->rt, m->snode_id, rt_addr_stripe(node), -(int64_t)n);
  /* Next links stay intact until GC zero-fills the recycled chunks. */
  while (chunk) {
    char *next = *(char **)chunk;
    rt_allocator_recycle(m->rt, m->snode_id, chunk);
    chunk = next;
  }
  rt_unlock(&d->lock);
}
