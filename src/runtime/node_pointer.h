/*
** node_pointer.h -- pointer: one 32-bit slot per cell; a cell's memory comes
** from the SNode's allocator when it is activated and goes back when
** deactivated. Included once, by nodes.c; the prototypes are in runtime.h.
**
**   node: [u32 slot 0]...[u32 slot n-1]
**
** A slot is the cell's lock and its address at once: 0 inactive,
** RT_SLOT_BUSY while one thread activates or deactivates it, otherwise the
** cell's offset from the pool's base in units of 1 << rt->slot_shift bytes
** (rt_slot_cell). Four bytes instead of a pointer and a lock keep the table of
** a large, mostly empty level small. Reads of an inactive (or busy) cell go to
** the ambient cell. Activation reads the slot first, so activating an active
** cell costs one load. When the pool is exhausted the error is recorded, the
** cell stays inactive and the caller gets the sink cell, so its writes land
** harmlessly.
*/

static uint32_t *ptr_slot(char *node, int32_t i) { return (uint32_t *)node + i; }

static inline void ptr_pause(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

int32_t rt_pointer_get_num_elements(const rt_meta *m, char *node) { return m->num_cells; }

/* Waits while another thread holds the slot; returns its settled value. */
static uint32_t ptr_settled(uint32_t *slot) {
  uint32_t v = rt_ld_acq(slot);
  while (v == RT_SLOT_BUSY) {
    ptr_pause();
    v = rt_ld_acq(slot);
  }
  return v;
}

/* Activation proper, out of line: the generated loop that activates cells
** (an append under a pointer level, every time) keeps only the load of the
** slot and its test. */
__attribute__((noinline, cold)) static char *ptr_activate(const rt_meta *m, uint32_t *slot) {
  rt_runtime *rt = m->rt;
  for (;;) {
    uint32_t v = ptr_settled(slot);
    if (v) return rt_slot_cell(rt, v);
    uint32_t zero = 0;
    if (!__atomic_compare_exchange_n(slot, &zero, RT_SLOT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      continue;   /* another thread won the slot: wait for its outcome */
    rt_fence_after_acquire();
    char *cell = rt_allocator_allocate(rt, m->snode_id);
    rt_st_rel(slot, cell ? rt_cell_slot(rt, cell) : 0u);
    if (!cell) return rt->sink;
    rt_count_active(rt, m->snode_id, rt_addr_stripe(slot), 1);
    rt_mark_changed(rt, m->snode_id);
    return cell;
  }
}

char *rt_pointer_activate(const rt_meta *m, char *node, int32_t i) {
  uint32_t *slot = ptr_slot(node, i);
  uint32_t v = rt_ld_acq(slot);
  return v > RT_SLOT_BUSY ? rt_meta_slot_cell(m, v) : ptr_activate(m, slot);
}

int32_t rt_pointer_is_active(const rt_meta *m, char *node, int32_t i) {
  return rt_ld_acq(ptr_slot(node, i)) > RT_SLOT_BUSY;
}

char *rt_pointer_lookup_element(const rt_meta *m, char *node, int32_t i) {
  uint32_t v = rt_ld_acq(ptr_slot(node, i));
  return v > RT_SLOT_BUSY ? rt_meta_slot_cell(m, v) : m->rt->ambient;
}

void rt_pointer_deactivate(const rt_meta *m, char *node, int32_t i) {
  rt_runtime *rt = m->rt;
  uint32_t *slot = ptr_slot(node, i);
  for (;;) {
    uint32_t v = ptr_settled(slot);
    if (!v) return;
    if (!__atomic_compare_exchange_n(slot, &v, 0u, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) continue;
    /* Zero-filled by the next GC, not now: readers of this task may still
    ** hold the cell. */
    rt_allocator_recycle(rt, m->snode_id, rt_slot_cell(rt, v));
    rt_count_active(rt, m->snode_id, rt_addr_stripe(slot), -1);
    rt_mark_changed(rt, m->snode_id);
    return;
  }
}
