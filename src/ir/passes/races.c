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
** others write. Two ndarray arguments are checked as different arrays; where
** they would race as one, the pair goes to k->noalias, and a launch that
** passes one ndarray for both is refused (src/program/kernel.c). This is a
** check; it changes nothing else (ir_check_races).
*/
#include "../affine.h"
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
  /* the index per position: a field's indices; an ndarray's per axis when
  ** its linear index has the form lt.ndarray builds, else the linear one */
  ir_stmt *ix[IR_MAX_INDICES];
  int nix;
} access;

enum { READ, WRITE, ATOMIC };

typedef struct {
  ir_kernel *k;
  ir_stmt *task;
  access *list;                   /* arena-owned; grows by doubling */
  int n, cap;
} gather_state;

static bool pure(ir_op op) { return (ir_op_flags(op) & IR_PURE) != 0; }

/* An ndarray's linear index as stdlib/lattice/ndarray.lua builds it, in
** Horner form ((i0 * e1 + i1) * e2 + i2 ...) with each extent e_k a cast of
** an argument: the indices i0, i1, ... in ix; 1 (ix[0] the linear index)
** when it has another form. */
static int ndarray_axes(ir_stmt *lin, ir_stmt **ix) {
  ir_stmt *rev[IR_MAX_INDICES];
  int n = 0;
  ir_stmt *e = lin;
  while (n < IR_MAX_INDICES - 1 && e && e->op == IR_add && e->nops == 2 && e->ops[0] && e->ops[0]->op == IR_mul) {
    ir_stmt *m = e->ops[0], *ext = m->ops[1];
    if (ext && ext->op == IR_cast) ext = ext->ops[0];
    if (!ext || ext->op != IR_arg) break;
    rev[n++] = e->ops[1];
    e = m->ops[0];
  }
  ix[0] = e;
  for (int i = 0; i < n; i++) ix[i + 1] = rev[n - 1 - i];
  return n + 1;
}

static void gather(ir_stmt *s, void *ud) {
  gather_state *g = ud;
  int kind;
  if (s->op == IR_global_load) kind = READ;
  else if (s->op == IR_global_store) kind = WRITE;
  else if (ir_op_is_atomic(s->op)) kind = ATOMIC;
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
  access *a = &g->list[g->n++];
  *a = (access){.ptr = p, .use = s, .kind = kind};
  if (p->op == IR_global_ptr) {
    a->nix = p->nops < IR_MAX_INDICES ? p->nops : IR_MAX_INDICES;
    for (int i = 0; i < a->nix; i++) a->ix[i] = p->ops[i];
  } else {
    a->nix = ndarray_axes(p->ops[1], a->ix);
  }
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

/* A divisor or modulus that does not change between iterations: a constant
** coefficient times invariant factors (extents of lt.ndrange's loops over
** run-time bounds, which can be arguments or their products). */
enum { MAX_FACTORS = 8 };
typedef struct {
  int64_t coef;
  const ir_stmt *f[MAX_FACTORS];
  int nf;
  bool ok;                        /* false: not representable */
} radix;

static radix radix_one(void) { return (radix){.coef = 1, .ok = true}; }

/* r times the invariant value v */
static radix radix_times(const gather_state *g, radix r, const ir_stmt *v, int depth) {
  if (!r.ok || !v || depth > MAX_DEPTH) return (radix){.ok = false};
  if (v->op == IR_cast && !ir_type_is_float(v->type) && !ir_type_is_float(v->ops[0]->type))
    return radix_times(g, r, v->ops[0], depth + 1);
  if (v->op == IR_const) {
    if (ir_type_is_float(v->type) || v->imm.ival <= 0 || v->imm.ival > (1ll << 31)) return (radix){.ok = false};
    if (r.coef > (1ll << 31)) return (radix){.ok = false};
    r.coef *= v->imm.ival;
    return r;
  }
  if (v->op == IR_mul) return radix_times(g, radix_times(g, r, v->ops[0], depth + 1), v->ops[1], depth + 1);
  if (r.nf == MAX_FACTORS) return (radix){.ok = false};
  r.f[r.nf++] = v;
  return r;
}

static bool radix_same(const gather_state *g, const radix *a, const radix *b) {
  if (!a->ok || !b->ok || a->coef != b->coef || a->nf != b->nf) return false;
  bool used[MAX_FACTORS] = {false};
  for (int i = 0; i < a->nf; i++) {
    int j = 0;
    while (j < b->nf && (used[j] || !same_value(g, a->f[i], b->f[j], 0))) j++;
    if (j == b->nf) return false;
    used[j] = true;
  }
  return true;
}

/* One index expression as a function of the task's index k:
** ((index_k // div) % mod) + something the iteration does not change. */
typedef enum { INVARIANT, FORM, OPAQUE } shape_kind;
typedef struct {
  shape_kind kind;
  int64_t k;
  radix div, mod;                 /* mod.ok false: no modulus */
} shape;

static shape shape_of(const gather_state *g, const ir_stmt *v, const ir_stmt *task, int depth) {
  shape opaque = {.kind = OPAQUE};
  if (!varies(v, task, 0)) return (shape){.kind = INVARIANT};
  if (depth > MAX_DEPTH) return opaque;
  switch (v->op) {
  case IR_loop_index: return (shape){.kind = FORM, .k = v->imm.ival, .div = radix_one()};
  case IR_cast:
    return ir_type_is_float(v->type) || ir_type_is_float(v->ops[0]->type) ? opaque
                                                                          : shape_of(g, v->ops[0], task, depth + 1);
  case IR_add:
  case IR_sub: {
    bool va = varies(v->ops[0], task, 0), vb = varies(v->ops[1], task, 0);
    if (va && !vb) return shape_of(g, v->ops[0], task, depth + 1);
    if (vb && !va && v->op == IR_add) return shape_of(g, v->ops[1], task, depth + 1);
    return opaque;
  }
  case IR_floordiv:
  case IR_mod: {
    shape s = shape_of(g, v->ops[0], task, depth + 1);
    if (s.kind != FORM || s.mod.ok || varies(v->ops[1], task, 0)) return opaque;
    if (v->op == IR_floordiv) {
      s.div = radix_times(g, s.div, v->ops[1], 0);
      if (!s.div.ok) return opaque;
    } else {
      s.mod = radix_times(g, radix_one(), v->ops[1], 0);
      if (!s.mod.ok) return opaque;
    }
    return s;
  }
  default: return opaque;
  }
}

/* The number of indices of the task: 1 for a range, the level's for a struct-for. */
static int task_indices(const ir_kernel *k, const ir_stmt *task) {
  if (task->op != IR_task_struct_for && task->op != IR_struct_for) return 1;
  const ir_snode *sn = k->prog ? ir_program_snode(k->prog, task->aux) : NULL;
  return sn ? sn->nidx : IR_MAX_INDICES + 1;   /* unknown: never proven */
}

typedef enum { DISTINCT, UNKNOWN, SHARED } verdict;

/* Whether the index expressions `ix` (the positions all accesses agree on)
** give different iterations different elements. */
static verdict distinct_per_iteration(const gather_state *g, const ir_kernel *k, const ir_stmt *task, ir_stmt **ix,
                                      int n) {
  shape sh[IR_MAX_INDICES + 1];
  int nf = 0;
  for (int i = 0; i < n; i++) {
    shape s = shape_of(g, ix[i], task, 0);
    if (s.kind == OPAQUE) return UNKNOWN;
    if (s.kind == FORM) sh[nf++] = s;
  }
  int need = task_indices(k, task);
  for (int idx = 0; idx < need; idx++) {
    /* the forms of task index idx must recover it as the digits of a mixed
    ** radix: divisors 1, m1, m1*m2, ... each the previous times its modulus,
    ** the last without a modulus */
    radix want = radix_one();
    for (int step = 0;; step++) {
      int at = -1;
      for (int i = 0; i < nf && at < 0; i++)
        if (sh[i].k == idx && radix_same(g, &sh[i].div, &want)) at = i;
      if (at < 0 || step > nf) return SHARED;
      if (!sh[at].mod.ok) break;
      for (int f = 0; f < sh[at].mod.nf; f++) want = radix_times(g, want, sh[at].mod.f[f], 0);
      if (want.ok && want.coef <= (1ll << 31)) want.coef *= sh[at].mod.coef;
      else return SHARED;
    }
  }
  return DISTINCT;
}


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
/* Checks the accesses `of` of one object; a race is a user error when fail,
** else only the answer (true: a race). */
static bool check_object(ir_kernel *k, gather_state *g, const int *of, int n, bool fail) {
  bool write = false, atomic = false, read = false;
  for (int i = 0; i < n; i++) {
    int kind = g->list[of[i]].kind;
    write |= kind == WRITE;
    atomic |= kind == ATOMIC;
    read |= kind == READ;
  }
  if (!(read && (write || atomic)) && !(write && atomic)) return false;   /* only written, or only atomics */
  const access *first = &g->list[of[0]];
  int nix = first->nix;
  ir_stmt *common[IR_MAX_INDICES + 1];
  int ncommon = 0;
  for (int d = 0; d < nix; d++) {
    bool same = true;
    for (int i = 1; i < n && same; i++) {
      const access *a = &g->list[of[i]];
      same = a->nix == nix && same_value(g, first->ix[d], a->ix[d], 0);
    }
    if (same) common[ncommon++] = first->ix[d];
  }
  verdict v = distinct_per_iteration(g, k, g->task, common, ncommon);
  if (v != SHARED) return false;
  if (!fail) return true;
  /* blame a write (or update) and, when there is one, an access at another index */
  const access *w = NULL, *other = NULL;
  for (int i = 0; i < n && !w; i++)
    if (g->list[of[i]].kind != READ) w = &g->list[of[i]];
  for (int i = 0; i < n && !other; i++) {
    const access *a = &g->list[of[i]];
    if (a == w) continue;
    bool same = a->nix == w->nix;
    for (int d = 0; same && d < a->nix; d++) same = same_value(g, a->ix[d], w->ix[d], 0);
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

/* The ndarray argument whose data an ext_ptr addresses, or NULL. */
static const ir_stmt *base_arg(const ir_stmt *p) {
  const ir_stmt *b = p->op == IR_ext_ptr ? p->ops[0] : NULL;
  return b && b->op == IR_arg ? b : NULL;
}

/* Two ndarray arguments are different arrays to the check above; when they
** would race as one array, the kernel records the pair, and a launch given
** one ndarray for both is refused (prog_launch). */
static void check_aliases(ir_kernel *k, gather_state *g, int *of) {
  for (int i = 0; i < g->n; i++) {
    const ir_stmt *a = base_arg(g->list[i].ptr);
    if (!a) continue;
    for (int j = 0; j < g->n; j++) {
      const ir_stmt *b = base_arg(g->list[j].ptr);
      if (!b || b->aux <= a->aux) continue;
      bool seen = false;   /* each pair once */
      for (int q = 0; q < k->nnoalias && !seen; q++) seen = k->noalias[q].a == a->aux && k->noalias[q].b == b->aux;
      if (seen) continue;
      int n = 0, line = 0;
      for (int m = 0; m < g->n; m++) {
        const ir_stmt *c = base_arg(g->list[m].ptr);
        if (c && (c->aux == a->aux || c->aux == b->aux)) {
          of[n++] = m;
          if (g->list[m].kind != READ && !line) line = g->list[m].use->loc.line;
        }
      }
      if (!check_object(k, g, of, n, false)) continue;
      if (k->nnoalias == IR_MAX_NOALIAS)
        ir_fail(k, g->list[i].use->loc,
                "more than %d pairs of ndarray arguments must be different arrays at a launch of this kernel "
                "(a parallel loop reads one at other elements than it writes the other); split the kernel",
                IR_MAX_NOALIAS);
      k->noalias[k->nnoalias++] = (ir_noalias){a->aux, b->aux, line};
    }
  }
}

/* Checks the accesses `of` of one field in groups: accesses that can never
** reach one element (x[s][i] and x[s + 1][j], s an argument: affine.c) do
** not race with each other, whatever their indices within the step. A group
** holds the accesses linked by "may overlap", so every pair that may meet
** is checked together as before. */
static void check_apart(ir_kernel *k, gather_state *g, int *of, int n) {
  int *group = ir_alloc(k, (size_t)n * sizeof *group), *sub = ir_alloc(k, (size_t)n * sizeof *sub);
  for (int i = 0; i < n; i++) group[i] = i;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (group[i] == group[j] || ir_accesses_disjoint(k, g->list[of[i]].ptr, g->list[of[j]].ptr)) continue;
      int from = group[j], to = group[i];
      for (int m = 0; m < n; m++)
        if (group[m] == from) group[m] = to;
    }
  for (int gi = 0; gi < n; gi++) {
    int m = 0;
    for (int i = 0; i < n; i++)
      if (group[i] == gi) sub[m++] = of[i];
    if (m) check_object(k, g, sub, m, true);
  }
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
    check_apart(k, g, of, n);
  }
  check_aliases(k, g, of);
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

/* Whether the field or ndarray access through p, inside loop (a range_for
** or struct_for before offload, or a task after), reaches a different
** element in every iteration (the autodiff pass: a store several iterations
** make to one element keeps one value but would give each its gradient). */
bool ir_one_element_per_iteration(ir_kernel *k, ir_stmt *loop, ir_stmt *p) {
  if (!p || (p->op != IR_global_ptr && p->op != IR_ext_ptr)) return false;
  gather_state g = {.k = k, .task = loop};
  ir_stmt *ix[IR_MAX_INDICES + 1];
  int n;
  if (p->op == IR_ext_ptr) {
    n = ndarray_axes(p->ops[1], ix);             /* an ndarray's indices per axis */
  } else {
    n = p->nops < IR_MAX_INDICES ? p->nops : IR_MAX_INDICES;
    for (int i = 0; i < n; i++) ix[i] = p->ops[i];
  }
  return distinct_per_iteration(&g, k, loop, ix, n) == DISTINCT;
}
