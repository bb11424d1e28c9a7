/*
** node_dynamic.h -- dynamic: a 1-D list of up to num_cells cells stored as a
** singly linked list of chunks of chunk_cells cells, from the SNode's allocator.
** Included once, by nodes.c; the prototypes are in runtime.h.
**
**   node:  [i32 lock][i32 n][u64 first chunk][u64 last chunk]
**   chunk: [u64 next chunk][i64 its number][cell 0]...[cell chunk_cells-1]
**
** Cells 0..n-1 are active. append reserves index n; activate(i) makes the
** list at least i+1 long. deactivate clears the whole list (every chunk goes
** back to the allocator), whatever i is. Appending and deactivating the same
** list in one task is a race the caller must avoid. A dynamic level is always
** the last level, so no list depends on its cells: unlike bitmasked and
** pointer it never calls rt_mark_changed, and append stays one CAS (its
** count goes to the appending thread's stripe, or into a register of the
** generated task that adds the sum once: rt_dynamic_count).
**
** The last chunk is kept in the node, and every chunk knows its number, so
** an append (whose index is nearly always in the last chunk) finds its cell
** without walking the list from the head: the walk was a chain of dependent
** loads, each a cache miss in a long list. Chunks are made in order, under
** the list's lock, and each is published (release) with its number already
** written, so a reader that sees a chunk sees its number.
*/

typedef struct {
  int32_t lock;
  int32_t n;
  char *head;
  char *tail;                      /* the last chunk, or NULL */
} rt_dynamic_node;

int32_t rt_dynamic_get_num_elements(const rt_meta *m, char *node) { return m->num_cells; }

int32_t rt_dynamic_length(const rt_meta *m, char *node) {
  return rt_ld_acq(&((rt_dynamic_node *)node)->n);
}

static int64_t dyn_number(const char *chunk) { return *(const int64_t *)(chunk + 8); }

/* Chunk number c of the list, created (with any missing chunk before it)
** under the list's lock if needed; NULL when the pool is exhausted. The walk
** starts at the last chunk when c is not before it. */
static char *dyn_chunk(const rt_meta *m, rt_dynamic_node *d, int32_t c, int create) {
  char **link = &d->head;
  int32_t k = 0;
  char *last = rt_ld_acq(&d->tail);
  if (last) {
    int64_t t = dyn_number(last);
    if (t == c) return last;
    if (t < c) link = (char **)last, k = (int32_t)t + 1;
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
          rt_st_rel(&d->tail, chunk);   /* made in order: the newest is the last */
        }
      }
      rt_unlock(&d->lock);
      if (!chunk) return 0;
    }
    if (k == c) return chunk;
    link = (char **)chunk;
  }
}

static char *dyn_cell(const rt_meta *m, char *chunk, int32_t i, int32_t chunk_cells) {
  return chunk + RT_CHUNK_HEADER + (int64_t)(i % chunk_cells) * m->cell_bytes;
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

/* Reserves index n with one CAS (two threads rarely append to one list at
** once, so it seldom retries), then finds or makes its chunk in one walk.
** chunk_cells is m->chunk_cells, passed by generated code as a constant so
** the division by it folds. The element is counted in stripe `stripe`; when
** stripe < 0 the caller counts it (generated code sums a task's appends in
** a register and calls rt_dynamic_count once, as it returns). */
char *rt_dynamic_append_cell(const rt_meta *m, char *node, int32_t chunk_cells, int32_t stripe,
                             int32_t *index) {
  rt_dynamic_node *d = (rt_dynamic_node *)node;
  int32_t n = __atomic_load_n(&d->n, __ATOMIC_RELAXED);
  do {
    if (n >= m->num_cells) {
      *index = -1;
      return 0;
    }
  } while (!__atomic_compare_exchange_n(&d->n, &n, n + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
  if (stripe >= 0) rt_count_active(m->rt, m->snode_id, (uint32_t)stripe, 1);
  *index = n;
  /* Without its chunk the element is written to the sink and reads as zero;
  ** the pool error is recorded. */
  char *chunk = dyn_chunk(m, d, n / chunk_cells, 1);
  return chunk ? dyn_cell(m, chunk, n, chunk_cells) : m->rt->sink;
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
  rt_st_rel(&d->tail, (char *)0);
  int32_t n = __atomic_exchange_n(&d->n, 0, __ATOMIC_ACQ_REL);
  rt_count_active(m->rt, m->snode_id, rt_addr_stripe(node), -(int64_t)n);
  /* Next links stay intact until GC zero-fills the recycled chunks. */
  while (chunk) {
    char *next = *(char **)chunk;
    rt_allocator_recycle(m->rt, m->snode_id, chunk);
    chunk = next;
  }
  rt_unlock(&d->lock);
}
