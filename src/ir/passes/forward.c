/*
** forward.c -- forward mode: a kernel marked `fwd` (k:fwd(...),
** docs/autodiff.md) computes, beside every float value, its tangent (a
** Jacobian-vector product). Runs where the autodiff pass does: after
** typecheck, mem2reg and the first simplification, before offload.
**
** The tangent kernel is the primal kernel with, right after each statement,
** the statements that compute its tangent, so it runs alongside the primal
** and needs none of reverse mode's rules about field accesses (it recomputes
** nothing: every field read and write keeps its place, and the tangent of a
** field element goes through the same order of reads and writes):
**
**   - a read x[i] of a field with a dual (needs_dual) has the tangent
**     x.dual[i]; a write y[i] = v also writes y.dual[i] = tangent(v), and
**     lt.atomic_add/sub(y[i], v) also adds tangent(v) to y.dual[i];
**   - a float local gets a tangent local beside it, loaded and stored where
**     it is, so every control-flow shape (if, local loops, while, break,
**     continue, struct-fors) carries tangents without a rule of its own;
**   - a float argument named in the kernel's fwd(...) list has a tangent read
**     from slot n of an f64 array whose address is a last argument,
**     args.dual; a float result's tangent goes to slot 16 of it at every
**     `return`.
**
** Only values that depend on a field with a dual or an argument with a
** tangent ("active" values) get tangents; a local is active when some store
** into it is (found by iterating to a fixed point: loops carry locals
** backwards). An active value written where its tangent would be lost (a
** field without a dual, an ndarray), atomic min/max on a field with a dual,
** the old value of an atomic add on one, and every op without a tangent rule
** are refused with an error naming them, never given a silent zero.
*/
#include <stdio.h>
#include <string.h>

#include "../snode.h"
#include "passes.h"

enum { RESULT_SLOT = 16 };         /* args.dual: slots 0..15 the arguments', 16 the result's */

typedef struct {
  ir_kernel *k;
  int n;                           /* statement ids are 0..n-1 (ir_number) */
  bool *active;                    /* by id: may carry a tangent */
  bool *used;                      /* by id: some statement uses the value */
  ir_stmt **tan;                   /* by id: the tangent (alloca: the tangent local), or NULL (zero) */
  ir_stmt *arg_tan[16];            /* tangents of the arguments with one */
  ir_stmt *dual;                   /* the args.dual argument, or NULL */
  ir_builder b;                    /* where tangent code goes */
} fw;

static bool is_float(ir_type t) { return t == IR_f32 || t == IR_f64; }

static bool known(const fw *f, const ir_stmt *s) { return s && s->id >= 0 && s->id < f->n; }

static const char *field_of(const ir_kernel *k, const ir_stmt *ptr) {
  const ir_snode *s = ptr && ptr->op == IR_global_ptr ? ir_program_snode(k->prog, ptr->aux) : NULL;
  return s && s->name ? s->name : "?";
}

/* The dual place of the field ptr points into, or NULL. */
static const ir_snode *dual_of(const ir_kernel *k, const ir_stmt *ptr) {
  if (!ptr || ptr->op != IR_global_ptr) return NULL;
  const ir_snode *s = ir_program_snode(k->prog, ptr->aux);
  return s && s->dual >= 0 ? ir_program_snode(k->prog, s->dual) : NULL;
}

/* ---- activity ------------------------------------------------------------------- */

/* Whether s may carry a tangent, from its operands' activity (allocas: from
** the stores into them, which mark sets). */
static bool active_now(const fw *f, const ir_stmt *s) {
  const ir_kernel *k = f->k;
  if (!is_float(s->type)) return false;
  switch (s->op) {
  case IR_global_load: case IR_atomic_add: case IR_atomic_sub: case IR_atomic_min: case IR_atomic_max:
  case IR_atomic_mul: case IR_atomic_and: case IR_atomic_or: case IR_atomic_xor:
    return dual_of(k, s->ops[0]) != NULL;
  case IR_arg: return s->aux >= 0 && s->aux < 16 && (k->fwd_args & (1u << s->aux));
  case IR_alloca: return known(f, s) && f->active[s->id];
  case IR_local_load: return known(f, s->ops[0]) && f->active[s->ops[0]->id];
  case IR_random:                  /* a draw does not depend on the inputs */
  case IR_const: case IR_global_ptr: case IR_global_tmp: case IR_ext_ptr: case IR_loop_index:
    return false;
  default: break;
  }
  if (!(ir_op_flags(s->op) & IR_PURE)) return false;
  for (int i = 0; i < s->nops; i++)
    if (known(f, s->ops[i]) && f->active[s->ops[i]->id]) return true;
  return false;
}

typedef struct {
  fw *f;
  bool changed;
} marking;

static void mark(ir_stmt *s, void *ud) {
  marking *m = ud;
  fw *f = m->f;
  if (!known(f, s)) return;
  for (int i = 0; i < s->nops; i++)
    if (known(f, s->ops[i])) f->used[s->ops[i]->id] = true;
  if (s->op == IR_alloca) return;  /* set by its stores */
  bool a = active_now(f, s);
  if (a != f->active[s->id]) m->changed = true;
  f->active[s->id] = a;
  /* a local holding an active value anywhere is active everywhere */
  if (s->op == IR_local_store && known(f, s->ops[0]) && known(f, s->ops[1]) && is_float(s->ops[0]->type) &&
      f->active[s->ops[1]->id] && !f->active[s->ops[0]->id]) {
    f->active[s->ops[0]->id] = true;
    m->changed = true;
  }
}

/* Activity is monotone (only allocas feed back), so this ends; loops carry
** a local's activity to loads before its stores, hence the rounds. */
static void mark_all(fw *f) {
  marking m = {f, true};
  while (m.changed) {
    m.changed = false;
    ir_walk(f->k->body, mark, &m);
  }
}

/* ---- tangent arithmetic: NULL stands for zero ------------------------------------ */

static ir_stmt *tan_of(const fw *f, const ir_stmt *s) { return known(f, s) ? f->tan[s->id] : NULL; }

static ir_stmt *cf(fw *f, ir_type t, double v) { return ir_b_const_float(&f->b, t, v); }
static ir_stmt *bin(fw *f, ir_op op, ir_stmt *x, ir_stmt *y) { return ir_b_binary(&f->b, op, x, y); }
static ir_stmt *un(fw *f, ir_op op, ir_stmt *x) { return ir_b_unary(&f->b, op, x); }
static ir_stmt *or_zero(fw *f, ir_stmt *t, ir_type ty) { return t ? t : cf(f, ty, 0); }

static ir_stmt *t_add(fw *f, ir_stmt *a, ir_stmt *b) { return !a ? b : !b ? a : bin(f, IR_add, a, b); }
static ir_stmt *t_sub(fw *f, ir_stmt *a, ir_stmt *b) {
  return !b ? a : !a ? un(f, IR_neg, b) : bin(f, IR_sub, a, b);
}
static ir_stmt *t_mul(fw *f, ir_stmt *t, ir_stmt *factor) { return t ? bin(f, IR_mul, t, factor) : NULL; }
static ir_stmt *t_div(fw *f, ir_stmt *t, ir_stmt *by) { return t ? bin(f, IR_div, t, by) : NULL; }

/* ---- errors ------------------------------------------------------------------------ */

static void refuse(fw *f, const ir_stmt *s, const char *what) {
  ir_fail(f->k, s->loc, "kernel %s: %s has no tangent rule, so k:fwd cannot differentiate it (docs/autodiff.md, "
          "\"Forward mode\", lists the rules)", f->k->name, what);
}

static void lost(fw *f, const ir_stmt *s, const char *where) {
  ir_fail(f->k, s->loc, "kernel %s writes a value that carries a tangent (it depends on a field with a dual or an "
          "argument given a tangent) into %s: its tangent would be lost in k:fwd", f->k->name, where);
}

/* ---- reductions in parallel loops ------------------------------------------------------ */

static const ir_stmt *uncast(const ir_stmt *s) {
  while (s->op == IR_cast && is_float(s->type) && is_float(s->ops[0]->type)) s = s->ops[0];
  return s;
}

/* Whether the sum o reads local var (through +, -, float conversions). */
static bool reads(const ir_stmt *o, const ir_stmt *var) {
  o = uncast(o);
  if (o->op == IR_local_load) return o->ops[0] == var;
  return (o->op == IR_add || o->op == IR_sub) && (reads(o->ops[0], var) || reads(o->ops[1], var));
}

/* Whether o is var's old value plus and minus other terms, var once on a +
** side (`s = s + a - b`): its tangent is such a sum too, which the reduce
** pass makes atomic like the primal's. */
static bool sum_of(const ir_stmt *o, const ir_stmt *var) {
  o = uncast(o);
  if (o->op == IR_local_load) return o->ops[0] == var;
  bool l = o->nops > 0 && reads(o->ops[0], var), r = o->nops > 1 && reads(o->ops[1], var);
  if (o->op == IR_add) return l != r && sum_of(l ? o->ops[0] : o->ops[1], var);
  if (o->op == IR_sub) return l && !r && sum_of(o->ops[0], var);
  return false;
}

/* The top-level parallel loop (range_for or struct_for of more than one
** iteration) s is in, or NULL. */
static const ir_stmt *parallel_loop(const ir_kernel *k, const ir_stmt *s) {
  while (s->parent && s->parent != k->body) s = s->parent->owner;
  if (!s->parent || (s->op != IR_range_for && s->op != IR_struct_for)) return NULL;
  if (s->op == IR_range_for && s->ops[0]->op == IR_const && s->ops[1]->op == IR_const &&
      s->ops[1]->imm.ival - s->ops[0]->imm.ival <= 1)
    return NULL;                   /* one iteration: serial */
  return s;
}

/* A store into a kernel-level local inside a parallel loop is a reduction
** (the reduce pass): its tangent is one only for a sum. lt.max/lt.min
** reductions pick an iteration's value, and the tangent would have to
** follow that pick atomically with it. */
static void check_reduction(fw *f, const ir_stmt *s, const ir_stmt *tv) {
  const ir_stmt *var = s->ops[0];
  if (!tv) return;                 /* a zero tangent: a store of one constant, which stays plain */
  if (var->parent != f->k->body || !parallel_loop(f->k, s) || sum_of(s->ops[1], var)) return;
  const char *name = ir_local_name(f->k, var);
  ir_fail(f->k, s->loc, "kernel %s: the local '%s' is updated in a parallel loop other than by a sum (s = s + v): "
          "forward mode (k:fwd) gives tangents to sums only, not to lt.max/lt.min reductions, whose tangent must "
          "follow the iteration that wins; find the extreme in a serial loop (nested in a loop of one iteration)",
          f->k->name, name ? name : "?");
}

/* ---- the tangent of one statement --------------------------------------------------- */

/* The tangent of a pure float op s from its operands' tangents, or NULL for
** zero; refuses an op without a rule when an operand carries a tangent. */
static ir_stmt *pure_tangent(fw *f, ir_stmt *s) {
  ir_type t = s->type;
  ir_stmt *x = s->nops > 0 ? s->ops[0] : NULL, *y = s->nops > 1 ? s->ops[1] : NULL;
  ir_stmt *tx = tan_of(f, x), *ty = tan_of(f, y);
  ir_builder *b = &f->b;
  switch (s->op) {
  case IR_add: return t_add(f, tx, ty);
  case IR_sub: return t_sub(f, tx, ty);
  case IR_neg: return tx ? un(f, IR_neg, tx) : NULL;
  case IR_mul: {                   /* (each builder call on its own line: C leaves the order of arguments open) */
    ir_stmt *dx = t_mul(f, tx, y);
    return t_add(f, dx, ty ? bin(f, IR_mul, x, ty) : NULL);
  }
  case IR_div:                     /* (dx - s dy) / y */
    if (!tx && !ty) return NULL;
    return bin(f, IR_div, t_sub(f, tx, ty ? bin(f, IR_mul, s, ty) : NULL), y);
  case IR_abs: {                   /* sign(x) dx, 0 at 0 (as reverse mode) */
    if (!tx) return NULL;
    ir_stmt *z = cf(f, t, 0);
    ir_stmt *pos = ir_b_select(b, bin(f, IR_cmp_gt, x, z), tx, z);
    ir_stmt *neg = bin(f, IR_cmp_lt, x, z);
    return ir_b_select(b, neg, un(f, IR_neg, tx), pos);
  }
  case IR_sqrt: return tx ? bin(f, IR_div, bin(f, IR_mul, tx, cf(f, t, 0.5)), s) : NULL;
  case IR_sin: return t_mul(f, tx, un(f, IR_cos, x));
  case IR_cos: return tx ? un(f, IR_neg, bin(f, IR_mul, tx, un(f, IR_sin, x))) : NULL;
  case IR_tan: case IR_tanh: {     /* (1 + s^2) dx, (1 - s^2) dx */
    if (!tx) return NULL;
    ir_stmt *one = cf(f, t, 1), *sq = bin(f, IR_mul, s, s);
    return bin(f, IR_mul, tx, bin(f, s->op == IR_tan ? IR_add : IR_sub, one, sq));
  }
  case IR_asin: case IR_acos: case IR_atan: {   /* +-dx / sqrt(1 - x^2), dx / (1 + x^2) */
    if (!tx) return NULL;
    ir_stmt *one = cf(f, t, 1), *sq = bin(f, IR_mul, x, x);
    if (s->op == IR_atan) return bin(f, IR_div, tx, bin(f, IR_add, one, sq));
    ir_stmt *d = t_div(f, tx, un(f, IR_sqrt, bin(f, IR_sub, one, sq)));
    return s->op == IR_asin ? d : un(f, IR_neg, d);
  }
  case IR_exp: return t_mul(f, tx, s);
  case IR_log: return t_div(f, tx, x);
  case IR_floor: case IR_ceil: case IR_round: case IR_trunc: case IR_floordiv:
    return NULL;                   /* piecewise constant */
  case IR_mod:                     /* x - floor(x / y) y */
    return t_sub(f, tx, ty ? bin(f, IR_mul, un(f, IR_floor, bin(f, IR_div, x, y)), ty) : NULL);
  case IR_pow: {                   /* y x^(y-1) dx + s log(x) dy: the second only when y carries one */
    ir_stmt *dx = tx ? bin(f, IR_mul, tx, bin(f, IR_mul, y, bin(f, IR_pow, x, bin(f, IR_sub, y, cf(f, t, 1)))))
                     : NULL;
    return t_add(f, dx, ty ? bin(f, IR_mul, ty, bin(f, IR_mul, s, un(f, IR_log, x))) : NULL);
  }
  case IR_min: case IR_max: {      /* the chosen operand's; on a tie the first's (as reverse mode) */
    if (!tx && !ty) return NULL;
    ir_stmt *pick = bin(f, s->op == IR_min ? IR_cmp_le : IR_cmp_ge, x, y);
    ir_stmt *a = or_zero(f, tx, t), *c = or_zero(f, ty, t);
    return ir_b_select(b, pick, a, c);
  }
  case IR_atan2: {                 /* atan2(x, y): (y dx - x dy) / (x^2 + y^2) */
    if (!tx && !ty) return NULL;
    ir_stmt *xx = bin(f, IR_mul, x, x), *yy = bin(f, IR_mul, y, y);
    ir_stmt *r = bin(f, IR_add, xx, yy);
    ir_stmt *dx = t_mul(f, tx, y);
    return bin(f, IR_div, t_sub(f, dx, ty ? bin(f, IR_mul, x, ty) : NULL), r);
  }
  case IR_select: {
    ir_stmt *ta = tan_of(f, s->ops[1]), *tb = tan_of(f, s->ops[2]);
    if (!ta && !tb) return NULL;
    ir_stmt *a = or_zero(f, ta, t), *c = or_zero(f, tb, t);
    return ir_b_select(b, x, a, c);
  }
  case IR_cast:                    /* float to float: the tangent converted; from an integer: zero */
    return tx && is_float(x->type) ? ir_b_cast(b, t, tx) : NULL;
  default:
    break;
  }
  for (int i = 0; i < s->nops; i++)
    if (tan_of(f, s->ops[i])) refuse(f, s, ir_op_name(s->op));
  return NULL;
}

/* y[i] = v or an atomic on y[i]: the same on y.dual[i] */
static void field_write(fw *f, ir_stmt *s) {
  ir_kernel *k = f->k;
  ir_stmt *p = s->ops[0], *v = s->ops[1];
  ir_stmt *tv = tan_of(f, v);
  if (p->op == IR_ext_ptr) {
    if (tv) lost(f, s, "an ndarray (ndarrays have no duals)");
    return;
  }
  const ir_snode *d = dual_of(k, p);
  if (!d) {
    if (tv) {
      char where[160];
      snprintf(where, sizeof where, "field '%s', which has no dual; make it with {needs_dual = true}", field_of(k, p));
      lost(f, s, where);
    }
    return;
  }
  if (s->op == IR_atomic_min || s->op == IR_atomic_max)
    ir_fail(k, s->loc, "kernel %s: %s on field '%s', which has a dual, has no forward mode (k:fwd): the tangent "
            "follows whichever value wins, which the atomic does not tell; use a plain comparison and write",
            k->name, s->op == IR_atomic_min ? "lt.atomic_min" : "lt.atomic_max", field_of(k, p));
  if (ir_op_is_atomic(s->op) && s->op != IR_atomic_add && s->op != IR_atomic_sub)
    ir_fail(k, s->loc, "kernel %s: lt.%s on field '%s', which has a dual, has no forward mode (k:fwd) yet; "
            "read, compute and write the field in a kernel of its own", k->name, ir_op_name(s->op), field_of(k, p));
  if ((s->op == IR_atomic_add || s->op == IR_atomic_sub) && known(f, s) && f->used[s->id] && is_float(s->type))
    ir_fail(k, s->loc, "kernel %s uses the old value %s returns from field '%s', which has a dual: its tangent "
            "would depend on the order of the parallel additions (k:fwd); read the field in another kernel",
            k->name, s->op == IR_atomic_add ? "lt.atomic_add" : "lt.atomic_sub", field_of(k, p));
  ir_builder *b = &f->b;
  ir_stmt *dp = ir_b_global_ptr(b, d->id, p->nops, p->ops);
  if (s->op == IR_global_store) {
    ir_b_global_store(b, dp, or_zero(f, tv, d->dtype));
  } else if (tv) {                 /* adding zero changes nothing */
    ir_b_atomic(b, s->op, dp, tv);
  }
}

/* The tangent code of s, appended after it; f->tan[s->id] is set. */
static void tangent(fw *f, ir_stmt *s) {
  ir_kernel *k = f->k;
  ir_builder *b = &f->b;
  ir_stmt *t = NULL;
  switch (s->op) {
  case IR_arg:
    if (is_float(s->type) && s->aux >= 0 && s->aux < 16) t = f->arg_tan[s->aux];
    break;
  case IR_global_load: {
    const ir_snode *d = is_float(s->type) ? dual_of(k, s->ops[0]) : NULL;
    if (d) t = ir_b_global_load(b, ir_b_global_ptr(b, d->id, s->ops[0]->nops, s->ops[0]->ops));
    break;
  }
  case IR_global_store: case IR_atomic_add: case IR_atomic_sub: case IR_atomic_min: case IR_atomic_max:
  case IR_atomic_mul: case IR_atomic_and: case IR_atomic_or: case IR_atomic_xor:
    if (s->ops[0]->op == IR_alloca) {   /* lt.atomic_*(s, v) on a kernel local */
      if (tan_of(f, s->ops[0]) || tan_of(f, s->ops[1])) {
        char what[80];
        snprintf(what, sizeof what, "lt.%s on a kernel local (write s = s + v for a sum)", ir_op_name(s->op));
        refuse(f, s, what);
      }
      break;
    }
    field_write(f, s);
    break;
  case IR_alloca:                  /* the tangent local (zero-initialised like every local) */
    if (known(f, s) && f->active[s->id]) {
      t = ir_b_alloca(b, s->type);
      const char *name = ir_local_name(k, s);
      char buf[128];
      snprintf(buf, sizeof buf, "%s.dual", name ? name : "local");
      ir_name_local(k, t, buf);
    }
    break;
  case IR_local_load:
    if (tan_of(f, s->ops[0])) t = ir_b_local_load(b, tan_of(f, s->ops[0]));
    break;
  case IR_local_store: {
    ir_stmt *var = tan_of(f, s->ops[0]), *tv = tan_of(f, s->ops[1]);
    /* s = s + c with c constant stores the tangent local's own value: no
    ** store, which also keeps such a reduction a reduction for the reduce pass */
    if (var && !(tv && tv->op == IR_local_load && tv->ops[0] == var)) {
      check_reduction(f, s, tv);
      ir_b_local_store(b, var, or_zero(f, tv, var->type));
    }
    break;
  }
  case IR_random: break;           /* a draw does not depend on the inputs: tangent zero */
  case IR_bitcast:                 /* to an integer: bits, no tangent */
    if (is_float(s->type) && tan_of(f, s->ops[0])) refuse(f, s, "bitcast");
    break;
  case IR_print: case IR_print_more: case IR_assert: break;   /* they show or check primal values */
  case IR_return: break;           /* its value's tangent went out before it (result_tangent) */
  case IR_snode_append:
    if (tan_of(f, s->ops[s->nops - 1])) lost(f, s, "a dynamic list with lt.append (its places have no duals there)");
    break;
  default: {
    unsigned fl = ir_op_flags(s->op);
    if ((fl & IR_PURE) && is_float(s->type)) {
      t = pure_tangent(f, s);
    } else if (fl & IR_PURE) {     /* comparisons, conversions to integers: no tangent */
    } else {
      for (int i = 0; i < s->nops; i++)
        if (tan_of(f, s->ops[i])) refuse(f, s, ir_op_name(s->op));
    }
  }
  }
  if (known(f, s)) f->tan[s->id] = t;
}

/* `return v`: v's tangent to the result's slot first */
static void result_tangent(fw *f, ir_stmt *s) {
  if (!f->dual || !is_float(f->k->ret_type) || s->nops < 1 || !s->ops[0]) return;
  ir_builder *b = &f->b;
  ir_stmt *tv = or_zero(f, tan_of(f, s->ops[0]), s->ops[0]->type);
  if (tv->type != IR_f64) tv = ir_b_cast(b, IR_f64, tv);
  ir_stmt *ops[2] = {f->dual, ir_b_const_int(b, IR_i64, RESULT_SLOT)};
  ir_b_global_store(b, ir_b_op(b, IR_ext_ptr, IR_f64, 2, ops), tv);
}

/* Rebuilds blk with each statement followed by its tangent code (and the
** statements of nested blocks likewise, in order: a tangent is made after
** the tangents of its operands). */
static void forward_block(fw *f, ir_block *blk) {
  int n = 0;
  for (ir_stmt *s = blk->first; s; s = s->next) n++;
  ir_stmt **v = ir_alloc(f->k, sizeof *v * (size_t)(n ? n : 1));   /* arena: ir_fail may leave here */
  n = 0;
  for (ir_stmt *s = blk->first; s; s = s->next) v[n++] = s;
  blk->first = blk->last = NULL;
  for (int i = 0; i < n; i++) {
    ir_stmt *s = v[i];
    f->b = (ir_builder){f->k, blk, s->loc};
    if (s->op == IR_return) result_tangent(f, s);
    ir_append(blk, s);
    for (int j = 0; j < 2; j++)
      if (s->blocks[j]) forward_block(f, s->blocks[j]);
    f->b = (ir_builder){f->k, blk, s->loc};
    tangent(f, s);
  }
}

bool ir_pass_forward(ir_kernel *k) {
  if (!k->fwd) return false;
  if (k->offloaded)
    ir_fail(k, (ir_loc){0}, "kernel %s: forward mode takes a kernel before offload, not an offloaded one", k->name);
  fw f = {.k = k};
  ir_number(k);
  f.n = k->next_id;
  f.active = ir_alloc(k, ((size_t)f.n + 1) * sizeof *f.active);
  f.used = ir_alloc(k, ((size_t)f.n + 1) * sizeof *f.used);
  f.tan = ir_alloc(k, ((size_t)f.n + 1) * sizeof *f.tan);
  int primal_nargs = k->nargs;
  for (int i = 0; i < 16; i++)
    if ((k->fwd_args & (1u << i)) && (i >= primal_nargs || !is_float(k->arg_types[i])))
      ir_fail(k, (ir_loc){0}, "kernel %s: argument %d is given a tangent but is not a float", k->name, i);
  /* the array of the arguments' and the result's tangents: read first, at
  ** the kernel's top, so every use sees it */
  ir_block *pre = ir_block_new(k, NULL);
  if (k->fwd_args || is_float(k->ret_type)) {
    if (k->nargs >= 16)
      ir_fail(k, (ir_loc){0}, "kernel %s: its tangent version needs one more argument than 16 (the tangents of its "
              "arguments and result)", k->name);
    k->arg_types[k->nargs] = IR_u64;
    k->arg_names[k->nargs] = ir_strdup(k, "args.dual");
    f.b = (ir_builder){k, pre, {0}};
    k->nargs++;
    f.dual = ir_b_arg(&f.b, k->nargs - 1);
    for (int i = 0; i < primal_nargs; i++) {
      if (!(k->fwd_args & (1u << i))) continue;
      ir_stmt *ops[2] = {f.dual, ir_b_const_int(&f.b, IR_i64, i)};
      ir_stmt *t = ir_b_global_load(&f.b, ir_b_op(&f.b, IR_ext_ptr, IR_f64, 2, ops));
      f.arg_tan[i] = k->arg_types[i] == IR_f64 ? t : ir_b_cast(&f.b, k->arg_types[i], t);
    }
  }
  mark_all(&f);
  forward_block(&f, k->body);
  while (pre->last) {              /* in front of everything, in order */
    ir_stmt *s = pre->last;
    ir_remove(s);
    if (k->body->first) ir_insert_before(k->body->first, s);
    else ir_append(k->body, s);
  }
  return true;
}
