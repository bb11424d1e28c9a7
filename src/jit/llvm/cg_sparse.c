/*
** cg_sparse.c -- code generation for sparse SNodes: field addresses under
** bitmasked/pointer/dynamic levels, the snode_* operations, and the bodies of
** the list, deactivate-all and GC tasks (struct-for bodies: cg_struct_for.c,
** their stencil accesses: cg_stencil.c).
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
#include "cg_sparse.h"

#define B (c->b)

/* ---- the runtime state -------------------------------------------------------- */

LLVMValueRef sp_runtime(cg *c) {
  c->uses_runtime = true;
  return cg_dereferenceable(c->ctx, cg_invariant(c, cg_ctx_field(c, CG_CTX_RUNTIME)), sizeof(rt_runtime));
}

/* A member of rt_runtime that no task changes (metas, ambient). */
LLVMValueRef sp_rt_member(cg *c, size_t offset, LLVMTypeRef t) {
  LLVMValueRef p = gep(c, sp_runtime(c), i64c(c, (long long)offset));
  return cg_invariant(c, LLVMBuildLoad2(B, t, p, ""));
}

/* &rt->metas[id]. The runtime has IR_MAX_SNODES metas (jit_sparse.c), fixed
** while tasks run (cg_runtime.c), so the runtime's reads of them may move
** out of loops. */
LLVMValueRef sp_meta(cg *c, int id) {
  LLVMValueRef metas = sp_rt_member(c, offsetof(rt_runtime, metas), c->t_ptr);
  cg_dereferenceable(c->ctx, metas, (unsigned long long)IR_MAX_SNODES * sizeof(rt_meta));
  return gep(c, metas, i64c(c, (long long)id * (long long)sizeof(rt_meta)));
}

LLVMValueRef sp_call_rt(cg *c, const ir_stmt *s, const char *name, LLVMValueRef *args, int n) {
  LLVMValueRef f = LLVMGetNamedFunction(c->mod, name);
  if (!f || LLVMIsDeclaration(f)) cg_fail(c, s, "runtime function %s is missing", name);
  return LLVMBuildCall2(B, LLVMGlobalGetValueType(f), f, args, (unsigned)n, "");
}

/* The node operations by kind; every name is in RT_FUNCTIONS (context.h),
** checked when the bitcode loads. */
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

LLVMValueRef sp_node_call(cg *c, const ir_stmt *s, const ir_snode *lvl, int op, LLVMValueRef node,
                              LLVMValueRef cell) {
  LLVMValueRef a[3] = {sp_meta(c, lvl->id), node, to_i32(c, cell)};
  return sp_call_rt(c, s, node_fn(c, s, lvl->kind, op), a, 3);
}

/* ---- lookups without atomics ------------------------------------------------------
** A task that never activates nor deactivates cells of a level cannot race
** with itself on that level's pointers and mask words, and tasks are
** separated by barriers. Its reads of them are then plain loads (marked
** invariant for the task), which LLVM may hoist, if-convert and vectorize,
** where the runtime's acquire loads would pin them in place. */

/* Whether s's indices are exactly the cell indices of struct-for task t over S. */
bool sp_loop_cell_indices(const ir_stmt *s, const ir_stmt *t, const ir_snode *S) {
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
                     s->op == IR_snode_reserve || s->op == IR_snode_deactivate;
  const ir_snode *sn = names_snode ? ir_program_snode(p, s->aux) : NULL;
  if (!sn) return;
  if (s->op == IR_global_ptr && s->imm.ival != 1) return;
  if (s->op == IR_snode_deactivate) {
    c->writes[sn->id] = 1;
    return;
  }
  /* a write at a struct-for's own cell activates nothing at or above its level */
  const ir_stmt *t = c->writes_task;
  const ir_snode *stop = NULL;
  if (s->op == IR_global_ptr && t->op == IR_task_struct_for && t->aux >= 0 && t->aux < p->nsnodes &&
      sp_loop_cell_indices(s, t, p->snodes[t->aux]))
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
  LLVMValueRef amb = sp_rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
  if (lvl->kind == IR_SN_pointer) {   /* a slot: see rt_slot_cell */
    LLVMValueRef v = LLVMBuildLoad2(B, c->t_i32, gep(c, node, LLVMBuildMul(B, cell, i64c(c, 4), "")), "");
    cg_invariant(c, v);
    LLVMValueRef pool = sp_rt_member(c, offsetof(rt_runtime, pool), c->t_ptr);
    LLVMValueRef shift = LLVMBuildZExt(B, sp_rt_member(c, offsetof(rt_runtime, slot_shift), c->t_i32), c->t_i64, "");
    LLVMValueRef p = gep(c, pool, LLVMBuildShl(B, LLVMBuildZExt(B, v, c->t_i64, ""), shift, ""));
    LLVMValueRef on = LLVMBuildICmp(B, LLVMIntUGT, v, i32c(c, RT_SLOT_BUSY), "");
    return LLVMBuildSelect(B, on, p, amb, "");
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
LLVMValueRef sp_lookup(cg *c, const ir_stmt *s, const ir_snode *lvl, LLVMValueRef node, LLVMValueRef cell) {
  if ((lvl->kind == IR_SN_pointer || lvl->kind == IR_SN_bitmasked) && !task_writes(c, s, lvl))
    return quiet_lookup(c, lvl, node, cell);
  return sp_node_call(c, s, lvl, OP_LOOKUP, node, cell);
}

/* ---- walking the tree ------------------------------------------------------------ */

int sp_path_of(cg *c, const ir_stmt *s, const ir_snode *target, const ir_snode **path) {
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
  return c->sf_task && ixs->nidx == c->sf_level->nidx && sp_loop_cell_indices(s, c->sf_task, c->sf_level);
}

/* From level path[top] down to path[0]: base + off is the address of a cell
** of path[top + 1] (or the root container); returns path[0]'s container. */
LLVMValueRef sp_descend(cg *c, ir_stmt *s, const ir_snode **path, int top, LLVMValueRef base,
                            LLVMValueRef off, LLVMValueRef *phys, bool act) {
  for (int l = top; l > 0; l--) {
    const ir_snode *lvl = path[l], *child = path[l - 1];
    LLVMValueRef cell = cg_cell_index(c, s, lvl, phys);
    if (ir_snode_kind_is_sparse(lvl->kind)) {
      base = act ? sp_node_call(c, s, lvl, OP_ACTIVATE, gep(c, base, off), cell)
                 : sp_lookup(c, s, lvl, gep(c, base, off), cell);
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
  int n = sp_path_of(c, s, target, path), l0 = -1;
  for (int l = 1; c->sf_task && l < n; l++)
    if (path[l] == c->sf_level) l0 = l;
  if (l0 > 0 && at_loop_cell(c, s, ixs))   /* active: the loop only visits active cells */
    return sp_descend(c, s, path, l0 - 1, c->sf_cell, i64c(c, path[l0 - 1]->offset), phys, act);
  LLVMValueRef root = cg_root(c, path[n - 1]->tree);
  if (l0 <= 0 || c->sf_level->kind != IR_SN_dense || ixs->nidx != c->sf_level->nidx)
    return sp_descend(c, s, path, n - 1, root, i64c(c, 0), phys, act);
  LLVMBasicBlockRef fast = cg_new_bb(c, "near"), slow = cg_new_bb(c, "far"), join = cg_new_bb(c, "near.far");
  LLVMBuildCondBr(B, in_loop_container(c, ixs, phys), fast, slow);
  LLVMPositionBuilderAtEnd(B, fast);
  const ir_snode *S = c->sf_level;
  LLVMValueRef off = LLVMBuildMul(B, cg_cell_index(c, s, S, phys), i64c(c, S->cell_bytes), "");
  off = LLVMBuildAdd(B, off, i64c(c, path[l0 - 1]->offset), "");
  LLVMValueRef near = sp_descend(c, s, path, l0 - 1, c->sf_node, off, phys, act);
  LLVMBasicBlockRef fast_end = LLVMGetInsertBlock(B);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, slow);
  LLVMValueRef far = sp_descend(c, s, path, n - 1, root, i64c(c, 0), phys, act);
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
  LLVMValueRef near = sp_interior_ptr(c, s, place);
  if (!near) near = sp_neighbour_ptr(c, s, place);
  if (near) return near;
  LLVMValueRef phys[IR_MAX_INDICES];
  cg_phys_indices(c, s, place, phys);
  return walk(c, s, place, place, phys, s->imm.ival == 1);
}

/* ---- snode_* statements ------------------------------------------------------------ */

static const ir_snode *level_of(cg *c, const ir_stmt *s) {
  ir_program *p = c->k->prog;
  const ir_snode *sn = ir_program_snode(p, s->aux);
  if (!sn)
    cg_fail(c, s, "'%s' names SNode %d, which this kernel's program does not have", ir_op_name(s->op), s->aux);
  if (!ir_snode_kind_is_level(sn->kind)) cg_fail(c, s, "S%d is not a level SNode", s->aux);
  if (!p->trees[sn->tree].materialized) cg_fail(c, s, "S%d belongs to a tree whose layout was not computed", s->aux);
  return sn;
}

/* Whether p lies inside the ambient cell (a sparse cell above was inactive). */
static LLVMValueRef in_ambient(cg *c, LLVMValueRef p) {
  LLVMValueRef amb = sp_rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
  LLVMValueRef size = sp_rt_member(c, offsetof(rt_runtime, ambient_bytes), c->t_i64);
  LLVMValueRef d = LLVMBuildSub(B, LLVMBuildPtrToInt(B, p, c->t_i64, ""), LLVMBuildPtrToInt(B, amb, c->t_i64, ""), "");
  return LLVMBuildICmp(B, LLVMIntULT, d, size, "");
}

static LLVMValueRef snode_op(cg *c, ir_stmt *s) {
  const ir_snode *lvl = level_of(c, s);
  bool whole = lvl->kind == IR_SN_dynamic &&
               (s->op == IR_snode_deactivate || s->op == IR_snode_append || s->op == IR_snode_reserve ||
                s->op == IR_snode_length);
  const ir_snode *ixs = whole ? lvl->parent : lvl;
  int nidx = s->op == IR_snode_append ? s->nops - 1 : s->nops;
  if (nidx != ixs->nidx) cg_fail(c, s, "S%d takes %d indices here, got %d", lvl->id, ixs->nidx, nidx);
  if ((s->op == IR_snode_append || s->op == IR_snode_reserve || s->op == IR_snode_length) &&
      lvl->kind != IR_SN_dynamic)
    cg_fail(c, s, "'%s' needs a dynamic SNode, S%d is %s", ir_op_name(s->op), lvl->id, ir_snode_kind_name(lvl->kind));
  LLVMValueRef phys[IR_MAX_INDICES];
  cg_phys_indices(c, s, ixs, phys);
  bool sparse = ir_snode_kind_is_sparse(lvl->kind);
  bool act = s->op == IR_snode_activate || s->op == IR_snode_append || s->op == IR_snode_reserve;
  LLVMValueRef node = walk(c, s, lvl, ixs, phys, act);
  switch (s->op) {
  case IR_snode_activate:
    if (sparse) sp_node_call(c, s, lvl, OP_ACTIVATE, node, cg_cell_index(c, s, lvl, phys));
    return NULL;
  case IR_snode_deactivate:
    if (whole) sp_node_call(c, s, lvl, OP_DEACTIVATE, node, i64c(c, 0));   /* clears the list */
    else if (sparse) sp_node_call(c, s, lvl, OP_DEACTIVATE, node, cg_cell_index(c, s, lvl, phys));
    return NULL;
  case IR_snode_is_active:
    if (sparse) {
      LLVMValueRef r = sp_node_call(c, s, lvl, OP_IS_ACTIVE, node, cg_cell_index(c, s, lvl, phys));
      return LLVMBuildICmp(B, LLVMIntNE, r, i32c(c, 0), "");
    }
    /* a dense cell is active when every cell above it is */
    if (ir_snode_under_sparse(lvl)) return LLVMBuildNot(B, in_ambient(c, node), "");
    return LLVMConstInt(c->t_i1, 1, 0);
  case IR_snode_length: {
    LLVMValueRef a[2] = {sp_meta(c, lvl->id), node};
    return sp_call_rt(c, s, "rt_dynamic_length", a, 2);
  }
  case IR_snode_append: case IR_snode_reserve: return sp_append(c, s, lvl, node);
  default: return NULL;
  }
}

/* ---- the other sparse tasks ------------------------------------------------------------ */

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
  sp_call_rt(c, task, "rt_gc_stage0", a0, 4);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, s1);
  sp_call_rt(c, task, "rt_gc_stage1", a0, 2);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, s2);
  LLVMValueRef lane = i32c(c, 0), nlanes = i32c(c, 1);
  if (c->target->gc_lanes) c->target->gc_lanes(c, &lane, &nlanes);
  LLVMValueRef a2[6] = {rt, id, worker, nworkers, lane, nlanes};
  sp_call_rt(c, task, "rt_gc_stage2", a2, 6);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

void cg_sparse_task_body(cg *c, ir_stmt *task, LLVMValueRef begin, LLVMValueRef end) {
  const ir_snode *lvl = level_of(c, task);
  LLVMValueRef rt = sp_runtime(c), id = i32c(c, lvl->id);
  switch (task->op) {
  case IR_task_clear_list: {
    LLVMValueRef a[2] = {rt, id};
    sp_call_rt(c, task, "rt_list_clear", a, 2);
    break;
  }
  case IR_task_listgen: {
    if (!lvl->parent) cg_fail(c, task, "task_listgen of the root S%d", lvl->id);
    LLVMValueRef a[6] = {rt, i32c(c, lvl->parent->id), id, i64c(c, lvl->offset), to_i32(c, begin), to_i32(c, end)};
    sp_call_rt(c, task, "rt_listgen", a, 6);
    break;
  }
  case IR_task_deactivate_all: {
    LLVMValueRef a[4] = {rt, id, to_i32(c, begin), to_i32(c, end)};
    sp_call_rt(c, task, "rt_deactivate_all", a, 4);
    break;
  }
  case IR_task_gc:
    if (lvl->kind != IR_SN_pointer && lvl->kind != IR_SN_dynamic)
      cg_fail(c, task, "task_gc of S%d, which is neither pointer nor dynamic", lvl->id);
    gc(c, task, rt, id, begin, to_i32(c, end));
    break;
  case IR_task_struct_for: sp_struct_for(c, task, lvl, begin, end); break;
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
  case IR_snode_append: case IR_snode_reserve: case IR_snode_length: {
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
