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

/* Strips casts between integer types (typecheck inserts them around indices). */
static const ir_stmt *uncast(const ir_stmt *v) {
  while (v->op == IR_cast && v->nops == 1 && ir_type_is_int(v->type) && ir_type_is_int(v->ops[0]->type) &&
         v->ops[0]->type != IR_i1)
    v = v->ops[0];
  return v;
}

/* Whether index v is struct-for t's virtual index k plus a constant (*d). */
static bool index_offset(const ir_stmt *v, const ir_stmt *t, int k, int64_t *d) {
  v = uncast(v);
  if (v->op == IR_loop_index) {
    *d = 0;
    return v->loop == t && v->imm.ival == k;
  }
  if ((v->op != IR_add && v->op != IR_sub) || v->nops != 2) return false;
  const ir_stmt *a = uncast(v->ops[0]), *b = uncast(v->ops[1]);
  if (v->op == IR_add && a->op == IR_const) {   /* const + i */
    const ir_stmt *x = a;
    a = b;
    b = x;
  }
  if (a->op != IR_loop_index || a->loop != t || a->imm.ival != k) return false;
  if (b->op != IR_const || !ir_type_is_int(b->type)) return false;
  /* small constants only: no wrap-around in the index's own type */
  if (b->imm.ival < -(1 << 20) || b->imm.ival > (1 << 20)) return false;
  *d = v->op == IR_add ? b->imm.ival : -b->imm.ival;
  return true;
}

/* Whether global_ptr s reads or writes a place in the cells of dense struct-for
** level S at the loop indices plus constants d[] (per virtual index). */
static bool offset_access(const ir_program *p, const ir_stmt *s, const ir_stmt *t, const ir_snode *S,
                          int64_t *d) {
  const ir_snode *place = s->op == IR_global_ptr ? ir_program_snode(p, s->aux) : NULL;
  if (!place) return false;
  if (place->kind != IR_SN_place || place->parent != S || s->nops != S->nidx) return false;
  for (int k = 0; k < s->nops; k++)
    if (!index_offset(s->ops[k], t, k, &d[k])) return false;
  return true;
}

/* The interior of the containers of dense level S for the offset accesses
** of task t: along listed axis kk, cells [lo[kk], hi[kk]) keep every such
** access inside the container. false when there is no interior worth a
** second copy of the body (no offset access, or cells spanning several
** indices along an axis). */
typedef struct {
  const cg *c;
  const ir_stmt *t;
  const ir_snode *S;
  int64_t dmin[IR_MAX_INDICES], dmax[IR_MAX_INDICES];   /* per physical axis */
  bool any, bad;
} interior_scan;

static void scan_offsets(ir_stmt *s, void *ud) {
  interior_scan *r = ud;
  int64_t d[IR_MAX_INDICES];
  if (!offset_access(r->c->k->prog, s, r->t, r->S, d)) return;
  for (int k = 0; k < s->nops; k++) {
    int a = r->S->physical_index_position[k];
    if (a < 0 || a >= IR_MAX_INDICES) {
      r->bad = true;
      return;
    }
    if (d[k] < r->dmin[a]) r->dmin[a] = d[k];
    if (d[k] > r->dmax[a]) r->dmax[a] = d[k];
    if (d[k]) r->any = true;
  }
}

static bool interior(const cg *c, const ir_stmt *t, const ir_snode *S, int64_t *lo, int64_t *hi) {
  if (S->kind != IR_SN_dense || !t->blocks[0]) return false;
  interior_scan r = {.c = c, .t = t, .S = S};
  ir_walk(t->blocks[0], scan_offsets, &r);
  if (!r.any || r.bad) return false;
  for (int a = 0; a < IR_MAX_INDICES; a++) {
    if (r.dmin[a] == 0 && r.dmax[a] == 0) continue;
    bool split = false;   /* an offset along an axis S does not split leaves the container */
    for (int kk = 0; kk < S->naxes; kk++) split |= S->axes[kk] == a;
    if (!split || S->below[a] != 1) return false;
  }
  for (int kk = 0; kk < S->naxes; kk++) {
    int a = S->axes[kk];
    lo[kk] = -r.dmin[a];
    hi[kk] = S->shape[kk] - r.dmax[a];
    if (lo[kk] >= hi[kk] || -r.dmin[a] > S->shape[kk] || r.dmax[a] > S->shape[kk]) return false;
  }
  return true;
}


/* In the interior: the address of offset access s, from the current cell. */
static LLVMValueRef interior_ptr(cg *c, ir_stmt *s, const ir_snode *place) {
  const ir_snode *S = c->sf_level;
  int64_t d[IR_MAX_INDICES];
  if (!c->sf_interior || !offset_access(c->k->prog, s, c->sf_task, S, d)) return NULL;
  if (c->sf_interior == 2)   /* a border row: leaving it along an outer axis goes through the table */
    for (int k = 0; k < s->nops; k++)
      if (d[k] && S->physical_index_position[k] != S->axes[S->naxes - 1]) return NULL;
  int64_t bytes = place->offset;
  for (int k = 0; k < s->nops; k++) {
    int a = S->physical_index_position[k];
    int64_t stride = S->cell_bytes;   /* row-major over the listed axes, the last fastest */
    for (int kk = S->naxes - 1; kk >= 0 && S->axes[kk] != a; kk--) stride *= S->shape[kk];
    bytes += d[k] * stride;
  }
  return gep(c, c->sf_cell, i64c(c, bytes));
}

static void scan_writes(ir_stmt *s, void *ud) {
  cg *c = ud;
  ir_program *p = c->k->prog;
  bool names_snode = s->op == IR_global_ptr || s->op == IR_snode_activate || s->op == IR_snode_append ||
                     s->op == IR_snode_deactivate;
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

/* ---- neighbour containers of a stencil ------------------------------------------
** Border cells of a stencil struct-for reach into the containers around the
** current one. Those are looked up once per container into a table indexed
** by direction (per listed axis -1, 0, +1: index sum of (dir+1) * 3^kk), so
** a border cell's neighbour is a table load and address arithmetic, with no
** branch and no walk from the root per access. Reads only: a write could
** land in the ambient cell. */

static int ipow3(int n) {
  int r = 1;
  while (n-- > 0) r *= 3;
  return r;
}

static int direction_of(const ir_snode *S, const int *dir) {
  int idx = 0;
  for (int kk = S->naxes - 1, w = 1; kk >= 0; kk--, w *= 3) idx += (dir[kk] + 1) * w;
  return idx;
}

typedef struct {
  const cg *c;
  const ir_stmt *t;
  const ir_snode *S;
  bool *need;          /* [3^naxes] */
} need_scan;

static void scan_needs(ir_stmt *s, void *ud) {
  need_scan *r = ud;
  const ir_snode *S = r->S;
  int64_t d[IR_MAX_INDICES];
  if (s->imm.ival == 1 || !offset_access(r->c->k->prog, s, r->t, S, d)) return;
  int sign[IR_MAX_INDICES] = {0};
  for (int k = 0; k < s->nops; k++)
    for (int kk = 0; kk < S->naxes; kk++)
      if (S->axes[kk] == S->physical_index_position[k]) sign[kk] = d[k] > 0 ? 1 : d[k] < 0 ? -1 : 0;
  /* every combination of crossing or not along the axes the access moves on */
  int n = ipow3(S->naxes);
  for (int combo = 0; combo < (1 << S->naxes); combo++) {
    int dir[IR_MAX_INDICES];
    bool ok = true;
    for (int kk = 0; kk < S->naxes; kk++) {
      dir[kk] = (combo >> kk) & 1 ? sign[kk] : 0;
      if ((combo >> kk) & 1 && !sign[kk]) ok = false;
    }
    int idx = direction_of(S, dir);
    if (ok && idx < n) r->need[idx] = true;
  }
}

/* Fills the table for the container at coord (i64 per physical axis). */
static LLVMValueRef neighbour_table(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node,
                                    LLVMValueRef *coord) {
  int n = ipow3(S->naxes);
  if (n > 729) return NULL;                                   /* 6 axes and more: not worth it */
  bool need[729] = {0};
  need_scan r = {c, task, S, need};
  ir_walk(task->blocks[0], scan_needs, &r);
  LLVMTypeRef at = LLVMArrayType2(c->t_ptr, (uint64_t)n);
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(eb, c->entry);
  LLVMValueRef table = LLVMBuildAlloca(eb, at, "nbr");
  LLVMDisposeBuilder(eb);
  const ir_snode *path[64];
  int depth = path_of(c, task, S, path);
  /* the domain's extent along each physical axis: neighbours outside it read 0 */
  int64_t total[IR_MAX_INDICES];
  for (int a = 0; a < IR_MAX_INDICES; a++) total[a] = 1;
  for (int l = 0; l < depth; l++)
    for (int kk = 0; kk < path[l]->naxes; kk++) total[path[l]->axes[kk]] *= path[l]->shape[kk];
  LLVMValueRef amb = rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
  LLVMValueRef root = cg_root(c, S->tree);
  for (int idx = 0; idx < n; idx++) {
    LLVMValueRef slot = gep(c, table, i64c(c, (long long)idx * 8));
    int dir[IR_MAX_INDICES], rest = idx, center = 1;
    for (int kk = S->naxes - 1; kk >= 0; kk--, rest /= 3) {
      dir[kk] = rest % 3 - 1;
      if (dir[kk]) center = 0;
    }
    if (center) {
      LLVMBuildStore(B, node, slot);
      continue;
    }
    if (!need[idx]) continue;
    LLVMValueRef phys[IR_MAX_INDICES], inside = LLVMConstInt(c->t_i1, 1, 0);
    for (int a = 0; a < IR_MAX_INDICES; a++) phys[a] = coord[a];
    for (int kk = 0; kk < S->naxes; kk++) {
      int a = S->axes[kk];
      if (!dir[kk]) continue;
      phys[a] = LLVMBuildAdd(B, coord[a], i64c(c, dir[kk] * S->parent->below[a]), "");
      inside = LLVMBuildAnd(B, inside, LLVMBuildICmp(B, LLVMIntULT, phys[a], i64c(c, total[a]), ""), "");
    }
    /* outside the domain: look up cell 0 instead (always in range), then ignore it */
    for (int a = 0; a < IR_MAX_INDICES; a++) phys[a] = LLVMBuildSelect(B, inside, phys[a], i64c(c, 0), "");
    LLVMValueRef p = descend(c, task, path, depth - 1, root, i64c(c, 0), phys, false);
    LLVMBuildStore(B, LLVMBuildSelect(B, inside, p, amb, ""), slot);
  }
  return table;
}

/* A border cell's read at the loop indices plus constants, through the table. */
static LLVMValueRef neighbour_ptr(cg *c, ir_stmt *s, const ir_snode *place) {
  const ir_snode *S = c->sf_level;
  int64_t d[IR_MAX_INDICES];
  if (!c->sf_nbr || s->imm.ival == 1 || !offset_access(c->k->prog, s, c->sf_task, S, d)) return NULL;
  int64_t dphys[IR_MAX_INDICES] = {0};
  for (int k = 0; k < s->nops; k++) dphys[S->physical_index_position[k]] = d[k];
  LLVMValueRef dirv = i64c(c, 0), off = i64c(c, place->offset);
  int64_t stride = S->cell_bytes, w = 1;
  for (int kk = S->naxes - 1; kk >= 0; kk--) {
    int a = S->axes[kk];
    int64_t ext = S->shape[kk];
    LLVMValueRef t = LLVMBuildAdd(B, c->sf_cellc[a], i64c(c, dphys[a]), "");
    LLVMValueRef lo = LLVMBuildICmp(B, LLVMIntSLT, t, i64c(c, 0), "");
    LLVMValueRef hi = LLVMBuildICmp(B, LLVMIntSGE, t, i64c(c, ext), "");
    LLVMValueRef which = LLVMBuildSelect(B, lo, i64c(c, -1), LLVMBuildSelect(B, hi, i64c(c, 1), i64c(c, 0), ""), "");
    t = LLVMBuildSub(B, t, LLVMBuildMul(B, which, i64c(c, ext), ""), "");
    dirv = LLVMBuildAdd(B, dirv, LLVMBuildMul(B, LLVMBuildAdd(B, which, i64c(c, 1), ""), i64c(c, w), ""), "");
    off = LLVMBuildAdd(B, off, LLVMBuildMul(B, t, i64c(c, stride), ""), "");
    stride *= ext;
    w *= 3;
  }
  LLVMValueRef cont = LLVMBuildLoad2(B, c->t_ptr, gep(c, c->sf_nbr, LLVMBuildMul(B, dirv, i64c(c, 8), "")), "");
  return gep(c, cont, off);
}

LLVMValueRef cg_sparse_global_ptr(cg *c, ir_stmt *s, const ir_snode *place) {
  LLVMValueRef near = interior_ptr(c, s, place);
  if (!near) near = neighbour_ptr(c, s, place);
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
  for (int a = 0; a < IR_MAX_INDICES; a++) c->sf_cellc[a] = off[a];
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

/* off[a] (i64) for each physical axis a that S splits: cell number cellno's
** coordinate along a times what one cell spans (row-major over the listed
** axes, the last fastest; constant extents, so shifts and masks). */
static void cell_offsets(cg *c, const ir_snode *S, LLVMValueRef cellno, LLVMValueRef *off) {
  LLVMValueRef rest = cellno;
  for (int k = S->naxes - 1; k >= 0; k--) {
    LLVMValueRef ext = i64c(c, S->shape[k]);
    LLVMValueRef ck = k > 0 ? LLVMBuildURem(B, rest, ext, "") : rest;
    if (k > 0) rest = LLVMBuildUDiv(B, rest, ext, "");
    int a = S->axes[k];
    off[a] = LLVMBuildMul(B, ck, i64c(c, S->below[a]), "");
  }
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
  LLVMValueRef off[IR_MAX_INDICES] = {0};
  cell_offsets(c, S, cellno, off);
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

typedef struct {
  const cg *c;
  const ir_stmt *t;
  const ir_snode *S;
  bool found;
} write_scan;

static void scan_outer_writes(ir_stmt *s, void *ud) {
  write_scan *w = ud;
  int64_t d[IR_MAX_INDICES];
  if (s->imm.ival != 1 || !offset_access(w->c->k->prog, s, w->t, w->S, d)) return;
  for (int k = 0; k < s->nops; k++)
    if (d[k] && w->S->physical_index_position[k] != w->S->axes[w->S->naxes - 1]) w->found = true;
}

/* Whether the body writes at an offset along an axis other than the last
** (such a write may leave the container, and the table is for reads). */
static bool outer_offset_writes(const cg *c, const ir_stmt *t, const ir_snode *S) {
  write_scan w = {c, t, S, false};
  ir_walk(t->blocks[0], scan_outer_writes, &w);
  return w.found;
}

/* Cells of a dense container whose body reads neighbours (a stencil):
** rows along the last listed axis; in a row whose outer coordinates are
** interior, the interior cells [lo, hi) run a copy of the body in which
** every neighbour is the current cell's address plus a constant (no test,
** so it vectorizes like a dense stencil), and the remaining cells run the
** general body, which checks each neighbour against the container. */
static void stencil_cells(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node, LLVMValueRef *coord,
                          const int64_t *lo, const int64_t *hi) {
  int m = S->naxes;
  int64_t row = S->shape[m - 1];
  sp_loop R;
  LLVMValueRef r = loop_open(c, &R, i64c(c, 0), i64c(c, S->num_cells / row));
  LLVMValueRef outer_in = LLVMConstInt(c->t_i1, 1, 0), rest = r;
  for (int k = m - 2; k >= 0; k--) {   /* the row's coordinates along the outer axes */
    LLVMValueRef ck = k > 0 ? LLVMBuildURem(B, rest, i64c(c, S->shape[k]), "") : rest;
    if (k > 0) rest = LLVMBuildUDiv(B, rest, i64c(c, S->shape[k]), "");
    LLVMValueRef in = LLVMBuildICmp(B, LLVMIntULT, LLVMBuildSub(B, ck, i64c(c, lo[k]), ""),
                                    i64c(c, hi[k] - lo[k]), "");
    outer_in = LLVMBuildAnd(B, outer_in, in, "");
  }
  LLVMValueRef first = LLVMBuildMul(B, r, i64c(c, row), "");
  /* the middle cells [lo, hi) of a row: of an interior row with plain offsets
  ** (mode 1); of a border row, when the table can serve every access that
  ** leaves the row's container, through it (mode 2) */
  bool rowtable = c->sf_nbr && m > 1 && !outer_offset_writes(c, task, S);
  LLVMBasicBlockRef fast = cg_new_bb(c, "row.interior"), general = cg_new_bb(c, "row.border");
  LLVMBasicBlockRef border = rowtable ? cg_new_bb(c, "row.border.middle") : NULL;
  LLVMBuildCondBr(B, outer_in, fast, rowtable ? border : general);
  LLVMValueRef off[IR_MAX_INDICES] = {0};
  for (int mode = 1; mode <= (rowtable ? 2 : 1); mode++) {
    LLVMPositionBuilderAtEnd(B, mode == 1 ? fast : border);
    sp_loop I;
    LLVMValueRef j = loop_open(c, &I, i64c(c, lo[m - 1]), i64c(c, hi[m - 1]));
    LLVMValueRef cellno = LLVMBuildAdd(B, first, j, "");
    for (int a = 0; a < IR_MAX_INDICES; a++) off[a] = NULL;
    cell_offsets(c, S, cellno, off);
    c->sf_interior = mode;
    cell_body(c, task, S, node, gep(c, node, LLVMBuildMul(B, cellno, i64c(c, S->cell_bytes), "")), coord, off);
    c->sf_interior = 0;
    loop_close(c, &I);
    LLVMBuildBr(B, general);
  }
  if (rowtable) outer_in = LLVMConstInt(c->t_i1, 1, 0);   /* every row ran its middle */
  /* every other cell of the row: j jumps over [lo, hi) when the row is interior */
  LLVMPositionBuilderAtEnd(B, general);
  LLVMValueRef lo_c = i64c(c, lo[m - 1]), hi_c = i64c(c, hi[m - 1]);
  sp_loop G;
  LLVMValueRef start = LLVMBuildSelect(B, LLVMBuildAnd(B, outer_in, LLVMConstInt(c->t_i1, lo[m - 1] == 0, 0), ""),
                                       hi_c, i64c(c, 0), "");
  LLVMValueRef j = loop_open(c, &G, start, i64c(c, row));
  LLVMValueRef cellno = LLVMBuildAdd(B, first, j, "");
  for (int a = 0; a < IR_MAX_INDICES; a++) off[a] = NULL;
  cell_offsets(c, S, cellno, off);
  cell_body(c, task, S, node, gep(c, node, LLVMBuildMul(B, cellno, i64c(c, S->cell_bytes), "")), coord, off);
  cg_br(c, G.next);
  LLVMPositionBuilderAtEnd(B, G.next);
  LLVMValueRef j1 = LLVMBuildAdd(B, G.i, i64c(c, 1), "");
  LLVMValueRef skip = LLVMBuildAnd(B, outer_in, LLVMBuildICmp(B, LLVMIntEQ, j1, lo_c, ""), "");
  LLVMBuildStore(B, LLVMBuildSelect(B, skip, hi_c, j1, ""), G.var);
  LLVMBuildBr(B, G.head);
  LLVMPositionBuilderAtEnd(B, G.exit);
  loop_close(c, &R);
}

/* Element e (i64) of snode's list of containers: rt_list_get with plain
** loads, as nothing appends to the list while a struct-for walks it (the
** listgen tasks before it ended at a barrier), so LLVM may hoist and
** schedule them freely. */
static LLVMValueRef list_element(cg *c, LLVMValueRef rt, int snode, LLVMValueRef e) {
  LLVMValueRef lists = cg_invariant(c, LLVMBuildLoad2(B, c->t_ptr, gep(c, rt, i64c(c, offsetof(rt_runtime, lists))), ""));
  LLVMValueRef l = gep(c, lists, i64c(c, (long long)snode * (long long)sizeof(rt_list)));
  LLVMValueRef log2 = cg_invariant(c, LLVMBuildLoad2(B, c->t_i32, gep(c, l, i64c(c, offsetof(rt_list, log2_chunk))), ""));
  log2 = LLVMBuildZExt(B, log2, c->t_i64, "");
  LLVMValueRef chunks = cg_invariant(c, LLVMBuildLoad2(B, c->t_ptr, gep(c, l, i64c(c, offsetof(rt_list, chunks))), ""));
  LLVMValueRef slot = gep(c, chunks, LLVMBuildMul(B, LLVMBuildLShr(B, e, log2, ""), i64c(c, 8), ""));
  LLVMValueRef chunk = cg_invariant(c, LLVMBuildLoad2(B, c->t_ptr, slot, ""));
  LLVMValueRef mask = LLVMBuildSub(B, LLVMBuildShl(B, i64c(c, 1), log2, ""), i64c(c, 1), "");
  return gep(c, chunk, LLVMBuildMul(B, LLVMBuildAnd(B, e, mask, ""), i64c(c, sizeof(rt_elem)), ""));
}

static void struct_for(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef begin, LLVMValueRef end) {
  if (S->naxes < 1) cg_fail(c, task, "struct-for over S%d, which splits no axis", S->id);
  LLVMValueRef rt = runtime(c);
  int64_t lo[IR_MAX_INDICES], hi[IR_MAX_INDICES];
  bool stencil = interior(c, task, S, lo, hi);
  sp_loop E;
  LLVMValueRef e = loop_open(c, &E, begin, end);
  LLVMValueRef elem = list_element(c, rt, S->id, e);
  LLVMValueRef node = LLVMBuildLoad2(B, c->t_ptr, gep(c, elem, i64c(c, offsetof(rt_elem, container))), "");
  LLVMValueRef coord[IR_MAX_INDICES];
  for (int a = 0; a < IR_MAX_INDICES; a++) {
    LLVMValueRef p = gep(c, elem, i64c(c, (long long)(offsetof(rt_elem, coord) + 4 * (size_t)a)));
    coord[a] = LLVMBuildSExt(B, LLVMBuildLoad2(B, c->t_i32, p, ""), c->t_i64, "");
  }
  if (S->kind == IR_SN_dynamic) dynamic_cells(c, task, S, node, coord);
  else if (stencil) {
    c->sf_nbr = neighbour_table(c, task, S, node, coord);
    stencil_cells(c, task, S, node, coord, lo, hi);
    c->sf_nbr = NULL;
  }
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
