/*
** tree.c -- a program's trees: materialising one (layout + registration
** with the sparse runtime), its instances (root containers in the pool, each
** holding its tree), and appending to a dynamic level from the host.
*/
#include <stdio.h>
#include <string.h>

#include "program.h"

bool prog_tree_materialize(prog_program *p, const ir_snode *root, bool make_instance, char *err, size_t errlen) {
  ir_tree *t = &p->ir->trees[root->tree];
  if (!t->materialized) {
    if (!ir_snode_layout(p->ir, (ir_snode *)root, err, errlen)) return false;
    if (!jit_sparse_add_tree(p->sparse, p->ir, root->tree, err, errlen)) return false;
  }
  if (make_instance && !p->mem[root->tree]) {
    p->mem[root->tree] = jit_sparse_new_instance(p->sparse, p->ir, root->tree, err, errlen);
    if (!p->mem[root->tree]) return false;
  }
  return true;
}

char *prog_instance_new(prog_program *p, int tree, char *err, size_t errlen) {
  char *root = jit_sparse_new_instance(p->sparse, p->ir, tree, err, errlen);
  if (root) p->tree_holds[tree]++;   /* an instance holds its tree */
  return root;
}

void prog_instance_free(prog_program *p, int tree, char *root) {
  if (!root || !p || !p->ir || !p->sparse) return;
  jit_sparse_free_instance(p->sparse, p->ir, tree, root);
  p->tree_holds[tree]--;
}

void prog_instance_adopt(prog_program *p, int tree, char *root) {
  memset(root, 0, (size_t)p->ir->trees[tree].bytes);
  p->tree_holds[tree]++;
}

void prog_instance_release(prog_program *p, int tree, char *root) {
  if (!root || !p || !p->ir || !p->sparse) return;
  jit_sparse_release_instance(p->sparse, p->ir, tree, root);
  p->tree_holds[tree]--;
}

int32_t prog_append(prog_program *p, const ir_snode *s, char *root, const int64_t *idx,
                    const void *const *values, const char *what, char *err, size_t errlen) {
  int32_t at = -1;
  char *cell = jit_sparse_append(p->sparse, s, root, idx, &at);
  if (prog_take_error(p, err, errlen)) return -1;
  if (!cell) {
    snprintf(err, errlen, "lt.append: the list of %s is full (capacity %lld)", what, (long long)s->num_cells);
    return -1;
  }
  /* the cell is a device address: written through the backend, place by place */
  for (int c = 0; c < s->nchildren; c++) {
    const ir_snode *place = s->children[c];
    if (!values[c] || place->kind != IR_SN_place) continue;
    size_t n = (size_t)(ir_type_bits(place->dtype) + 7) / 8;
    char why[600];
    if (!prog_mem_write(p->be, cell + place->offset, values[c], n, NULL, NULL, why, sizeof why)) {
      snprintf(err, errlen, "lt.append to %s: %s", what, why);
      return -1;
    }
  }
  return at;
}
