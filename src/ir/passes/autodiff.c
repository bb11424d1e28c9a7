/*
** autodiff.c -- reverse mode: a kernel marked `grad` (k:grad(...),
** docs/autodiff.md) becomes its adjoint. Runs after typecheck, mem2reg and
** the first simplification, before offload, on kernels whose locals have
** become values.
**
** The adjoint of a kernel recomputes its values and walks its statements
** backwards, adding each value's adjoint into the adjoints of its operands:
**
**   - every top-level loop becomes one loop over the same range whose body
**     is the primal body without its field writes, then the adjoint of that
**     body statement by statement in reverse; the loops run in reverse
**     order, so a later loop's gradients reach the fields an earlier one
**     reads before it runs;
**   - a read of a field with a gradient, x[i], adds the value's adjoint to
**     x.grad[i] (an atomic add: iterations may read one element); a write
**     y[i] = v or lt.atomic_add(y[i], v) adds y.grad[i] to v's adjoint;
**   - top-level statements keep their place, and their adjoints follow the
**     last loop's; their adjoints are kernel locals, which parallel loops
**     add to (the reduce pass makes that atomic).
**
** Only values that depend on a field with a gradient ("active" values) get
** adjoints. The recomputation is right only when a kernel's field values do
** not change under it, so what the global-data-access rule forbids is
** refused, naming the field and the line: a field read and then written, or
** accumulated and then read, or written twice. So is everything this pass
** cannot differentiate yet (control flow left inside a loop body, local
** loops, ndarrays of active values, a kernel result, atomic min/max,
** lt.random): an error naming it, never a silently constant value.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../affine.h"
#include "../snode.h"
#include "passes.h"

/* The locals an `if` stores (allocas outside it) and their values just
** before it: its adjoint restores them before recomputing a branch. */
typedef struct {
  ir_stmt **var, **val;
  int n;
} saveset;

/* What the pass knows of one statement, by id (statements it makes get
** ids past the numbered ones: the array grows). */
typedef struct {
  bool active;                     /* depends on a field with a gradient (or a float argument) */
  ir_stmt *adj;                    /* the adjoint's alloca, or NULL */
  const saveset *saves;            /* an if: see saveset */
  ir_stmt *copy;                   /* during one clone_into: the copy */
  int copy_gen;
} info;

typedef struct {
  ir_kernel *k;
  info *inf;
  int cap, gen;
  ir_builder b;                    /* where adjoint code goes */
  ir_stmt *seed;                   /* the argument with the result's adjoint (a kernel result), or NULL */
} ad;

static info *inf(ad *a, const ir_stmt *s) {
  if (s->id >= a->cap) {
    int cap = 2 * a->cap > s->id + 64 ? 2 * a->cap : s->id + 64;
    info *v = ir_alloc(a->k, sizeof *v * (size_t)cap);
    if (a->cap) memcpy(v, a->inf, sizeof *v * (size_t)a->cap);
    a->inf = v;
    a->cap = cap;
  }
  return &a->inf[s->id < 0 ? 0 : s->id];
}

static bool act(ad *a, const ir_stmt *s) { return s && s->id >= 0 && inf(a, s)->active; }

/* Whether block blk is inside statement s (or is one of its blocks). */
static bool within(const ir_block *blk, const ir_stmt *s) {
  for (; blk; blk = blk->owner ? blk->owner->parent : NULL)
    if (blk->owner == s) return true;
  return false;
}

/* The innermost loop s is in, or NULL. */
static const ir_stmt *innermost_loop(const ir_stmt *s) {
  for (const ir_block *b = s->parent; b && b->owner; b = b->owner->parent) {
    ir_op o = b->owner->op;
    if (o == IR_range_for || o == IR_struct_for || o == IR_while) return b->owner;
  }
  return NULL;
}

/* Whether s is inside a loop (of the kernel's IR, at any depth). */
static bool in_loop(const ir_stmt *s) {
  for (const ir_block *b = s->parent; b && b->owner; b = b->owner->parent) {
    ir_op o = b->owner->op;
    if (o == IR_range_for || o == IR_struct_for || o == IR_while) return true;
  }
  return false;
}

static const char *field_of(const ir_kernel *k, const ir_stmt *ptr) {
  const ir_snode *s = ptr && ptr->op == IR_global_ptr ? ir_program_snode(k->prog, ptr->aux) : NULL;
  return s && s->name ? s->name : "?";
}

/* The gradient place of the field ptr points into, or NULL. */
static const ir_snode *grad_of(const ir_kernel *k, const ir_stmt *ptr) {
  if (!ptr || ptr->op != IR_global_ptr) return NULL;
  const ir_snode *s = ir_program_snode(k->prog, ptr->aux);
  return s && s->grad >= 0 ? ir_program_snode(k->prog, s->grad) : NULL;
}

static bool is_float(ir_type t) { return t == IR_f32 || t == IR_f64; }

/* ---- the rules -------------------------------------------------------------- */

/* Every field access so far, in program order: a new one is checked against
** them, element by element where affine.c can prove two indices apart (x[s]
** read and x[s + 1] written, s an argument, touch different elements). */
typedef struct {
  ir_kernel *k;
  ir_stmt **acc;
  int n, cap;
} rules;

/* The top-level loop s is in, or NULL. */
static ir_stmt *outer_loop(const ir_stmt *s) {
  ir_stmt *loop = NULL;
  for (const ir_block *b = s->parent; b && b->owner; b = b->owner->parent)
    if (b->owner->op == IR_range_for || b->owner->op == IR_struct_for) loop = b->owner;
  return loop;
}

/* Whether statements x and y are in different branches of one `if`: one
** run never executes both. */
static bool exclusive(const ir_stmt *x, const ir_stmt *y) {
  for (const ir_block *bx = x->parent; bx && bx->owner; bx = bx->owner->parent)
    for (const ir_block *by = y->parent; by && by->owner; by = by->owner->parent)
      if (bx->owner == by->owner) return bx != by && bx->owner->op == IR_if;
  return false;
}

/* Whether stores e and s are `y[i] = a` and `y[i] = b` in the two branches
** of an `if`, reaching one element per iteration of their loop: each
** element is then written once. */
static bool one_of_branches(ir_kernel *k, const ir_stmt *e, const ir_stmt *s) {
  if (e->op != IR_global_store || !exclusive(e, s)) return false;
  const ir_stmt *p = e->ops[0], *q = s->ops[0];
  if (p->nops != q->nops) return false;
  for (int i = 0; i < p->nops; i++)
    if (!ir_same_value(k, p->ops[i], q->ops[i])) return false;
  ir_stmt *loop = outer_loop(s);
  return !loop || ir_one_element_per_iteration(k, loop, s->ops[0]);
}

/* The first earlier access of s's place of one of the kinds in ops (a
** zero-terminated list) that may reach an element s reaches, or NULL. */
static const ir_stmt *overlap(const rules *r, const ir_stmt *s, const ir_op *ops) {
  const ir_stmt *ptr = s->ops[0];
  for (int i = 0; i < r->n; i++) {
    const ir_stmt *e = r->acc[i];
    bool kind = false;
    for (const ir_op *o = ops; *o; o++) kind = kind || e->op == *o;
    if (kind && e->ops[0]->aux == ptr->aux && !ir_accesses_disjoint(r->k, e->ops[0], ptr)) return e;
  }
  return NULL;
}

static int line_of(const ir_stmt *s) { return s->loc.line; }

static void check_access(ir_stmt *s, void *ud) {
  rules *r = ud;
  ir_kernel *k = r->k;
  unsigned f = ir_op_flags(s->op);
  if (!(f & (IR_LOAD | IR_STORE)) || !s->ops[0] || s->ops[0]->op != IR_global_ptr) return;
  ir_stmt *p = s->ops[0];
  const char *name = field_of(k, p);
  static const ir_op acc_ops[] = {IR_atomic_add, IR_atomic_sub, 0}, read_ops[] = {IR_global_load, 0},
                     write_ops[] = {IR_global_store, IR_atomic_add, IR_atomic_sub, 0},
                     store_ops[] = {IR_global_store, 0};
  const ir_stmt *e;
  if (s->op == IR_global_load) {
    if ((e = overlap(r, s, acc_ops)))
      ir_fail(k, s->loc, "kernel %s reads field '%s' after adding to it at line %d: its gradient needs the "
              "field's final value, which only a later kernel sees; read it in another kernel",
              k->name, name, line_of(e));
  } else {
    const char *what = s->op == IR_global_store ? "writes" : "adds to";
    if ((e = overlap(r, s, read_ops)))
      ir_fail(k, s->loc, "kernel %s %s field '%s', which it reads at line %d: its gradient would recompute with "
              "the overwritten values; write the result to another field or to other elements, e.g. x[s + 1][i] "
              "from x[s][i] (a kernel being differentiated must not overwrite what it reads)", k->name, what,
              name, line_of(e));
    if (s->op == IR_global_store && (e = overlap(r, s, write_ops)) && !one_of_branches(k, e, s))
      ir_fail(k, s->loc, "kernel %s writes field '%s' a second time (first at line %d): a field is written once "
              "in a kernel being differentiated (lt.atomic_add may add to it several times)", k->name, name,
              line_of(e));
    if (s->op != IR_global_store && (e = overlap(r, s, store_ops)))
      ir_fail(k, s->loc, "kernel %s adds to field '%s', which it writes at line %d: write it once or only add to "
              "it", k->name, name, line_of(e));
    if (s->op != IR_atomic_add && s->op != IR_atomic_sub && s->op != IR_global_store)
      ir_fail(k, s->loc, "kernel %s: %s on field '%s' has no gradient rule yet (lt.atomic_add and lt.atomic_sub "
              "do)", k->name, ir_op_name(s->op), name);
  }
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 32;
    ir_stmt **v = ir_alloc(k, sizeof *v * (size_t)cap);
    for (int i = 0; i < r->n; i++) v[i] = r->acc[i];
    r->acc = v;
    r->cap = cap;
  }
  r->acc[r->n++] = s;
}

/* ---- which statements may be differentiated ------------------------------------ */

static void unsupported(ir_kernel *k, const ir_stmt *s, const char *what) {
  ir_fail(k, s->loc, "kernel %s cannot be differentiated yet: %s (docs/autodiff.md says what can)", k->name,
          what);
}

/* Whether s is the store of `s = s + v` or `s = s - v` (either operand order
** for +) on a kernel-level local inside a loop: a reduction, the only change
** of a local a loop body may make here. Its load and its add are then part
** of it. */
static const ir_stmt *uncast(const ir_stmt *s) {
  while (s->op == IR_cast && is_float(s->type) && is_float(s->ops[0]->type)) s = s->ops[0];
  return s;
}

/* Whether the sum o reads local var (through +, -, float conversions). */
static bool contains(const ir_stmt *o, const ir_stmt *var) {
  o = uncast(o);
  if (o->op == IR_local_load) return o->ops[0] == var;
  if (o->op == IR_add || o->op == IR_sub) return contains(o->ops[0], var) || contains(o->ops[1], var);
  return false;
}

/* Whether o is var's old value plus and minus other terms, var read once, on
** a + side: `s = s + a - b` (conversions between float types around the
** terms, as the tracer makes them for an f32 s and f64 terms, included). */
static bool sum_of(const ir_stmt *o, const ir_stmt *var) {
  o = uncast(o);
  if (o->op == IR_local_load) return o->ops[0] == var;
  bool l = contains(o->ops[0], var), r = o->nops > 1 && contains(o->ops[1], var);
  if (o->op == IR_add) return l != r && sum_of(l ? o->ops[0] : o->ops[1], var);
  if (o->op == IR_sub) return l && !r && sum_of(o->ops[0], var);
  return false;
}

/* Whether s is the store of such a sum inside a loop to a local from
** outside that loop: a reduction (a kernel-level local summed by a parallel
** loop, or a loop body's local summed by an inner loop), the only change of
** such a local a loop may make here. */
static bool is_reduction(const ir_stmt *s) {
  if (s->op != IR_local_store || s->ops[0]->op != IR_alloca || !is_float(s->ops[0]->type)) return false;
  const ir_stmt *loop = innermost_loop(s);
  return loop && !within(s->ops[0]->parent, loop) && sum_of(s->ops[1], s->ops[0]);
}

/* Whether s is on a reduction's path from the local's load to its store (its
** uses lead there and it reads the local): the store's adjoint covers it. */
static bool in_reduction(const ir_stmt *s) {
  for (const ir_stmt *u = s->next; u; u = u->next) {
    bool uses = false;
    for (int i = 0; i < u->nops; i++) uses = uses || u->ops[i] == s;
    if (!uses) continue;
    if (u->op == IR_local_store) return is_reduction(u) && contains(s, u->ops[0]);
    if (u->op == IR_add || u->op == IR_sub || (u->op == IR_cast && is_float(u->type))) return in_reduction(u);
    return false;
  }
  return false;
}

/* Where a statement is: the kernel's top level, an `if` there (serial
** code), or a loop body (an `if` in one included). */
enum { TOP, TOP_IF, BODY };

/* Whether an `if` holds a loop (at any depth). */
static bool holds_loop(const ir_stmt *s) {
  for (int b = 0; b < 2; b++)
    for (const ir_stmt *t = s->blocks[b] ? s->blocks[b]->first : NULL; t; t = t->next)
      if (t->op == IR_range_for || t->op == IR_struct_for || t->op == IR_while || (t->op == IR_if && holds_loop(t)))
        return true;
  return false;
}

typedef struct {
  const ir_stmt *var;
  bool found;
} loop_store_scan;

static void note_loop_store(ir_stmt *s, void *ud) {
  loop_store_scan *sc = ud;
  if (s->op == IR_local_store && s->ops[0] == sc->var && in_loop(s)) sc->found = true;
}

/* Whether local var is stored inside a loop within blk. */
static bool stored_in_loop(ir_block *blk, const ir_stmt *var) {
  loop_store_scan sc = {var, false};
  ir_walk(blk, note_loop_store, &sc);
  return sc.found;
}

/* A statement known to this pass, in context ctx. */
static void check_stmt(ad *a, ir_stmt *s, int ctx) {
  ir_kernel *k = a->k;
  if (ctx == BODY && ((s->op == IR_local_store && is_reduction(s)) || (s->op == IR_local_load && in_reduction(s))))
    return;                        /* s = s + v on a kernel-level local */
  switch (s->op) {
  case IR_range_for: case IR_struct_for:
    if (ctx == TOP_IF) unsupported(k, s, "a loop inside an `if` at the kernel's top level");
    return;                        /* an inner loop: its locals are checked with its body */
  case IR_if:
    if (ctx != BODY && holds_loop(s)) unsupported(k, s, "a loop inside an `if` at the kernel's top level");
    return;                        /* its branches are checked with it (mark_block) */
  case IR_while:
    unsupported(k, s, "a while loop (its adjoint would need the values of every iteration: an adjoint stack, "
                "not supported yet)");
    return;
  case IR_alloca: case IR_local_load: case IR_local_store: {
    const ir_stmt *var = s->op == IR_alloca ? s : s->ops[0];
    const ir_stmt *loop = innermost_loop(s);
    if (ctx != BODY || s->op == IR_alloca || within(var->parent, loop)) return;   /* serial code, or the loop's own */
    bool kernel_level = !var->parent->owner;
    /* a value from before the loop that no loop changes: read as it is */
    if (s->op == IR_local_load && !stored_in_loop(kernel_level ? k->body : loop->blocks[0], var)) return;
    if (kernel_level)
      unsupported(k, s, "a kernel-level local changed in a loop other than by `s = s + v` (or read in the loop "
                  "that sums into it)");
    unsupported(k, s, "a local changed across the iterations of an inner loop other than by `v = v + term` (or "
                "read in the loop that sums into it): its adjoint would need its value in every iteration (an "
                "adjoint stack, not supported yet); compute it without carrying it from one iteration to the "
                "next, or unroll the loop with lt.static_range");
    return;
  }
  case IR_return:
    if (ctx != TOP) unsupported(k, s, "a return inside a loop or an `if`");
    return;
  case IR_break: case IR_continue: unsupported(k, s, "break or continue"); return;
  case IR_random: unsupported(k, s, "lt.random (its draws would differ in the adjoint)"); return;
  case IR_ext_ptr: case IR_check_bound: return;   /* ndarrays: only inactive values (checked below) */
  case IR_arg: return;
  case IR_atomic_min: case IR_atomic_max:
    return;                        /* refused by the rules when on a field */
  default: break;
  }
  unsigned f = ir_op_flags(s->op);
  if (f & IR_TASK) unsupported(k, s, "an offloaded kernel");
  if ((f & IR_PURE) || s->op == IR_global_load || s->op == IR_global_store || s->op == IR_atomic_add ||
      s->op == IR_atomic_sub || s->op == IR_print || s->op == IR_print_more || s->op == IR_assert ||
      s->op == IR_check_index || s->op == IR_snode_is_active || s->op == IR_snode_length)
    return;
  char what[96];
  snprintf(what, sizeof what, "%s", ir_op_name(s->op));
  unsupported(k, s, what);
}

/* ---- activity -------------------------------------------------------------------- */

static void mark_active(ad *a, ir_stmt *s) {
  bool on = false;
  if (s->op == IR_global_load && s->ops[0]->op == IR_ext_ptr) {
    on = false;                    /* ndarrays have no gradients yet */
  } else if (s->op == IR_global_load) {
    on = grad_of(a->k, s->ops[0]) != NULL && is_float(s->type);
  } else if (s->op == IR_arg) {
    on = is_float(s->type);        /* a float argument: its gradient goes out (args.grad) */
    if (on && s->parent != a->k->body) unsupported(a->k, s, "an argument read inside a loop's IR (internal)");
  } else if (s->op == IR_alloca || s->op == IR_local_load) {
    on = is_float(s->type);        /* a float local may carry a gradient (too many adjoints do no harm) */
  } else if ((ir_op_flags(s->op) & IR_PURE) && is_float(s->type) && s->op != IR_global_ptr) {
    for (int i = 0; i < s->nops; i++) on = on || act(a, s->ops[i]);
  }
  inf(a, s)->active = on;
  /* an active value stored into an ndarray, or handed to an op this pass does not know, would lose its
  ** gradient */
  bool stores = s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub;
  if (stores && s->ops[0]->op == IR_ext_ptr && act(a, s->ops[1]))
    unsupported(a->k, s, "writing a value that depends on a field with a gradient into an ndarray");
  /* the old value an atomic returns depends on the order of the additions */
  for (int i = 0; i < s->nops; i++) {
    ir_op o = s->ops[i] ? s->ops[i]->op : IR_const;
    if ((o == IR_atomic_add || o == IR_atomic_sub) && is_float(s->ops[i]->type))
      unsupported(a->k, s, "using the old value lt.atomic_add returns");
  }
}

/* Whether a loop body reduces into local var (s = s + v). */
static bool reduced(const ir_block *top, const ir_stmt *var) {
  for (const ir_stmt *l = top->first; l; l = l->next) {
    if (l->op != IR_range_for && l->op != IR_struct_for) continue;
    for (const ir_stmt *s = l->blocks[0]->first; s; s = s->next)
      if (s->op == IR_local_store && s->ops[0] == var && is_reduction(s)) return true;
  }
  return false;
}

/* The adjoint runs the kernel's loops after its top-level code, so a local a
** loop sums into holds its sum there only for what `return` hands out. */
typedef struct {
  ad *a;
  const ir_stmt *load;
} use_scan;

static void check_use(ir_stmt *u, void *ud) {
  use_scan *sc = ud;
  for (int i = 0; i < u->nops; i++)
    if (u->ops[i] == sc->load && u->op != IR_return)
      unsupported(sc->a->k, u, "a kernel-level local summed in a loop and then used other than by `return s` "
                  "(return the sum, or write it to a 0-D field and compute on in another kernel)");
}

static void check_reduced_read(ad *a, ir_stmt *s) {
  if (s->op != IR_local_load || !is_float(s->type) || !reduced(a->k->body, s->ops[0])) return;
  use_scan sc = {a, s};
  ir_walk(a->k->body, check_use, &sc);
}

static void mark_block(ad *a, ir_block *blk, int ctx) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    check_stmt(a, s, ctx);
    if (ctx != BODY) check_reduced_read(a, s);
    mark_active(a, s);
    if (s->op == IR_range_for || s->op == IR_struct_for) mark_block(a, s->blocks[0], BODY);   /* inner ones too */
    if (s->op == IR_if)
      for (int b = 0; b < 2; b++)
        if (s->blocks[b]) mark_block(a, s->blocks[b], ctx == TOP ? TOP_IF : ctx);
  }
}

/* ---- adjoint code ---------------------------------------------------------------- */

/* The adjoint local of value s: made on first use at the start of s's own
** block (a loop body, or the kernel's top level, whose adjoints parallel
** loops add to), zeroed there. */
static ir_stmt *adj_var(ad *a, ir_stmt *s) {
  if (inf(a, s)->adj) return inf(a, s)->adj;
  ir_stmt *var = ir_new(a->k, IR_alloca, s->type, 0, NULL);
  ir_stmt *zero = ir_new(a->k, IR_const, s->type, 0, NULL);
  zero->imm.fval = 0;
  ir_stmt *ops[2] = {var, zero};
  ir_stmt *st = ir_new(a->k, IR_local_store, IR_void, 2, ops);
  var->loc = zero->loc = st->loc = s->loc;
  ir_stmt *at = s->parent->first;  /* never NULL: s is in it */
  ir_insert_before(at, var);
  ir_insert_before(at, zero);
  ir_insert_before(at, st);
  inf(a, s)->adj = var;
  return var;
}

/* adj(s) += v, when s is active */
static void accumulate(ad *a, ir_stmt *s, ir_stmt *v) {
  if (!act(a, s)) return;
  ir_stmt *var = adj_var(a, s);
  ir_builder *b = &a->b;
  if (v->type != s->type) v = ir_b_cast(b, s->type, v);
  ir_stmt *old = ir_b_local_load(b, var);
  ir_b_local_store(b, var, ir_b_binary(b, IR_add, old, v));
}

static ir_stmt *cf(ad *a, ir_type t, double v) { return ir_b_const_float(&a->b, t, v); }
static ir_stmt *bin(ad *a, ir_op op, ir_stmt *x, ir_stmt *y) { return ir_b_binary(&a->b, op, x, y); }
static ir_stmt *un(ad *a, ir_op op, ir_stmt *x) { return ir_b_unary(&a->b, op, x); }

/* The terms of reduction sum o (sum_of): each gets the local's adjoint g,
** negated on the right of a minus. */
static void terms(ad *a, ir_stmt *o, ir_stmt *var, ir_stmt *g, bool neg) {
  while (o->op == IR_cast && is_float(o->type) && is_float(o->ops[0]->type)) o = o->ops[0];
  if (o->op == IR_local_load) return;
  ir_stmt *l = o->ops[0], *r = o->ops[1];
  bool in_l = contains(l, var);
  if (in_l) terms(a, l, var, g, neg);
  else accumulate(a, l, neg ? un(a, IR_neg, g) : g);
  bool neg_r = o->op == IR_sub ? !neg : neg;
  if (!in_l) terms(a, r, var, g, neg_r);
  else accumulate(a, r, neg_r ? un(a, IR_neg, g) : g);
}

/* The adjoint of statement s (in reverse order). */
static void adjoint(ad *a, ir_stmt *s) {
  ir_kernel *k = a->k;
  ir_builder *b = &a->b;
  b->loc = s->loc;
  /* field writes: the written value's adjoint is the field's gradient there */
  if (s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub) {
    ir_stmt *v = s->ops[1];
    const ir_snode *g = grad_of(k, s->ops[0]);
    if (!g && act(a, v))
      ir_fail(k, s->loc, "kernel %s writes a value that depends on a field with a gradient into field '%s', which "
              "has none: the gradient through it would be lost; make '%s' with {needs_grad = true}", k->name,
              field_of(k, s->ops[0]), field_of(k, s->ops[0]));
    if (!g || !act(a, v)) return;
    ir_stmt *p = s->ops[0];
    for (const ir_block *blk = s->parent; s->op == IR_global_store && blk && blk->owner; blk = blk->owner->parent) {
      ir_stmt *loop = blk->owner;
      if ((loop->op == IR_range_for || loop->op == IR_struct_for) && !ir_one_element_per_iteration(k, loop, p))
        ir_fail(k, s->loc, "kernel %s: several iterations of the loop at line %d may write one element of field "
                "'%s': one value is kept, but each would get its gradient; index '%s' by the loop's indices so "
                "each iteration writes its own elements, or add with lt.atomic_add", k->name, loop->loc.line,
                field_of(k, p), field_of(k, p));
    }
    ir_stmt *gp = ir_b_global_ptr(b, g->id, p->nops, p->ops);
    ir_stmt *gv = ir_b_global_load(b, gp);
    accumulate(a, v, s->op == IR_atomic_sub ? un(a, IR_neg, gv) : gv);
    return;
  }
  if (s->op == IR_local_store && is_float(s->ops[1]->type)) {
    ir_stmt *var = s->ops[0];
    ir_stmt *gv = ir_b_local_load(b, adj_var(a, var));
    if (is_reduction(s)) {         /* s = s + a - b in a loop: the terms get +-s's adjoint (s is only added to) */
      terms(a, s->ops[1], var, gv, false);
      return;
    }
    accumulate(a, s->ops[1], gv);  /* top level: the stored value gets it; before, the local held another */
    ir_b_local_store(b, adj_var(a, var), cf(a, var->type, 0));
    return;
  }
  if (s->op == IR_return) {
    if (a->seed && s->nops > 0) accumulate(a, s->ops[0], a->seed);
    return;
  }
  if (s->op == IR_local_load && in_reduction(s)) return;   /* part of a reduction */
  if ((s->op == IR_add || s->op == IR_sub || s->op == IR_cast) && s->parent != a->k->body && in_reduction(s))
    return;
  if (!act(a, s) || !inf(a, s)->adj || s->op == IR_arg) return;
  ir_stmt *g = ir_b_local_load(b, inf(a, s)->adj);
  ir_type t = s->type;
  ir_stmt *x = s->nops > 0 ? s->ops[0] : NULL, *y = s->nops > 1 ? s->ops[1] : NULL;
  switch (s->op) {
  case IR_global_load: {           /* x[i] read: into x.grad[i] */
    const ir_snode *gs = grad_of(k, x);
    /* an inactive cell read as zero: no value to differentiate, and its
    ** gradient must not activate it (the primal's cells stay as they are;
    ** a write's pointer activates where it is computed, so inside the `if`) */
    const ir_snode *lv = gs->parent;
    while (lv && !ir_snode_kind_is_sparse(lv->kind)) lv = lv->parent;
    ir_block *outer = b->block;
    if (lv) {
      ir_stmt *on = ir_b_snode_is_active(b, lv->id, x->nops, x->ops);
      b->block = ir_b_if(b, on, false)->blocks[0];
    }
    ir_b_atomic(b, IR_atomic_add, ir_b_global_ptr(b, gs->id, x->nops, x->ops), g);
    b->block = outer;
    return;
  }
  case IR_add: accumulate(a, x, g); accumulate(a, y, g); return;
  case IR_sub: accumulate(a, x, g); accumulate(a, y, un(a, IR_neg, g)); return;
  case IR_mul: accumulate(a, x, bin(a, IR_mul, g, y)); accumulate(a, y, bin(a, IR_mul, g, x)); return;
  case IR_div:                     /* d(x/y) = dx / y - dy * s / y */
    accumulate(a, x, bin(a, IR_div, g, y));
    accumulate(a, y, un(a, IR_neg, bin(a, IR_div, bin(a, IR_mul, g, s), y)));
    return;
  case IR_neg: accumulate(a, x, un(a, IR_neg, g)); return;
  case IR_abs: {                   /* sign(x), 0 at 0 */
    ir_stmt *z = cf(a, t, 0);
    ir_stmt *pos = ir_b_select(b, bin(a, IR_cmp_gt, x, z), g, z);
    accumulate(a, x, ir_b_select(b, bin(a, IR_cmp_lt, x, z), un(a, IR_neg, g), pos));
    return;
  }
  case IR_sqrt: accumulate(a, x, bin(a, IR_div, bin(a, IR_mul, g, cf(a, t, 0.5)), s)); return;
  case IR_sin: accumulate(a, x, bin(a, IR_mul, g, un(a, IR_cos, x))); return;
  case IR_cos: accumulate(a, x, un(a, IR_neg, bin(a, IR_mul, g, un(a, IR_sin, x)))); return;
  case IR_tan: accumulate(a, x, bin(a, IR_mul, g, bin(a, IR_add, cf(a, t, 1), bin(a, IR_mul, s, s)))); return;
  case IR_asin: case IR_acos: {    /* +-1 / sqrt(1 - x^2) */
    ir_stmt *d = un(a, IR_sqrt, bin(a, IR_sub, cf(a, t, 1), bin(a, IR_mul, x, x)));
    ir_stmt *v = bin(a, IR_div, g, d);
    accumulate(a, x, s->op == IR_asin ? v : un(a, IR_neg, v));
    return;
  }
  case IR_atan: accumulate(a, x, bin(a, IR_div, g, bin(a, IR_add, cf(a, t, 1), bin(a, IR_mul, x, x)))); return;
  case IR_tanh: accumulate(a, x, bin(a, IR_mul, g, bin(a, IR_sub, cf(a, t, 1), bin(a, IR_mul, s, s)))); return;
  case IR_exp: accumulate(a, x, bin(a, IR_mul, g, s)); return;
  case IR_log: accumulate(a, x, bin(a, IR_div, g, x)); return;
  case IR_floor: case IR_ceil: case IR_round: case IR_trunc: case IR_floordiv:
    return;                        /* piecewise constant: zero */
  case IR_mod:                     /* x - floor(x / y) * y */
    accumulate(a, x, g);
    accumulate(a, y, un(a, IR_neg, bin(a, IR_mul, g, un(a, IR_floor, bin(a, IR_div, x, y)))));
    return;
  case IR_pow:                     /* y x^(y-1), and s log x only when y is active */
    accumulate(a, x, bin(a, IR_mul, g, bin(a, IR_mul, y, ir_b_binary(b, IR_pow, x, bin(a, IR_sub, y, cf(a, t, 1))))));
    if (act(a, y)) accumulate(a, y, bin(a, IR_mul, g, bin(a, IR_mul, s, un(a, IR_log, x))));
    return;
  case IR_min: case IR_max: {      /* to x on a tie */
    ir_stmt *z = cf(a, t, 0);
    ir_stmt *pick = bin(a, s->op == IR_min ? IR_cmp_le : IR_cmp_ge, x, y);
    accumulate(a, x, ir_b_select(b, pick, g, z));
    accumulate(a, y, ir_b_select(b, pick, z, g));
    return;
  }
  case IR_atan2: {                 /* atan2(x, y): (y dx - x dy) / (x^2 + y^2) */
    ir_stmt *r = bin(a, IR_add, bin(a, IR_mul, x, x), bin(a, IR_mul, y, y));
    accumulate(a, x, bin(a, IR_div, bin(a, IR_mul, g, y), r));
    accumulate(a, y, un(a, IR_neg, bin(a, IR_div, bin(a, IR_mul, g, x), r)));
    return;
  }
  case IR_select: {
    ir_stmt *z = cf(a, t, 0);
    accumulate(a, y, ir_b_select(b, x, g, z));
    accumulate(a, s->ops[2], ir_b_select(b, x, z, g));
    return;
  }
  case IR_alloca: return;          /* its adjoint was given on by its stores */
  case IR_arg: return;             /* its adjoint goes out last (args.grad) */
  case IR_local_load:              /* a kernel-level local read: into its adjoint */
    accumulate(a, s->ops[0], g);
    return;
  case IR_cast:                    /* float to float; from an integer nothing is active */
    if (is_float(x->type)) accumulate(a, x, ir_b_cast(b, x->type, g));
    return;
  default:
    unsupported(k, s, ir_op_name(s->op));
  }
}

/* Whether s writes a field (the adjoint kernel leaves fields as they are,
** but for gradients). */
static bool writes_field(const ir_stmt *s) {
  return (s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub || s->op == IR_atomic_min ||
          s->op == IR_atomic_max) && s->ops[0] && s->ops[0]->op == IR_global_ptr;
}

/* The statements of blk, in order (*n of them; in the kernel's arena, like
** every array of this pass: ir_fail may leave it at any point). */
static ir_stmt **list_of(ad *a, ir_block *blk, int *n) {
  int c = 0;
  for (ir_stmt *s = blk->first; s; s = s->next) c++;
  ir_stmt **v = ir_alloc(a->k, sizeof *v * (size_t)(c ? c : 1));
  c = 0;
  for (ir_stmt *s = blk->first; s; s = s->next) v[c++] = s;
  *n = c;
  return v;
}

/* The primal statements that stay in the adjoint: all but field writes
** (fields keep their values; only gradients change) and prints, also
** inside an `if`. */
static void drop_block_writes(ir_block *blk);

static void drop_writes(ir_stmt **v, int n) {
  for (int i = 0; i < n; i++) {
    if (writes_field(v[i]) || v[i]->op == IR_print || v[i]->op == IR_print_more) ir_remove(v[i]);
    else if (v[i]->op == IR_if || v[i]->op == IR_range_for || v[i]->op == IR_struct_for)
      for (int b = 0; b < 2; b++)
        if (v[i]->blocks[b]) drop_block_writes(v[i]->blocks[b]);
  }
}

static void drop_block_writes(ir_block *blk) {
  for (ir_stmt *s = blk->first, *next; s; s = next) {
    next = s->next;
    drop_writes(&s, 1);
  }
}

/* ---- if and inner loops ---------------------------------------------------------
** The adjoint of `if c then A else B end` is `if c then A' else B' end`,
** where A' restores the locals the `if` uses to their values before it,
** recomputes A (a copy: the forward code's values inside A are out of
** reach after it) and then runs A's adjoint in reverse. An inner loop's
** adjoint is the same loop whose body restores, recomputes and runs the
** body's adjoint; its iterations are independent (a local carried from one
** to the next is refused, but for sums v = v + term, whose adjoint needs no
** value), so they may run in any order. */

typedef struct {
  ad *a;
  ir_stmt *at;                     /* the if */
  saveset *set;
  int cap;
} store_scan;


static void note_store(ir_stmt *t, void *ud) {
  store_scan *sc = ud;
  if (t->op != IR_local_store && t->op != IR_local_load) return;
  ir_stmt *var = t->ops[0];
  if (within(var->parent, sc->at)) return;   /* its own local */
  /* a sum a loop adds to: its adjoint needs no value (and the loop reads it only to add) */
  if (t->op == IR_local_store ? is_reduction(t) : in_reduction(t)) return;
  saveset *set = sc->set;
  for (int i = 0; i < set->n; i++)
    if (set->var[i] == var) return;
  if (set->n == sc->cap) {
    int cap = sc->cap ? 2 * sc->cap : 4;
    ir_stmt **nv = ir_alloc(sc->a->k, sizeof *nv * (size_t)cap), **nl = ir_alloc(sc->a->k, sizeof *nl * (size_t)cap);
    for (int i = 0; i < set->n; i++) nv[i] = set->var[i];
    set->var = nv;
    set->val = nl;
    sc->cap = cap;
  }
  set->var[set->n++] = var;
}

/* Before every `if` and inner loop in blk (and in its blocks): a load of
** each local from outside it that it reads or stores, its value before it
** (inf()->saves): the adjoint recomputes the statement from there. */
static void insert_saves(ad *a, ir_block *blk) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) insert_saves(a, s->blocks[b]);
    bool inner = (s->op == IR_range_for || s->op == IR_struct_for) && blk->owner;
    if (s->op != IR_if && !inner) continue;
    saveset *set = ir_alloc(a->k, sizeof *set);
    store_scan sc = {a, s, set, 0};
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) ir_walk(s->blocks[b], note_store, &sc);
    for (int i = 0; i < set->n; i++) {
      ir_stmt *op[1] = {set->var[i]};
      set->val[i] = ir_new(a->k, IR_local_load, set->var[i]->type, 1, op);
      set->val[i]->loc = s->loc;
      ir_insert_before(s, set->val[i]);
    }
    inf(a, s)->saves = set;
  }
}

static ir_stmt *copy_of(ad *a, ir_stmt *s) {
  if (!s) return NULL;
  info *i = inf(a, s);
  return i->copy_gen == a->gen && i->copy ? i->copy : s;
}

/* Copies of the statements of src appended to dst (blocks included); the
** copies keep the originals' activity. Returns them in order (*n). */
static void clone_block(ad *a, ir_block *src, ir_block *dst) {
  for (ir_stmt *s = src->first; s; s = s->next) {
    ir_stmt *ops[IR_MAX_OPS];
    for (int i = 0; i < s->nops; i++) ops[i] = copy_of(a, s->ops[i]);
    ir_stmt *c = ir_new(a->k, s->op, s->type, s->nops, ops);
    c->imm = s->imm;
    c->aux = s->aux;
    c->range = s->range;
    c->loc = s->loc;
    c->loop = copy_of(a, s->loop);
    ir_append(dst, c);
    info *si = inf(a, s), *ci = inf(a, c);
    si = inf(a, s);                /* inf(c) may have moved the array */
    ci->active = si->active;
    si->copy = c;
    si->copy_gen = a->gen;
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) {
        c->blocks[b] = ir_block_new(a->k, c);
        clone_block(a, s->blocks[b], c->blocks[b]);
      }
    si = inf(a, s);
    if (si->saves) {               /* its save loads came before it: copied already */
      saveset *set = ir_alloc(a->k, sizeof *set);
      set->n = si->saves->n;
      set->var = ir_alloc(a->k, sizeof *set->var * (size_t)(set->n ? set->n : 1));
      set->val = ir_alloc(a->k, sizeof *set->val * (size_t)(set->n ? set->n : 1));
      for (int i = 0; i < set->n; i++) {
        set->var[i] = copy_of(a, si->saves->var[i]);
        set->val[i] = copy_of(a, si->saves->val[i]);
      }
      inf(a, c)->saves = set;
    }
  }
}

static void adjoint_list(ad *a, ir_stmt **v, int n);

static void adjoint_if(ad *a, ir_stmt *s) {
  ir_builder outer = a->b;
  const saveset *set = inf(a, s)->saves;
  a->b.loc = s->loc;
  ir_stmt *nif = ir_b_if(&a->b, s->ops[0], s->blocks[1] != NULL);
  for (int b = 0; b < 2; b++) {
    if (!s->blocks[b]) continue;
    ir_block *dst = nif->blocks[b];
    a->b = (ir_builder){a->k, dst, s->loc};
    for (int i = 0; set && i < set->n; i++) ir_b_local_store(&a->b, set->var[i], set->val[i]);
    ir_stmt *from = dst->last;     /* the copies follow the restores */
    a->gen++;
    clone_block(a, s->blocks[b], dst);
    int n = 0;
    for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) n++;
    ir_stmt **v = ir_alloc(a->k, sizeof *v * (size_t)(n ? n : 1));
    n = 0;
    for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) v[n++] = t;
    a->b = (ir_builder){a->k, dst, s->loc};
    adjoint_list(a, v, n);
    drop_writes(v, n);
  }
  a->b = outer;
}

static void adjoint_loop(ad *a, ir_stmt *s) {
  if (s->op != IR_range_for) unsupported(a->k, s, "a struct-for inside a loop");
  ir_builder outer = a->b;
  const saveset *set = inf(a, s)->saves;
  a->b.loc = s->loc;
  ir_stmt *nl = ir_b_range_for(&a->b, s->ops[0], s->ops[1]);
  nl->aux = s->aux;
  nl->imm = s->imm;
  ir_block *dst = nl->blocks[0];
  a->b = (ir_builder){a->k, dst, s->loc};
  for (int i = 0; set && i < set->n; i++) ir_b_local_store(&a->b, set->var[i], set->val[i]);
  ir_stmt *from = dst->last;
  a->gen++;
  info *si = inf(a, s);
  si->copy = nl;                   /* the copies' loop indices read the new loop */
  si->copy_gen = a->gen;
  clone_block(a, s->blocks[0], dst);
  int n = 0;
  for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) n++;
  ir_stmt **v = ir_alloc(a->k, sizeof *v * (size_t)(n ? n : 1));
  n = 0;
  for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) v[n++] = t;
  a->b = (ir_builder){a->k, dst, s->loc};
  adjoint_list(a, v, n);
  drop_writes(v, n);
  a->b = outer;
}

/* The adjoints of v[0..n), last first, at the builder. */
static void adjoint_list(ad *a, ir_stmt **v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (v[i]->op == IR_if) adjoint_if(a, v[i]);
    else if (v[i]->op == IR_range_for || v[i]->op == IR_struct_for) adjoint_loop(a, v[i]);
    else adjoint(a, v[i]);
  }
}

/* A loop body: its primal statements stay, its adjoint follows them in reverse. */
static void adjoint_body(ad *a, ir_block *body) {
  int n;
  ir_stmt **v = list_of(a, body, &n);
  a->b = (ir_builder){a->k, body, {0}};
  adjoint_list(a, v, n);
  drop_writes(v, n);
}

bool ir_pass_autodiff(ir_kernel *k) {
  if (!k->grad) return false;
  rules *r = ir_alloc(k, sizeof *r);
  ad a = {.k = k};
  ir_number(k);
  r->k = k;
  ir_walk(k->body, check_access, r);
  insert_saves(&a, k->body);
  mark_block(&a, k->body, TOP);
  int primal_nargs = k->nargs;
  /* a kernel result: the adjoint takes its adjoint as a last argument and returns nothing */
  if (k->ret_type != IR_void && is_float(k->ret_type)) {
    if (k->nargs >= 16) ir_fail(k, (ir_loc){0}, "kernel %s: its adjoint needs one more argument than 16", k->name);
    k->arg_types[k->nargs] = k->ret_type;
    k->arg_names[k->nargs] = ir_strdup(k, "result.grad");
    a.seed = ir_new(k, IR_arg, k->ret_type, 0, NULL);
    a.seed->aux = k->nargs++;
    ir_insert_before(k->body->first, a.seed);
  }
  /* float arguments: their gradients go to an f64 array whose address is a
  ** last argument, args.grad (slot i for argument i) */
  ir_stmt *out = NULL;
  bool float_args = false;
  for (int i = 0; i < primal_nargs; i++) float_args = float_args || is_float(k->arg_types[i]);
  if (float_args) {
    if (k->nargs >= 16)
      ir_fail(k, (ir_loc){0}, "kernel %s: its adjoint needs one more argument than 16 (the gradients of its "
              "arguments)", k->name);
    k->arg_types[k->nargs] = IR_u64;
    k->arg_names[k->nargs] = ir_strdup(k, "args.grad");
    out = ir_new(k, IR_arg, IR_u64, 0, NULL);
    out->aux = k->nargs++;
    ir_insert_before(k->body->first, out);
  }
  /* the top level, in reverse: loops move to the end (their adjoints run in
  ** reverse order), other statements get their adjoints there */
  ir_block *top = k->body;
  int n;
  ir_stmt **v = list_of(&a, top, &n);
  for (int i = n - 1; i >= 0; i--) {
    ir_stmt *s = v[i];
    if (s->op == IR_range_for || s->op == IR_struct_for) {
      ir_remove(s);
      ir_append(top, s);
      adjoint_body(&a, s->blocks[0]);
      v[i] = NULL;                 /* a loop is not a write */
      continue;
    }
    a.b = (ir_builder){k, top, s->loc};
    if (s->op == IR_if) adjoint_if(&a, s);
    else adjoint(&a, s);
  }
  for (int i = 0; i < n; i++)
    if (v[i]) drop_writes(&v[i], 1);
  for (int i = 0; i < n; i++)      /* the adjoint runs on after where the primal returned */
    if (v[i] && v[i]->op == IR_return) ir_remove(v[i]);
  /* last, after every loop's adjoint: the arguments' gradients out */
  if (out) {
    ir_builder *b = &a.b;
    *b = (ir_builder){k, top, {0}};
    for (int i = 0; i < n; i++) {
      ir_stmt *s = v[i];
      if (!s || s->op != IR_arg || s->aux >= primal_nargs || !is_float(s->type) || !inf(&a, s)->adj) continue;
      b->loc = s->loc;
      ir_stmt *ops[2] = {out, ir_b_const_int(b, IR_i64, s->aux)};
      ir_stmt *slot = ir_b_op(b, IR_ext_ptr, IR_f64, 2, ops);
      ir_stmt *g = ir_b_local_load(b, inf(&a, s)->adj);
      if (g->type != IR_f64) g = ir_b_cast(b, IR_f64, g);
      ir_b_global_store(b, slot, ir_b_binary(b, IR_add, ir_b_global_load(b, slot), g));
    }
  }
  k->ret_type = IR_void;
  return true;
}
