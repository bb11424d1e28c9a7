/*
** cg_sparse.c -- code generation for sparse SNodes: field addresses under
** bitmasked/pointer/dynamic levels, the snode_* operations, and the bodies of
** the list, struct-for, deactivate-all and GC tasks.
**
** Every access walks the tree from the root like the dense path in
** cg_memory.c does, but at a sparse level it calls the runtime's node
** function of that kind (rt_<kind>_activate for writes, _lookup_element for
** reads) with meta = &ctx->runtime->metas[id]. The runtime is linked into the
** module with internal linkage, so these calls inline. Inside a
** task_struct_for, an access at exactly the loop's own indices starts from
** the current cell instead of the root: no lookups above it, and a dense
** container's cell loop becomes a plain strided loop that vectorizes.
** docs/runtime.md ("Code generation for sparse SNodes") has the whole story.
*/
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/runtime.h"
#include "llvm_codegen.h"

#define B (c->b)

static LLVMValueRef i32c(cg *c, long long v) { return LLVMConstInt(c->t_i32, (unsigned long long)v, 1); }
static LLVMValueRef i64c(cg *c, long long v) { return LLVMConstInt(c->t_i64, (unsigned long long)v, 1); }
static LLVMValueRef to_i32(cg *c, LLVMValueRef v) { return cg_int_convert(c, v, true, c->t_i32); }
static LLVMValueRef gep(cg *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(B, c->t_i8, base, &off, 1, "");
}

/* ---- the runtime state -------------------------------------------------------- */

static LLVMValueRef runtime(cg *c) {
  c->uses_runtime = true;
  return cg_invariant(c, cg_ctx_field(c, CG_CTX_RUNTIME));
}

/* A member of rt_runtime that no task changes (metas, ambient). */
static LLVMValueRef rt_member(cg *c, size_t offset, LLVMTypeRef t) {
  LLVMValueRef p = gep(c, runtime(c), i64c(c, (long long)offset));
  return cg_invariant(c, LLVMBuildLoad2(B, t, p, ""));
}

/* &rt->metas[id] */
static LLVMValueRef meta(cg *c, int id) {
  LLVMValueRef metas = rt_member(c, offsetof(rt_runtime, metas), c->t_ptr);
  return gep(c, metas, i64c(c, (long long)id * (long long)sizeof(rt_meta)));
}

static LLVMValueRef call_rt(cg *c, const ir_stmt *s, const char *name, LLVMValueRef *args, int n) {
  LLVMValueRef f = LLVMGetNamedFunction(c->mod, name);
  if (!f || LLVMIsDeclaration(f)) cg_fail(c, s, "runtime function %s is missing", name);
  return LLVMBuildCall2(B, LLVMGlobalGetValueType(f), f, args, (unsigned)n, "");
}

/* The node operations by kind; every name is in RT_FUNCTIONS (context.h),
** checked when the bitcode loads. */
enum { OP_ACTIVATE, OP_LOOKUP, OP_IS_ACTIVE, OP_DEACTIVATE };
static const char *node_fn(cg *c, const ir_stmt *s, ir_snode_kind kind, int op) {
#define ROW(k) {"rt_" #k "_activate", "rt_" #k "_lookup_element", "rt_" #k "_is_active", "rt_" #k "_deactivate"}
  static const char *const names[4][4] = {ROW(dense), ROW(bitmasked), ROW(pointer), ROW(dynamic)};
#undef ROW
  switch (kind) {
  case IR_SN_dense: return names[0][op];
  case IR_SN_bitmasked: return names[1][op];
  case IR_SN_pointer: return names[2][op];
  case IR_SN_dynamic: return names[3][op];
  default: cg_fail(c, s, "S%d is not a level SNode", s->aux);
  }
}

static LLVMValueRef node_call(cg *c, const ir_stmt *s, const ir_snode *lvl, int op, LLVMValueRef node,
                              LLVMValueRef cell) {
  LLVMValueRef a[3] = {meta(c, lvl->id), node, to_i32(c, cell)};
  return call_rt(c, s, node_fn(c, s, lvl->kind, op), a, 3);
}

/* ---- lookups without atomics ------------------------------------------------------
** A task that never activates nor deactivates cells of a level cannot race
** with itself on that level's pointers and mask words, and tasks are
** separated by barriers. Its reads of them are then plain loads (marked
** invariant for the task), which LLVM may hoist, if-convert and vectorize,
** where the runtime's acquire loads would pin them in place. */

/* Whether s's indices are exactly the cell indices of struct-for task t over S. */
static bool loop_cell_indices(const ir_stmt *s, const ir_stmt *t, const ir_snode *S) {
  if (s->nops != S->nidx) return false;
  for (int k = 0; k < s->nops; k++) {
    const ir_stmt *o = s->ops[k];
    if (o->op != IR_loop_index || o->loop != t || o->imm.ival != k) return false;
  }
  return true;
}

static void scan_writes(ir_stmt *s, void *ud) {
  cg *c = ud;
  ir_program *p = c->k->prog;
  bool names_snode = s->op == IR_global_ptr || s->op == IR_snode_activate || s->op == IR_snode_append ||
                     s->op == IR_snode_deactivate;
  if (!names_snode || !p || s->aux < 0 || s->aux >= p->nsnodes || !p->snodes[s->aux]) return;
  const ir_snode *sn = p->snodes[s->aux];
  if (s->op == IR_global_ptr && s->imm.ival != 1) return;
  if (s->op == IR_snode_deactivate) {
    c->writes[sn->id] = 1;
    return;
  }
  /* a write at a struct-for's own cell activates nothing at or above its level */
  const ir_stmt *t = c->writes_task;
  const ir_snode *stop = NULL;
  if (s->op == IR_global_ptr && t->op == IR_task_struct_for && t->aux >= 0 && t->aux < p->nsnodes &&
      loop_cell_indices(s, t, p->snodes[t->aux]))
    for (const ir_snode *q = sn->parent; q; q = q->parent)
      if (q == p->snodes[t->aux]) stop = q;
  for (; sn && sn != stop; sn = sn->parent)
    if (ir_snode_kind_is_sparse(sn->kind)) c->writes[sn->id] = 1;
}

/* Whether the task holding s changes which cells of lvl are active. */
static bool task_writes(cg *c, const ir_stmt *s, const ir_snode *lvl) {
  const ir_stmt *t = s;
  while (t->parent && t->parent != c->k->body && t->parent->owner) t = t->parent->owner;
  if (c->writes_task != t) {
    if (!c->writes && !(c->writes = malloc(IR_MAX_SNODES))) cg_fail(c, s, "out of memory");
    memset(c->writes, 0, IR_MAX_SNODES);
    c->writes_task = t;
    if (t->blocks[0]) ir_walk(t->blocks[0], scan_writes, c);
  }
  return lvl->id < 0 || lvl->id >= IR_MAX_SNODES || c->writes[lvl->id];
}

/* The cell of a pointer or bitmasked container, or the ambient cell, read
** with plain loads (see above; the layouts are snode.h's). */
static LLVMValueRef quiet_lookup(cg *c, const ir_snode *lvl, LLVMValueRef node, LLVMValueRef cell) {
  LLVMValueRef amb = rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
  if (lvl->kind == IR_SN_pointer) {
    LLVMValueRef p = LLVMBuildLoad2(B, c->t_ptr, gep(c, node, LLVMBuildMul(B, cell, i64c(c, 8), "")), "");
    cg_invariant(c, p);
    return LLVMBuildSelect(B, LLVMBuildIsNull(B, p, ""), amb, p, "");
  }
  LLVMValueRef woff = LLVMBuildAdd(B, i64c(c, lvl->meta_offset),
                                   LLVMBuildMul(B, LLVMBuildLShr(B, cell, i64c(c, 5), ""), i64c(c, 4), ""), "");
  LLVMValueRef word = cg_invariant(c, LLVMBuildLoad2(B, c->t_i32, gep(c, node, woff), ""));
  LLVMValueRef sh = LLVMBuildTrunc(B, LLVMBuildAnd(B, cell, i64c(c, 31), ""), c->t_i32, "");
  LLVMValueRef bit = LLVMBuildAnd(B, LLVMBuildLShr(B, word, sh, ""), i32c(c, 1), "");
  LLVMValueRef mine = gep(c, node, LLVMBuildMul(B, cell, i64c(c, lvl->cell_bytes), ""));
  return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntNE, bit, i32c(c, 0), ""), mine, amb, "");
}

/* A read lookup of a cell: plain loads where the task cannot race with itself. */
static LLVMValueRef lookup(cg *c, const ir_stmt *s, const ir_snode *lvl, LLVMValueRef node, LLVMValueRef cell) {
  if ((lvl->kind == IR_SN_pointer || lvl->kind == IR_SN_bitmasked) && !task_writes(c, s, lvl))
    return quiet_lookup(c, lvl, node, cell);
  return node_call(c, s, lvl, OP_LOOKUP, node, cell);
}

/* ---- walking the tree ------------------------------------------------------------ */

static int path_of(cg *c, const ir_stmt *s, const ir_snode *target, const ir_snode **path) {
  int n = 0;
  for (const ir_snode *q = target; q; q = q->parent) {
    if (n == 64) cg_fail(c, s, "SNode tree deeper than 64 levels");
    path[n++] = q;
  }
  return n;
}

/* Whether s's indices (the virtual indices of ixs) are exactly those of the
** current cell of the struct-for task being generated. */
static bool at_loop_cell(cg *c, const ir_stmt *s, const ir_snode *ixs) {
  return c->sf_task && ixs->nidx == c->sf_level->nidx && loop_cell_indices(s, c->sf_task, c->sf_level);
}

/* From level path[top] down to path[0]: base + off is the address of a cell
** of path[top + 1] (or the root container); returns path[0]'s container. */
static LLVMValueRef descend(cg *c, ir_stmt *s, const ir_snode **path, int top, LLVMValueRef base,
                            LLVMValueRef off, LLVMValueRef *phys, bool act) {
  for (int l = top; l > 0; l--) {
    const ir_snode *lvl = path[l], *child = path[l - 1];
    LLVMValueRef cell = cg_cell_index(c, s, lvl, phys);
    if (ir_snode_kind_is_sparse(lvl->kind)) {
      base = act ? node_call(c, s, lvl, OP_ACTIVATE, gep(c, base, off), cell)
                 : lookup(c, s, lvl, gep(c, base, off), cell);
      off = i64c(c, 0);
    } else {
      off = LLVMBuildAdd(B, off, LLVMBuildMul(B, cell, i64c(c, lvl->cell_bytes), ""), "");
    }
    if (child->offset) off = LLVMBuildAdd(B, off, i64c(c, child->offset), "");
  }
  return gep(c, base, off);
}

/* i1: whether indices phys (of ixs) fall inside the container the struct-for
** is visiting: along each axis, within [coord, coord + span) where span is
** what one cell of the container's parent covers. */
static LLVMValueRef in_loop_container(cg *c, const ir_snode *ixs, LLVMValueRef *phys) {
  const ir_snode *S = c->sf_level;
  LLVMValueRef in = LLVMConstInt(c->t_i1, 1, 0);
  for (int k = 0; k < ixs->nidx; k++) {
    int a = ixs->physical_index_position[k];
    LLVMValueRef d = LLVMBuildSub(B, phys[a], c->sf_coord[a], "");
    in = LLVMBuildAnd(B, in, LLVMBuildICmp(B, LLVMIntULT, d, i64c(c, S->parent->below[a]), ""), "");
  }
  return in;
}

/* The address of target's container (for a place: of its value). Sparse
** levels above it are activated (act) or looked up; an inactive cell on the
** way leads into the zero ambient cell, so reads give zero. Inside a
** struct-for over S, an access under S starts from the current cell when it
** uses the loop's own indices, and from the current container when S is
** dense and the indices fall inside it (a stencil's neighbours): only the
** accesses that leave the container walk from the root. */
static LLVMValueRef walk(cg *c, ir_stmt *s, const ir_snode *target, const ir_snode *ixs,
                         LLVMValueRef *phys, bool act) {
  const ir_snode *path[64];
  int n = path_of(c, s, target, path), l0 = -1;
  for (int l = 1; c->sf_task && l < n; l++)
    if (path[l] == c->sf_level) l0 = l;
  if (l0 > 0 && at_loop_cell(c, s, ixs))   /* active: the loop only visits active cells */
    return descend(c, s, path, l0 - 1, c->sf_cell, i64c(c, path[l0 - 1]->offset), phys, act);
  LLVMValueRef root = cg_root(c, path[n - 1]->tree);
  if (l0 <= 0 || c->sf_level->kind != IR_SN_dense || ixs->nidx != c->sf_level->nidx)
    return descend(c, s, path, n - 1, root, i64c(c, 0), phys, act);
  LLVMBasicBlockRef fast = cg_new_bb(c, "near"), slow = cg_new_bb(c, "far"), join = cg_new_bb(c, "near.far");
  LLVMBuildCondBr(B, in_loop_container(c, ixs, phys), fast, slow);
  LLVMPositionBuilderAtEnd(B, fast);
  const ir_snode *S = c->sf_level;
  LLVMValueRef off = LLVMBuildMul(B, cg_cell_index(c, s, S, phys), i64c(c, S->cell_bytes), "");
  off = LLVMBuildAdd(B, off, i64c(c, path[l0 - 1]->offset), "");
  LLVMValueRef near = descend(c, s, path, l0 - 1, c->sf_node, off, phys, act);
  LLVMBasicBlockRef fast_end = LLVMGetInsertBlock(B);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, slow);
  LLVMValueRef far = descend(c, s, path, n - 1, root, i64c(c, 0), phys, act);
  LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(B);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, join);
  LLVMValueRef phi = LLVMBuildPhi(B, c->t_ptr, "");
  LLVMValueRef vals[2] = {near, far};
  LLVMBasicBlockRef from[2] = {fast_end, slow_end};
  LLVMAddIncoming(phi, vals, from, 2);
  return phi;
}

LLVMValueRef cg_sparse_global_ptr(cg *c, ir_stmt *s, const ir_snode *place) {
  LLVMValueRef phys[IR_MAX_INDICES];
  cg_phys_indices(c, s, place, phys);
  return walk(c, s, place, place, phys, s->imm.ival == 1);
}

/* ---- snode_* statements ------------------------------------------------------------ */

static const ir_snode *level_of(cg *c, const ir_stmt *s) {
  ir_program *p = c->k->prog;
  if (!p || s->aux < 0 || s->aux >= p->nsnodes || !p->snodes[s->aux])
    cg_fail(c, s, "'%s' names SNode %d, which this kernel's program does not have", ir_op_name(s->op), s->aux);
  const ir_snode *sn = p->snodes[s->aux];
  if (!ir_snode_kind_is_level(sn->kind)) cg_fail(c, s, "S%d is not a level SNode", s->aux);
  if (!p->trees[sn->tree].materialized) cg_fail(c, s, "S%d belongs to a tree whose layout was not computed", s->aux);
  return sn;
}

/* Whether p lies inside the ambient cell (a sparse cell above was inactive). */
static LLVMValueRef in_ambient(cg *c, LLVMValueRef p) {
  LLVMValueRef amb = rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
  LLVMValueRef size = rt_member(c, offsetof(rt_runtime, ambient_bytes), c->t_i64);
  LLVMValueRef d = LLVMBuildSub(B, LLVMBuildPtrToInt(B, p, c->t_i64, ""), LLVMBuildPtrToInt(B, amb, c->t_i64, ""), "");
  return LLVMBuildICmp(B, LLVMIntULT, d, size, "");
}

/* snode_append: reserve an element, then store the value into its cell
** (rt_dynamic_activate of a reserved index only finds or makes its chunk).
** A full list gives -1 and drops the value; debug kernels raise an error. */
static LLVMValueRef append(cg *c, ir_stmt *s, const ir_snode *lvl, LLVMValueRef node) {
  if (lvl->nchildren != 1 || lvl->children[0]->kind != IR_SN_place)
    cg_fail(c, s, "snode_append needs a dynamic SNode holding exactly one place");
  const ir_snode *place = lvl->children[0];
  LLVMValueRef m = meta(c, lvl->id);
  LLVMValueRef a[3] = {m, node, NULL};
  LLVMValueRef idx = call_rt(c, s, "rt_dynamic_append", a, 2);
  LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSGE, idx, i32c(c, 0), "");
  LLVMBasicBlockRef store = cg_new_bb(c, "append.store"), full = cg_new_bb(c, "append.full");
  LLVMBasicBlockRef done = cg_new_bb(c, "append.done");
  LLVMBuildCondBr(B, ok, store, full);
  LLVMPositionBuilderAtEnd(B, store);
  a[2] = idx;
  LLVMValueRef cell = call_rt(c, s, "rt_dynamic_activate", a, 3);
  LLVMValueRef v = cg_get(c, s->ops[s->nops - 1]);
  if (LLVMTypeOf(v) != cg_type(c, place->dtype))
    cg_fail(c, s, "snode_append of a %s value to a field of %s (run typecheck first)",
            ir_type_name(s->ops[s->nops - 1]->type), ir_type_name(place->dtype));
  LLVMBuildStore(B, v, gep(c, cell, i64c(c, place->offset)));
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, full);
  if (c->k->debug) {
    LLVMValueRef e[3] = {c->ctxv, i32c(c, lvl->id), i32c(c, s->loc.line)};
    call_rt(c, s, "rt_raise_append_error", e, 3);
  }
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  return idx;
}

static LLVMValueRef snode_op(cg *c, ir_stmt *s) {
  const ir_snode *lvl = level_of(c, s);
  bool whole = lvl->kind == IR_SN_dynamic &&
               (s->op == IR_snode_deactivate || s->op == IR_snode_append || s->op == IR_snode_length);
  const ir_snode *ixs = whole ? lvl->parent : lvl;
  int nidx = s->op == IR_snode_append ? s->nops - 1 : s->nops;
  if (nidx != ixs->nidx) cg_fail(c, s, "S%d takes %d indices here, got %d", lvl->id, ixs->nidx, nidx);
  if ((s->op == IR_snode_append || s->op == IR_snode_length) && lvl->kind != IR_SN_dynamic)
    cg_fail(c, s, "'%s' needs a dynamic SNode, S%d is %s", ir_op_name(s->op), lvl->id, ir_snode_kind_name(lvl->kind));
  LLVMValueRef phys[IR_MAX_INDICES];
  cg_phys_indices(c, s, ixs, phys);
  bool sparse = ir_snode_kind_is_sparse(lvl->kind);
  bool act = s->op == IR_snode_activate || s->op == IR_snode_append;
  LLVMValueRef node = walk(c, s, lvl, ixs, phys, act);
  switch (s->op) {
  case IR_snode_activate:
    if (sparse) node_call(c, s, lvl, OP_ACTIVATE, node, cg_cell_index(c, s, lvl, phys));
    return NULL;
  case IR_snode_deactivate:
    if (whole) node_call(c, s, lvl, OP_DEACTIVATE, node, i64c(c, 0));   /* clears the list */
    else if (sparse) node_call(c, s, lvl, OP_DEACTIVATE, node, cg_cell_index(c, s, lvl, phys));
    return NULL;
  case IR_snode_is_active:
    if (sparse) {
      LLVMValueRef r = node_call(c, s, lvl, OP_IS_ACTIVE, node, cg_cell_index(c, s, lvl, phys));
      return LLVMBuildICmp(B, LLVMIntNE, r, i32c(c, 0), "");
    }
    /* a dense cell is active when every cell above it is */
    if (ir_snode_under_sparse(lvl)) return LLVMBuildNot(B, in_ambient(c, node), "");
    return LLVMConstInt(c->t_i1, 1, 0);
  case IR_snode_length: {
    LLVMValueRef a[2] = {meta(c, lvl->id), node};
    return call_rt(c, s, "rt_dynamic_length", a, 2);
  }
  case IR_snode_append: return append(c, s, lvl, node);
  default: return NULL;
  }
}

/* ---- loops of the task bodies -------------------------------------------------------- */

typedef struct {
  LLVMValueRef var, i;
  LLVMBasicBlockRef head, next, exit;
} sp_loop;

/* for i in [begin, end): returns i; `next` is where a skipped iteration goes. */
static LLVMValueRef loop_open(cg *c, sp_loop *L, LLVMValueRef begin, LLVMValueRef end) {
  LLVMTypeRef t = LLVMTypeOf(begin);
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(eb, c->entry);
  L->var = LLVMBuildAlloca(eb, t, "c");
  LLVMDisposeBuilder(eb);
  LLVMBuildStore(B, begin, L->var);
  L->head = cg_new_bb(c, "cells");
  LLVMBasicBlockRef body = cg_new_bb(c, "cells.body");
  L->next = cg_new_bb(c, "cells.next");
  L->exit = cg_new_bb(c, "cells.end");
  LLVMBuildBr(B, L->head);
  LLVMPositionBuilderAtEnd(B, L->head);
  L->i = LLVMBuildLoad2(B, t, L->var, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, L->i, end, ""), body, L->exit);
  LLVMPositionBuilderAtEnd(B, body);
  return L->i;
}

/* Returns the back edge. */
static LLVMValueRef loop_close(cg *c, sp_loop *L) {
  cg_br(c, L->next);
  LLVMPositionBuilderAtEnd(B, L->next);
  LLVMBuildStore(B, LLVMBuildAdd(B, L->i, LLVMConstInt(LLVMTypeOf(L->i), 1, 0), ""), L->var);
  LLVMValueRef latch = LLVMBuildBr(B, L->head);
  LLVMPositionBuilderAtEnd(B, L->exit);
  return latch;
}

/* Continues at `next` unless cond holds. */
static void skip_unless(cg *c, LLVMValueRef cond, LLVMBasicBlockRef next) {
  LLVMBasicBlockRef go = cg_new_bb(c, "cell.active");
  LLVMBuildCondBr(B, cond, go, next);
  LLVMPositionBuilderAtEnd(B, go);
}

/* ---- task_struct_for ---------------------------------------------------------------- */

/* The loop body for one active cell: its address and the physical index
** offsets within the container (off[a], i64, NULL for axes S does not split)
** added to the element's coordinates give the virtual indices. */
static void cell_body(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node, LLVMValueRef cell,
                      LLVMValueRef *coord, LLVMValueRef *off) {
  for (int k = 0; k < S->nidx; k++) {
    int a = S->physical_index_position[k];
    LLVMValueRef v = coord[a];
    if (off[a]) v = LLVMBuildAdd(B, v, off[a], "");
    c->sf_index[k] = to_i32(c, v);
  }
  c->sf_task = task;
  c->sf_level = S;
  c->sf_cell = cell;
  c->sf_node = node;
  for (int a = 0; a < IR_MAX_INDICES; a++) c->sf_coord[a] = coord[a];
  cg_block(c, task->blocks[0]);
}

/* Cells of a dynamic container: walk its chunks ([next][cells...], snode.h)
** rather than looking each element up from the head. */
static void dynamic_cells(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node, LLVMValueRef *coord) {
  LLVMValueRef a[2] = {meta(c, S->id), node};
  LLVMValueRef n = LLVMBuildSExt(B, call_rt(c, task, "rt_dynamic_length", a, 2), c->t_i64, "");
  LLVMValueRef head = LLVMBuildLoad2(B, c->t_ptr, gep(c, node, i64c(c, 8)), "");
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(eb, c->entry);
  LLVMValueRef chunk_var = LLVMBuildAlloca(eb, c->t_ptr, "chunk");
  LLVMDisposeBuilder(eb);
  LLVMBuildStore(B, head, chunk_var);
  int64_t per = S->chunk_cells;
  LLVMValueRef nchunks = LLVMBuildSDiv(B, LLVMBuildAdd(B, n, i64c(c, per - 1), ""), i64c(c, per), "");
  sp_loop C;
  LLVMValueRef ci = loop_open(c, &C, i64c(c, 0), nchunks);
  LLVMValueRef chunk = LLVMBuildLoad2(B, c->t_ptr, chunk_var, "");
  /* a chunk missing after a failed allocation ends the list (the error is recorded) */
  LLVMBasicBlockRef have = cg_new_bb(c, "chunk");
  LLVMBuildCondBr(B, LLVMBuildIsNotNull(B, chunk, ""), have, C.exit);
  LLVMPositionBuilderAtEnd(B, have);
  LLVMValueRef start = LLVMBuildMul(B, ci, i64c(c, per), "");
  LLVMValueRef left = LLVMBuildSub(B, n, start, "");
  LLVMValueRef cnt = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, left, i64c(c, per), ""), left, i64c(c, per), "");
  sp_loop J;
  LLVMValueRef j = loop_open(c, &J, i64c(c, 0), cnt);
  LLVMValueRef cell = gep(c, chunk, LLVMBuildAdd(B, i64c(c, 8), LLVMBuildMul(B, j, i64c(c, S->cell_bytes), ""), ""));
  LLVMValueRef off[IR_MAX_INDICES] = {0};
  off[S->axes[0]] = LLVMBuildAdd(B, start, j, "");
  cell_body(c, task, S, node, cell, coord, off);
  loop_close(c, &J);
  LLVMBuildStore(B, LLVMBuildLoad2(B, c->t_ptr, chunk, ""), chunk_var);   /* next chunk */
  loop_close(c, &C);
}

/* Cells of a dense, bitmasked or pointer container: one flat loop over the
** cell numbers, each cell's coordinates peeled off row-major (the last listed
** axis fastest; constant extents, so these are shifts and masks). Cells of a
** dense container lie at consecutive addresses, so this loop vectorizes with
** plain vector loads and stores; a loop per axis would leave the vectorizer
** the outer one and gathers. */
static void grid_cells(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node, LLVMValueRef *coord) {
  sp_loop L;
  LLVMValueRef cellno = loop_open(c, &L, i64c(c, 0), i64c(c, S->num_cells));
  LLVMValueRef off[IR_MAX_INDICES] = {0}, rest = cellno;
  for (int k = S->naxes - 1; k >= 0; k--) {
    LLVMValueRef ext = i64c(c, S->shape[k]);
    LLVMValueRef ck = k > 0 ? LLVMBuildURem(B, rest, ext, "") : rest;
    if (k > 0) rest = LLVMBuildUDiv(B, rest, ext, "");
    int a = S->axes[k];
    off[a] = LLVMBuildMul(B, ck, i64c(c, S->below[a]), "");
  }
  LLVMValueRef cell;
  if (S->kind == IR_SN_dense) {
    cell = gep(c, node, LLVMBuildMul(B, cellno, i64c(c, S->cell_bytes), ""));
  } else {   /* inactive cells look up to the ambient cell */
    cell = lookup(c, task, S, node, cellno);
    LLVMValueRef amb = rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
    skip_unless(c, LLVMBuildICmp(B, LLVMIntNE, cell, amb, ""), L.next);
  }
  cell_body(c, task, S, node, cell, coord, off);
  loop_close(c, &L);
}

static void struct_for(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef begin, LLVMValueRef end) {
  if (S->naxes < 1) cg_fail(c, task, "struct-for over S%d, which splits no axis", S->id);
  LLVMValueRef rt = runtime(c);
  sp_loop E;
  LLVMValueRef e = loop_open(c, &E, begin, end);
  LLVMValueRef ea[3] = {rt, i32c(c, S->id), to_i32(c, e)};
  LLVMValueRef elem = call_rt(c, task, "rt_listgen_element", ea, 3);
  LLVMValueRef node = LLVMBuildLoad2(B, c->t_ptr, gep(c, elem, i64c(c, offsetof(rt_elem, container))), "");
  LLVMValueRef coord[IR_MAX_INDICES];
  for (int a = 0; a < IR_MAX_INDICES; a++) {
    LLVMValueRef p = gep(c, elem, i64c(c, (long long)(offsetof(rt_elem, coord) + 4 * (size_t)a)));
    coord[a] = LLVMBuildSExt(B, LLVMBuildLoad2(B, c->t_i32, p, ""), c->t_i64, "");
  }
  if (S->kind == IR_SN_dynamic) dynamic_cells(c, task, S, node, coord);
  else grid_cells(c, task, S, node, coord);
  c->sf_task = NULL;
  c->sf_level = NULL;
  loop_close(c, &E);
}

/* ---- the other sparse tasks ------------------------------------------------------------ */

bool cg_is_sparse_task(ir_op op) {
  return op == IR_task_clear_list || op == IR_task_listgen || op == IR_task_struct_for ||
         op == IR_task_gc || op == IR_task_deactivate_all;
}

/* task_gc: fn(ctx, worker, stage, nworkers) (jit.h). */
static void gc(cg *c, ir_stmt *task, LLVMValueRef rt, LLVMValueRef id, LLVMValueRef stage, LLVMValueRef nworkers) {
  LLVMValueRef worker = LLVMGetParam(c->fn, 1);
  LLVMBasicBlockRef s0 = cg_new_bb(c, "gc.stage0"), s1 = cg_new_bb(c, "gc.stage1");
  LLVMBasicBlockRef s2 = cg_new_bb(c, "gc.stage2"), done = cg_new_bb(c, "gc.done");
  LLVMValueRef sw = LLVMBuildSwitch(B, stage, s2, 2);
  LLVMAddCase(sw, i64c(c, 0), s0);
  LLVMAddCase(sw, i64c(c, 1), s1);
  LLVMPositionBuilderAtEnd(B, s0);
  LLVMValueRef a0[4] = {rt, id, worker, nworkers};
  call_rt(c, task, "rt_gc_stage0", a0, 4);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, s1);
  call_rt(c, task, "rt_gc_stage1", a0, 2);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, s2);
  LLVMValueRef a2[6] = {rt, id, worker, nworkers, i32c(c, 0), i32c(c, 1)};
  call_rt(c, task, "rt_gc_stage2", a2, 6);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

void cg_sparse_task_body(cg *c, ir_stmt *task, LLVMValueRef begin, LLVMValueRef end) {
  const ir_snode *lvl = level_of(c, task);
  LLVMValueRef rt = runtime(c), id = i32c(c, lvl->id);
  switch (task->op) {
  case IR_task_clear_list: {
    LLVMValueRef a[2] = {rt, id};
    call_rt(c, task, "rt_list_clear", a, 2);
    break;
  }
  case IR_task_listgen: {
    if (!lvl->parent) cg_fail(c, task, "task_listgen of the root S%d", lvl->id);
    LLVMValueRef a[6] = {rt, i32c(c, lvl->parent->id), id, i64c(c, lvl->offset), to_i32(c, begin), to_i32(c, end)};
    call_rt(c, task, "rt_listgen", a, 6);
    break;
  }
  case IR_task_deactivate_all: {
    LLVMValueRef a[4] = {rt, id, to_i32(c, begin), to_i32(c, end)};
    call_rt(c, task, "rt_deactivate_all", a, 4);
    break;
  }
  case IR_task_gc:
    if (lvl->kind != IR_SN_pointer && lvl->kind != IR_SN_dynamic)
      cg_fail(c, task, "task_gc of S%d, which is neither pointer nor dynamic", lvl->id);
    gc(c, task, rt, id, begin, to_i32(c, end));
    break;
  case IR_task_struct_for: struct_for(c, task, lvl, begin, end); break;
  default: cg_fail(c, task, "'%s' is not a sparse task", ir_op_name(task->op));
  }
}

/* ---- dispatch ------------------------------------------------------------------------------ */

bool cg_sparse(cg *c, ir_stmt *s) {
  switch (s->op) {
  case IR_loop_index:
    if (!s->loop || s->loop->op != IR_task_struct_for) return false;
    if (s->loop != c->sf_task || s->imm.ival < 0 || s->imm.ival >= c->sf_level->nidx)
      cg_fail(c, s, "loop_index %lld of a struct-for outside its body", (long long)s->imm.ival);
    cg_set(c, s, cg_int_convert(c, c->sf_index[s->imm.ival], true, cg_type(c, s->type)));
    return true;
  case IR_snode_activate: case IR_snode_deactivate: case IR_snode_is_active:
  case IR_snode_append: case IR_snode_length: {
    LLVMValueRef v = snode_op(c, s);
    if (v) cg_set(c, s, v);
    return true;
  }
  case IR_struct_for: case IR_snode_deactivate_all:
    cg_fail(c, s, "'%s' must be offloaded into tasks first (run the offload pass)", ir_op_name(s->op));
  default:
    return false;
  }
}
