/*
** node_dense.h -- dense: num_cells cells side by side, always active.
** Included once, by nodes.c; the prototypes are in runtime.h.
**
**   node: [cell 0][cell 1]...[cell n-1]        each meta->cell_bytes
*/

int32_t rt_dense_get_num_elements(const rt_meta *m, char *node) { return m->num_cells; }

char *rt_dense_activate(const rt_meta *m, char *node, int32_t i) {
  return node + (int64_t)i * m->cell_bytes;
}

int32_t rt_dense_is_active(const rt_meta *m, char *node, int32_t i) { return 1; }

char *rt_dense_lookup_element(const rt_meta *m, char *node, int32_t i) {
  return node + (int64_t)i * m->cell_bytes;
}

/* Dense cells cannot be switched off; present so every kind has the same set. */
void rt_dense_deactivate(const rt_meta *m, char *node, int32_t i) {}
