/*
** dce.c -- remove statements whose values are unused and that have no effect.
**
** Four steps: (1) replace an `if` on a constant by the block it takes;
** (2) drop the statements after a break/continue/return in the same block
** (they can never run); (3) count uses; (4) sweep every block from
** its end, children before their owner, so a whole chain of dead values dies in
** one run. Removed: pure statements and loads (also snode_is_active and
** snode_length, which read like loads) with no users; an `if` whose two
** blocks are empty; a task_serial whose block is empty; an alloca that is never
** read (with its stores). Everything with an effect stays.
*/
#include "passes.h"

#include <stdlib.h>

typedef struct {
  ir_kernel *k;
  int *uses;            /* by statement id */
  int *stores;          /* by alloca id: local_store uses */
  int n;
  bool changed;
} dce_state;

static bool empty(const ir_block *b) { return !b || !b->first; }

/* An `if` on a constant runs one block for sure: that block's statements take
** its place (jumps among them then cut what follows, below). */
static void inline_const_ifs(dce_state *st, ir_block *blk) {
  if (!blk) return;
  ir_stmt *s = blk->first;
  while (s) {
    if (s->op == IR_if && s->nops == 1 && s->ops[0] && s->ops[0]->op == IR_const) {
      ir_block *taken = s->blocks[s->ops[0]->imm.ival ? 0 : 1];
      ir_stmt *first = NULL;
      while (taken && taken->first) {
        ir_stmt *m = taken->first;
        ir_remove(m);
        ir_insert_before(s, m);
        if (!first) first = m;
      }
      ir_stmt *next = first ? first : s->next;
      ir_remove(s);
      st->changed = true;
      s = next; /* the moved statements are visited in turn */
      continue;
    }
    inline_const_ifs(st, s->blocks[0]);
    inline_const_ifs(st, s->blocks[1]);
    s = s->next;
  }
}

static void cut_after_jumps(dce_state *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    cut_after_jumps(st, s->blocks[0]);
    cut_after_jumps(st, s->blocks[1]);
    if (ir_op_flags(s->op) & IR_JUMP) {
      while (s->next) {
        ir_remove(s->next);
        st->changed = true;
      }
    }
  }
}

static void count(ir_stmt *s, void *ud) {
  dce_state *st = ud;
  for (int i = 0; i < s->nops; i++) {
    ir_stmt *o = s->ops[i];
    if (!o || o->id < 0 || o->id >= st->n) continue;
    st->uses[o->id]++;
    if (s->op == IR_local_store && i == 0) st->stores[o->id]++;
  }
}

static void drop(dce_state *st, ir_stmt *s) {
  for (int i = 0; i < s->nops; i++) {
    ir_stmt *o = s->ops[i];
    if (o && o->id >= 0 && o->id < st->n) st->uses[o->id]--;
  }
  ir_remove(s);
  st->changed = true;
}

/* Removes the stores to a never-read alloca in blk and its nested blocks. */
static void drop_stores(dce_state *st, ir_block *blk, ir_stmt *var) {
  if (!blk) return;
  ir_stmt *next;
  for (ir_stmt *s = blk->first; s; s = next) {
    next = s->next;
    if (s->op == IR_local_store && s->ops[0] == var) {
      drop(st, s);
      continue;
    }
    drop_stores(st, s->blocks[0], var);
    drop_stores(st, s->blocks[1], var);
  }
}

static void sweep(dce_state *st, ir_block *blk) {
  if (!blk) return;
  ir_stmt *prev;
  for (ir_stmt *s = blk->last; s; s = prev) {
    sweep(st, s->blocks[1]);
    sweep(st, s->blocks[0]);
    prev = s->prev; /* after the children: they never unlink s's siblings */
    bool unused = s->id >= 0 && s->id < st->n && st->uses[s->id] == 0;
    bool dead = false;
    switch (s->op) {
    case IR_if: dead = empty(s->blocks[0]) && empty(s->blocks[1]); break;
    case IR_task_serial: dead = empty(s->blocks[0]); break;
    case IR_alloca:
      if (s->id >= 0 && s->id < st->n && st->uses[s->id] == st->stores[s->id]) {
        drop_stores(st, s->parent, s);
        dead = true;
      }
      break;
    default: dead = unused && !(ir_op_flags(s->op) & IR_EFFECT); break;   /* pure, or a read (ops.def) */
    }
    if (dead) drop(st, s);
  }
}

bool ir_pass_dce(ir_kernel *k) {
  dce_state st = {.k = k};
  inline_const_ifs(&st, k->body);
  cut_after_jumps(&st, k->body);
  ir_number(k); /* ids 0..n-1 index the counters */
  st.n = k->next_id;
  size_t n = st.n > 0 ? (size_t)st.n : 1;
  st.uses = calloc(n, sizeof *st.uses);
  st.stores = calloc(n, sizeof *st.stores);
  if (!st.uses || !st.stores) {
    free(st.uses), free(st.stores);
    ir_fail(k, (ir_loc){0}, "dce: out of memory");
  }
  ir_walk(k->body, count, &st);
  sweep(&st, k->body);
  free(st.uses), free(st.stores);
  return st.changed;
}
