/*
** listgen.c -- lists of active containers, one list per SNode, built level by
** level from the root down (device side, freestanding).
**
** A struct-for over a field runs clear_list + listgen for each level from the
** root to the leaves' parent, then loops over the last list; each element
** carries the container and the physical coordinates of its first cell, so
** the loop body recovers indices without walking the tree again. Leaf
** (place) lists are never built. Parallel workers split a listgen task by
** ranges of the parent's list; appends to the child list are atomic, so the
** child list's order is not deterministic.
*/
#include "runtime.h"

/* Counts a list built: every list is cleared once before it is generated. */
void rt_list_clear(rt_runtime *rt, int32_t snode) {
  rt_st_rel(&rt->lists[snode].size, 0);
  __atomic_fetch_add(&rt->lists_built, 1, __ATOMIC_RELAXED);
}

static int push(rt_runtime *rt, int32_t snode, char *container, const int32_t *coord) {
  rt_list *l = &rt->lists[snode];
  int32_t i = rt_list_reserve(rt, l);
  if (i < 0) return 0;
  rt_elem *e = (rt_elem *)rt_list_get(l, i);
  e->container = container;
  for (int32_t a = 0; a < RT_MAX_AXES; a++) e->coord[a] = coord[a];
  return 1;
}

void rt_listgen_root(rt_runtime *rt, int32_t root, char *root_container) {
  int32_t zero[RT_MAX_AXES] = {0};
  rt_list_clear(rt, root);
  push(rt, root, root_container, zero);
}

/* Adds the coordinates of cell i of a container of m (row-major over the
** listed axes, the last varying fastest) to coord. */
static void refine(const rt_meta *m, int32_t i, int32_t *coord) {
  for (int32_t k = m->naxes - 1; k >= 0; k--) {
    coord[m->axis[k]] += (i % m->extent[k]) * m->below[k];
    i /= m->extent[k];
  }
}

void rt_listgen(rt_runtime *rt, int32_t parent, int32_t child, int64_t child_offset,
                int32_t begin, int32_t end) {
  const rt_meta *m = &rt->metas[parent];
  const rt_list *pl = &rt->lists[parent];
  for (int32_t e = begin; e < end; e++) {
    const rt_elem *pe = (const rt_elem *)rt_list_get(pl, e);
    int32_t n = m->kind == RT_KIND_DYNAMIC ? rt_dynamic_length(m, pe->container)
                                           : rt_node_get_num_elements(m, pe->container);
    for (int32_t i = 0; i < n; i++) {
      if (!rt_node_is_active(m, pe->container, i)) continue;
      char *cell = rt_node_lookup_element(m, pe->container, i);
      if (cell == rt->ambient) continue;   /* a dynamic element whose chunk is missing */
      int32_t coord[RT_MAX_AXES];
      for (int32_t a = 0; a < RT_MAX_AXES; a++) coord[a] = pe->coord[a];
      refine(m, i, coord);
      if (!push(rt, child, cell + child_offset, coord)) return;
    }
  }
}

int32_t rt_listgen_size(rt_runtime *rt, int32_t snode) { return rt_list_size(&rt->lists[snode]); }

rt_elem *rt_listgen_element(rt_runtime *rt, int32_t snode, int32_t i) {
  return (rt_elem *)rt_list_get(&rt->lists[snode], i);
}

void rt_deactivate_all(rt_runtime *rt, int32_t snode, int32_t begin, int32_t end) {
  const rt_meta *m = &rt->metas[snode];
  const rt_list *l = &rt->lists[snode];
  for (int32_t e = begin; e < end; e++) {
    char *node = ((const rt_elem *)rt_list_get(l, e))->container;
    if (m->kind == RT_KIND_DYNAMIC) {
      rt_dynamic_deactivate(m, node, 0);
      continue;
    }
    if (m->kind == RT_KIND_DENSE) continue;
    for (int32_t i = 0; i < m->num_cells; i++) rt_node_deactivate(m, node, i);
  }
}
