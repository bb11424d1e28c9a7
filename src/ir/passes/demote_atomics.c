/*
** demote_atomics.c -- atomics that no other thread can race with become a
** plain load, operation and store.
**
** A task_serial runs on one thread and tasks run one after another, so an
** atomic inside one (at any depth) needs no atomic instruction: it becomes
**
**     <T> old = global_load p ; <T> new = OP old v ; global_store p new
**
** and the atomic's users (its result is the old value) read `old`. OP is
** add, sub, min, max, mul, bit_and, bit_or or bit_xor of the atomic's type;
** the IR's min/max agree with the atomic ones (signedness by type; for
** floats, one NaN operand gives the other, as LLVM's minnum and atomicrmw
** fmin do).
**
** An atomic on an alloca (lt.atomic_add(s, v) on a kernel local) becomes
** local_load / OP / local_store in every task: after offload, a local that
** a parallel task shares with another task is a global_tmp, so an alloca
** left is private to one serial task or to one iteration of a parallel one.
**
** Not demoted: atomics on a global_ptr, ext_ptr or global_tmp in parallel
** tasks (task_range_for, task_struct_for) even on a cell only one iteration
** touches, which this pass does not try to prove; and atomics of a kernel
** that offload has not split yet (its top level is not known to be serial,
** and a top-level local may still be shared by a parallel loop).
*/
#include "passes.h"

static ir_op plain_op(ir_op atomic) {
  switch (atomic) {
  case IR_atomic_add: return IR_add;
  case IR_atomic_sub: return IR_sub;
  case IR_atomic_min: return IR_min;
  case IR_atomic_max: return IR_max;
  case IR_atomic_mul: return IR_mul;
  case IR_atomic_and: return IR_bit_and;
  case IR_atomic_or: return IR_bit_or;
  case IR_atomic_xor: return IR_bit_xor;
  default: return IR_NUM_OPS;
  }
}

static ir_stmt *before(ir_kernel *k, ir_stmt *pos, ir_op op, ir_type t, int nops, ir_stmt *const *ops) {
  ir_stmt *s = ir_new(k, op, t, nops, ops);
  s->loc = pos->loc;
  ir_insert_before(pos, s);
  return s;
}

/* Rewrites the atomic a in place into the store, after a load and the op;
** returns the load (the old value) its users must read. */
static ir_stmt *demote(ir_kernel *k, ir_stmt *a) {
  ir_stmt *p = a->ops[0], *v = a->ops[1];
  bool local = p->op == IR_alloca;
  ir_stmt *old = before(k, a, local ? IR_local_load : IR_global_load, p->type, 1, &p);
  ir_stmt *ops[2] = {old, v};
  ir_stmt *nv = before(k, a, plain_op(a->op), a->type, 2, ops);
  ir_stmt *st_ops[2] = {p, nv};
  before(k, a, local ? IR_local_store : IR_global_store, IR_void, 2, st_ops);
  ir_remove(a);
  return old;
}

typedef struct {
  ir_kernel *k;
  bool changed;
} demote_state;

/* serial: blk is in a task_serial (every atomic goes); else only atomics on
** locals go. */
static void demote_block(demote_state *st, ir_block *blk, bool serial) {
  if (!blk) return;
  ir_stmt *next;
  for (ir_stmt *s = blk->first; s; s = next) {
    next = s->next;
    /* an i1 atomic is left for codegen to reject, with its message */
    if (plain_op(s->op) != IR_NUM_OPS && s->nops == 2 && s->type != IR_i1 &&
        (serial || s->ops[0]->op == IR_alloca) && s->type == s->ops[0]->type && s->ops[1]->type == s->type) {
      ir_stmt *old = demote(st->k, s);
      ir_replace_uses(blk, s, old); /* users follow s in blk or blocks nested there */
      st->changed = true;
      continue;
    }
    demote_block(st, s->blocks[0], serial);
    demote_block(st, s->blocks[1], serial);
  }
}

bool ir_pass_demote_atomics(ir_kernel *k) {
  if (!k->offloaded) return false;
  demote_state st = {.k = k};
  for (ir_stmt *t = k->body->first; t; t = t->next) demote_block(&st, t->blocks[0], t->op == IR_task_serial);
  return st.changed;
}
