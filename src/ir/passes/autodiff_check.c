/*
** autodiff_check.c -- the reverse-mode pass's checks (autodiff.c makes the
** adjoint): which statements it can differentiate, in which context (an
** error naming what it cannot, never a silently constant value); the
** global-data-access rule, per element where affine.c proves two accesses
** apart; and which values are active (depend on a field with a gradient or
** a float argument).
*/
#include <stdio.h>
#include <string.h>

#include "../affine.h"
#include "../snode.h"
#include "autodiff_impl.h"
#include "passes.h"

info *ad_info(ad *a, const ir_stmt *s) {
  if (s->id >= a->cap) {
    int cap = 2 * a->cap > s->id + 64 ? 2 * a->cap : s->id + 64;
    info *v = ir_alloc(a->k, sizeof *v * (size_t)cap);
    if (a->cap) memcpy(v, a->inf, sizeof *v * (size_t)a->cap);
    a->inf = v;
    a->cap = cap;
  }
  return &a->inf[s->id < 0 ? 0 : s->id];
}

bool ad_active(ad *a, const ir_stmt *s) { return s && s->id >= 0 && ad_info(a, s)->active; }

/* Whether block blk is inside statement s (or is one of its blocks). */
bool ad_within(const ir_block *blk, const ir_stmt *s) {
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
bool ad_in_loop(const ir_stmt *s) {
  for (const ir_block *b = s->parent; b && b->owner; b = b->owner->parent) {
    ir_op o = b->owner->op;
    if (o == IR_range_for || o == IR_struct_for || o == IR_while) return true;
  }
  return false;
}

const char *ad_field_name(const ir_kernel *k, const ir_stmt *ptr) {
  const ir_snode *s = ptr && ptr->op == IR_global_ptr ? ir_program_snode(k->prog, ptr->aux) : NULL;
  return s && s->name ? s->name : "?";
}

/* The gradient place of the field ptr points into, or NULL. */
const ir_snode *ad_grad_of(const ir_kernel *k, const ir_stmt *ptr) {
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

/* Which array a field or ndarray access reaches: a place SNode id, or
** -1 - n for the ndarray argument n (-1 - 4096: an address not an argument). */
static int place_key(const ir_stmt *ptr) {
  if (ptr->op == IR_global_ptr) return ptr->aux;
  const ir_stmt *b = ptr->ops[0];
  return b && b->op == IR_arg ? -1 - b->aux : -1 - 4096;
}

/* The first earlier access of s's place of one of the kinds in ops (a
** zero-terminated list) that may reach an element s reaches, or NULL. */
static const ir_stmt *overlap(const rules *r, const ir_stmt *s, const ir_op *ops) {
  const ir_stmt *ptr = s->ops[0];
  for (int i = 0; i < r->n; i++) {
    const ir_stmt *e = r->acc[i];
    bool kind = false;
    for (const ir_op *o = ops; *o; o++) kind = kind || e->op == *o;
    if (kind && place_key(e->ops[0]) == place_key(ptr) && !ir_accesses_disjoint(r->k, e->ops[0], ptr)) return e;
  }
  return NULL;
}

/* "field 'x'" or "ndarray 'a'" for messages */
static const char *what_name(const ir_kernel *k, const ir_stmt *ptr, char *buf, size_t n) {
  if (ptr->op == IR_global_ptr) {
    snprintf(buf, n, "field '%s'", ad_field_name(k, ptr));
  } else {
    const ir_stmt *b = ptr->ops[0];
    const char *an = b && b->op == IR_arg && b->aux < k->nargs ? k->arg_names[b->aux] : NULL;
    snprintf(buf, n, "ndarray '%s'", an ? an : "?");
  }
  return buf;
}

static int line_of(const ir_stmt *s) { return s->loc.line; }

static void check_access(ir_stmt *s, void *ud) {
  rules *r = ud;
  ir_kernel *k = r->k;
  unsigned f = ir_op_flags(s->op);
  if (!(f & (IR_LOAD | IR_STORE)) || !s->ops[0] || (s->ops[0]->op != IR_global_ptr && s->ops[0]->op != IR_ext_ptr))
    return;
  if (s->ops[0]->op == IR_ext_ptr && !is_float(s->ops[0]->type)) return;   /* integer arrays: no gradients */
  ir_stmt *p = s->ops[0];
  char name[160];
  what_name(k, p, name, sizeof name);
  static const ir_op acc_ops[] = {IR_atomic_add, IR_atomic_sub, 0}, read_ops[] = {IR_global_load, 0},
                     write_ops[] = {IR_global_store, IR_atomic_add, IR_atomic_sub, 0},
                     store_ops[] = {IR_global_store, 0};
  const ir_stmt *e;
  if (s->op == IR_global_load) {
    if ((e = overlap(r, s, acc_ops)))
      ir_fail(k, s->loc, "kernel %s reads %s after adding to it at line %d: its gradient needs the "
              "field's final value, which only a later kernel sees; read it in another kernel",
              k->name, name, line_of(e));
  } else {
    const char *what = s->op == IR_global_store ? "writes" : "adds to";
    if ((e = overlap(r, s, read_ops)))
      ir_fail(k, s->loc, "kernel %s %s %s, which it reads at line %d: its gradient would recompute with "
              "the overwritten values; write the result to another field or to other elements, e.g. x[s + 1][i] "
              "from x[s][i] (a kernel being differentiated must not overwrite what it reads)", k->name, what,
              name, line_of(e));
    if (s->op == IR_global_store && (e = overlap(r, s, write_ops)) && !one_of_branches(k, e, s))
      ir_fail(k, s->loc, "kernel %s writes %s a second time (first at line %d): a field is written once "
              "in a kernel being differentiated (lt.atomic_add may add to it several times)", k->name, name,
              line_of(e));
    if (s->op != IR_global_store && (e = overlap(r, s, store_ops)))
      ir_fail(k, s->loc, "kernel %s adds to %s, which it writes at line %d: write it once or only add to "
              "it", k->name, name, line_of(e));
    if (s->op != IR_atomic_add && s->op != IR_atomic_sub && s->op != IR_global_store)
      ir_fail(k, s->loc, "kernel %s: %s on %s has no gradient rule yet (lt.atomic_add and lt.atomic_sub "
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

void ad_unsupported(ir_kernel *k, const ir_stmt *s, const char *what) {
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
bool ad_contains(const ir_stmt *o, const ir_stmt *var) {
  o = uncast(o);
  if (o->op == IR_local_load) return o->ops[0] == var;
  if (o->op == IR_add || o->op == IR_sub) return ad_contains(o->ops[0], var) || ad_contains(o->ops[1], var);
  return false;
}

/* Whether o is var's old value plus and minus other terms, var read once, on
** a + side: `s = s + a - b` (conversions between float types around the
** terms, as the tracer makes them for an f32 s and f64 terms, included). */
static bool sum_of(const ir_stmt *o, const ir_stmt *var) {
  o = uncast(o);
  if (o->op == IR_local_load) return o->ops[0] == var;
  bool l = ad_contains(o->ops[0], var), r = o->nops > 1 && ad_contains(o->ops[1], var);
  if (o->op == IR_add) return l != r && sum_of(l ? o->ops[0] : o->ops[1], var);
  if (o->op == IR_sub) return l && !r && sum_of(o->ops[0], var);
  return false;
}

/* Whether s is the store of such a sum inside a loop to a local from
** outside that loop (its shape only). */
static bool sum_shape(const ir_stmt *s) {
  if (s->op != IR_local_store || s->ops[0]->op != IR_alloca || !is_float(s->ops[0]->type)) return false;
  const ir_stmt *loop = innermost_loop(s);
  return loop && !ad_within(s->ops[0]->parent, loop) && sum_of(s->ops[1], s->ops[0]);
}

/* The local_store s's value flows to through +, - and float conversions
** (its first use at each step), or NULL. */
static const ir_stmt *flows_to_store(const ir_stmt *s) {
  for (const ir_stmt *u = s->next; u; u = u->next) {
    bool uses = false;
    for (int i = 0; i < u->nops; i++) uses = uses || u->ops[i] == s;
    if (!uses) continue;
    if (u->op == IR_local_store) return u;
    if (u->op == IR_add || u->op == IR_sub || (u->op == IR_cast && is_float(u->type))) return flows_to_store(u);
    return NULL;
  }
  return NULL;
}

typedef struct {
  const ir_stmt *var;
  bool ok;
} sum_scan;

static void check_sum_use(ir_stmt *t, void *ud) {
  sum_scan *sc = ud;
  if (t->ops[0] != sc->var || (t->op != IR_local_load && t->op != IR_local_store)) return;
  const ir_stmt *st = t->op == IR_local_store ? t : flows_to_store(t);
  if (!st || st->ops[0] != sc->var || !sum_shape(st)) sc->ok = false;
}

/* Whether s is the store of such a sum inside a loop to a local from
** outside that loop, and the loop reads and writes the local only so: a
** reduction (a kernel-level local summed by a parallel loop, or a loop
** body's local summed by an inner loop), whose adjoint needs no value of
** it. A local the loop uses otherwise is carried from one iteration to the
** next (an inner loop's adjoint stack) or refused (a kernel-level one). */
/* The uses of s in the statements after it (their blocks included). */
static int uses_in(const ir_block *blk, const ir_stmt *from, const ir_stmt *s) {
  int n = 0;
  for (const ir_stmt *t = from ? from : blk->first; t; t = t->next) {
    for (int i = 0; i < t->nops; i++) n += t->ops[i] == s;
    for (int b = 0; b < 2; b++)
      if (t->blocks[b]) n += uses_in(t->blocks[b], NULL, s);
  }
  return n;
}

/* Whether the values on the sum's path from var's load to its store are
** used by the sum alone: `c = c + x; h = c` (c's new value read as the
** add's value) makes c more than a sum, whose adjoint would skip that read. */
static bool private_path(const ir_stmt *o, const ir_stmt *var) {
  if (uses_in(o->parent, o->next, o) != 1) return false;
  if (o->op == IR_local_load) return true;
  if (o->op == IR_cast) return private_path(o->ops[0], var);
  for (int i = 0; i < 2 && i < o->nops; i++)
    if (ad_contains(o->ops[i], var)) return private_path(o->ops[i], var);
  return false;
}

bool ad_is_reduction(const ir_stmt *s) {
  if (!sum_shape(s) || !private_path(s->ops[1], s->ops[0])) return false;
  sum_scan sc = {s->ops[0], true};
  ir_walk(innermost_loop(s)->blocks[0], check_sum_use, &sc);
  return sc.ok;
}

/* The reduction store s's value flows to, or NULL. */
static const ir_stmt *reduction_store(const ir_stmt *s) {
  const ir_stmt *st = flows_to_store(s);
  return st && ad_is_reduction(st) ? st : NULL;
}

/* A term of the sum (w[i] + 2, another local's value) flows there too but
** does not read the summed local: it is not part of the reduction, and
** gets its adjoint from the store's. */
bool ad_in_reduction(const ir_stmt *s) {
  const ir_stmt *st = reduction_store(s);
  return st && ad_contains(s, st->ops[0]);
}


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
  if (s->op == IR_local_store && s->ops[0] == sc->var && ad_in_loop(s)) sc->found = true;
}

/* Whether local var is stored inside a loop within blk. */
static bool stored_in_loop(ir_block *blk, const ir_stmt *var) {
  loop_store_scan sc = {var, false};
  ir_walk(blk, note_loop_store, &sc);
  return sc.found;
}

/* The `if c then break end` that starts while loop w's iterations, after
** statements that only compute (its condition), or NULL: the only while
** loops differentiated (a `while c do ... end` loop, not repeat-until). */
ir_stmt *ad_while_exit(const ir_stmt *w) {
  for (ir_stmt *s = w->blocks[0]->first; s; s = s->next) {
    if (s->op == IR_if) {
      const ir_block *t = s->blocks[0];
      bool empty_else = !s->blocks[1] || !s->blocks[1]->first;
      return t && t->first && t->first == t->last && t->first->op == IR_break && empty_else ? s : NULL;
    }
    unsigned f = ir_op_flags(s->op);
    bool reads = s->op == IR_local_load || s->op == IR_global_load || s->op == IR_snode_is_active ||
                 s->op == IR_snode_length;
    if (!(f & IR_PURE) && !reads) return NULL;
  }
  return NULL;
}

/* A statement known to this pass, in context ctx. */
static void check_stmt(ad *a, ir_stmt *s, int ctx) {
  ir_kernel *k = a->k;
  if (ctx == AD_BODY && ((s->op == IR_local_store && ad_is_reduction(s)) || (s->op == IR_local_load && ad_in_reduction(s))))
    return;                        /* s = s + v on a kernel-level local */
  if (ir_op_is_atomic(s->op) && s->ops[0]->op == IR_alloca) {
    char what[96];
    snprintf(what, sizeof what, "lt.%s on a kernel local (write s = s + v for a sum)", ir_op_name(s->op));
    ad_unsupported(k, s, what);
  }
  switch (s->op) {
  case IR_range_for: case IR_struct_for:
    if (ctx == AD_TOP_IF) ad_unsupported(k, s, "a loop inside an `if` at the kernel's top level");
    return;                        /* an inner loop: its locals are checked with its body */
  case IR_if:
    if (ctx != AD_BODY && holds_loop(s)) ad_unsupported(k, s, "a loop inside an `if` at the kernel's top level");
    return;                        /* its branches are checked with it (mark_block) */
  case IR_while:
    if (ctx != AD_BODY) ad_unsupported(k, s, "a while loop outside the kernel's loops");
    if (!ad_while_exit(s))
      ad_unsupported(k, s, "a while loop whose condition is not tested first (repeat ... until), or that leaves "
                     "with break");
    return;
  case IR_alloca: case IR_local_load: case IR_local_store: {
    const ir_stmt *var = s->op == IR_alloca ? s : s->ops[0];
    const ir_stmt *loop = innermost_loop(s);
    if (ctx != AD_BODY || s->op == IR_alloca || ad_within(var->parent, loop)) return;   /* serial code, or the loop's own */
    bool kernel_level = !var->parent->owner;
    /* a value from before the loop that no loop changes: read as it is */
    if (s->op == IR_local_load && !stored_in_loop(kernel_level ? k->body : loop->blocks[0], var)) return;
    if (kernel_level)
      ad_unsupported(k, s, "a kernel-level local changed in a loop other than by `s = s + v` (or read in the loop "
                  "that sums into it)");
    return;                        /* carried by an inner loop: on its adjoint stack */
  }
  case IR_return:
    if (ctx != AD_TOP) ad_unsupported(k, s, "a return inside a loop or an `if`");
    return;
  case IR_break: {                 /* only a while loop's exit */
    const ir_stmt *in = s->parent->owner, *w = in && in->parent ? in->parent->owner : NULL;
    if (in && in->op == IR_if && w && w->op == IR_while && ad_while_exit(w) == in) return;
    ad_unsupported(k, s, "break (other than a while loop's own test)");
    return;
  }
  case IR_continue: ad_unsupported(k, s, "continue"); return;
  case IR_random: ad_unsupported(k, s, "lt.random (its draws would differ in the adjoint)"); return;
  case IR_ext_ptr: case IR_check_bound: return;   /* ndarrays: only inactive values (checked below) */
  case IR_arg: return;
  case IR_atomic_min: case IR_atomic_max: case IR_atomic_mul: case IR_atomic_and: case IR_atomic_or:
  case IR_atomic_xor:
    return;                        /* refused by the rules when on a field */
  default: break;
  }
  unsigned f = ir_op_flags(s->op);
  if (f & IR_TASK) ad_unsupported(k, s, "an offloaded kernel");
  if ((f & IR_PURE) || s->op == IR_global_load || s->op == IR_global_store || s->op == IR_atomic_add ||
      s->op == IR_atomic_sub || s->op == IR_print || s->op == IR_print_more || s->op == IR_assert ||
      s->op == IR_check_index || s->op == IR_snode_is_active || s->op == IR_snode_length)
    return;
  char what[96];
  snprintf(what, sizeof what, "%s", ir_op_name(s->op));
  ad_unsupported(k, s, what);
}

/* ---- activity -------------------------------------------------------------------- */

static void mark_active(ad *a, ir_stmt *s) {
  bool on = false;
  if (s->op == IR_global_load && s->ops[0]->op == IR_ext_ptr) {
    /* a float ndarray argument: its gradient array (NAME.grad) may be given at the launch */
    on = is_float(s->type) && s->ops[0]->ops[0]->op == IR_arg;
  } else if (s->op == IR_global_load) {
    on = ad_grad_of(a->k, s->ops[0]) != NULL && is_float(s->type);
  } else if (s->op == IR_arg) {
    on = is_float(s->type);        /* a float argument: its gradient goes out (args.grad) */
    if (on && s->parent != a->k->body) ad_unsupported(a->k, s, "an argument read inside a loop's IR (internal)");
  } else if (s->op == IR_alloca || s->op == IR_local_load) {
    on = is_float(s->type);        /* a float local may carry a gradient (too many adjoints do no harm) */
  } else if ((ir_op_flags(s->op) & IR_PURE) && is_float(s->type) && s->op != IR_global_ptr) {
    for (int i = 0; i < s->nops; i++) on = on || ad_active(a, s->ops[i]);
  }
  ad_info(a, s)->active = on;
  /* an active value stored into an ndarray, or handed to an op this pass does not know, would lose its
  ** gradient */
  bool stores = s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub;
  if (stores && s->ops[0]->op == IR_ext_ptr && s->ops[0]->ops[0]->op != IR_arg && ad_active(a, s->ops[1]))
    ad_unsupported(a->k, s, "writing a value that depends on a field with a gradient into an ndarray that is "
                   "not an argument");
  /* the old value an atomic returns depends on the order of the additions */
  for (int i = 0; i < s->nops; i++) {
    ir_op o = s->ops[i] ? s->ops[i]->op : IR_const;
    if ((o == IR_atomic_add || o == IR_atomic_sub) && is_float(s->ops[i]->type))
      ad_unsupported(a->k, s, "using the old value lt.atomic_add returns");
  }
}

/* Whether a loop body reduces into local var (s = s + v). */
static bool reduced(const ir_block *top, const ir_stmt *var) {
  for (const ir_stmt *l = top->first; l; l = l->next) {
    if (l->op != IR_range_for && l->op != IR_struct_for) continue;
    for (const ir_stmt *s = l->blocks[0]->first; s; s = s->next)
      if (s->op == IR_local_store && s->ops[0] == var && ad_is_reduction(s)) return true;
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
      ad_unsupported(sc->a->k, u, "a kernel-level local summed in a loop and then used other than by `return s` "
                  "(return the sum, or write it to a 0-D field and compute on in another kernel)");
}

static void check_reduced_read(ad *a, ir_stmt *s) {
  if (s->op != IR_local_load || !is_float(s->type) || !reduced(a->k->body, s->ops[0])) return;
  use_scan sc = {a, s};
  ir_walk(a->k->body, check_use, &sc);
}

void ad_mark_block(ad *a, ir_block *blk, int ctx) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    check_stmt(a, s, ctx);
    if (ctx != AD_BODY) check_reduced_read(a, s);
    mark_active(a, s);
    if (s->op == IR_range_for || s->op == IR_struct_for || s->op == IR_while)
      ad_mark_block(a, s->blocks[0], AD_BODY);   /* inner ones too */
    if (s->op == IR_if)
      for (int b = 0; b < 2; b++)
        if (s->blocks[b]) ad_mark_block(a, s->blocks[b], ctx == AD_TOP ? AD_TOP_IF : ctx);
  }
}

void ad_check_rules(ir_kernel *k) {
  rules *r = ir_alloc(k, sizeof *r);
  r->k = k;
  ir_walk(k->body, check_access, r);
}
