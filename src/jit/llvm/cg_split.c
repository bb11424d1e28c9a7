/*
** cg_split.c -- very large tasks compiled as several functions.
**
** LLVM's cost is not linear in the size of one loop or basic block. Field
** accesses carry a TBAA tag per place (cg_memory.c), so loop access analysis
** (loop vectorizer, loop load elimination) finds them independent without
** comparing them -- while the loop touches at most 250 locations: past
** that LLVM's alias set tracker gives up on telling them apart, and every
** pair of accesses is compared through scalar evolution, all fields being
** offsets from one root pointer. A kernel writing 500 fields in one loop
** compiled in 4 s (250 fields: 0.2 s), 1000 fields in 24 s; instruction
** selection and scheduling grow likewise with the size of a basic block.
** So a task whose body takes more than CG_SPLIT_ACCESSES field addresses
** (or holds more than CG_SPLIT_STMTS statements) is cut, between statements
** of the body's top level, into parts of at most CG_PART_ACCESSES addresses
** and CG_PART_STMTS statements. Each part is an internal, never inlined
** function with the task's signature that runs the task's loop (the range,
** the cells of a struct-for, or the single run of a serial task) over its
** part of the body only; the task's function calls the parts in order and
** returns after a part that raised an error (the launcher skips the
** remaining chunks then, and no statement after a failed one may run).
**
** Why the result is the same: a serial task runs the same statements in the
** same order. The iterations of a parallel task are independent (the
** outermost loops run in parallel, docs/language.md: what one iteration
** writes and another reads or writes is a race), so running part 1 for
** every iteration of [begin, end) and then part 2 keeps the order of each
** iteration's own statements, which is all a parallel loop promises.
**
** Where a cut may go: every value defined above it and used below it must
** be recomputable in the part below: pure arithmetic on constants,
** arguments, loop indices and dense field addresses, or a load of a dense
** field the task never writes (no locals, no sparse lookups). Each part
** recomputes the ones it uses (its "carry"); LLVM folds or hoists them. No
** cut follows a statement that may leave the task or its loop early
** (return; break or continue of the task's own loop): the parts after it
** would still run. A cut whose carry would hold more than CG_PART_STMTS / 4
** values is not taken. A task with no allowed cut compiles whole, as before.
*/
#include <stdlib.h>
#include <string.h>

#include "../../ir/snode.h"
#include "llvm_codegen.h"

/* Per statement of the task, by id (checked unique first). */
typedef struct {
  int n;                    /* k->next_id */
  int *top;                 /* top-level position of a body statement, -1 otherwise */
  int *last_use;            /* top-level statements of the body: last top-level position using it */
  signed char *remat;       /* 1 pure and recomputable, 0 not, -1 unknown */
  unsigned char *seen;      /* id uniqueness; then marks of a part's carry */
  unsigned char *written;   /* [IR_MAX_SNODES]: places the task stores to */
  bool ext_written;         /* the task stores through an ndarray */
  bool ok;
  const cg *c;
} plan;

static bool valid_id(const plan *p, const ir_stmt *s) { return s && s->id >= 0 && s->id < p->n; }

/* Checks the ids are unique; notes what the task writes. */
static void scan(ir_stmt *s, void *ud) {
  plan *p = ud;
  if (!valid_id(p, s) || p->seen[s->id]) p->ok = false;
  else p->seen[s->id] = 1;
  if (s->op == IR_global_store || s->op == IR_atomic_add || s->op == IR_atomic_sub || s->op == IR_atomic_min ||
      s->op == IR_atomic_max) {
    const ir_stmt *ptr = s->ops[0];
    if (ptr->op == IR_global_ptr && ptr->aux >= 0 && ptr->aux < IR_MAX_SNODES) p->written[ptr->aux] = 1;
    else if (ptr->op == IR_global_ptr) p->ok = false;
    else p->ext_written = true;
  }
}

/* What a statement costs LLVM: itself and everything under it. */
typedef struct {
  int stmts, accesses;
} weight;

/* An address LLVM's alias analysis tracks in a loop (a load and a store
** through one global_ptr are one), or a call into the sparse runtime. */
static bool is_access(ir_op op) {
  switch (op) {
  case IR_global_ptr: case IR_ext_ptr: case IR_global_tmp: case IR_snode_activate: case IR_snode_deactivate:
  case IR_snode_is_active: case IR_snode_append: case IR_snode_length:
    return true;
  default: return false;
  }
}

static void add_weight(const ir_block *blk, weight *w) {
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    w->stmts++;
    w->accesses += is_access(s->op);
    add_weight(s->blocks[0], w);
    add_weight(s->blocks[1], w);
  }
}

static weight weigh(const ir_stmt *s) {
  weight w = {1, is_access(s->op)};
  add_weight(s->blocks[0], &w);
  add_weight(s->blocks[1], &w);
  return w;
}

/* Whether s or a statement under it may leave the task or the task's loop
** early; depth counts the loops around s inside the body. */
static bool escapes(const ir_stmt *s, int depth) {
  if (s->op == IR_return) return true;
  if ((s->op == IR_break || s->op == IR_continue) && depth == 0) return true;
  int d = depth + (s->op == IR_while || s->op == IR_range_for);
  for (int b = 0; b < 2; b++)
    for (const ir_stmt *t = s->blocks[b] ? s->blocks[b]->first : NULL; t; t = t->next)
      if (escapes(t, d)) return true;
  return false;
}

/* Records, for every operand defined at the body's top level, that the
** top-level statement at position pos uses it. */
static void note_uses(plan *p, const ir_block *blk, int pos) {
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    for (int i = 0; i < s->nops; i++) {
      const ir_stmt *o = s->ops[i];
      if (valid_id(p, o) && p->top[o->id] >= 0 && p->last_use[o->id] < pos) p->last_use[o->id] = pos;
    }
    note_uses(p, s->blocks[0], pos);
    note_uses(p, s->blocks[1], pos);
  }
}

/* Whether a body statement can be recomputed in a later part: a pure value
** whose operands can be too, or a load of a dense field the task never
** writes (fields never share memory, cg_memory.c; ndarrays might, so none
** may be written either). */
static bool remat(plan *p, const ir_stmt *s) {
  if (!valid_id(p, s) || p->top[s->id] < 0) return false;
  if (p->remat[s->id] >= 0) return p->remat[s->id];
  bool ok;
  switch (s->op) {
  case IR_global_ptr: {
    /* a dense field's address is arithmetic; a sparse one is a lookup (or
    ** an activation), which a statement between the parts may change */
    const ir_snode *sn = ir_program_snode(p->c->k->prog, s->aux);
    ok = sn && !ir_snode_under_sparse(sn);
    break;
  }
  case IR_global_load:
    ok = s->ops[0]->op == IR_global_ptr && s->ops[0]->aux >= 0 && s->ops[0]->aux < IR_MAX_SNODES &&
         !p->written[s->ops[0]->aux] && !p->ext_written;
    break;
  case IR_alloca: ok = false; break;
  default: ok = (ir_op_flags(s->op) & IR_PURE) && !(ir_op_flags(s->op) & (IR_EFFECT | IR_BLOCKS)); break;
  }
  p->remat[s->id] = 0;   /* operands come first in SSA: no cycle */
  for (int i = 0; ok && i < s->nops; i++) ok = remat(p, s->ops[i]);
  p->remat[s->id] = ok;
  return ok;
}

/* Marks the top-level values defined before position `from` that the
** statements of blk use, and what they are computed from. */
static void mark_carry(plan *p, const ir_stmt *s, int from);
static void mark_block(plan *p, const ir_block *blk, int from) {
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    for (int i = 0; i < s->nops; i++) mark_carry(p, s->ops[i], from);
    mark_block(p, s->blocks[0], from);
    mark_block(p, s->blocks[1], from);
  }
}

static void mark_carry(plan *p, const ir_stmt *o, int from) {
  if (!valid_id(p, o) || p->top[o->id] < 0 || p->top[o->id] >= from || p->seen[o->id]) return;
  p->seen[o->id] = 1;
  for (int i = 0; i < o->nops; i++) mark_carry(p, o->ops[i], from);
}

static void plan_free(plan *p) {
  free(p->top);
  free(p->last_use);
  free(p->remat);
  free(p->seen);
  free(p->written);
}

static bool add_part(cg_split *out, ir_stmt *first) {
  ir_stmt **f = realloc(out->first, (size_t)(out->nparts + 1) * sizeof *f);
  if (!f) return false;
  out->first = f;
  out->first[out->nparts++] = first;
  return true;
}

/* The carry of each part: the marked statements in body order. */
static bool carries(plan *p, ir_block *body, cg_split *out) {
  out->carry = calloc((size_t)out->nparts, sizeof *out->carry);
  out->ncarry = calloc((size_t)out->nparts, sizeof *out->ncarry);
  if (!out->carry || !out->ncarry) return false;
  for (int m = 1; m < out->nparts; m++) {
    int from = p->top[out->first[m]->id];
    memset(p->seen, 0, (size_t)p->n);
    ir_stmt *end = m + 1 < out->nparts ? out->first[m + 1] : NULL;
    for (ir_stmt *s = out->first[m]; s != end; s = s->next) {
      for (int i = 0; i < s->nops; i++) mark_carry(p, s->ops[i], from);
      mark_block(p, s->blocks[0], from);
      mark_block(p, s->blocks[1], from);
    }
    int n = 0;
    for (ir_stmt *s = body->first; s != out->first[m]; s = s->next) n += p->seen[s->id];
    if (n && !(out->carry[m] = malloc((size_t)n * sizeof *out->carry[m]))) return false;
    for (ir_stmt *s = body->first; s != out->first[m]; s = s->next)
      if (p->seen[s->id]) out->carry[m][out->ncarry[m]++] = s;
  }
  return true;
}

void cg_split_free(cg_split *sp) {
  for (int m = 0; sp->carry && m < sp->nparts; m++) free(sp->carry[m]);
  free(sp->carry);
  free(sp->ncarry);
  free(sp->first);
  memset(sp, 0, sizeof *sp);
}

bool cg_split_plan(const cg *c, ir_stmt *task, cg_split *out) {
  memset(out, 0, sizeof *out);
  ir_block *body = task->blocks[0];
  weight all = {0, 0};
  add_weight(body, &all);
  if (all.stmts <= CG_SPLIT_STMTS && all.accesses <= CG_SPLIT_ACCESSES) return true;
  plan p = {.n = c->k->next_id, .ok = true, .c = c};
  int ntop = 0;
  for (ir_stmt *s = body->first; s; s = s->next) ntop++;
  p.top = malloc((size_t)(p.n > 0 ? p.n : 1) * sizeof *p.top);
  p.last_use = malloc((size_t)(p.n > 0 ? p.n : 1) * sizeof *p.last_use);
  p.remat = malloc((size_t)(p.n > 0 ? p.n : 1));
  p.seen = calloc((size_t)(p.n > 0 ? p.n : 1), 1);
  p.written = calloc(IR_MAX_SNODES, 1);
  weight *size = calloc((size_t)ntop + 1, sizeof *size);
  int *blocked = calloc((size_t)ntop + 2, sizeof *blocked);   /* difference arrays over cuts */
  int *carried = calloc((size_t)ntop + 2, sizeof *carried);
  bool ok = p.top && p.last_use && p.remat && p.seen && p.written && size && blocked && carried;
  if (ok) ir_walk(body, scan, &p);
  if (!ok || !p.ok) goto done;   /* out of memory or ids not unique: compile whole */
  for (int i = 0; i < p.n; i++) p.top[i] = p.last_use[i] = -1, p.remat[i] = -1;
  int pos = 0;
  for (ir_stmt *s = body->first; s; s = s->next) p.top[s->id] = pos++;
  pos = 0;
  for (ir_stmt *s = body->first; s; s = s->next, pos++) {
    for (int i = 0; i < s->nops; i++) {
      const ir_stmt *o = s->ops[i];
      if (valid_id(&p, o) && p.top[o->id] >= 0 && p.last_use[o->id] < pos) p.last_use[o->id] = pos;
    }
    note_uses(&p, s->blocks[0], pos);
    note_uses(&p, s->blocks[1], pos);
    size[pos] = weigh(s);
  }
  /* cut j (before top-level statement j) is crossed by every value defined
  ** at d < j and used at u >= j: cuts d+1 .. u */
  pos = 0;
  for (ir_stmt *s = body->first; s; s = s->next, pos++) {
    int u = p.last_use[s->id];
    if (u > pos) {
      int *a = remat(&p, s) ? carried : blocked;
      if (a == carried && s->op == IR_const) a = NULL;   /* constants cost nothing */
      if (a) a[pos + 1]++, a[u + 1]--;
    }
    if (escapes(s, 0)) blocked[pos + 1]++;   /* and every later cut (never decremented) */
  }
  memset(p.seen, 0, (size_t)p.n);
  weight acc = {0, 0};
  int nblocked = 0, ncarried = 0;
  pos = 0;
  for (ir_stmt *s = body->first; s; s = s->next, pos++) {
    nblocked += blocked[pos];
    ncarried += carried[pos];
    bool full = acc.stmts + size[pos].stmts > CG_PART_STMTS || acc.accesses + size[pos].accesses > CG_PART_ACCESSES;
    if (pos == 0 || (full && nblocked == 0 && ncarried <= CG_PART_STMTS / 4)) {
      if (!add_part(out, s)) { ok = false; goto done; }
      acc = (weight){0, 0};
    }
    acc.stmts += size[pos].stmts;
    acc.accesses += size[pos].accesses;
  }
  if (out->nparts > 1) ok = carries(&p, body, out);
done:
  if (!ok || out->nparts <= 1) cg_split_free(out);
  free(size);
  free(blocked);
  free(carried);
  plan_free(&p);
  return ok;
}
