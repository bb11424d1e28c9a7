/*
** offload.c -- split the top level into serial and range_for tasks.
**
** Each top-level range_for becomes a task_range_for whose block is the loop
** body; each run of other top-level statements becomes a task_serial. Tasks
** run one after another (a range_for's iterations in parallel), and each is
** compiled into its own function, so nothing but memory crosses a task
** boundary. Hence:
**
**  - constant bounds go into the task's range; other bounds are stored as i32
**    into global temporaries ("gtmp", 8 bytes a slot in a per-launch buffer)
**    by a serial task placed right before, and range.*_gtmp name the slots;
**  - a value used in a task other than its own is either rematerialised in
**    the using task (const, arg, global_tmp, and a global_ptr whose indices
**    can be had there) or stored to a fresh gtmp right after its definition
**    and loaded at the top of the using task;
**  - a top-level alloca used by a task other than its own becomes a gtmp: the
**    alloca turns into its global_tmp (plus a store of zero, since allocas
**    start zeroed), its local_load/local_store into global_load/global_store.
**
** Top-level const and arg statements belong to no task: every task that uses
** one gets its own copy, so no task exists only to hold constants. A break or
** continue that would leave a top-level loop is a user error, and a return
** that is not in the last task sets a flag that guards the later tasks.
**
** Sparse SNodes (seeds/internal-designs.md, "List generation"): a top-level
** struct_for over level S becomes, for each level L from the root's child
** down to S, `task_clear_list L` + `task_listgen parent(L)->L`, then a
** `task_struct_for S` whose body is the loop body: it walks S's list of
** active containers and enumerates their active cells on the fly. The root's
** list always holds its one container and is never rebuilt. A top-level
** snode_deactivate_all S becomes, for each sparse level D under S (S
** included), deepest first so that no cell is freed before its descendants:
** D's lists, `task_deactivate_all D`, and `task_gc D` for pointer/dynamic D.
** Every other task that may deactivate (holds snode_deactivate) is followed
** by a `task_gc` per pointer/dynamic level it deactivates, so freed cells are
** recycled before the next task allocates.
*/
#include "passes.h"
#include "../snode.h"

typedef struct {
  ir_kernel *k;
  int n;                /* statements numbered before the pass: ids 0..n-1 */
  int *stamp;           /* by id: index of the task whose copy is in repl */
  ir_stmt **repl;       /* by id: the value's stand-in inside task `stamp` */
  int *gtmp;            /* by id: gtmp offset the value is stored to, or -1 */
  bool *shared;         /* by id: a top-level alloca used by another task */
  ir_stmt ***ptr_ops;   /* by id: a global_ptr's operands before rewriting */
  int cur;              /* index of the task being rewritten */
  ir_stmt *task;        /* that task */
  ir_stmt *cursor;      /* last statement of its prelude (NULL: none yet) */
} off_state;

static int new_slot(ir_kernel *k) {
  int off = k->gtmp_size;
  k->gtmp_size += 8;
  return off;
}

static ir_stmt *mk(ir_kernel *k, ir_op op, ir_type t, int nops, ir_stmt *const *ops, ir_loc loc) {
  ir_stmt *s = ir_new(k, op, t, nops, ops);
  s->loc = loc;
  return s;
}

static ir_stmt *mk_gtmp(ir_kernel *k, ir_type t, int off, ir_loc loc) {
  ir_stmt *s = mk(k, IR_global_tmp, t, 0, NULL, loc);
  s->aux = off;
  return s;
}

static ir_stmt *new_task(ir_kernel *k, ir_op op, ir_loc loc) {
  ir_stmt *t = mk(k, op, IR_void, 0, NULL, loc);
  t->blocks[0] = ir_block_new(k, t);
  ir_append(k->body, t);
  return t;
}

/* The task holding s, or NULL for a statement in no task (top-level const/arg). */
static ir_stmt *task_of(ir_kernel *k, ir_stmt *s) {
  while (s && s->parent && s->parent != k->body) s = s->parent->owner;
  return s && s->parent == k->body ? s : NULL;
}

static bool is_top_level_in_task(ir_kernel *k, const ir_stmt *s) {
  return s->parent && s->parent->owner && s->parent->owner->parent == k->body;
}

/* Appends s to the prelude at the top of the current task. */
static void prelude(off_state *st, ir_stmt *s) {
  ir_block *b = st->task->blocks[0];
  if (st->cursor) ir_insert_after(st->cursor, s);
  else if (b->first) ir_insert_before(b->first, s);
  else ir_append(b, s);
  st->cursor = s;
}

/* The stand-in for value o inside the current task. Statements created by
** this pass (ids >= n: copies, casts) are copied again when another task uses
** them, uncached; the simplify round after offload merges duplicates. */
static ir_stmt *resolve(off_state *st, ir_stmt *o) {
  ir_kernel *k = st->k;
  if (!o || task_of(k, o) == st->task) return o;
  bool cached = o->id >= 0 && o->id < st->n;
  if (cached && st->stamp[o->id] == st->cur) return st->repl[o->id];
  ir_stmt *r;
  switch (o->op) {
  case IR_const: case IR_arg: case IR_global_tmp:
    r = mk(k, o->op, o->type, 0, NULL, o->loc);
    r->imm = o->imm;
    r->aux = o->aux;
    prelude(st, r);
    break;
  case IR_global_ptr: case IR_ext_ptr: {
    /* from the operands it had before its own task was rewritten: those may
    ** now be stand-ins that live in that task (a pointer cannot go through
    ** a gtmp slot: it is recomputed, as ndarray element addresses are too) */
    ir_stmt *idx[IR_MAX_OPS];
    ir_stmt **orig = cached && st->ptr_ops[o->id] ? st->ptr_ops[o->id] : o->ops;
    for (int i = 0; i < o->nops; i++) idx[i] = resolve(st, orig[i]);
    r = mk(k, o->op, o->type, o->nops, idx, o->loc);
    r->aux = o->aux;
    r->imm = o->imm; /* the activate flag */
    prelude(st, r);
    break;
  }
  default: {
    if (!cached || !is_top_level_in_task(k, o))
      ir_fail(k, o->loc, "offload: $%d (%s) is used outside the block that defines it",
              o->id, ir_op_name(o->op));
    if (st->gtmp[o->id] < 0) {
      /* store it once, right after its definition */
      int off = st->gtmp[o->id] = new_slot(k);
      ir_stmt *p = mk_gtmp(k, o->type, off, o->loc);
      ir_stmt *ops[2] = {p, o};
      ir_stmt *store = mk(k, IR_global_store, IR_void, 2, ops, o->loc);
      ir_insert_after(o, p);
      ir_insert_after(p, store);
    }
    ir_stmt *p = mk_gtmp(k, o->type, st->gtmp[o->id], o->loc);
    prelude(st, p);
    r = mk(k, IR_global_load, o->type, 1, &p, o->loc);
    prelude(st, r);
    break;
  }
  }
  if (cached) {
    st->stamp[o->id] = st->cur;
    st->repl[o->id] = r;
  }
  return r;
}

static void rewrite_block(off_state *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *u = blk->first; u; u = u->next) {
    if (u->op == IR_local_load && u->ops[0]->op == IR_global_tmp) u->op = IR_global_load;
    if (u->op == IR_local_store && u->ops[0]->op == IR_global_tmp) u->op = IR_global_store;
    for (int i = 0; i < u->nops; i++) u->ops[i] = resolve(st, u->ops[i]);
    rewrite_block(st, u->blocks[0]);
    rewrite_block(st, u->blocks[1]);
  }
}

/* loop_index statements of the old range_for now read the task's index,
** which is an i32 (task bounds are i32); an index of another type is cast
** back to it, so its users keep their types. */
static void retarget(ir_kernel *k, ir_block *blk, ir_stmt *from, ir_stmt *to) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_loop_index && s->loop == from) {
      s->loop = to;
      if (s->type != IR_i32) {
        ir_type t = s->type;
        s->type = IR_i32;
        ir_stmt *c = mk(k, IR_cast, t, 1, &s, s->loc);
        ir_replace_uses(s->parent, s, c);
        ir_insert_after(s, c);
        s = c;
      }
    }
    retarget(k, s->blocks[0], from, to);
    retarget(k, s->blocks[1], from, to);
  }
}

/* A break/continue in a loop body that leaves or restarts that loop itself
** (jumps inside nested while/range_for belong to those). */
static ir_stmt *own_jump(ir_block *blk) {
  if (!blk) return NULL;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_break || s->op == IR_continue) return s;
    if (s->op == IR_if) {
      ir_stmt *j = own_jump(s->blocks[0]);
      if (!j) j = own_jump(s->blocks[1]);
      if (j) return j;
    }
  }
  return NULL;
}

/* Stores bound v of a range_for as i32 into a fresh gtmp at the end of the
** serial task `ser`; returns the slot. */
static int store_bound(ir_kernel *k, ir_stmt *ser, ir_stmt *v, ir_loc loc) {
  ir_block *b = ser->blocks[0];
  if (v->type != IR_i32) {
    ir_stmt *c = mk(k, IR_cast, IR_i32, 1, &v, loc);
    ir_append(b, c);
    v = c;
  }
  int off = new_slot(k);
  ir_stmt *p = mk_gtmp(k, IR_i32, off, loc);
  ir_append(b, p);
  ir_stmt *ops[2] = {p, v};
  ir_append(b, mk(k, IR_global_store, IR_void, 2, ops, loc));
  return off;
}

static void save_ptr_ops(off_state *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if ((s->op == IR_global_ptr || s->op == IR_ext_ptr) && s->id >= 0 && s->id < st->n) {
      ir_stmt **ops = ir_alloc(st->k, sizeof(ir_stmt *) * (size_t)(s->nops + 1));
      for (int i = 0; i < s->nops; i++) ops[i] = s->ops[i];
      st->ptr_ops[s->id] = ops;
    }
    save_ptr_ops(st, s->blocks[0]);
    save_ptr_ops(st, s->blocks[1]);
  }
}

static void mark_shared(off_state *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *u = blk->first; u; u = u->next) {
    for (int i = 0; i < u->nops; i++) {
      ir_stmt *o = u->ops[i];
      if (o && o->op == IR_alloca && o->id >= 0 && o->id < st->n &&
          is_top_level_in_task(st->k, o) && task_of(st->k, o) != task_of(st->k, u))
        st->shared[o->id] = true;
    }
    mark_shared(st, u->blocks[0]);
    mark_shared(st, u->blocks[1]);
  }
}

/* A shared alloca becomes its own global_tmp, zeroed where it stood. */
static void alloca_to_gtmp(ir_kernel *k, ir_stmt *a) {
  a->op = IR_global_tmp;
  a->aux = new_slot(k);
  ir_stmt *zero = mk(k, IR_const, a->type, 0, NULL, a->loc);
  if (ir_type_is_float(a->type)) zero->imm.fval = 0.0;
  else zero->imm.ival = 0;
  ir_stmt *ops[2] = {a, zero};
  ir_stmt *store = mk(k, IR_global_store, IR_void, 2, ops, a->loc);
  ir_insert_after(a, zero);
  ir_insert_after(zero, store);
}

/* Turns the top-level range_for s into a task_range_for appended to the body;
** a non-constant bound is stored by the serial task *ser (made if NULL). */
static void make_range_task(ir_kernel *k, ir_stmt *s, ir_stmt **ser) {
  ir_task_range r = {0, 0, -1, -1, 0};
  for (int i = 0; i < 2; i++) {
    ir_stmt *v = s->ops[i];
    int64_t *bound = i ? &r.end : &r.begin;
    int *slot = i ? &r.end_gtmp : &r.begin_gtmp;
    if (v->op == IR_const && ir_type_is_int(v->type)) {
      *bound = v->imm.ival;
    } else {
      if (!*ser) *ser = new_task(k, IR_task_serial, s->loc);
      *slot = store_bound(k, *ser, v, s->loc);
    }
  }
  ir_stmt *t = new_task(k, IR_task_range_for, s->loc);
  t->range = r;
  t->blocks[0] = s->blocks[0];
  t->blocks[0]->owner = t;
  retarget(k, t->blocks[0], s, t);
}

/* ---- sparse SNodes ------------------------------------------------------------ */

static ir_snode *snode_at(ir_kernel *k, int id, ir_loc loc) {
  ir_snode *s = ir_program_snode(k->prog, id);
  if (!s) ir_fail(k, loc, "offload: S%d is not an SNode of this kernel's program", id);
  return s;
}

static ir_stmt *level_task(ir_kernel *k, ir_op op, int snode, ir_loc loc) {
  ir_stmt *t = mk(k, op, IR_void, 0, NULL, loc);
  t->aux = snode;
  ir_append(k->body, t);
  return t;
}

/* clear_list + listgen for every level from the root's child down to s. */
static void make_lists(ir_kernel *k, ir_snode *s, ir_loc loc) {
  ir_snode *path[64];
  int n = 0;
  for (ir_snode *q = s; q && q->parent && n < 64; q = q->parent) path[n++] = q;
  for (int i = n - 1; i >= 0; i--) {
    level_task(k, IR_task_clear_list, path[i]->id, loc);
    level_task(k, IR_task_listgen, path[i]->id, loc);
  }
}

static void make_struct_task(ir_kernel *k, ir_stmt *s) {
  make_lists(k, snode_at(k, s->aux, s->loc), s->loc);
  ir_stmt *t = new_task(k, IR_task_struct_for, s->loc);
  t->aux = s->aux;
  t->blocks[0] = s->blocks[0];
  t->blocks[0]->owner = t;
  retarget(k, t->blocks[0], s, t);
}

/* Post-order: the sparse levels under n (n included), deepest first. */
static void deactivate_all_below(ir_kernel *k, ir_snode *n, ir_loc loc) {
  for (int c = 0; c < n->nchildren; c++) deactivate_all_below(k, n->children[c], loc);
  if (!ir_snode_kind_is_sparse(n->kind)) return;
  make_lists(k, n, loc);
  level_task(k, IR_task_deactivate_all, n->id, loc);
  if (n->kind == IR_SN_pointer || n->kind == IR_SN_dynamic) level_task(k, IR_task_gc, n->id, loc);
}

/* Marks in `gc` (by SNode id) the pointer/dynamic levels blk deactivates. */
static void collect_deactivated(ir_kernel *k, ir_block *blk, bool *gc) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_snode_deactivate) {
      ir_snode *n = snode_at(k, s->aux, s->loc);
      if (n->kind == IR_SN_pointer || n->kind == IR_SN_dynamic) gc[n->id] = true;
    }
    collect_deactivated(k, s->blocks[0], gc);
    collect_deactivated(k, s->blocks[1], gc);
  }
}

static void insert_gc_tasks(ir_kernel *k) {
  int n = k->prog ? k->prog->nsnodes : 0;
  if (n == 0) return;
  bool *gc = ir_alloc(k, (size_t)n * sizeof *gc);
  for (ir_stmt *t = k->body->first; t; t = t->next) {
    if (!t->blocks[0]) continue;
    for (int i = 0; i < n; i++) gc[i] = false;
    collect_deactivated(k, t->blocks[0], gc);
    for (int i = n - 1; i >= 0; i--) /* after t, in increasing id order */
      if (gc[i]) {
        ir_stmt *g = mk(k, IR_task_gc, IR_void, 0, NULL, t->loc);
        g->aux = i;
        ir_insert_after(t, g);
      }
  }
}

/* struct_for and snode_deactivate_all act on whole structures in parallel:
** only at the top level of a kernel. */
static void check_nested_sparse(ir_kernel *k, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_struct_for)
      ir_fail(k, s->loc,
              "a struct-for (`for i in field do`) inside another statement: it runs over the "
              "active cells in parallel, so it must be at the outermost level of the kernel; "
              "move it out, or loop with a range `for` here");
    if (s->op == IR_snode_deactivate_all)
      ir_fail(k, s->loc,
              "deactivate_all() inside a loop or `if`: it runs as its own parallel step, so it "
              "must be at the outermost level of the kernel");
    check_nested_sparse(k, s->blocks[0]);
    check_nested_sparse(k, s->blocks[1]);
  }
}

static bool has_return(ir_block *blk) {
  if (!blk) return false;
  for (ir_stmt *s = blk->first; s; s = s->next)
    if (s->op == IR_return || has_return(s->blocks[0]) || has_return(s->blocks[1])) return true;
  return false;
}

/* Before every return in blk: store 1 into the i32 flag at gtmp `off`. */
static void flag_returns(ir_kernel *k, ir_block *blk, int off) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_return) {
      ir_stmt *p = mk_gtmp(k, IR_i32, off, s->loc);
      ir_stmt *one = mk(k, IR_const, IR_i32, 0, NULL, s->loc);
      one->imm.ival = 1;
      ir_stmt *ops[2] = {p, one};
      ir_insert_before(s, p);
      ir_insert_before(s, one);
      ir_insert_before(s, mk(k, IR_global_store, IR_void, 2, ops, s->loc));
    }
    flag_returns(k, s->blocks[0], off);
    flag_returns(k, s->blocks[1], off);
  }
}

/* Emits `gtmp[off] == 0` (an i1) at the end of blk. */
static ir_stmt *flag_clear(ir_kernel *k, ir_block *blk, int off, ir_loc loc) {
  ir_stmt *p = mk_gtmp(k, IR_i32, off, loc);
  ir_append(blk, p);
  ir_stmt *v = mk(k, IR_global_load, IR_i32, 1, &p, loc);
  ir_append(blk, v);
  ir_stmt *z = mk(k, IR_const, IR_i32, 0, NULL, loc);
  ir_append(blk, z);
  ir_stmt *ops[2] = {v, z};
  ir_stmt *c = mk(k, IR_cmp_eq, IR_i1, 2, ops, loc);
  ir_append(blk, c);
  return c;
}

/* The bound of range task t (begin when end is false) as an i32 in blk. */
static ir_stmt *bound_value(ir_kernel *k, ir_block *blk, const ir_stmt *t, bool end) {
  int gtmp = end ? t->range.end_gtmp : t->range.begin_gtmp;
  if (gtmp < 0) {
    ir_stmt *c = mk(k, IR_const, IR_i32, 0, NULL, t->loc);
    c->imm.ival = end ? t->range.end : t->range.begin;
    ir_append(blk, c);
    return c;
  }
  ir_stmt *p = mk_gtmp(k, IR_i32, gtmp, t->loc);
  ir_append(blk, p);
  ir_stmt *v = mk(k, IR_global_load, IR_i32, 1, &p, t->loc);
  ir_append(blk, v);
  return v;
}

/* Range task t after a task that may return runs no iteration once the flag
** at gtmp `off` is set: its end becomes `flag clear ? end : begin`, decided
** once by a serial task before it (not tested in every iteration). That task
** must have no return of its own, which would skip the bound's store. */
static void empty_unless_clear(ir_kernel *k, ir_stmt *t, int off) {
  ir_stmt *ser = t->prev;
  if (!ser || ser->op != IR_task_serial || has_return(ser->blocks[0])) {
    ser = mk(k, IR_task_serial, IR_void, 0, NULL, t->loc);
    ser->blocks[0] = ir_block_new(k, ser);
    ir_insert_before(t, ser);
  }
  ir_block *b = ser->blocks[0];
  ir_stmt *ops[3] = {flag_clear(k, b, off, t->loc), bound_value(k, b, t, true), bound_value(k, b, t, false)};
  ir_stmt *sel = mk(k, IR_select, IR_i32, 3, ops, t->loc);
  ir_append(b, sel);
  t->range.end_gtmp = store_bound(k, ser, sel, t->loc);
}

/* A return ends the kernel, but each task is a separate function: when a
** task that is not the last may return, a flag in a gtmp (cleared before the
** first task, set before each return) guards every later task: a range task
** by its bounds (empty_unless_clear), any other by an `if` around its body. */
static void guard_after_returns(ir_kernel *k) {
  ir_stmt *first = NULL;
  for (ir_stmt *t = k->body->first; t && !first; t = t->next)
    if (t->next && has_return(t->blocks[0])) first = t;
  if (!first) return;
  int off = new_slot(k);
  ir_stmt *t0 = k->body->first;
  ir_loc loc = first->loc;
  if (t0->op != IR_task_serial) {
    ir_stmt *t = mk(k, IR_task_serial, IR_void, 0, NULL, loc);
    t->blocks[0] = ir_block_new(k, t);
    ir_insert_before(t0, t);
    t0 = t;
  }
  ir_stmt *p = mk_gtmp(k, IR_i32, off, loc);
  ir_stmt *zero = mk(k, IR_const, IR_i32, 0, NULL, loc);
  ir_stmt *ops[2] = {p, zero};
  ir_stmt *store = mk(k, IR_global_store, IR_void, 2, ops, loc);
  ir_block *b0 = t0->blocks[0];
  if (b0->first) ir_insert_before(b0->first, p);
  else ir_append(b0, p);
  ir_insert_after(p, zero);
  ir_insert_after(zero, store);
  for (ir_stmt *t = first; t; t = t->next) {
    if (t->next) flag_returns(k, t->blocks[0], off);
    /* list, gc and deactivate_all tasks have no body to guard (see docs/ir.md) */
    if (t == first || !t->blocks[0]) continue;
    if (t->op == IR_task_range_for) {
      empty_unless_clear(k, t, off);
      continue;
    }
    ir_block *body = t->blocks[0], *nb = ir_block_new(k, t);
    ir_stmt *guard = mk(k, IR_if, IR_void, 1, NULL, t->loc);
    guard->ops[0] = flag_clear(k, nb, off, t->loc);
    ir_append(nb, guard);
    guard->blocks[0] = body;
    body->owner = guard;
    t->blocks[0] = nb;
  }
}

bool ir_pass_offload(ir_kernel *k) {
  if (k->offloaded) return false;
  /* user errors first, before anything is changed or allocated */
  for (ir_stmt *s = k->body->first; s; s = s->next) {
    /* IR text may hold tasks without saying `offloaded`: they are offloaded already */
    if (ir_op_flags(s->op) & IR_TASK)
      ir_fail(k, s->loc, "kernel %s holds task %s but is not marked offloaded: its body is offloaded already "
              "(write `offloaded` after its arguments)", k->name, ir_op_name(s->op));
    ir_stmt *j = s->op == IR_range_for || s->op == IR_struct_for ? own_jump(s->blocks[0]) : NULL;
    check_nested_sparse(k, s->blocks[0]);
    check_nested_sparse(k, s->blocks[1]);
    if (j)
      ir_fail(k, j->loc,
              "`%s` in the outermost for loop of a kernel: its iterations run in parallel, "
              "so it cannot stop or skip ahead; guard the loop body with an `if`, or put the "
              "loop inside a `while`",
              ir_op_name(j->op));
  }
  ir_number(k);
  off_state st = {.k = k, .n = k->next_id, .cur = -1};
  size_t n = st.n > 0 ? (size_t)st.n : 1;
  /* in the kernel's arena: an ir_fail below leaks nothing */
  st.stamp = ir_alloc(k, n * sizeof *st.stamp);
  st.repl = ir_alloc(k, n * sizeof *st.repl);
  st.gtmp = ir_alloc(k, n * sizeof *st.gtmp);
  st.shared = ir_alloc(k, n * sizeof *st.shared);
  st.ptr_ops = ir_alloc(k, n * sizeof *st.ptr_ops);
  for (size_t i = 0; i < n; i++) st.stamp[i] = -1, st.gtmp[i] = -1;

  /* 1. detach the top level and regroup it into tasks */
  ir_stmt *s = k->body->first;
  k->body->first = k->body->last = NULL;
  ir_stmt *ser = NULL; /* the serial task being filled, if the last task is one */
  while (s) {
    ir_stmt *next = s->next;
    s->prev = s->next = NULL;
    s->parent = NULL;
    if (s->op == IR_const || s->op == IR_arg) {
      /* belongs to no task: copied into each user's task by resolve */
    } else if (s->op == IR_range_for) {
      make_range_task(k, s, &ser);
      ser = NULL;
    } else if (s->op == IR_struct_for) {
      make_struct_task(k, s);
      ser = NULL;
    } else if (s->op == IR_snode_deactivate_all) {
      deactivate_all_below(k, snode_at(k, s->aux, s->loc), s->loc);
      ser = NULL;
    } else {
      if (!ser) ser = new_task(k, IR_task_serial, s->loc);
      ir_append(ser->blocks[0], s);
    }
    s = next;
  }

  /* 2. top-level allocas used by other tasks become global temporaries */
  mark_shared(&st, k->body);
  for (ir_stmt *t = k->body->first; t; t = t->next)
    for (ir_stmt *a = t->blocks[0] ? t->blocks[0]->first : NULL; a; a = a->next)
      if (a->op == IR_alloca && a->id >= 0 && a->id < st.n && st.shared[a->id]) {
        alloca_to_gtmp(k, a);
        a = a->next->next; /* skip the zero store just inserted */
      }

  /* 3. give every task its own copy (or a gtmp load) of the values it uses */
  save_ptr_ops(&st, k->body);
  int idx = 0;
  for (ir_stmt *t = k->body->first; t; t = t->next, idx++) {
    st.cur = idx;
    st.task = t;
    st.cursor = NULL;
    rewrite_block(&st, t->blocks[0]);
  }

  /* 4. freed sparse cells are recycled after each task that may free some */
  insert_gc_tasks(k);

  /* 5. a return stops the tasks after it */
  guard_after_returns(k);

  k->offloaded = true;
  return true;
}
