/*
** reduce.c -- kernel-scope locals updated inside parallel loops: each update
** becomes an atomic, or the kernel is refused.
**
** After offload, a local declared at a kernel's top level and used by a
** parallel task (task_range_for, task_struct_for) lives in a global
** temporary that every iteration of the task shares. An update written as a
** read, a computation and a store would interleave with the other
** iterations' and lose some of them; a read would see a value that depends on
** timing. So, for every such temporary written in a parallel task:
**
**  - a store of `s + v`, `v + s`, `s - v` (any chain of + and - in which s
**    appears once, on a + side: `s = s + a - b`, `s = a + (s + b)`, through
**    conversions that keep at least s's width, e.g. an f32 `s = s + lt.f64(x)`
**    or an i32 `s = s + i64value`) becomes atomic_add / atomic_sub of the
**    rest, converted to s's type: exact for integers (arithmetic modulo 2^n);
**    a float sum may round differently from the serial order, as any
**    parallel sum does;
**  - a store of `lt.max(s, v)` / `lt.min(s, v)` (either operand order; for
**    floats through widening conversions, which rounding preserves), and
**    `if v > s then s = v end` with its variants (<, >=, <=, either side),
**    become atomic_max / atomic_min of v;
**  - atomics the kernel writes on the local (lt.atomic_mul(s, v): an atomic
**    on the temporary) stay as they are; two kinds of them on one local in
**    one task (but add with sub) are refused, as the value left would
**    depend on the order of the iterations;
**  - stores of one constant (`found = 1`) stay plain when the task neither
**    reads the local nor updates it otherwise: every iteration writes the same;
**  - anything else -- another store, or a read of the local in a task that
**    updates it -- is a user error naming the local and the line, never a
**    silent race.
** Reads of a kernel-scope local that the task does not write are fine, and
** so is everything in a range task of one constant iteration.
*/
#include "../ir.h"
#include "passes.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  int *uses;            /* operand uses per statement id (ir_number) */
  int n;
} use_count;

static void count_uses(ir_stmt *s, void *ud) {
  use_count *u = ud;
  for (int i = 0; i < s->nops; i++)
    if (s->ops[i] && s->ops[i]->id >= 0 && s->ops[i]->id < u->n) u->uses[s->ops[i]->id]++;
}

static bool is_tmp(const ir_stmt *p) { return p && p->op == IR_global_tmp; }

static bool single_use(const ir_stmt *v, const use_count *u) {
  return v->id >= 0 && v->id < u->n && u->uses[v->id] == 1;
}

/* A load of the temporary at byte offset off used only once. */
static bool lone_load_of(const ir_stmt *v, int off, const use_count *u) {
  return v->op == IR_global_load && is_tmp(v->ops[0]) && v->ops[0]->aux == off && single_use(v, u);
}

/* Whether a value of type from can stand for the local (type t) on the way
** from its load to the stored value: same kind, at least t's width. */
static bool keeps(ir_type t, ir_type from) {
  if (from == IR_i1 || t == IR_i1) return false;
  if (ir_type_is_float(t) != ir_type_is_float(from)) return false;
  return ir_type_bits(from) >= ir_type_bits(t);
}

/* ---- sums: s = s + a - b ... ------------------------------------------------- */

#define MAX_TERMS 32

typedef struct {
  ir_stmt *load;                 /* the one read of the local */
  ir_stmt *path[2 * MAX_TERMS];  /* the adds, subs and casts between it and the store */
  int npath;
  ir_stmt *term[MAX_TERMS];      /* the other operands, with their sign */
  bool neg[MAX_TERMS];
  int nterms;
} sum;

/* Whether v is load(off) + (terms), walking single-use adds, subs and casts
** of at least the local's width; fills *sm. */
static bool linear(ir_stmt *v, int off, ir_type t, bool neg, const use_count *u, sum *sm) {
  if (lone_load_of(v, off, u)) {
    if (neg || sm->load) return false;           /* s = a - s, or s read twice */
    sm->load = v;
    return true;
  }
  if (!single_use(v, u) || !keeps(t, v->type) || sm->npath == 2 * MAX_TERMS) return false;
  if (v->op == IR_cast) {
    if (!keeps(t, v->ops[0]->type)) return false;
    sm->path[sm->npath++] = v;
    return linear(v->ops[0], off, t, neg, u, sm);
  }
  if ((v->op != IR_add && v->op != IR_sub) || v->nops != 2) return false;
  sm->path[sm->npath++] = v;
  for (int side = 0; side < 2; side++) {
    int before = sm->npath;
    bool sneg = side == 1 && v->op == IR_sub ? !neg : neg;
    if (linear(v->ops[side], off, t, sneg, u, sm)) {
      if (sm->nterms == MAX_TERMS) return false;
      sm->term[sm->nterms] = v->ops[1 - side];
      sm->neg[sm->nterms++] = side == 0 && v->op == IR_sub ? !neg : neg;
      return true;
    }
    sm->npath = before;
    if (sm->load) return false;
  }
  return false;
}

static ir_stmt *before(ir_kernel *k, ir_stmt *pos, ir_op op, ir_type t, int nops, ir_stmt *const *ops) {
  ir_stmt *s = ir_new(k, op, t, nops, ops);
  s->loc = pos->loc;
  ir_insert_before(pos, s);
  return s;
}

static ir_stmt *as_type(ir_kernel *k, ir_stmt *pos, ir_stmt *v, ir_type t) {
  return v->type == t ? v : before(k, pos, IR_cast, t, 1, &v);
}

/* The sum of the terms of one sign in type t, or NULL when none. */
static ir_stmt *add_terms(ir_kernel *k, ir_stmt *pos, const sum *sm, bool neg, ir_type t) {
  ir_stmt *acc = NULL;
  for (int i = 0; i < sm->nterms; i++) {
    if (sm->neg[i] != neg) continue;
    ir_stmt *x = as_type(k, pos, sm->term[i], t);
    ir_stmt *ops[2] = {acc, x};
    acc = acc ? before(k, pos, IR_add, t, 2, ops) : x;
  }
  return acc;
}

/* store(p, s ± terms) -> atomic_add / atomic_sub of the terms. */
static bool sum_to_atomic(ir_kernel *k, ir_stmt *st, const use_count *u) {
  ir_stmt *p = st->ops[0];
  ir_type t = p->type;
  sum sm = {0};
  if (!linear(st->ops[1], p->aux, t, false, u, &sm) || !sm.load) return false;
  ir_stmt *plus = add_terms(k, st, &sm, false, t), *minus = add_terms(k, st, &sm, true, t);
  if (plus || minus) {
    ir_stmt *v = plus;
    ir_op op = IR_atomic_add;
    if (!plus) v = minus, op = IR_atomic_sub;
    else if (minus) v = before(k, st, IR_sub, t, 2, (ir_stmt *[2]){plus, minus});
    before(k, st, op, t, 2, (ir_stmt *[2]){p, v});
  }
  ir_remove(st);
  for (int i = 0; i < sm.npath; i++) ir_remove(sm.path[i]);
  ir_remove(sm.load);
  return true;
}

/* ---- extremes: s = max(s, v), if v > s then s = v end ------------------------- */

/* Whether v is the local's lone load, for floats also through single-use
** widening casts (rounding keeps the order of values); the casts go to *path. */
static ir_stmt *extreme_load(ir_stmt *v, int off, ir_type t, const use_count *u, ir_stmt **path, int *npath) {
  while (v->op == IR_cast && ir_type_is_float(t) && keeps(t, v->type) && keeps(t, v->ops[0]->type) &&
         single_use(v, u) && *npath < 4) {
    path[(*npath)++] = v;
    v = v->ops[0];
  }
  return lone_load_of(v, off, u) ? v : NULL;
}

/* The value stored after the local's type conversion: v itself, or, for a
** float, what v is before a cast down to t (a max in f64 stored to an f32). */
static ir_stmt *stored_extreme(ir_stmt *v, ir_type t, const use_count *u, ir_stmt **path, int *npath) {
  if (v->op == IR_cast && ir_type_is_float(t) && keeps(t, v->ops[0]->type) && single_use(v, u)) {
    path[(*npath)++] = v;
    return v->ops[0];
  }
  return v;
}

/* store(p, max(s, v)) -> atomic_max(p, v); min likewise. */
static bool extreme_to_atomic(ir_kernel *k, ir_stmt *st, const use_count *u) {
  ir_stmt *p = st->ops[0];
  ir_type t = p->type;
  ir_stmt *path[8];
  int npath = 0;
  ir_stmt *m = stored_extreme(st->ops[1], t, u, path, &npath);
  if ((m->op != IR_max && m->op != IR_min) || !single_use(m, u) || !keeps(t, m->type)) return false;
  if (!ir_type_is_float(t) && m->type != t) return false;
  path[npath++] = m;
  for (int side = 0; side < 2; side++) {
    int n = npath;
    ir_stmt *load = extreme_load(m->ops[side], p->aux, t, u, path, &n);
    if (!load) continue;
    ir_stmt *v = as_type(k, st, m->ops[1 - side], t);
    before(k, st, m->op == IR_max ? IR_atomic_max : IR_atomic_min, t, 2, (ir_stmt *[2]){p, v});
    ir_remove(st);
    for (int i = 0; i < n; i++) ir_remove(path[i]);
    ir_remove(load);
    return true;
  }
  return false;
}

/* `if v > s then s = v end` (no else; the then block holds only the store):
** the comparison reads the local once and the store writes the compared v. */
static bool guarded_to_atomic(ir_kernel *k, ir_stmt *st, const use_count *u) {
  ir_block *blk = st->parent;
  ir_stmt *cond_if = blk ? blk->owner : NULL;
  if (!cond_if || cond_if->op != IR_if || cond_if->blocks[1] || blk->first != st || blk->last != st) return false;
  ir_stmt *c = cond_if->ops[0], *p = st->ops[0], *v = st->ops[1];
  if (!single_use(c, u) || c->nops != 2) return false;
  bool greater;
  switch (c->op) {
  case IR_cmp_gt: case IR_cmp_ge: greater = true; break;
  case IR_cmp_lt: case IR_cmp_le: greater = false; break;
  default: return false;
  }
  int side;
  if (c->ops[0] == v && lone_load_of(c->ops[1], p->aux, u)) side = 1;        /* v > s */
  else if (c->ops[1] == v && lone_load_of(c->ops[0], p->aux, u)) side = 0;   /* s < v */
  else return false;
  bool max = greater == (side == 1);
  ir_stmt *load = c->ops[side];
  before(k, cond_if, max ? IR_atomic_max : IR_atomic_min, p->type, 2, (ir_stmt *[2]){p, v});
  ir_remove(cond_if);
  ir_remove(c);
  ir_remove(load);
  return true;
}

/* ---- the check ------------------------------------------------------------------ */

typedef struct {
  ir_kernel *k;
  ir_stmt **list;       /* stores, loads and atomics of temporaries in the task */
  int n, cap;
} accesses;

static void collect(ir_stmt *s, void *ud) {
  accesses *a = ud;
  bool tmp_access = (ir_op_flags(s->op) & (IR_LOAD | IR_STORE)) && is_tmp(s->ops[0]);
  if (!tmp_access) return;
  if (a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 16;
    ir_stmt **grown = ir_alloc(a->k, (size_t)cap * sizeof *grown);   /* arena: freed with the kernel */
    for (int i = 0; i < a->n; i++) grown[i] = a->list[i];
    a->list = grown;
    a->cap = cap;
  }
  a->list[a->n++] = s;
}

static void gather(ir_kernel *k, ir_stmt *task, accesses *a) {
  a->k = k;
  a->n = 0;
  ir_walk(task->blocks[0], collect, a);
}

static const char *name_of(ir_kernel *k, const ir_stmt *tmp, char *buf, size_t n) {
  const char *name = ir_local_name(k, tmp);
  if (name) snprintf(buf, n, "the kernel-scope local '%s'", name);
  else snprintf(buf, n, "a kernel-scope local");
  return buf;
}

#define REDUCTIONS                                                                               \
  "only updates that make a reduction are allowed there: s = s + v, s = s - v, "                 \
  "s = lt.max(s, v), s = lt.min(s, v), if v > s then s = v end, lt.atomic_*(s, v); otherwise "   \
  "declare the local inside the loop, or write to a field (x[i] = v)"

/* Atomics that give one result in any order, applied together: add and sub,
** or each other op with itself. */
static int family(ir_op op) { return op == IR_atomic_sub ? IR_atomic_add : op; }

/* Every temporary the task writes: plain stores left over are one constant
** and the task does not read the temporary; no reads next to atomics. */
static void check_task(ir_kernel *k, ir_stmt *task, accesses *a) {
  gather(k, task, a);
  for (int i = 0; i < a->n; i++) {
    ir_stmt *s = a->list[i];
    int off = s->ops[0]->aux;
    bool stored = false, updated = false, mixed = false;
    const ir_stmt *read = NULL, *first_store = NULL, *first_atomic = NULL, *other_atomic = NULL;
    for (int j = 0; j < a->n; j++) {
      ir_stmt *x = a->list[j];
      if (x->ops[0]->aux != off) continue;
      if (ir_op_is_atomic(x->op)) {
        if (!first_atomic) first_atomic = x;
        else if (!other_atomic && family(x->op) != family(first_atomic->op)) other_atomic = x;
      }
      if (x->op == IR_global_load) {
        if (!read) read = x;
      } else if (x->op == IR_global_store) {
        if (!first_store) first_store = x;
        const ir_stmt *v = x->ops[1], *w = first_store->ops[1];
        if (v->op != IR_const || w->op != IR_const || v->type != w->type ||
            memcmp(&v->imm, &w->imm, sizeof v->imm) != 0)
          mixed = true;
        stored = true;
      } else {
        updated = true;
      }
    }
    char buf[160];
    if (stored && (mixed || updated || read)) {
      const ir_stmt *bad = first_store;
      if (!mixed) {                   /* one constant, but also read or updated: blame the store */
        ir_fail(k, bad->loc,
                "%s is assigned inside a parallel loop that also %s it: the iterations run at the same "
                "time, so the result would depend on their timing; " REDUCTIONS,
                name_of(k, s->ops[0], buf, sizeof buf), updated ? "updates" : "reads");
      }
      for (int j = 0; j < a->n; j++) {
        ir_stmt *x = a->list[j];
        if (x->ops[0]->aux == off && x->op == IR_global_store && x->ops[1]->op != IR_const) {
          bad = x;
          break;
        }
      }
      ir_fail(k, bad->loc,
              "%s is assigned inside a parallel loop (a data race: its iterations run at the same time, "
              "so the value left would depend on their timing); " REDUCTIONS,
              name_of(k, s->ops[0], buf, sizeof buf));
    }
    if (other_atomic)
      ir_fail(k, other_atomic->loc,
              "%s is updated with lt.%s here and with lt.%s at line %d in one parallel loop: the value left "
              "would depend on the order of the iterations; update it with one kind of atomic per loop "
              "(add and sub mix), or split the loop",
              name_of(k, s->ops[0], buf, sizeof buf), ir_op_name(other_atomic->op), ir_op_name(first_atomic->op),
              first_atomic->loc.line);
    if (updated && read)
      ir_fail(k, read->loc,
              "%s is read inside the parallel loop that updates it: the value read would depend on the "
              "timing of the other iterations; read it after the loop, or keep a per-iteration value in a "
              "local declared inside the loop",
              name_of(k, s->ops[0], buf, sizeof buf));
  }
}

static bool reduce_task(ir_kernel *k, ir_stmt *task, accesses *a) {
  ir_number(k);
  use_count u = {ir_alloc(k, ((size_t)k->next_id + 1) * sizeof(int)), k->next_id + 1};
  ir_walk(k->body, count_uses, &u);
  gather(k, task, a);
  bool changed = false;
  for (int i = 0; i < a->n; i++) {
    ir_stmt *st = a->list[i];
    if (st->op != IR_global_store || !st->parent) continue;
    /* new statements get ids past the counts (never single-use); removed ones had one use */
    if (sum_to_atomic(k, st, &u) || extreme_to_atomic(k, st, &u) || guarded_to_atomic(k, st, &u)) changed = true;
  }
  check_task(k, task, a);
  return changed;
}

bool ir_pass_reduce(ir_kernel *k) {
  bool changed = false;
  if (!k->offloaded) return false;
  accesses a = {0};
  for (ir_stmt *s = k->body->first; s; s = s->next) {
    if ((s->op != IR_task_range_for && s->op != IR_task_struct_for) || !s->blocks[0]) continue;
    const ir_task_range *r = &s->range;
    bool one = s->op == IR_task_range_for && r->begin_gtmp < 0 && r->end_gtmp < 0 && r->end - r->begin <= 1;
    if (!one) changed |= reduce_task(k, s, &a);    /* one iteration (or none) races with nothing */
  }
  return changed;
}
