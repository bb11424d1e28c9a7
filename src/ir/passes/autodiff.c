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
** Control flow inside a loop body: an `if`'s adjoint is an `if` on the same
** condition whose branch restores the locals the `if` uses, recomputes the
** branch and walks it back; an inner loop's adjoint is the same loop whose
** body does the same per iteration (its iterations carry no value but sums).
**
** Only values that depend on a field with a gradient or on a float argument
** ("active" values) get adjoints. What the pass cannot differentiate, and
** the global-data-access rule, are checked first (autodiff_check.c): an
** error naming the field, the construct and the line, never a silently
** constant value or a gradient computed from overwritten data.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../snode.h"
#include "autodiff_impl.h"
#include "passes.h"

static bool is_float(ir_type t) { return t == IR_f32 || t == IR_f64; }

/* ---- adjoint code ---------------------------------------------------------------- */

/* The adjoint local of value s: made on first use at the start of s's own
** block (a loop body, or the kernel's top level, whose adjoints parallel
** loops add to), zeroed there. */
static ir_stmt *adj_var(ad *a, ir_stmt *s) {
  if (ad_info(a, s)->adj) return ad_info(a, s)->adj;
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
  ad_info(a, s)->adj = var;
  return var;
}

/* adj(s) += v, when s is active */
static void accumulate(ad *a, ir_stmt *s, ir_stmt *v) {
  if (!ad_active(a, s)) return;
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
  bool in_l = ad_contains(l, var);
  if (in_l) terms(a, l, var, g, neg);
  else accumulate(a, l, neg ? un(a, IR_neg, g) : g);
  bool neg_r = o->op == IR_sub ? !neg : neg;
  if (!in_l) terms(a, r, var, g, neg_r);
  else accumulate(a, r, neg_r ? un(a, IR_neg, g) : g);
}

/* The adjoint of statement s (in reverse order). */
/* The address of the same element of ndarray access p's gradient array, in
** an `if` that the array was given (the builder is left inside it; the
** caller restores b->block), or NULL for an array without one. */
static ir_stmt *nd_grad_ptr(ad *a, ir_stmt *p) {
  ir_builder *b = &a->b;
  const ir_stmt *base = p->ops[0];
  ir_stmt *gb = base->op == IR_arg && base->aux < 16 ? a->ndgrad[base->aux] : NULL;
  if (!gb) return NULL;
  ir_stmt *given = ir_b_binary(b, IR_cmp_ne, gb, ir_b_const_int(b, IR_u64, 0));
  b->block = ir_b_if(b, given, false)->blocks[0];
  ir_stmt *ops[2] = {gb, p->ops[1]};
  return ir_b_op(b, IR_ext_ptr, p->type, 2, ops);
}

/* The loops around store s must give every iteration its own element. */
static void check_own_element(ad *a, ir_stmt *s) {
  ir_kernel *k = a->k;
  ir_stmt *p = s->ops[0];
  char name[160];
  if (p->op == IR_global_ptr) snprintf(name, sizeof name, "field '%s'", ad_field_name(k, p));
  else snprintf(name, sizeof name, "an ndarray");
  for (const ir_block *blk = s->parent; s->op == IR_global_store && blk && blk->owner; blk = blk->owner->parent) {
    ir_stmt *loop = blk->owner;
    if ((loop->op == IR_range_for || loop->op == IR_struct_for) && !ir_one_element_per_iteration(k, loop, p))
      ir_fail(k, s->loc, "kernel %s: several iterations of the loop at line %d may write one element of %s: one "
              "value is kept, but each would get its gradient; index it by the loop's indices so each iteration "
              "writes its own elements, or add with lt.atomic_add", k->name, loop->loc.line, name);
  }
}

static void adjoint(ad *a, ir_stmt *s) {
  ir_kernel *k = a->k;
  ir_builder *b = &a->b;
  b->loc = s->loc;
  /* ndarray writes: the written value's adjoint is the gradient array's element (when given) */
  if ((s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub) && s->ops[0]->op == IR_ext_ptr) {
    ir_stmt *v = s->ops[1];
    if (!ad_active(a, v)) return;
    check_own_element(a, s);
    ir_block *outer = b->block;
    ir_stmt *gp = nd_grad_ptr(a, s->ops[0]);
    if (gp) {
      ir_stmt *gv = ir_b_global_load(b, gp);
      accumulate(a, v, s->op == IR_atomic_sub ? un(a, IR_neg, gv) : gv);
    }
    b->block = outer;
    return;
  }
  /* field writes: the written value's adjoint is the field's gradient there */
  if (s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub) {
    ir_stmt *v = s->ops[1];
    const ir_snode *g = ad_grad_of(k, s->ops[0]);
    if (!g && ad_active(a, v))
      ir_fail(k, s->loc, "kernel %s writes a value that depends on a field with a gradient into field '%s', which "
              "has none: the gradient through it would be lost; make '%s' with {needs_grad = true}", k->name,
              ad_field_name(k, s->ops[0]), ad_field_name(k, s->ops[0]));
    if (!g || !ad_active(a, v)) return;
    ir_stmt *p = s->ops[0];
    check_own_element(a, s);
    ir_stmt *gp = ir_b_global_ptr(b, g->id, p->nops, p->ops);
    ir_stmt *gv = ir_b_global_load(b, gp);
    accumulate(a, v, s->op == IR_atomic_sub ? un(a, IR_neg, gv) : gv);
    return;
  }
  if (s->op == IR_local_store && is_float(s->ops[1]->type)) {
    ir_stmt *var = s->ops[0];
    ir_stmt *gv = ir_b_local_load(b, adj_var(a, var));
    if (ad_is_reduction(s)) {         /* s = s + a - b in a loop: the terms get +-s's adjoint (s is only added to) */
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
  if (s->op == IR_local_load && ad_in_reduction(s)) return;   /* part of a reduction */
  if ((s->op == IR_add || s->op == IR_sub || s->op == IR_cast) && s->parent != a->k->body && ad_in_reduction(s))
    return;
  if (!ad_active(a, s) || !ad_info(a, s)->adj || s->op == IR_arg) return;
  ir_stmt *g = ir_b_local_load(b, ad_info(a, s)->adj);
  ir_type t = s->type;
  ir_stmt *x = s->nops > 0 ? s->ops[0] : NULL, *y = s->nops > 1 ? s->ops[1] : NULL;
  switch (s->op) {
  case IR_global_load: {           /* x[i] read: into x.grad[i] */
    if (x->op == IR_ext_ptr) {     /* an ndarray: into its gradient array, when given */
      ir_block *outer = b->block;
      ir_stmt *gp = nd_grad_ptr(a, x);
      if (gp) ir_b_atomic(b, IR_atomic_add, gp, g);
      b->block = outer;
      return;
    }
    const ir_snode *gs = ad_grad_of(k, x);
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
    if (ad_active(a, y)) accumulate(a, y, bin(a, IR_mul, g, bin(a, IR_mul, s, un(a, IR_log, x))));
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
  case IR_adstack: case IR_adstack_push: case IR_adstack_pop: case IR_adstack_top:
    return;                        /* the pass's own bookkeeping */
  case IR_arg: return;             /* its adjoint goes out last (args.grad) */
  case IR_local_load:              /* a kernel-level local read: into its adjoint */
    accumulate(a, s->ops[0], g);
    return;
  case IR_cast:                    /* float to float; from an integer nothing is active */
    if (is_float(x->type)) accumulate(a, x, ir_b_cast(b, x->type, g));
    return;
  default:
    ad_unsupported(k, s, ir_op_name(s->op));
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
    else if (v[i]->op == IR_if || v[i]->op == IR_range_for || v[i]->op == IR_struct_for || v[i]->op == IR_while)
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
  if (ad_within(var->parent, sc->at)) return;   /* its own local */
  /* a kernel-level local read by a loop keeps its value there (loops do not change it but by sums) */
  if (!var->parent->owner && ad_in_loop(sc->at)) return;
  /* a sum a loop adds to: its adjoint needs no value (and the loop reads it only to add) */
  if (t->op == IR_local_store ? ad_is_reduction(t) : ad_in_reduction(t)) return;
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
** (ad_info()->saves): the adjoint recomputes the statement from there. */
static void insert_saves(ad *a, ir_block *blk) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) insert_saves(a, s->blocks[b]);
    bool inner = (s->op == IR_range_for || s->op == IR_struct_for || s->op == IR_while) && blk->owner;
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
    ad_info(a, s)->saves = set;
  }
}

/* ---- carried locals: the adjoint stack ------------------------------------------ */

typedef struct {
  ad *a;
  ir_stmt *loop;
  carry *c;
  int cap;
} carry_scan;

static void note_carried(ir_stmt *t, void *ud) {
  carry_scan *sc = ud;
  if (t->op != IR_local_store || ad_is_reduction(t)) return;
  ir_stmt *var = t->ops[0];
  if (ad_within(var->parent, sc->loop) || !var->parent->owner) return;   /* its own; kernel-level: refused */
  carry *c = sc->c;
  for (int i = 0; i < c->n; i++)
    if (c->var[i] == var) return;
  if (c->n == sc->cap) {
    int cap = sc->cap ? 2 * sc->cap : 4;
    ir_stmt **v[3];
    for (int j = 0; j < 3; j++) v[j] = ir_alloc(sc->a->k, sizeof *v[j] * (size_t)cap);
    for (int i = 0; i < c->n; i++) v[0][i] = c->var[i], v[1][i] = c->stack[i], v[2][i] = c->push[i];
    c->var = v[0], c->stack = v[1], c->push = v[2];
    sc->cap = cap;
  }
  c->var[c->n++] = var;
}

static ir_stmt *mk(ir_kernel *k, ir_op op, ir_type t, int n, ir_stmt *a0, ir_stmt *a1, ir_loc loc) {
  ir_stmt *ops[2] = {a0, a1};
  ir_stmt *s = ir_new(k, op, t, n, ops);
  s->loc = loc;
  return s;
}

/* Before inner loop L: an adstack per local it carries; at the start of
** each full iteration (a while loop: after its test) a push of each one's
** value; a while loop also counts its full iterations. */
static void insert_carry(ad *a, ir_stmt *L) {
  ir_kernel *k = a->k;
  carry *c = ir_alloc(k, sizeof *c);
  carry_scan sc = {a, L, c, 0};
  ir_walk(L->blocks[0], note_carried, &sc);
  if (c->n == 0 && L->op != IR_while) return;
  if (c->n && !c->stack) c->stack = c->push = c->var;   /* (never: cap > 0 when n > 0) */
  ir_stmt *at = L->op == IR_while ? (c->exit = ad_while_exit(L))->next : L->blocks[0]->first;
  char msg[400];
  int cap = k->ad_stack > 0 ? k->ad_stack : 1024;
  snprintf(msg, sizeof msg, "\1kernel %s: the adjoint stack of the loop at line %d holds %d values of each local the "
           "loop carries, and the loop ran more iterations; raise lt.init{ad_stack_size = ...}", k->name,
           L->loc.line, cap);
  int str = ir_kernel_add_string(k, msg);
  for (int i = 0; i < c->n; i++) {
    ir_stmt *st = mk(k, IR_adstack, c->var[i]->type, 0, NULL, NULL, L->loc);
    st->imm.ival = cap;
    ir_insert_before(L, st);
    c->stack[i] = st;
    ir_stmt *ld = mk(k, IR_local_load, c->var[i]->type, 1, c->var[i], NULL, L->loc);
    ir_stmt *push = mk(k, IR_adstack_push, IR_void, 2, st, ld, L->loc);
    push->aux = str;
    if (at) {
      ir_insert_before(at, ld);
      ir_insert_before(at, push);
    } else {
      ir_append(L->blocks[0], ld);
      ir_append(L->blocks[0], push);
    }
    c->push[i] = push;
  }
  if (L->op == IR_while) {         /* count += 1 where the pushes are */
    c->count = mk(k, IR_alloca, IR_i32, 0, NULL, NULL, L->loc);
    ir_insert_before(L, c->count);
    ir_stmt *ld = mk(k, IR_local_load, IR_i32, 1, c->count, NULL, L->loc);
    ir_stmt *one = mk(k, IR_const, IR_i32, 0, NULL, NULL, L->loc);
    one->imm.ival = 1;
    ir_stmt *inc = mk(k, IR_add, IR_i32, 2, ld, one, L->loc);
    c->count_store = mk(k, IR_local_store, IR_void, 2, c->count, inc, L->loc);
    ir_stmt *seq[4] = {ld, one, inc, c->count_store};
    for (int i = 0; i < 4; i++) {
      if (at) ir_insert_before(at, seq[i]);
      else ir_append(L->blocks[0], seq[i]);
    }
  }
  ad_info(a, L)->carry = c;
}

/* insert_carry for every inner loop in blk (at any depth) */
static void insert_carries(ad *a, ir_block *blk) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) insert_carries(a, s->blocks[b]);
    if ((s->op == IR_range_for || s->op == IR_while) && blk->owner) insert_carry(a, s);
  }
}

static ir_stmt *copy_of(ad *a, ir_stmt *s) {
  if (!s) return NULL;
  info *i = ad_info(a, s);
  return i->copy_gen == a->gen && i->copy ? i->copy : s;
}

/* Copies of the statements of src appended to dst (blocks included); the
** copies keep the originals' activity. Returns them in order (*n). */
static void clone_block(ad *a, ir_block *src, ir_block *dst) {
  for (ir_stmt *s = src->first; s; s = s->next) {
    info *pre = ad_info(a, s);
    if (pre->copy_gen == a->gen && pre->copy) continue;   /* mapped before: a reversed loop index */
    ir_stmt *ops[IR_MAX_OPS];
    for (int i = 0; i < s->nops; i++) ops[i] = copy_of(a, s->ops[i]);
    ir_stmt *c = ir_new(a->k, s->op, s->type, s->nops, ops);
    c->imm = s->imm;
    c->aux = s->aux;
    c->range = s->range;
    c->loc = s->loc;
    c->loop = copy_of(a, s->loop);
    ir_append(dst, c);
    info *si = ad_info(a, s), *ci = ad_info(a, c);
    si = ad_info(a, s);                /* ad_info(c) may have moved the array */
    ci->active = si->active;
    si->copy = c;
    si->copy_gen = a->gen;
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) {
        c->blocks[b] = ir_block_new(a->k, c);
        clone_block(a, s->blocks[b], c->blocks[b]);
      }
    si = ad_info(a, s);
    if (si->saves) {               /* its save loads came before it: copied already */
      saveset *set = ir_alloc(a->k, sizeof *set);
      set->n = si->saves->n;
      set->var = ir_alloc(a->k, sizeof *set->var * (size_t)(set->n ? set->n : 1));
      set->val = ir_alloc(a->k, sizeof *set->val * (size_t)(set->n ? set->n : 1));
      for (int i = 0; i < set->n; i++) {
        set->var[i] = copy_of(a, si->saves->var[i]);
        set->val[i] = copy_of(a, si->saves->val[i]);
      }
      ad_info(a, c)->saves = set;
    }
    si = ad_info(a, s);
    if (si->carry) {               /* its stacks, pushes and counter came before or inside it: copied already */
      const carry *o = si->carry;
      carry *n = ir_alloc(a->k, sizeof *n);
      *n = *o;
      n->var = ir_alloc(a->k, sizeof *n->var * (size_t)(o->n ? o->n : 1));
      n->stack = ir_alloc(a->k, sizeof *n->stack * (size_t)(o->n ? o->n : 1));
      n->push = ir_alloc(a->k, sizeof *n->push * (size_t)(o->n ? o->n : 1));
      for (int i = 0; i < o->n; i++) {
        n->var[i] = copy_of(a, o->var[i]);
        n->stack[i] = copy_of(a, o->stack[i]);
        n->push[i] = copy_of(a, o->push[i]);
      }
      n->count = copy_of(a, o->count);
      n->count_store = copy_of(a, o->count_store);
      n->exit = copy_of(a, o->exit);
      ad_info(a, c)->carry = n;
    }
  }
}

static void adjoint_list(ad *a, ir_stmt **v, int n);

static void adjoint_if(ad *a, ir_stmt *s) {
  ir_builder outer = a->b;
  const saveset *set = ad_info(a, s)->saves;
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

typedef struct {
  ad *a;
  ir_stmt *loop, *ri;
} index_scan;

static void map_index(ir_stmt *t, void *ud) {
  index_scan *sc = ud;
  if (t->op != IR_loop_index || t->loop != sc->loop) return;
  info *i = ad_info(sc->a, t);
  i->copy = sc->ri;
  i->copy_gen = sc->a->gen;
}

static void adjoint_loop(ad *a, ir_stmt *s) {
  if (s->op == IR_struct_for) ad_unsupported(a->k, s, "a struct-for inside a loop");
  ir_kernel *k = a->k;
  ir_builder outer = a->b;
  const saveset *set = ad_info(a, s)->saves;
  const carry *cr = ad_info(a, s)->carry;
  ir_builder *b = &a->b;
  b->loc = s->loc;
  ir_stmt *begin, *end;
  if (s->op == IR_while) {         /* as many iterations as ran in full */
    begin = ir_b_const_int(b, IR_i32, 0);
    end = ir_b_local_load(b, cr->count);
  } else {
    begin = s->ops[0];
    end = s->ops[1];
  }
  ir_stmt *nl = ir_b_range_for(b, begin, end);
  nl->aux = s->aux;
  nl->imm = s->imm;
  ir_block *dst = nl->blocks[0];
  *b = (ir_builder){k, dst, s->loc};
  a->gen++;
  if (s->op == IR_range_for && cr) {   /* last iteration first: the stacks pop in that order */
    ir_stmt *li = ir_b_loop_index(b, nl);
    ir_stmt *last = ir_b_binary(b, IR_sub, ir_b_binary(b, IR_add, begin, end), ir_b_const_int(b, begin->type, 1));
    index_scan sc = {a, s, ir_b_binary(b, IR_sub, last, li)};
    ir_walk(s->blocks[0], map_index, &sc);
  } else {
    info *si = ad_info(a, s);
    si->copy = nl;                 /* the copies' loop indices read the new loop */
    si->copy_gen = a->gen;
  }
  for (int i = 0; set && i < set->n; i++) ir_b_local_store(b, set->var[i], set->val[i]);
  for (int i = 0; cr && i < cr->n; i++) {   /* the carried locals as this iteration began */
    ir_stmt *ops[1] = {cr->stack[i]};
    ir_b_local_store(b, cr->var[i], ir_b_op(b, IR_adstack_top, cr->var[i]->type, 1, ops));
    ir_b_op(b, IR_adstack_pop, IR_void, 1, ops);
  }
  ir_stmt *from = dst->last;
  clone_block(a, s->blocks[0], dst);
  /* the forward's own bookkeeping and a while loop's test are not part of an iteration's adjoint */
  for (int i = 0; cr && i < cr->n + 2; i++) {
    ir_stmt *o = i < cr->n ? cr->push[i] : i == cr->n ? cr->count_store : cr->exit;
    if (!o) continue;
    info *oi = ad_info(a, o);
    if (oi->copy_gen == a->gen && oi->copy && oi->copy->parent == dst) ir_remove(oi->copy);
  }
  int n = 0;
  for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) n++;
  ir_stmt **v = ir_alloc(k, sizeof *v * (size_t)(n ? n : 1));
  n = 0;
  for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) v[n++] = t;
  *b = (ir_builder){k, dst, s->loc};
  adjoint_list(a, v, n);
  drop_writes(v, n);
  a->b = outer;
}

/* The adjoints of v[0..n), last first, at the builder. */
static void adjoint_list(ad *a, ir_stmt **v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (v[i]->op == IR_if) adjoint_if(a, v[i]);
    else if (v[i]->op == IR_range_for || v[i]->op == IR_struct_for || v[i]->op == IR_while) adjoint_loop(a, v[i]);
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

typedef struct {
  ad *a;
  bool *nd, *written;
  ir_loc *where;
} nd_scan;

static void note_ndarray(ir_stmt *s, void *ud) {
  nd_scan *sc = ud;
  if (s->op == IR_ext_ptr && is_float(s->type) && s->ops[0]->op == IR_arg && s->ops[0]->aux < 16)
    sc->nd[s->ops[0]->aux] = true;
  bool store = s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub;
  if (store && s->ops[0]->op == IR_ext_ptr && s->ops[0]->ops[0]->op == IR_arg && s->ops[0]->ops[0]->aux < 16 &&
      ad_active(sc->a, s->ops[1]) && !sc->written[s->ops[0]->ops[0]->aux]) {
    sc->written[s->ops[0]->ops[0]->aux] = true;
    sc->where[s->ops[0]->ops[0]->aux] = s->loc;
  }
}

/* nd[n]: float ndarray argument n is read or written; written[n]: a value
** with a gradient is written into it */
static void ndarray_args(ad *a, bool *nd, bool *written, ir_loc *where) {
  nd_scan sc = {a, nd, written, where};
  ir_walk(a->k->body, note_ndarray, &sc);
}

bool ir_pass_autodiff(ir_kernel *k) {
  if (!k->grad) return false;
  ad a = {.k = k};
  ir_number(k);
  ad_check_rules(k);
  insert_saves(&a, k->body);
  ad_mark_block(&a, k->body, AD_TOP);
  insert_carries(&a, k->body);     /* after the checks: its statements are the pass's own */
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
  /* float arguments: their gradients go to a 1-D f64 ndarray passed last,
  ** args.grad (its data address and its extent, which is not read: slot i
  ** for argument i, so at least as many slots as arguments) */
  ir_stmt *out = NULL;
  bool float_args = false;
  for (int i = 0; i < primal_nargs; i++) float_args = float_args || is_float(k->arg_types[i]);
  if (float_args) {
    if (k->nargs >= 15)
      ir_fail(k, (ir_loc){0}, "kernel %s: its adjoint needs two more argument slots than 16 (an array for the "
              "gradients of its arguments)", k->name);
    k->arg_types[k->nargs] = IR_u64;
    k->arg_names[k->nargs] = ir_strdup(k, "args.grad");
    out = ir_new(k, IR_arg, IR_u64, 0, NULL);
    out->aux = k->nargs++;
    ir_insert_before(k->body->first, out);
    k->arg_types[k->nargs] = IR_i32;
    k->arg_names[k->nargs] = ir_strdup(k, "args.grad.n");
    k->nargs++;
  }
  /* float ndarray arguments: their gradient arrays follow, NAME.grad (the
  ** address, 0 when the launch gives none; one slot: it has the array's
  ** shape, and its indices are the array's) */
  bool nd[16] = {false}, written[16] = {false};
  ir_loc where[16] = {{0}};
  ndarray_args(&a, nd, written, where);
  for (int i = 0; i < primal_nargs; i++) {
    if (!nd[i]) continue;
    const char *name = k->arg_names[i] ? k->arg_names[i] : "ndarray";
    if (k->nargs + 1 > 16)
      ir_fail(k, (ir_loc){0}, "kernel %s: its adjoint needs one more argument slot than 16 (the gradient array of "
              "ndarray '%s'); pass fewer arguments, e.g. split the kernel", k->name, name);
    char buf[160];
    snprintf(buf, sizeof buf, "%s.grad", name);
    k->arg_types[k->nargs] = IR_u64;
    k->arg_names[k->nargs] = ir_strdup(k, buf);
    a.ndgrad[i] = ir_new(k, IR_arg, IR_u64, 0, NULL);
    a.ndgrad[i]->aux = k->nargs++;
    ir_insert_before(k->body->first, a.ndgrad[i]);
    if (written[i]) {              /* its gradient array is required: the gradients through it need it */
      ir_builder b = {k, k->body, {0}};
      ir_stmt *given = ir_b_binary(&b, IR_cmp_ne, a.ndgrad[i], ir_b_const_int(&b, IR_u64, 0));
      char msg[512];
      snprintf(msg, sizeof msg, "\1ndarray '%s' is written with values that have gradients, but the launch gives no "
               "gradient array for it ('%s.grad'): the gradient through it would be lost; make it with "
               "lt.ndarray(dtype, shape, {needs_grad = true})", name, name);
      ir_stmt *ops[1] = {given};
      ir_stmt *chk = ir_b_op(&b, IR_assert, IR_void, 1, ops);
      chk->aux = ir_kernel_add_string(k, msg);
      given->ops[1]->loc = given->loc = chk->loc = where[i];   /* the line of the write */
      /* first thing in the kernel, after the arguments it reads */
      ir_remove(given->ops[1]);
      ir_remove(given);
      ir_remove(chk);
      ir_insert_after(a.ndgrad[i], given->ops[1]);
      ir_insert_after(given->ops[1], given);
      ir_insert_after(given, chk);
    }
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
      if (!s || s->op != IR_arg || s->aux >= primal_nargs || !is_float(s->type) || !ad_info(&a, s)->adj) continue;
      b->loc = s->loc;
      ir_stmt *ops[2] = {out, ir_b_const_int(b, IR_i64, s->aux)};
      ir_stmt *slot = ir_b_op(b, IR_ext_ptr, IR_f64, 2, ops);
      ir_stmt *g = ir_b_local_load(b, ad_info(&a, s)->adj);
      if (g->type != IR_f64) g = ir_b_cast(b, IR_f64, g);
      ir_b_global_store(b, slot, ir_b_binary(b, IR_add, ir_b_global_load(b, slot), g));
    }
  }
  k->ret_type = IR_void;
  return true;
}
