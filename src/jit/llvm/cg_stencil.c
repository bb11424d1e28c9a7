/*
** cg_stencil.c -- a struct-for body's accesses at the loop's own indices
** plus constants (a stencil). Inside a dense container such an access is the
** current cell's address plus a constant; the interior cells, where every
** such access stays inside the container, get a copy of the body with no
** tests at all; border cells find the containers around the current one in a
** per-container table of neighbours. docs/runtime.md has the layout rules.
*/
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/runtime.h"
#include "cg_sparse.h"

#define B (c->b)

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
bool sp_offset_access(const ir_program *p, const ir_stmt *s, const ir_stmt *t, const ir_snode *S,
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
  if (!sp_offset_access(r->c->k->prog, s, r->t, r->S, d)) return;
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

bool sp_interior(const cg *c, const ir_stmt *t, const ir_snode *S, int64_t *lo, int64_t *hi) {
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
LLVMValueRef sp_interior_ptr(cg *c, ir_stmt *s, const ir_snode *place) {
  const ir_snode *S = c->sf_level;
  int64_t d[IR_MAX_INDICES];
  if (!c->sf_interior || !sp_offset_access(c->k->prog, s, c->sf_task, S, d)) return NULL;
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
  if (s->imm.ival == 1 || !sp_offset_access(r->c->k->prog, s, r->t, S, d)) return;
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
LLVMValueRef sp_neighbour_table(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node,
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
  int depth = sp_path_of(c, task, S, path);
  /* the domain's extent along each physical axis: neighbours outside it read 0 */
  int64_t total[IR_MAX_INDICES];
  for (int a = 0; a < IR_MAX_INDICES; a++) total[a] = 1;
  for (int l = 0; l < depth; l++)
    for (int kk = 0; kk < path[l]->naxes; kk++) total[path[l]->axes[kk]] *= path[l]->shape[kk];
  LLVMValueRef amb = sp_rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
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
    LLVMValueRef p = sp_descend(c, task, path, depth - 1, root, i64c(c, 0), phys, false);
    LLVMBuildStore(B, LLVMBuildSelect(B, inside, p, amb, ""), slot);
  }
  return table;
}

/* A border cell's read at the loop indices plus constants, through the table. */
LLVMValueRef sp_neighbour_ptr(cg *c, ir_stmt *s, const ir_snode *place) {
  const ir_snode *S = c->sf_level;
  int64_t d[IR_MAX_INDICES];
  if (!c->sf_nbr || s->imm.ival == 1 || !sp_offset_access(c->k->prog, s, c->sf_task, S, d)) return NULL;
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
