/*
** cg_sparse.h -- what cg_sparse.c (addresses, snode ops, the sparse tasks),
** cg_stencil.c (offset accesses of a struct-for) and cg_struct_for.c (its
** loops) share. Private to src/jit/llvm.
*/
#ifndef LATTICE_CG_SPARSE_H
#define LATTICE_CG_SPARSE_H

#include "llvm_codegen.h"

static inline LLVMValueRef i32c(cg *c, long long v) { return LLVMConstInt(c->t_i32, (unsigned long long)v, 1); }
static inline LLVMValueRef i64c(cg *c, long long v) { return LLVMConstInt(c->t_i64, (unsigned long long)v, 1); }
static inline LLVMValueRef to_i32(cg *c, LLVMValueRef v) { return cg_int_convert(c, v, true, c->t_i32); }
static inline LLVMValueRef gep(cg *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(c->b, c->t_i8, base, &off, 1, "");
}

/* ---- cg_sparse.c ---- */
/* The node operations by kind (rt_<kind>_activate, ...). */
enum { OP_ACTIVATE, OP_LOOKUP, OP_IS_ACTIVE, OP_DEACTIVATE };
LLVMValueRef sp_runtime(cg *c);                                   /* ctx->runtime */
LLVMValueRef sp_rt_member(cg *c, size_t offset, LLVMTypeRef t);   /* a member no task changes */
LLVMValueRef sp_meta(cg *c, int id);                              /* &rt->metas[id] */
LLVMValueRef sp_call_rt(cg *c, const ir_stmt *s, const char *name, LLVMValueRef *args, int n);
LLVMValueRef sp_node_call(cg *c, const ir_stmt *s, const ir_snode *lvl, int op, LLVMValueRef node,
                          LLVMValueRef cell);
/* cg_append.c: snode_append / snode_reserve on the list of container node */
LLVMValueRef sp_append(cg *c, ir_stmt *s, const ir_snode *lvl, LLVMValueRef node);
/* A read lookup of cell `cell` of container `node` of level lvl. */
LLVMValueRef sp_lookup(cg *c, const ir_stmt *s, const ir_snode *lvl, LLVMValueRef node, LLVMValueRef cell);
/* Levels from the target up to the root into path[]; returns their number. */
int sp_path_of(cg *c, const ir_stmt *s, const ir_snode *target, const ir_snode **path);
LLVMValueRef sp_descend(cg *c, ir_stmt *s, const ir_snode **path, int top, LLVMValueRef base, LLVMValueRef off,
                        LLVMValueRef *phys, bool act);
/* Whether s's indices are exactly the cell indices of struct-for task t over S. */
bool sp_loop_cell_indices(const ir_stmt *s, const ir_stmt *t, const ir_snode *S);

/* ---- cg_stencil.c ---- */
bool sp_offset_access(const ir_program *p, const ir_stmt *s, const ir_stmt *t, const ir_snode *S, int64_t *d);
bool sp_interior(const cg *c, const ir_stmt *t, const ir_snode *S, int64_t *lo, int64_t *hi);
LLVMValueRef sp_interior_ptr(cg *c, ir_stmt *s, const ir_snode *place);     /* NULL: not here */
LLVMValueRef sp_neighbour_table(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef node, LLVMValueRef *coord);
LLVMValueRef sp_neighbour_ptr(cg *c, ir_stmt *s, const ir_snode *place);    /* NULL: not here */

/* ---- cg_struct_for.c ---- */
void sp_struct_for(cg *c, ir_stmt *task, const ir_snode *S, LLVMValueRef begin, LLVMValueRef end);

#endif
