/*
** nodes.c -- the node operations of every SNode kind (one header per kind,
** all with the same operation names) and a dispatcher on meta->kind.
**
** Generated code calls the kind-specific functions, so LLVM inlines them; the
** dispatchers serve listgen, deactivate_all and the tests.
*/
#include "runtime.h"

#include "node_dense.h"
#include "node_bitmasked.h"
#include "node_pointer.h"
#include "node_dynamic.h"

#define DISPATCH(op, m, ...)                                         \
  switch ((m)->kind) {                                               \
  case RT_KIND_DENSE: return rt_dense_##op(m, __VA_ARGS__);          \
  case RT_KIND_BITMASKED: return rt_bitmasked_##op(m, __VA_ARGS__);  \
  case RT_KIND_POINTER: return rt_pointer_##op(m, __VA_ARGS__);      \
  case RT_KIND_DYNAMIC: return rt_dynamic_##op(m, __VA_ARGS__);      \
  default: break;                                                    \
  }

int32_t rt_node_get_num_elements(const rt_meta *m, char *node) {
  DISPATCH(get_num_elements, m, node)
  return 0;
}

char *rt_node_activate(const rt_meta *m, char *node, int32_t i) {
  DISPATCH(activate, m, node, i)
  return m->rt->sink;
}

int32_t rt_node_is_active(const rt_meta *m, char *node, int32_t i) {
  DISPATCH(is_active, m, node, i)
  return 0;
}

char *rt_node_lookup_element(const rt_meta *m, char *node, int32_t i) {
  DISPATCH(lookup_element, m, node, i)
  return m->rt->ambient;
}

void rt_node_deactivate(const rt_meta *m, char *node, int32_t i) {
  switch (m->kind) {   /* not DISPATCH: C forbids `return f();` in a void function */
  case RT_KIND_BITMASKED: rt_bitmasked_deactivate(m, node, i); break;
  case RT_KIND_POINTER: rt_pointer_deactivate(m, node, i); break;
  case RT_KIND_DYNAMIC: rt_dynamic_deactivate(m, node, i); break;
  default: break;      /* dense cells are always active */
  }
}
