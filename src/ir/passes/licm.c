/*
** licm.c -- loop-invariant code motion: move what every iteration of a
** serial loop computes alike in front of the loop.
**
** For each serial loop (range_for, while), innermost first so that a value
** hoisted out of an inner loop can leave the outer one too, a statement of
** its body (at any depth) moves right before the loop when every operand
** (and a loop_index's loop) is defined outside the loop and it is:
**
**  - pure (flag P in ops.def): these cannot fault (integer division by zero
**    gives 0, float-to-int casts saturate), so computing one once before
**    the loop, even one that sat in a branch, is safe. Not a global_ptr to
**    a field under a sparse level: computing that address looks up (or,
**    for writes, activates) cells;
**  - a local_load of a local declared outside the loop and stored nowhere
**    in it (mem2reg leaves few of these: a merge of two stores);
**  - a global_load of a dense field that nothing in the loop stores to
**    (no global_store or atomic on a pointer to the same place), when the
**    load runs on every iteration and the loop runs at least once: it sits
**    in the loop body's own block before anything that may leave the
**    iteration, the loop is a while (its body always starts) or a range_for
**    with constant bounds begin < end, and the kernel has no bounds checks
**    (a hoisted load would run before its check).
**
** Loops in parallel tasks are hoisted out of only into the task body, which
** is the outermost scope of a thread: a task_range_for/task_struct_for (and
** before offload, a top-level range_for/struct_for) is never hoisted from.
** Loads of global temporaries and everything with an effect stay.
*/
#include "passes.h"
#include "../snode.h"

#include <string.h>

typedef struct {
  ir_kernel *k;
  bool changed;
} licm_state;

/* Is statement s inside (a block nested in) the statement `loop`. */
static bool inside(const ir_stmt *s, const ir_stmt *loop) {
  for (const ir_block *b = s ? s->parent : NULL; b && b->owner; b = b->owner->parent)
    if (b->owner == loop) return true;
  return false;
}

static bool dense_place(const ir_kernel *k, int id) {
  const ir_snode *sn = ir_program_snode(k->prog, id);
  return sn && !ir_snode_under_sparse(sn);
}

/* What the loop writes: places stored to or updated atomically, locals
** stored; and whether it holds a global write through a pointer of unknown
** place. */
typedef struct {
  const ir_stmt *loop;
  bool *place_written;          /* by SNode id */
  int nsnodes;
  const ir_stmt **locals;       /* stored locals */
  int nlocals, cap;
} writes;

static void add_local(licm_state *st, writes *w, const ir_stmt *a) {
  for (int i = 0; i < w->nlocals; i++)
    if (w->locals[i] == a) return;
  if (w->nlocals == w->cap) {
    int cap = w->cap ? 2 * w->cap : 16;
    const ir_stmt **grown = ir_alloc(st->k, (size_t)cap * sizeof *grown);
    if (w->nlocals) memcpy(grown, w->locals, (size_t)w->nlocals * sizeof *grown);
    w->locals = grown;
    w->cap = cap;
  }
  w->locals[w->nlocals++] = a;
}

static void collect_writes(licm_state *st, ir_block *blk, writes *w) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_local_store || (ir_op_is_atomic(s->op) && s->ops[0]->op == IR_alloca)) add_local(st, w, s->ops[0]);
    bool gwrite = ir_op_flags(s->op) & IR_STORE;
    if (gwrite && s->ops[0]->op == IR_global_ptr && s->ops[0]->aux >= 0 && s->ops[0]->aux < w->nsnodes)
      w->place_written[s->ops[0]->aux] = true;
    collect_writes(st, s->blocks[0], w);
    collect_writes(st, s->blocks[1], w);
  }
}

static bool stored_local(const writes *w, const ir_stmt *a) {
  for (int i = 0; i < w->nlocals; i++)
    if (w->locals[i] == a) return true;
  return false;
}

/* Does blk hold a statement that may leave the current iteration. */
static bool may_jump(const ir_block *blk) {
  if (!blk) return false;
  for (const ir_stmt *s = blk->first; s; s = s->next)
    if ((ir_op_flags(s->op) & IR_JUMP) || may_jump(s->blocks[0]) || may_jump(s->blocks[1])) return true;
  return false;
}

static bool runs_once_at_least(const ir_stmt *loop) {
  if (loop->op == IR_while) return true;
  const ir_stmt *b = loop->ops[0], *e = loop->ops[1];
  return b->op == IR_const && e->op == IR_const && ir_type_is_int(b->type) && b->imm.ival < e->imm.ival;
}

static bool operands_outside(const ir_stmt *s, const ir_stmt *loop) {
  for (int i = 0; i < s->nops; i++)
    if (!s->ops[i] || inside(s->ops[i], loop)) return false;
  if (s->op == IR_loop_index && (s->loop == loop || inside(s->loop, loop))) return false;
  return true;
}

/* unconditional: s runs on every iteration, before anything that may jump */
static bool hoistable(licm_state *st, const ir_stmt *s, const writes *w, bool unconditional) {
  unsigned f = ir_op_flags(s->op);
  if (f & IR_BLOCKS) return false;
  if (!operands_outside(s, w->loop)) return false;
  if (f & IR_PURE) return s->op != IR_global_ptr || dense_place(st->k, s->aux);
  if (s->op == IR_local_load) return s->ops[0]->op == IR_alloca && !stored_local(w, s->ops[0]);
  if (s->op == IR_global_load) {
    const ir_stmt *p = s->ops[0];
    return unconditional && !st->k->debug && p->op == IR_global_ptr && dense_place(st->k, p->aux) &&
           p->aux >= 0 && p->aux < w->nsnodes && !w->place_written[p->aux] && runs_once_at_least(w->loop);
  }
  return false;
}

static void hoist_block(licm_state *st, ir_block *blk, const writes *w, bool top) {
  bool unconditional = top;
  ir_stmt *next;
  for (ir_stmt *s = blk ? blk->first : NULL; s; s = next) {
    next = s->next;
    if (hoistable(st, s, w, unconditional)) {
      ir_remove(s);
      ir_insert_before((ir_stmt *)w->loop, s);
      st->changed = true;
      continue;
    }
    hoist_block(st, s->blocks[0], w, false);
    hoist_block(st, s->blocks[1], w, false);
    /* a failed check_index stops the task, like a jump */
    if ((ir_op_flags(s->op) & IR_JUMP) || s->op == IR_check_index || may_jump(s->blocks[0]) ||
        may_jump(s->blocks[1]))
      unconditional = false;
  }
}

static void hoist_from(licm_state *st, ir_stmt *loop) {
  int nsn = st->k->prog ? st->k->prog->nsnodes : 0;
  writes w = {.loop = loop, .nsnodes = nsn};
  w.place_written = ir_alloc(st->k, (size_t)(nsn > 0 ? nsn : 1) * sizeof(bool));
  collect_writes(st, loop->blocks[0], &w);
  hoist_block(st, loop->blocks[0], &w, true);
}

/* Inner loops first: what leaves an inner loop lands in the outer one's body. */
static void licm_block(licm_state *st, ir_block *blk, bool kernel_top) {
  ir_stmt *next;
  for (ir_stmt *s = blk ? blk->first : NULL; s; s = next) {
    next = s->next;
    licm_block(st, s->blocks[0], false);
    licm_block(st, s->blocks[1], false);
    bool serial_loop = s->op == IR_while || s->op == IR_range_for;
    /* before offload a top-level range_for is the parallel loop */
    if (serial_loop && !(kernel_top && !st->k->offloaded && s->op == IR_range_for)) hoist_from(st, s);
  }
}

bool ir_pass_licm(ir_kernel *k) {
  licm_state st = {.k = k};
  licm_block(&st, k->body, true);
  return st.changed;
}
