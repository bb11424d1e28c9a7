/*
** node_pointer.h -- pointer: one pointer per cell; a cell's memory comes from
** the SNode's allocator when it is activated and goes back when deactivated.
** Included once, by nodes.c; the prototypes are in runtime.h.
**
**   node: [u64 cell pointer 0]...[n-1][i32 lock 0]...[lock n-1]
**
** NULL means inactive; reads of an inactive cell go to the ambient cell.
** Activation is double-checked locking on the cell's lock: the pointer is
** read without the lock first, so activating an active cell costs one load.
** When the pool is exhausted the error is recorded, the cell stays inactive
** and the caller gets the sink cell, so its writes land harmlessly.
*/

static char **ptr_slot(const rt_meta *m, char *node, int32_t i) { return (char **)node + i; }

static int32_t *ptr_lock(const rt_meta *m, char *node, int32_t i) {
  return (int32_t *)((char **)node + m->num_cells) + i;
}

int32_t rt_pointer_get_num_elements(const rt_meta *m, char *node) { return m->num_cells; }

char *rt_pointer_activate(const rt_meta *m, char *node, int32_t i) {
  char **slot = ptr_slot(m, node, i);
  char *cell = rt_ld_acq(slot);
  if (cell) return cell;
  int32_t *lock = ptr_lock(m, node, i);
  rt_lock(lock);
  cell = rt_ld_acq(slot);   /* another thread may have won */
  if (!cell) {
    cell = rt_allocator_allocate(m->rt, m->snode_id);
    if (cell) {
      rt_st_rel(slot, cell);
      __atomic_fetch_add(&m->rt->active[m->snode_id], 1, __ATOMIC_RELAXED);
      rt_mark_changed(m->rt, m->snode_id);
    }
  }
  rt_unlock(lock);
  return cell ? cell : m->rt->sink;
}

int32_t rt_pointer_is_active(const rt_meta *m, char *node, int32_t i) {
  return rt_ld_acq(ptr_slot(m, node, i)) != 0;
}

char *rt_pointer_lookup_element(const rt_meta *m, char *node, int32_t i) {
  char *cell = rt_ld_acq(ptr_slot(m, node, i));
  return cell ? cell : m->rt->ambient;
}

void rt_pointer_deactivate(const rt_meta *m, char *node, int32_t i) {
  char **slot = ptr_slot(m, node, i);
  if (!rt_ld_acq(slot)) return;
  int32_t *lock = ptr_lock(m, node, i);
  rt_lock(lock);
  char *cell = __atomic_exchange_n(slot, (char *)0, __ATOMIC_ACQ_REL);
  if (cell) {
    /* Zero-filled by the next GC, not now: readers of this task may still
    ** hold the pointer. */
    rt_allocator_recycle(m->rt, m->snode_id, cell);
    __atomic_fetch_sub(&m->rt->active[m->snode_id], 1, __ATOMIC_RELAXED);
    rt_mark_changed(m->rt, m->snode_id);
  }
  rt_unlock(lock);
}
