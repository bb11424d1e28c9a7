/*
** cg_struct_for.c -- the body of a task_struct_for: walk the list of
** containers built by the listgen tasks and, per container, its active cells
** (a flat loop over a dense/bitmasked/pointer container's cells, the chunks
** of a dynamic one, or the interior/border split of a stencil, cg_stencil.c),
** running the loop body once per cell with the cell's address at hand.
*/
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/runtime.h"
#include "cg_sparse.h"

#define B (c->b)

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
  LLVMValueRef a[2] = {sp_meta(c, S->id), node};
  LLVMValueRef n = LLVMBuildSExt(B, sp_call_rt(c, task, "rt_dynamic_length", a, 2), c->t_i64, "");
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
  LLVMValueRef cell = gep(c, chunk, LLVMBuildAdd(B, i64c(c, RT_CHUNK_HEADER), LLVMBuildMul(B, j, i64c(c, S->cell_bytes), ""), ""));
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
    cell = sp_lookup(c, task, S, node, cellno);
    LLVMValueRef amb = sp_rt_member(c, offsetof(rt_runtime, ambient), c->t_ptr);
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
  if (s->imm.ival != 1 || !sp_offset_access(w->c->k->prog, s, w->t, w->S, d)) return;
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

void sp_struct_for(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef begin, LLVMValueRef end) {
  if (S->naxes < 1) cg_fail(c, task, "struct-for over S%d, which splits no axis", S->id);
  LLVMValueRef rt = sp_runtime(c);
  int64_t lo[IR_MAX_INDICES], hi[IR_MAX_INDICES];
  bool stencil = sp_interior(c, task, S, lo, hi);
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
    c->sf_nbr = sp_neighbour_table(c, task, S, node, coord);
    stencil_cells(c, task, S, node, coord, lo, hi);
    c->sf_nbr = NULL;
  }
  else grid_cells(c, task, S, node, coord);
  c->sf_task = NULL;
  c->sf_level = NULL;
  loop_close(c, &E);
}
