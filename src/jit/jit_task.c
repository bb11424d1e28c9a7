/*
** jit_task.c -- what every backend's launcher needs to know about a task
** besides its code: the SNodes a sparse task works on (jit.h, jit_task), and
** which list tasks a launch can skip because their lists are still valid.
*/
#include "jit.h"

#include "jit_sparse.h"

#include "llvm/llvm_codegen.h"

void jit_task_describe(jit_task *t, ir_kernel *k, ir_stmt *s) {
  t->kind = s->op;
  t->range = s->range;
  t->snode = t->parent = t->tree = t->root = -1;
  t->child_offset = 0;
  if (!cg_is_sparse_task(s->op) || !k->prog || s->aux < 0 || s->aux >= k->prog->nsnodes) return;
  const ir_snode *sn = k->prog->snodes[s->aux];
  const ir_snode *r = sn;
  while (r->parent) r = r->parent;
  t->snode = sn->id;
  t->parent = sn->parent ? sn->parent->id : -1;
  t->tree = sn->tree;
  t->root = r->id;
  t->child_offset = sn->offset;
}

bool jit_list_task_runs(jit_sparse *sp, const jit_task *t, char *root, int32_t *reused) {
  if (!sp) return true;
  if (t->kind == IR_task_clear_list) {
    /* a valid list skips this task and the listgen after it */
    *reused = jit_sparse_list_stale(sp, NULL, t->snode, root) ? -1 : t->snode;
    return *reused < 0;
  }
  if (t->kind != IR_task_listgen) return true;
  if (*reused == t->snode) {
    *reused = -1;
    return false;
  }
  if (t->parent == t->root) jit_sparse_root_list(sp, t->root, root);
  return true;
}

void jit_list_task_done(jit_sparse *sp, const jit_task *t, char *root, bool ok) {
  if (sp && t->kind == IR_task_listgen) jit_sparse_list_built(sp, NULL, t->snode, ok ? root : NULL);
}
