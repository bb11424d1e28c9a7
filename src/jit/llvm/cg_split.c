/*
** cg_split.c -- very large tasks and blocks compiled as several functions.
**
** LLVM's cost is not linear in the size of one loop or basic block. Field
** accesses carry a TBAA tag per place (cg_memory.c), so loop access analysis
** (loop vectorizer, loop load elimination) finds them independent without
** comparing them -- while the loop touches at most 250 locations: past
** that LLVM's alias set tracker gives up on telling them apart, and every
** pair of accesses is compared through scalar evolution, all fields being
** offsets from one root pointer. A kernel writing 250 fields in one loop
** compiled in 0.25 s, 500 in 3-4 s, 1000 in 16-21 s, 2000 in 100-120 s;
** instruction selection and scheduling grow likewise with the size of a
** basic block. So code taking more than CG_SPLIT_ACCESSES field addresses
** (or holding more than CG_SPLIT_STMTS statements) in one block is cut,
** between statements of that block, into pieces of at most
** CG_PART_ACCESSES addresses and CG_PART_STMTS statements, each compiled
** as an internal, never inlined function. Two ways:
**
** Parts of a task (cg_split_plan; the body of a range_for, struct_for or
** serial task): each part is a function with the task's signature that
** runs the task's loop (the range, the cells of a struct-for, or the single
** run of a serial task) over its part of the body only; the task's function
** calls the parts in order and returns after a part that raised an error
** (the launcher skips the remaining chunks then, and no statement after a
** failed one may run). A serial task runs the same statements in the same
** order. The iterations of a parallel task are independent (the outermost
** loops run in parallel, docs/language.md: what one iteration writes and
** another reads or writes is a race), so running part 1 for every iteration
** of [begin, end) and then part 2 keeps the order of each iteration's own
** statements, which is all a parallel loop promises. Every value used across
** a cut must be recomputable in the later part: pure arithmetic on
** constants, arguments, loop indices and dense field addresses, or a load of
** a dense field the task never writes (no locals, no sparse lookups). Each
** part recomputes the ones it uses (its "carry"); LLVM folds or hoists them.
** A cut whose carry would hold more than CG_PART_STMTS / 4 values is not
** taken. This keeps the parts' loops vectorizable.
**
** Pieces of a block (cg_outline; any other block of a range_for or serial
** task that is too large, e.g. the row loop of an ndrange, an if around the
** whole body, or a task body whose values cannot be recomputed): each piece
** is a function (ctx, env) called in place, once per execution of the
** block, so nothing runs in another order. The values a piece uses from
** outside it (earlier pieces, enclosing blocks, loop indices) go through
** env, an array of 8-byte slots in the caller's frame; after each call the
** caller returns when the piece raised an error. No local variable (alloca)
** may be used across a cut, its storage being the piece's frame. Not in
** struct-for tasks, whose bodies use the cell loop's state directly.
**
** Either way no cut follows a statement that may leave the block early
** (return; break or continue of a loop around it): what follows the cut
** would still run; a piece holding such a statement stays in place. Cuts
** are made only when two pieces at least hold field accesses. Code with no
** allowed cut compiles whole, as before.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/snode.h"
#include "llvm_codegen.h"

/* ---- weights ------------------------------------------------------------------------ */

/* What a statement costs LLVM: itself and everything under it. */
typedef struct {
  int stmts, accesses;
} weight;

/* An address LLVM's alias analysis tracks in a loop (a load and a store
** through one global_ptr are one), or a call into the sparse runtime. */
static bool is_access(ir_op op) {
  switch (op) {
  case IR_global_ptr: case IR_ext_ptr: case IR_global_tmp: case IR_snode_activate: case IR_snode_deactivate:
  case IR_snode_is_active: case IR_snode_append: case IR_snode_reserve: case IR_snode_length:
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

/* Whether first .. end (exclusive) of a block is too large. */
static bool range_too_large(const ir_stmt *first, const ir_stmt *end) {
  weight w = {0, 0};
  for (const ir_stmt *s = first; s != end; s = s->next) {
    weight x = weigh(s);
    w.stmts += x.stmts;
    w.accesses += x.accesses;
  }
  return w.stmts > CG_SPLIT_STMTS || w.accesses > CG_SPLIT_ACCESSES;
}

/* Whether s or a statement under it may leave the block being cut (return;
** break or continue of a loop around that block); depth counts the loops
** between s and the block. */
static bool escapes(const ir_stmt *s, int depth) {
  if (s->op == IR_return) return true;
  if ((s->op == IR_break || s->op == IR_continue) && depth == 0) return true;
  int d = depth + (s->op == IR_while || s->op == IR_range_for);
  for (int b = 0; b < 2; b++)
    for (const ir_stmt *t = s->blocks[b] ? s->blocks[b]->first : NULL; t; t = t->next)
      if (escapes(t, d)) return true;
  return false;
}

/* ---- where a block may be cut ------------------------------------------------------------- */

/* A block's statements, indexed by id (checked unique first). */
typedef struct {
  const cg *c;
  ir_block *blk;
  int n;                    /* k->next_id */
  int ntop;
  ir_stmt **at;             /* [ntop] the top-level statements in order */
  weight *size;             /* [ntop] */
  int *pos;                 /* [n] position of the top-level statement holding it; -1: outside */
  int *last_use;            /* [n] top-level statements: last position using them; -1: none */
  signed char *remat;       /* [n] 1 recomputable, 0 not, -1 not known yet */
  unsigned char *mark;      /* [n] */
  unsigned char *written;   /* [IR_MAX_SNODES] places the block stores to */
  bool ext_written;         /* the block stores through an ndarray */
  bool ok;
} plan;

static bool valid_id(const plan *p, const ir_stmt *s) { return s && s->id >= 0 && s->id < p->n; }

/* Whether s is one of the statements being cut (not one under them). */
static bool is_top(const plan *p, const ir_stmt *s) {
  return valid_id(p, s) && s->parent == p->blk && p->pos[s->id] >= 0;
}

static void plan_free(plan *p) {
  free(p->at);
  free(p->size);
  free(p->pos);
  free(p->last_use);
  free(p->remat);
  free(p->mark);
  free(p->written);
}

/* Gives s and the statements under it position q (ids must be unique,
** else !ok) and notes what they write. */
static void place(plan *p, const ir_stmt *s, int q) {
  if (!valid_id(p, s) || p->pos[s->id] >= 0) {
    p->ok = false;
    return;
  }
  p->pos[s->id] = q;
  if (ir_op_flags(s->op) & IR_STORE) {
    const ir_stmt *ptr = s->ops[0];
    if (ptr->op == IR_global_ptr && ptr->aux >= 0 && ptr->aux < IR_MAX_SNODES) p->written[ptr->aux] = 1;
    else if (ptr->op == IR_global_ptr) p->ok = false;
    else p->ext_written = true;
  }
  for (int b = 0; b < 2; b++)
    for (const ir_stmt *t = s->blocks[b] ? s->blocks[b]->first : NULL; t && p->ok; t = t->next) place(p, t, q);
}

/* Records that position q uses the top-level values used in blk. */
static void note_uses(plan *p, const ir_block *blk, int q) {
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    for (int i = 0; i < s->nops; i++) {
      const ir_stmt *o = s->ops[i];
      if (is_top(p, o) && p->last_use[o->id] < q) p->last_use[o->id] = q;
    }
    note_uses(p, s->blocks[0], q);
    note_uses(p, s->blocks[1], q);
  }
}

/* The statements of blk from first up to end (exclusive; NULL: to the end),
** to be cut; the others are "outside". false: out of memory, or (with
** !p->ok) ids not unique: the statements stay whole. */
static bool plan_init(plan *p, const cg *c, ir_block *blk, ir_stmt *first, ir_stmt *end) {
  memset(p, 0, sizeof *p);
  p->c = c;
  p->blk = blk;
  p->n = c->k->next_id > 0 ? c->k->next_id : 1;
  p->ok = true;
  for (ir_stmt *s = first; s != end; s = s->next) p->ntop++;
  p->at = malloc((size_t)(p->ntop + 1) * sizeof *p->at);
  p->size = malloc((size_t)(p->ntop + 1) * sizeof *p->size);
  p->pos = malloc((size_t)p->n * sizeof *p->pos);
  p->last_use = malloc((size_t)p->n * sizeof *p->last_use);
  p->remat = malloc((size_t)p->n);
  p->mark = calloc((size_t)p->n, 1);
  p->written = calloc(IR_MAX_SNODES, 1);
  if (!p->at || !p->size || !p->pos || !p->last_use || !p->remat || !p->mark || !p->written) return false;
  for (int i = 0; i < p->n; i++) p->pos[i] = p->last_use[i] = -1, p->remat[i] = -1;
  int q = 0;
  for (ir_stmt *s = first; s != end && p->ok; s = s->next, q++) {
    p->at[q] = s;
    p->size[q] = weigh(s);
    place(p, s, q);
  }
  if (!p->ok) return false;
  for (q = 0; q < p->ntop; q++) {
    ir_stmt *s = p->at[q];
    for (int i = 0; i < s->nops; i++) {
      const ir_stmt *o = s->ops[i];
      if (is_top(p, o) && p->last_use[o->id] < q) p->last_use[o->id] = q;
    }
    note_uses(p, s->blocks[0], q);
    note_uses(p, s->blocks[1], q);
  }
  return true;
}

/* Whether a top-level statement can be recomputed in a later part: a pure
** value whose operands can be too, or a load of a dense field the block
** never writes (fields never share memory, cg_memory.c; ndarrays might,
** so none may be written either). */
static bool remat(plan *p, const ir_stmt *s) {
  if (!is_top(p, s)) return false;
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
  case IR_alloca: case IR_adstack: ok = false; break;   /* storage in the frame */
  default: ok = (ir_op_flags(s->op) & IR_PURE) && !(ir_op_flags(s->op) & (IR_EFFECT | IR_BLOCKS)); break;
  }
  p->remat[s->id] = 0;   /* operands come first in SSA: no cycle */
  for (int i = 0; ok && i < s->nops; i++) ok = remat(p, s->ops[i]);
  p->remat[s->id] = ok;
  return ok;
}

/* The pieces of p->blk, as the positions where they start (starts[0] = 0);
** their number (1: no cut pays), 0 when out of memory. With `pass`, values cross cuts
** through memory (outlining), so only locals stop a cut; without, every
** crossing value must be recomputable (parts of a task). */
static int plan_cuts(plan *p, bool pass, int **starts) {
  int n = p->ntop, nstarts = 0;
  int *blocked = calloc((size_t)n + 2, sizeof *blocked);   /* difference arrays over cuts: */
  int *crossing = calloc((size_t)n + 2, sizeof *crossing); /* cut q is before position q */
  *starts = malloc((size_t)(n + 1) * sizeof **starts);
  if (!blocked || !crossing || !*starts) goto done;
  for (int q = 0; q < n; q++) {
    ir_stmt *s = p->at[q];
    int u = p->last_use[s->id];
    if (u > q) {   /* s crosses cuts q+1 .. u */
      bool ok = pass ? s->op != IR_alloca && s->op != IR_adstack : remat(p, s);
      int *a = !ok ? blocked : s->op == IR_const ? NULL : crossing;   /* constants cost nothing */
      if (a) a[q + 1]++, a[u + 1]--;
    }
    if (escapes(s, 0)) blocked[q + 1]++;   /* and every later cut: never decremented */
  }
  weight acc = {0, 0};
  int nblocked = 0, ncrossing = 0;
  for (int q = 0; q < n; q++) {
    nblocked += blocked[q];
    ncrossing += crossing[q];
    bool full = acc.stmts + p->size[q].stmts > CG_PART_STMTS || acc.accesses + p->size[q].accesses > CG_PART_ACCESSES;
    if (q == 0 || (full && nblocked == 0 && ncrossing <= CG_PART_STMTS / 4)) {
      (*starts)[nstarts++] = q;
      acc = (weight){0, 0};
    }
    acc.stmts += p->size[q].stmts;
    acc.accesses += p->size[q].accesses;
  }
  /* cutting pays only where the accesses are divided: two pieces at least
  ** must have some (not a piece of index arithmetic and one of the rest) */
  int useful = 0;
  for (int m = 0; m < nstarts; m++) {
    int to = m + 1 < nstarts ? (*starts)[m + 1] : n, a = 0;
    for (int q = (*starts)[m]; q < to; q++) a += p->size[q].accesses;
    useful += a > 0;
  }
  if (useful < 2) nstarts = 1;
done:
  free(blocked);
  free(crossing);
  if (!nstarts) {
    free(*starts);
    *starts = NULL;
  }
  return nstarts;
}

/* ---- parts of a task ------------------------------------------------------------------------ */

/* Marks the top-level values defined before position `from` that o needs. */
static void mark_carry(plan *p, const ir_stmt *o, int from) {
  if (!is_top(p, o) || p->pos[o->id] >= from || p->mark[o->id]) return;
  p->mark[o->id] = 1;
  for (int i = 0; i < o->nops; i++) mark_carry(p, o->ops[i], from);
}

static void mark_uses(plan *p, const ir_block *blk, int from) {
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next) {
    for (int i = 0; i < s->nops; i++) mark_carry(p, s->ops[i], from);
    mark_uses(p, s->blocks[0], from);
    mark_uses(p, s->blocks[1], from);
  }
}

/* The carry of each part: the marked statements in body order. */
static bool carries(plan *p, const int *starts, cg_split *out) {
  out->carry = calloc((size_t)out->nparts, sizeof *out->carry);
  out->ncarry = calloc((size_t)out->nparts, sizeof *out->ncarry);
  if (!out->carry || !out->ncarry) return false;
  for (int m = 1; m < out->nparts; m++) {
    int from = starts[m], to = m + 1 < out->nparts ? starts[m + 1] : p->ntop;
    memset(p->mark, 0, (size_t)p->n);
    for (int q = from; q < to; q++) {
      ir_stmt *s = p->at[q];
      for (int i = 0; i < s->nops; i++) mark_carry(p, s->ops[i], from);
      mark_uses(p, s->blocks[0], from);
      mark_uses(p, s->blocks[1], from);
    }
    int n = 0;
    for (int q = 0; q < from; q++) n += p->mark[p->at[q]->id];
    if (n && !(out->carry[m] = malloc((size_t)n * sizeof *out->carry[m]))) return false;
    for (int q = 0; q < from; q++)
      if (p->mark[p->at[q]->id]) out->carry[m][out->ncarry[m]++] = p->at[q];
  }
  return true;
}

/* ---- the kernel's statements ----------------------------------------------------------- */

typedef struct {
  unsigned char *seen;
  int n;
  bool ok;
} id_check;

static void check_id(ir_stmt *s, void *ud) {
  id_check *k = ud;
  if (s->id < 0 || s->id >= k->n || k->seen[s->id]) k->ok = false;
  else k->seen[s->id] = 1;
}

bool cg_split_ids_ok(ir_kernel *k) {
  id_check chk = {calloc((size_t)(k->next_id > 0 ? k->next_id : 1), 1), k->next_id, true};
  if (!chk.seen) return false;
  ir_walk(k->body, check_id, &chk);
  free(chk.seen);
  return chk.ok;
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
  if (!c->ids_ok || !body || !body->first || !range_too_large(body->first, NULL)) return true;
  plan p;
  int *starts = NULL;
  bool ok = true;
  if (!plan_init(&p, c, body, body->first, NULL)) {
    ok = !p.ok;   /* ids not unique: whole; else out of memory */
    goto done;
  }
  out->nparts = plan_cuts(&p, false, &starts);
  if (!out->nparts) ok = false;
  if (out->nparts > 1) {
    if (!(out->first = malloc((size_t)out->nparts * sizeof *out->first))) ok = false;
    for (int m = 0; ok && m < out->nparts; m++) out->first[m] = p.at[starts[m]];
    ok = ok && carries(&p, starts, out);
  }
done:
  if (!ok || out->nparts <= 1) cg_split_free(out);
  free(starts);
  plan_free(&p);
  return ok;
}

/* ---- pieces of a block ------------------------------------------------------------------ */

/* What flows into piece [from, to) of p->blk: the values (statements, or
** loops for their current index) it uses that are defined before it, in
** the block or outside it; constants excepted (LLVM constants are valid in
** every function). */
typedef struct {
  const ir_stmt **v;
  int n, cap;
} stmt_list;

static void add_input(plan *p, stmt_list *in, const ir_stmt *o, int from) {
  if (!valid_id(p, o) || o->op == IR_const || p->mark[o->id] || p->pos[o->id] >= from) return;
  if (in->n == in->cap) {
    int cap = in->cap ? in->cap * 2 : 32;
    const ir_stmt **v = realloc(in->v, (size_t)cap * sizeof *v);
    if (!v) {
      p->ok = false;
      return;
    }
    in->v = v;
    in->cap = cap;
  }
  p->mark[o->id] = 1;
  in->v[in->n++] = o;
}

static void add_inputs(plan *p, stmt_list *in, const ir_stmt *s, int from) {
  for (int i = 0; i < s->nops; i++) add_input(p, in, s->ops[i], from);
  if (s->op == IR_loop_index && s->loop) add_input(p, in, s->loop, from);
  for (int b = 0; b < 2; b++)
    for (const ir_stmt *t = s->blocks[b] ? s->blocks[b]->first : NULL; t; t = t->next) add_inputs(p, in, t, from);
}

static void inputs(plan *p, stmt_list *in, int from, int to) {
  in->n = 0;
  memset(p->mark, 0, (size_t)p->n);
  for (int q = from; q < to; q++) add_inputs(p, in, p->at[q], from);
}

/* Whether the statement at q is used by a later piece (than one ending at to). */
static bool output(const plan *p, int q, int to) {
  const ir_stmt *s = p->at[q];
  return s->op != IR_const && p->last_use[s->id] >= to;
}

/* env: one 8-byte slot per value entering a piece */
typedef struct {
  LLVMValueRef env;
  int *slot;          /* [n] */
  LLVMTypeRef *type;  /* [n] the LLVM type of what the slot holds; NULL: nothing stored yet */
} env_map;

/* Everything cg_outline allocates, in one place: freed on the way out and
** when code generation fails inside (cg_fail unwinds to cg_build). */
typedef struct {
  plan p;
  int *starts;
  stmt_list in;
  env_map e;
  LLVMValueRef *saved;   /* piece_function's, while it runs */
} outline_state;

static void outline_free(outline_state *o) {
  free(o->in.v);
  free(o->e.slot);
  free(o->e.type);
  free(o->starts);
  free(o->saved);
  plan_free(&o->p);
  free(o);
}

static LLVMValueRef slot_ptr(cg *c, const env_map *e, const ir_stmt *o) {
  LLVMValueRef idx = LLVMConstInt(c->t_i64, (unsigned long long)e->slot[o->id], 0);
  return LLVMBuildGEP2(c->b, c->t_i64, e->env, &idx, 1, "");
}

static void store_slot(cg *c, env_map *e, const ir_stmt *o) {
  LLVMValueRef v = cg_get(c, o);
  e->type[o->id] = LLVMTypeOf(v);
  LLVMBuildStore(c->b, v, slot_ptr(c, e, o));
}

/* The values of `in` read from env in the function being generated; their
** values before in saved (when given). */
static void receive(cg *c, const env_map *e, const stmt_list *in, LLVMValueRef *saved) {
  for (int i = 0; i < in->n; i++) {
    const ir_stmt *o = in->v[i];
    if (saved) saved[i] = cg_get(c, o);
    cg_set(c, o, LLVMBuildLoad2(c->b, e->type[o->id], slot_ptr(c, e, o), ""));
  }
}

/* Piece [from, to) as a function (ctx, env); returns it. Leaves the
** caller's state (function, builder, value map) as it was. */
static LLVMValueRef piece_function(cg *c, outline_state *o, int from, int to) {
  plan *p = &o->p;
  env_map *e = &o->e;
  const stmt_list *in = &o->in;
  char name[240];
  size_t len;
  snprintf(name, sizeof name, "%.200s_piece%d", LLVMGetValueName2(c->fn, &len), c->npieces++);
  LLVMTypeRef params[2] = {c->t_ptr, c->t_ptr};
  LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->t_void, params, 2, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, noinline, 0));
  if (!(o->saved = malloc((size_t)(in->n + 1) * sizeof *o->saved))) cg_fail(c, p->at[from], "out of memory");
  LLVMValueRef saved_fn = c->fn, saved_ctxv = c->ctxv, saved_env = e->env;
  LLVMBasicBlockRef saved_entry = c->entry, saved_bb = LLVMGetInsertBlock(c->b);
  int saved_nloops = c->nloops;
  c->fn = fn;
  c->ctxv = LLVMGetParam(fn, 0);
  e->env = LLVMGetParam(fn, 1);
  c->entry = cg_new_bb(c, "entry");
  LLVMBasicBlockRef body = cg_new_bb(c, "body");
  LLVMPositionBuilderAtEnd(c->b, body);
  c->nloops = 0;   /* no jump leaves a piece (plan_cuts) */
  receive(c, e, in, o->saved);
  for (int q = from; q < to; q++) cg_stmt(c, p->at[q]);
  cg_open(c);
  for (int q = from; q < to; q++)
    if (output(p, q, to)) store_slot(c, e, p->at[q]);
  LLVMBuildRetVoid(c->b);
  LLVMPositionBuilderAtEnd(c->b, c->entry);
  LLVMBuildBr(c->b, body);
  for (int i = 0; i < in->n; i++) cg_set(c, in->v[i], o->saved[i]);
  free(o->saved);
  o->saved = NULL;
  c->fn = saved_fn;
  c->ctxv = saved_ctxv;
  e->env = saved_env;
  c->entry = saved_entry;
  c->nloops = saved_nloops;
  LLVMPositionBuilderAtEnd(c->b, saved_bb);
  return fn;
}

/* Calls piece fn; returns from the function being generated when the piece
** raised an error (as the check inside it would have done). */
static void call_piece(cg *c, LLVMValueRef fn, LLVMValueRef env) {
  LLVMValueRef args[2] = {c->ctxv, env};
  LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, args, 2, "");
  LLVMValueRef err = LLVMBuildLoad2(c->b, c->t_i32, cg_ctx_field(c, CG_CTX_ERROR), "");
  LLVMSetOrdering(err, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(err, 4);
  LLVMBasicBlockRef fail = cg_new_bb(c, "piece.fail"), ok = cg_new_bb(c, "piece.ok");
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, err, LLVMConstInt(c->t_i32, 0, 0), ""), fail, ok);
  LLVMPositionBuilderAtEnd(c->b, fail);
  cg_task_exit(c);
  LLVMBuildRetVoid(c->b);
  LLVMPositionBuilderAtEnd(c->b, ok);
}

bool cg_outline(cg *c, ir_block *blk, ir_stmt *first, ir_stmt *end) {
  if (!c->ids_ok || !c->outline_ok || !first || first == end || !range_too_large(first, end)) return false;
  outline_state *o = calloc(1, sizeof *o);
  if (!o) return false;
  plan *p = &o->p;
  env_map *e = &o->e;
  stmt_list *in = &o->in;
  int nstarts = 0, nslots = 0;
  if (!plan_init(p, c, blk, first, end) || (nstarts = plan_cuts(p, true, &o->starts)) < 2) goto whole;
  e->slot = malloc((size_t)p->n * sizeof *e->slot);
  e->type = calloc((size_t)p->n, sizeof *e->type);
  if (!e->slot || !e->type) goto whole;
  for (int i = 0; i < p->n; i++) e->slot[i] = -1;
  /* slots: what each piece receives from outside the block or sends on */
  for (int m = 0; m < nstarts; m++) {
    int from = o->starts[m], to = m + 1 < nstarts ? o->starts[m + 1] : p->ntop;
    inputs(p, in, from, to);
    if (!p->ok) goto whole;
    for (int i = 0; i < in->n; i++)
      if (e->slot[in->v[i]->id] < 0) e->slot[in->v[i]->id] = nslots++;
    for (int q = from; q < to; q++)
      if (output(p, q, to)) e->slot[p->at[q]->id] = nslots++;
  }
  jmp_buf outer;   /* a failure while emitting: free o, then on to cg_build */
  memcpy(outer, c->fail, sizeof outer);
  if (setjmp(c->fail)) {
    memcpy(c->fail, outer, sizeof outer);
    outline_free(o);
    longjmp(c->fail, 1);
  }
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(eb, c->entry);
  e->env = LLVMBuildAlloca(eb, LLVMArrayType2(c->t_i64, (uint64_t)(nslots ? nslots : 1)), "env");
  LLVMDisposeBuilder(eb);
  for (int m = 0; m < nstarts; m++) {
    int from = o->starts[m], to = m + 1 < nstarts ? o->starts[m + 1] : p->ntop;
    inputs(p, in, from, to);
    if (!p->ok) cg_fail(c, p->at[from], "out of memory");
    bool in_place = false;
    for (int q = from; q < to && !in_place; q++) in_place = escapes(p->at[q], 0);
    if (in_place) {   /* a jump out of the block (the last piece): here */
      int k = 0;
      for (int i = 0; i < in->n; i++)
        if (p->pos[in->v[i]->id] >= 0) in->v[k++] = in->v[i];   /* from earlier pieces */
      in->n = k;
      receive(c, e, in, NULL);
      for (int q = from; q < to; q++) cg_stmt(c, p->at[q]);
      break;
    }
    for (int i = 0; i < in->n; i++)   /* from outside the block: stored once */
      if (p->pos[in->v[i]->id] < 0 && !e->type[in->v[i]->id]) store_slot(c, e, in->v[i]);
    call_piece(c, piece_function(c, o, from, to), e->env);
  }
  memcpy(c->fail, outer, sizeof outer);
  outline_free(o);
  return true;
whole:
  outline_free(o);
  return false;
}
