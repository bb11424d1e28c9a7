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
** Control flow inside a loop body (autodiff_flow.c): an `if`'s adjoint is an
** `if` on the same condition whose branch restores the locals the `if` uses,
** recomputes the branch and walks it back; an inner or while loop's adjoint
** is a loop whose body does the same per iteration, last iteration first,
** the locals the loop carries coming back from an adjoint stack.
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
  return (s->op == IR_global_store || ir_op_is_atomic(s->op)) && s->ops[0] && s->ops[0]->op == IR_global_ptr;
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

void ad_drop_writes(ir_stmt **v, int n) {
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
    ad_drop_writes(&s, 1);
  }
}

/* The adjoints of v[0..n), last first, at the builder. */
void ad_adjoint_list(ad *a, ir_stmt **v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (v[i]->op == IR_if) ad_adjoint_if(a, v[i]);
    else if (v[i]->op == IR_range_for || v[i]->op == IR_struct_for || v[i]->op == IR_while) ad_adjoint_loop(a, v[i]);
    else adjoint(a, v[i]);
  }
}

/* A loop body: its primal statements stay, its adjoint follows them in reverse. */
static void adjoint_body(ad *a, ir_block *body) {
  int n;
  ir_stmt **v = list_of(a, body, &n);
  a->b = (ir_builder){a->k, body, {0}};
  ad_adjoint_list(a, v, n);
  ad_drop_writes(v, n);
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
  ad_insert_saves(&a, k->body);
  ad_mark_block(&a, k->body, AD_TOP);
  ad_insert_carries(&a, k->body);     /* after the checks: its statements are the pass's own */
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
    if (s->op == IR_if) ad_adjoint_if(&a, s);
    else adjoint(&a, s);
  }
  for (int i = 0; i < n; i++)
    if (v[i]) ad_drop_writes(&v[i], 1);
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
