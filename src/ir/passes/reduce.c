/*
** reduce.c -- updates of kernel-level locals inside parallel loops.
**
** After offload, a local declared at a kernel's top level lives in a global
** temporary, and `s = s + v` inside a parallel task is a load, an add and a
** store that the task's other threads interleave with: updates get lost.
** This pass turns each such read-modify-write (`s = s + v`, `s = v + s`,
** `s = s - v`) into an atomic_add / atomic_sub of v, so a parallel sum gives
** the serial result (exactly, for integers; floating-point sums may round
** differently). Other reads of such a local inside the loop still see a
** value that depends on timing (docs/language.md calls this a race).
*/
#include "../ir.h"
#include "passes.h"

typedef struct {
  int *uses;            /* operand uses per statement id (ir_number) */
  int n;
} use_count;

static void count_uses(ir_stmt *s, void *ud) {
  use_count *u = ud;
  for (int i = 0; i < s->nops; i++)
    if (s->ops[i] && s->ops[i]->id >= 0 && s->ops[i]->id < u->n) u->uses[s->ops[i]->id]++;
}

static bool is_tmp(const ir_stmt *p) { return p && p->op == IR_global_tmp; }

/* A load of the temporary at byte offset off, used only once (by the update). */
static bool lone_load_of(const ir_stmt *v, int off, const use_count *u) {
  return v->op == IR_global_load && is_tmp(v->ops[0]) && v->ops[0]->aux == off &&
         v->id >= 0 && v->id < u->n && u->uses[v->id] == 1;
}

typedef struct {
  ir_kernel *k;
  ir_stmt **stores;     /* candidate global_store statements */
  int nstores, cap;
} collect;

static void collect_stores(ir_stmt *s, void *ud) {
  collect *c = ud;
  if (s->op != IR_global_store || !is_tmp(s->ops[0])) return;
  if (c->nstores == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    ir_stmt **grown = ir_alloc(c->k, (size_t)cap * sizeof *grown);   /* arena: freed with the kernel */
    for (int i = 0; i < c->nstores; i++) grown[i] = c->stores[i];
    c->stores = grown;
    c->cap = cap;
  }
  c->stores[c->nstores++] = s;
}

/* Rewrites store(p, add(load(p), x)) and friends into an atomic, removing
** the load and the add (their only user was the store). */
static bool to_atomic(ir_kernel *k, ir_stmt *st, const use_count *u) {
  ir_stmt *v = st->ops[1];
  int off = st->ops[0]->aux;
  if ((v->op != IR_add && v->op != IR_sub) || v->nops != 2 || v->type != st->ops[0]->type) return false;
  if (v->id < 0 || v->id >= u->n || u->uses[v->id] != 1) return false;
  ir_stmt *x, *load;
  if (lone_load_of(v->ops[0], off, u)) x = v->ops[1], load = v->ops[0];
  else if (v->op == IR_add && lone_load_of(v->ops[1], off, u)) x = v->ops[0], load = v->ops[1];
  else return false;
  ir_stmt *ops[2] = {st->ops[0], x};
  ir_stmt *a = ir_new(k, v->op == IR_add ? IR_atomic_add : IR_atomic_sub, v->type, 2, ops);
  a->loc = st->loc;
  ir_insert_before(st, a);
  ir_remove(st);
  ir_remove(v);
  ir_remove(load);
  return true;
}

static bool reduce_task(ir_kernel *k, ir_stmt *task) {
  ir_number(k);
  use_count u = {ir_alloc(k, ((size_t)k->next_id + 1) * sizeof(int)), k->next_id + 1};
  collect c = {k, NULL, 0, 0};
  ir_walk(k->body, count_uses, &u);
  ir_walk(task->blocks[0], collect_stores, &c);
  bool changed = false;
  for (int i = 0; i < c.nstores; i++) changed |= to_atomic(k, c.stores[i], &u);
  return changed;
}

bool ir_pass_reduce(ir_kernel *k) {
  bool changed = false;
  if (!k->offloaded) return false;
  for (ir_stmt *s = k->body->first; s; s = s->next)
    if ((s->op == IR_task_range_for || s->op == IR_task_struct_for) && s->blocks[0]) changed |= reduce_task(k, s);
  return changed;
}
