/*
** node_bitmasked.h -- bitmasked: dense cells plus one activity bit per cell.
** Included once, by nodes.c; the prototypes are in runtime.h.
**
**   node: [cell 0]...[cell n-1][pad to 8][u32 mask word 0]...[word (n-1)/32]
**
** Activation only sets a bit, so any number of threads may activate the same
** cell at once and all write into it. Deactivation clears the bit and
** zero-fills the cell, so a cell activated again reads zero; reads of an
** inactive cell go to the ambient cell. A cell's sparse descendants must be
** deactivated before the cell itself (their memory would otherwise leak).
*/

static uint32_t *bm_word(const rt_meta *m, char *node, int32_t i) {
  char *masks = node + rt_align((int64_t)m->num_cells * m->cell_bytes, 8);
  return (uint32_t *)masks + (i >> 5);
}

int32_t rt_bitmasked_get_num_elements(const rt_meta *m, char *node) { return m->num_cells; }

char *rt_bitmasked_activate(const rt_meta *m, char *node, int32_t i) {
  uint32_t bit = 1u << (i & 31);
  uint32_t *w = bm_word(m, node, i);
  /* Skip the read-modify-write when the bit is already set (the common case). */
  if (!(rt_ld_acq(w) & bit) &&
      !(__atomic_fetch_or(w, bit, __ATOMIC_ACQ_REL) & bit)) {
    rt_count_active(m->rt, m->snode_id, rt_addr_stripe(w), 1);
    rt_mark_changed(m->rt, m->snode_id);
  }
  return node + (int64_t)i * m->cell_bytes;
}

int32_t rt_bitmasked_is_active(const rt_meta *m, char *node, int32_t i) {
  return (rt_ld_acq(bm_word(m, node, i)) >> (i & 31)) & 1;
}

char *rt_bitmasked_lookup_element(const rt_meta *m, char *node, int32_t i) {
  if (!rt_bitmasked_is_active(m, node, i)) return m->rt->ambient;
  return node + (int64_t)i * m->cell_bytes;
}

void rt_bitmasked_deactivate(const rt_meta *m, char *node, int32_t i) {
  uint32_t bit = 1u << (i & 31);
  if (!(__atomic_fetch_and(bm_word(m, node, i), ~bit, __ATOMIC_ACQ_REL) & bit)) return;
  /* Only the thread that cleared the bit zero-fills. Cell sizes and offsets
  ** need not be multiples of 8 here (a bitmasked level of i32 places), so
  ** bytes it is. */
  char *cell = node + (int64_t)i * m->cell_bytes;
  for (int64_t k = 0; k < m->cell_bytes; k++) cell[k] = 0;
  rt_count_active(m->rt, m->snode_id, rt_addr_stripe(bm_word(m, node, i)), -1);
  rt_mark_changed(m->rt, m->snode_id);
}
