/*
** jit_task.c -- what a launch needs to know about a task besides its code:
** the SNodes a sparse task works on (jit.h, jit_task). Which tasks a launch
** runs, and how lists are reused, is launch.c's.
*/
#include <stdlib.h>

#include "jit.h"

#include "../ir/snode.h"

void jit_task_describe(jit_task *t, ir_kernel *k, ir_stmt *s) {
  t->kind = s->op;
  t->range = s->range;
  t->snode = t->parent = t->tree = t->root = -1;
  t->child_offset = 0;
  if (!jit_task_is_sparse(s->op) || !k->prog || s->aux < 0 || s->aux >= k->prog->nsnodes) return;
  const ir_snode *sn = k->prog->snodes[s->aux];
  const ir_snode *r = sn;
  while (r->parent) r = r->parent;
  t->snode = sn->id;
  t->parent = sn->parent ? sn->parent->id : -1;
  t->tree = sn->tree;
  t->root = r->id;
  t->child_offset = sn->offset;
}

void jit_kernel_free(jit_kernel *jk) {
  if (!jk) return;
  free((char *)jk->name);
  free(jk->tasks);
  free(jk->profile_slots);
  free(jk);
}
