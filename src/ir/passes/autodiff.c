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

typedef struct {
  ir_kernel *k;
  int n;                           /* statement ids are 0..n-1 (ir_number) */
  bool *active;                    /* by id */
  ir_stmt **adj;                   /* by id: the adjoint's alloca, or NULL */
  ir_builder b;                    /* where adjoint code goes */
  ir_stmt *seed;                   /* the argument with the result's adjoint (a kernel result), or NULL */
} ad;

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

/* The first earlier access of ptr's place of one of the kinds in ops (a
** zero-terminated list) that may reach an element ptr reaches, or NULL. */
static const ir_stmt *overlap(const rules *r, const ir_stmt *ptr, const ir_op *ops) {
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
    if ((e = overlap(r, p, acc_ops)))
      ir_fail(k, s->loc, "kernel %s reads field '%s' after adding to it at line %d: its gradient needs the "
              "field's final value, which only a later kernel sees; read it in another kernel",
              k->name, name, line_of(e));
  } else {
    const char *what = s->op == IR_global_store ? "writes" : "adds to";
    if ((e = overlap(r, p, read_ops)))
      ir_fail(k, s->loc, "kernel %s %s field '%s', which it reads at line %d: its gradient would recompute with "
              "the overwritten values; write the result to another field or to other elements, e.g. x[s + 1][i] "
              "from x[s][i] (a kernel being differentiated must not overwrite what it reads)", k->name, what,
              name, line_of(e));
    if (s->op == IR_global_store && (e = overlap(r, p, write_ops)))
      ir_fail(k, s->loc, "kernel %s writes field '%s' a second time (first at line %d): a field is written once "
              "in a kernel being differentiated (lt.atomic_add may add to it several times)", k->name, name,
              line_of(e));
    if (s->op != IR_global_store && (e = overlap(r, p, store_ops)))
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

/* Whether s is the store of such a sum to a kernel-level local inside a loop:
** a reduction, the only change of a local a loop body may make here. */
static bool is_reduction(const ir_stmt *s) {
  return s->op == IR_local_store && s->ops[0]->parent != s->parent && s->ops[0]->op == IR_alloca &&
         is_float(s->ops[0]->type) && sum_of(s->ops[1], s->ops[0]);
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

/* A statement of a loop body or of the top level: known to this pass. */
static void check_stmt(ad *a, ir_stmt *s, bool top) {
  ir_kernel *k = a->k;
  if (!top && ((s->op == IR_local_store && is_reduction(s)) || (s->op == IR_local_load && in_reduction(s))))
    return;                        /* s = s + v on a kernel-level local */
  switch (s->op) {
  case IR_range_for: case IR_struct_for:
    if (!top) unsupported(k, s, "a loop inside a loop");
    return;
  case IR_if: unsupported(k, s, "an `if` whose branches write fields or change locals (a plain `if` that "
                          "picks a value is fine)"); return;
  case IR_while: unsupported(k, s, "a while loop"); return;
  case IR_alloca: case IR_local_load: case IR_local_store:
    if (top) return;               /* kernel-level locals: serial code */
    unsupported(k, s, "a local variable assigned in an `if` whose branches read fields, or changed in a loop "
                "other than by `s = s + v` (an `if` that only computes from values read before it is fine: read "
                "the fields first)");
    return;
  case IR_return:
    if (!top) unsupported(k, s, "a return inside a loop");
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
  bool act = false;
  if (s->op == IR_global_load && s->ops[0]->op == IR_ext_ptr) {
    act = false;                   /* ndarrays have no gradients yet */
  } else if (s->op == IR_global_load) {
    act = grad_of(a->k, s->ops[0]) != NULL && is_float(s->type);
  } else if (s->op == IR_arg) {
    act = is_float(s->type);       /* a float argument: its gradient goes out (args.grad) */
    if (act && s->parent != a->k->body) unsupported(a->k, s, "an argument read inside a loop's IR (internal)");
  } else if (s->op == IR_alloca || s->op == IR_local_load) {
    act = is_float(s->type);       /* a float local may carry a gradient (too many adjoints do no harm) */
  } else if ((ir_op_flags(s->op) & IR_PURE) && is_float(s->type) && s->op != IR_global_ptr) {
    for (int i = 0; i < s->nops; i++) act = act || (s->ops[i] && s->ops[i]->id >= 0 && a->active[s->ops[i]->id]);
  }
  if (s->id >= 0 && s->id < a->n) a->active[s->id] = act;
  /* an active value stored into an ndarray, or handed to an op this pass does not know, would lose its
  ** gradient */
  bool stores = s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub;
  if (stores && s->ops[0]->op == IR_ext_ptr && a->active[s->ops[1]->id])
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

static void mark_block(ad *a, ir_block *blk, bool top) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    check_stmt(a, s, top);
    if (top) check_reduced_read(a, s);
    mark_active(a, s);
    if ((s->op == IR_range_for || s->op == IR_struct_for) && top) mark_block(a, s->blocks[0], false);
  }
}

/* ---- adjoint code ---------------------------------------------------------------- */

/* The adjoint local of value s: made on first use at the start of s's own
** block (a loop body, or the kernel's top level, whose adjoints parallel
** loops add to), zeroed there. */
static ir_stmt *adj_var(ad *a, ir_stmt *s) {
  if (a->adj[s->id]) return a->adj[s->id];
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
  a->adj[s->id] = var;
  return var;
}

/* adj(s) += v, when s is active */
static void accumulate(ad *a, ir_stmt *s, ir_stmt *v) {
  if (!s || s->id < 0 || s->id >= a->n || !a->active[s->id]) return;
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
    if (!g && a->active[v->id])
      ir_fail(k, s->loc, "kernel %s writes a value that depends on a field with a gradient into field '%s', which "
              "has none: the gradient through it would be lost; make '%s' with {needs_grad = true}", k->name,
              field_of(k, s->ops[0]), field_of(k, s->ops[0]));
    if (!g || !a->active[v->id]) return;
    ir_stmt *p = s->ops[0];
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
  if (s->op == IR_local_load && s->parent != s->ops[0]->parent) return;   /* part of a reduction */
  if ((s->op == IR_add || s->op == IR_sub || s->op == IR_cast) && s->parent != a->k->body && in_reduction(s))
    return;
  if (s->id < 0 || s->id >= a->n || !a->active[s->id] || !a->adj[s->id] || s->op == IR_arg) return;
  ir_stmt *g = ir_b_local_load(b, a->adj[s->id]);
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
    if (a->active[y->id]) accumulate(a, y, bin(a, IR_mul, g, bin(a, IR_mul, s, un(a, IR_log, x))));
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
** (fields keep their values; only gradients change) and prints. */
static void drop_writes(ir_stmt **v, int n) {
  for (int i = 0; i < n; i++)
    if (writes_field(v[i]) || v[i]->op == IR_print || v[i]->op == IR_print_more) ir_remove(v[i]);
}

/* A loop body: its primal statements stay, its adjoint follows them in reverse. */
static void adjoint_body(ad *a, ir_block *body) {
  int n;
  ir_stmt **v = list_of(a, body, &n);
  a->b = (ir_builder){a->k, body, {0}};
  for (int i = n - 1; i >= 0; i--) adjoint(a, v[i]);
  drop_writes(v, n);
}

bool ir_pass_autodiff(ir_kernel *k) {
  if (!k->grad) return false;
  rules *r = ir_alloc(k, sizeof *r);
  ad a = {.k = k};
  ir_number(k);
  a.n = k->next_id;
  a.active = ir_alloc(k, ((size_t)a.n + 1) * sizeof *a.active);
  a.adj = ir_alloc(k, ((size_t)a.n + 1) * sizeof *a.adj);
  r->k = k;
  ir_walk(k->body, check_access, r);
  mark_block(&a, k->body, true);
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
    adjoint(&a, s);
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
      if (!s || s->op != IR_arg || s->aux >= primal_nargs || !is_float(s->type) || s->id < 0 || s->id >= a.n ||
          !a.adj[s->id])
        continue;
      b->loc = s->loc;
      ir_stmt *ops[2] = {out, ir_b_const_int(b, IR_i64, s->aux)};
      ir_stmt *slot = ir_b_op(b, IR_ext_ptr, IR_f64, 2, ops);
      ir_stmt *g = ir_b_local_load(b, a.adj[s->id]);
      if (g->type != IR_f64) g = ir_b_cast(b, IR_f64, g);
      ir_b_global_store(b, slot, ir_b_binary(b, IR_add, ir_b_global_load(b, slot), g));
    }
  }
  k->ret_type = IR_void;
  return true;
}
