/*
** races.c -- fields and ndarrays that iterations of one parallel loop share:
** a kernel whose iterations could read what another writes is refused.
**
** A parallel task (task_range_for of more than one iteration,
** task_struct_for) runs its iterations at the same time. For every field
** (place SNode) and every ndarray it reads and writes (with plain stores or
** atomics), or writes both plainly and with atomics, each access must stay inside the iteration
** that makes it: there must be index positions where every access of that
** field uses the same index expression, and those expressions together must
** not map two iterations to one element. That holds for
**   x[i] = x[i] * 2            (one element per iteration)
**   a[i][k] = a[i][0] + 1      (a row per iteration, any column inside it)
** and is refused, naming the field and both lines, for
**   p[k] = p[k] + p[k - 1]     (reads what the previous iteration writes)
**   s[0] = s[0] + x[i]         (every iteration updates one element)
**   y[i // 2] = y[i // 2] + 1  (two iterations per element)
** Index expressions are recognised when built from the loop's own index with
** + and - of values the iteration does not change, conversions, and // and %
** by constants (the form lt.ndrange's indices take); a common expression the
** check cannot read (y[perm[i]]) is taken as one element per iteration, the
** same assumption any parallel write makes. Fields only written, or only
** updated with atomics, are not checked: those iterations do not read what
** others write. This is a check; it changes nothing (ir_check_races).
*/
#include "../ir.h"
#include "../snode.h"
#include "passes.h"

#include <stdio.h>
#include <string.h>

enum { MAX_DEPTH = 24 };

typedef struct {
  ir_stmt *ptr;                   /* global_ptr or ext_ptr */
  ir_stmt *use;                   /* the load, store or atomic through it */
  int kind;                       /* READ, WRITE, ATOMIC */
} access;

enum { READ, WRITE, ATOMIC };

typedef struct {
  ir_kernel *k;
  ir_stmt *task;
  access *list;                   /* arena-owned; grows by doubling */
  int n, cap;
} gather_state;

static bool pure(ir_op op) { return (ir_op_flags(op) & IR_PURE) != 0; }

static void gather(ir_stmt *s, void *ud) {
  gather_state *g = ud;
  int kind;
  if (s->op == IR_global_load) kind = READ;
  else if (s->op == IR_global_store) kind = WRITE;
  else if (s->op >= IR_atomic_add && s->op <= IR_atomic_max) kind = ATOMIC;
  else return;
  ir_stmt *p = s->ops[0];
  if (!p || (p->op != IR_global_ptr && p->op != IR_ext_ptr)) return;   /* global temporaries: reduce.c */
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 64;
    access *list = ir_alloc(g->k, (size_t)cap * sizeof *list);
    if (g->n) memcpy(list, g->list, (size_t)g->n * sizeof *list);
    g->list = list;
    g->cap = cap;
  }
  g->list[g->n++] = (access){p, s, kind};
}

static bool same_value(const gather_state *g, const ir_stmt *a, const ir_stmt *b, int depth);

/* Whether the task writes (stores or atomics) through a pointer to p's object. */
static bool written(const gather_state *g, const ir_stmt *p, int depth) {
  for (int i = 0; i < g->n; i++) {
    const ir_stmt *q = g->list[i].ptr;
    if (g->list[i].kind == READ || q->op != p->op) continue;
    if (q->op == IR_global_ptr ? q->aux == p->aux : same_value(g, q->ops[0], p->ops[0], depth + 1)) return true;
  }
  return false;
}

/* Structural equality of two values: same op, type, immediates and operands;
** loads are equal when their addresses are and the task writes nothing there
** (perm[i] read twice). */
static bool same_value(const gather_state *g, const ir_stmt *a, const ir_stmt *b, int depth) {
  if (a == b) return true;
  if (!a || !b || depth > MAX_DEPTH) return false;
  if (a->op != b->op || a->type != b->type || a->nops != b->nops || a->aux != b->aux) return false;
  if (a->op == IR_const) {
    return ir_type_is_float(a->type) ? memcmp(&a->imm.fval, &b->imm.fval, sizeof(double)) == 0
                                     : a->imm.ival == b->imm.ival;
  }
  if (a->imm.ival != b->imm.ival || a->loop != b->loop) return false;   /* loop_index, random's site */
  if (a->op == IR_arg) return true;   /* same aux: the same argument */
  bool load = a->op == IR_global_load && a->ops[0] &&
              (a->ops[0]->op == IR_global_ptr || a->ops[0]->op == IR_ext_ptr);
  if (!pure(a->op) && !load) return false;
  for (int i = 0; i < a->nops; i++)
    if (!same_value(g, a->ops[i], b->ops[i], depth + 1)) return false;
  if (load && written(g, a->ops[0], depth)) return false;
  return true;
}

/* Whether v depends on an index of the task. */
static bool varies(const ir_stmt *v, const ir_stmt *task, int depth) {
  if (!v) return false;
  if (v->op == IR_loop_index) return v->loop == task;
  if (depth > MAX_DEPTH) return true;
  if (v->op == IR_const || v->op == IR_arg) return false;
  for (int i = 0; i < v->nops; i++)
    if (varies(v->ops[i], task, depth + 1)) return true;
  /* a load, or anything else that reads memory, inside the task may differ per iteration */
  return !pure(v->op) && v->op != IR_alloca;
}

/* One index expression as a function of the task's index k:
** ((index_k // div) % mod) + something the iteration does not change. */
typedef enum { INVARIANT, FORM, OPAQUE } shape_kind;
typedef struct {
  shape_kind kind;
  int64_t k, div, mod;            /* mod 0: none */
} shape;

static bool positive_const(const ir_stmt *v, int64_t *out) {
  if (!v || v->op != IR_const || ir_type_is_float(v->type) || v->imm.ival <= 0) return false;
  *out = v->imm.ival;
  return true;
}

static shape shape_of(const ir_stmt *v, const ir_stmt *task, int depth) {
  shape opaque = {OPAQUE, 0, 0, 0};
  if (!varies(v, task, 0)) return (shape){INVARIANT, 0, 0, 0};
  if (depth > MAX_DEPTH) return opaque;
  int64_t c;
  switch (v->op) {
  case IR_loop_index: return (shape){FORM, v->imm.ival, 1, 0};
  case IR_cast:
    return ir_type_is_float(v->type) || ir_type_is_float(v->ops[0]->type) ? opaque : shape_of(v->ops[0], task, depth + 1);
  case IR_add:
  case IR_sub: {
    bool va = varies(v->ops[0], task, 0), vb = varies(v->ops[1], task, 0);
    if (va && !vb) return shape_of(v->ops[0], task, depth + 1);
    if (vb && !va && v->op == IR_add) return shape_of(v->ops[1], task, depth + 1);
    return opaque;
  }
  case IR_floordiv: {
    shape s = shape_of(v->ops[0], task, depth + 1);
    if (s.kind != FORM || s.mod || !positive_const(v->ops[1], &c)) return opaque;
    s.div *= c;
    return s;
  }
  case IR_mod: {
    shape s = shape_of(v->ops[0], task, depth + 1);
    if (s.kind != FORM || s.mod || !positive_const(v->ops[1], &c)) return opaque;
    s.mod = c;
    return s;
  }
  default: return opaque;
  }
}

/* The number of indices of the task: 1 for a range, the level's for a struct-for. */
static int task_indices(const ir_kernel *k, const ir_stmt *task) {
  if (task->op != IR_task_struct_for) return 1;
  const ir_snode *sn = k->prog ? ir_program_snode(k->prog, task->aux) : NULL;
  return sn ? sn->nidx : IR_MAX_INDICES + 1;   /* unknown: never proven */
}

typedef enum { DISTINCT, UNKNOWN, SHARED } verdict;

/* Whether the index expressions `ix` (the positions all accesses agree on)
** give different iterations different elements. */
static verdict distinct_per_iteration(const ir_kernel *k, const ir_stmt *task, ir_stmt **ix, int n) {
  shape sh[IR_MAX_INDICES];
  int nf = 0;
  bool opaque = false;
  for (int i = 0; i < n; i++) {
    shape s = shape_of(ix[i], task, 0);
    if (s.kind == OPAQUE) opaque = true;
    if (s.kind == FORM) sh[nf++] = s;
  }
  if (opaque) return UNKNOWN;
  int need = task_indices(k, task);
  for (int idx = 0; idx < need; idx++) {
    /* the forms of task index idx must recover it: divisors 1, d1, d1*m1, ...
    ** each one the previous times its modulus, the last without a modulus */
    int64_t want = 1;
    for (;;) {
      int at = -1;
      for (int i = 0; i < nf; i++)
        if (sh[i].k == idx && sh[i].div == want) at = i;
      if (at < 0) return SHARED;
      if (sh[at].mod == 0) break;
      want *= sh[at].mod;
    }
  }
  return DISTINCT;
}

static int nindex(const ir_stmt *p) { return p->op == IR_ext_ptr ? 1 : p->nops; }
static ir_stmt *index_at(ir_stmt *p, int i) { return p->op == IR_ext_ptr ? p->ops[1] : p->ops[i]; }

static bool same_object(const gather_state *g, const access *a, const access *b) {
  if (a->ptr->op != b->ptr->op) return false;
  if (a->ptr->op == IR_global_ptr) return a->ptr->aux == b->ptr->aux;
  return same_value(g, a->ptr->ops[0], b->ptr->ops[0], 0);
}

static const char *object_name(const ir_kernel *k, const access *a, char *buf, size_t len) {
  if (a->ptr->op == IR_ext_ptr) {
    const ir_stmt *base = a->ptr->ops[0];
    while (base && base->op != IR_arg && base->nops > 0) base = base->ops[0];
    if (base && base->op == IR_arg && base->aux >= 0 && base->aux < k->nargs && k->arg_names[base->aux])
      snprintf(buf, len, "ndarray '%s'", k->arg_names[base->aux]);
    else
      snprintf(buf, len, "an ndarray");
    return buf;
  }
  const ir_snode *sn = k->prog ? ir_program_snode(k->prog, a->ptr->aux) : NULL;
  snprintf(buf, len, "field '%s'", sn && sn->name ? sn->name : "?");
  return buf;
}

static const char *verb(int kind) { return kind == READ ? "read" : kind == WRITE ? "written" : "updated"; }

/* The accesses of one object (indices into g->list), checked together. */
static void check_object(ir_kernel *k, gather_state *g, const int *of, int n) {
  bool write = false, atomic = false, read = false;
  for (int i = 0; i < n; i++) {
    int kind = g->list[of[i]].kind;
    write |= kind == WRITE;
    atomic |= kind == ATOMIC;
    read |= kind == READ;
  }
  if (!(read && (write || atomic)) && !(write && atomic)) return;   /* only written, or only atomics */
  const access *first = &g->list[of[0]];
  int nix = nindex(first->ptr);
  ir_stmt *common[IR_MAX_INDICES + 1];
  int ncommon = 0;
  for (int d = 0; d < nix; d++) {
    bool same = true;
    for (int i = 1; i < n && same; i++) {
      const access *a = &g->list[of[i]];
      same = nindex(a->ptr) == nix && same_value(g, index_at(first->ptr, d), index_at(a->ptr, d), 0);
    }
    if (same) common[ncommon++] = index_at(first->ptr, d);
  }
  verdict v = distinct_per_iteration(k, g->task, common, ncommon);
  if (v != SHARED) return;
  /* blame a write (or update) and, when there is one, an access at another index */
  const access *w = NULL, *other = NULL;
  for (int i = 0; i < n && !w; i++)
    if (g->list[of[i]].kind != READ) w = &g->list[of[i]];
  for (int i = 0; i < n && !other; i++) {
    const access *a = &g->list[of[i]];
    if (a == w) continue;
    bool same = nindex(a->ptr) == nindex(w->ptr);
    for (int d = 0; same && d < nindex(a->ptr); d++) same = same_value(g, index_at(a->ptr, d), index_at(w->ptr, d), 0);
    if (!same) other = a;
  }
  char name[160];
  object_name(k, w, name, sizeof name);
  if (other) {
    ir_fail(k, w->use->loc,
            "%s is %s here and %s at another index (line %d) in the same parallel loop: its iterations run at "
            "the same time, so one can read or overwrite an element another iteration writes; write the result "
            "to another field, make the loop serial (lt.serial), split it into two kernels, or use lt.atomic_*",
            name, verb(w->kind), verb(other->kind), other->use->loc.line);
  }
  ir_fail(k, w->use->loc,
          "%s is %s%s in a parallel loop at an index that is not one element per iteration: several iterations "
          "%s the same element at the same time (a data race); index it by the loop's index, make the loop "
          "serial (lt.serial), or use lt.atomic_*",
          name, verb(w->kind), read && w->kind != READ ? " and read" : "", w->kind == ATOMIC ? "read and update" : "write");
}

static void check_task(ir_kernel *k, ir_stmt *task, gather_state *g) {
  g->task = task;
  g->n = 0;
  ir_walk(task->blocks[0], gather, g);
  if (g->n == 0) return;
  bool *done = ir_alloc(k, (size_t)g->n * sizeof *done);
  int *of = ir_alloc(k, (size_t)g->n * sizeof *of);
  for (int i = 0; i < g->n; i++) {
    if (done[i]) continue;
    int n = 0;
    for (int j = i; j < g->n; j++)
      if (!done[j] && same_object(g, &g->list[i], &g->list[j])) {
        done[j] = true;
        of[n++] = j;
      }
    check_object(k, g, of, n);
  }
}

void ir_check_races(ir_kernel *k) {
  if (!k->offloaded) return;
  gather_state *g = ir_alloc(k, sizeof *g);
  g->k = k;
  for (ir_stmt *s = k->body->first; s; s = s->next) {
    if ((s->op != IR_task_range_for && s->op != IR_task_struct_for) || !s->blocks[0]) continue;
    const ir_task_range *r = &s->range;
    if (s->op == IR_task_range_for && r->begin_gtmp < 0 && r->end_gtmp < 0 && r->end - r->begin <= 1) continue;
    check_task(k, s, g);
  }
}
