/*
** cg_memory.c -- kernel arguments, locals, field addresses (global_ptr),
** global temporaries, loads/stores, atomics and bounds checks.
**
** The pointers read from rt_context (tree roots, args, gtmp) do not change
** while a task runs; their loads carry !invariant.load so that stores to
** fields cannot force reloads and block vectorization.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/snode.h"
#include "llvm_codegen.h"

#define B (c->b)

LLVMValueRef cg_invariant(cg *c, LLVMValueRef load) {
  unsigned kind = LLVMGetMDKindIDInContext(c->ctx, "invariant.load", 14);
  LLVMSetMetadata(load, kind, LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, NULL, 0)));
  return load;
}

LLVMValueRef cg_dereferenceable(LLVMContextRef ctx, LLVMValueRef load, unsigned long long bytes) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMMetadataRef n = LLVMValueAsMetadata(LLVMConstInt(i64, bytes, 0));
  LLVMMetadataRef a = LLVMValueAsMetadata(LLVMConstInt(i64, 8, 0));
  LLVMSetMetadata(load, LLVMGetMDKindIDInContext(ctx, "dereferenceable", 15),
                  LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, &n, 1)));
  LLVMSetMetadata(load, LLVMGetMDKindIDInContext(ctx, "align", 5),
                  LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, &a, 1)));
  LLVMSetMetadata(load, LLVMGetMDKindIDInContext(ctx, "noundef", 7),
                  LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, NULL, 0)));
  return load;
}

#define invariant cg_invariant

/* ---- fields never overlap -----------------------------------------------------
** Every place is its own memory: the cells of two places never share a byte
** (a cell holds each place at its own offset), so a load of one place cannot
** see a store to another. A TBAA type per place tells LLVM so, and a loop
** storing to one field while reading others vectorizes without run-time
** overlap checks. Only accesses through global_ptr are tagged: ndarrays may
** be passed twice, and the runtime's own accesses carry clang's tags, under
** another root, which LLVM treats as aliasing anything. Reads of inactive
** sparse cells share the ambient cell, which nothing writes; writes that
** found the pool exhausted share the sink, which nothing reads. */
static LLVMValueRef place_tag(cg *c, const ir_stmt *ptr) {
  if (ptr->op != IR_global_ptr || ptr->aux < 0 || ptr->aux >= IR_MAX_SNODES) return NULL;
  if (!c->tbaa && !(c->tbaa = calloc(IR_MAX_SNODES, sizeof *c->tbaa))) return NULL;
  if (!c->tbaa[ptr->aux]) {
    LLVMMetadataRef root_name = LLVMMDStringInContext2(c->ctx, "lattice fields", 14);
    LLVMMetadataRef root = LLVMMDNodeInContext2(c->ctx, &root_name, 1);
    char name[32];
    int n = snprintf(name, sizeof name, "lattice place %d", ptr->aux);
    LLVMMetadataRef zero = LLVMValueAsMetadata(LLVMConstInt(c->t_i64, 0, 0));
    LLVMMetadataRef type[3] = {LLVMMDStringInContext2(c->ctx, name, (size_t)n), root, zero};
    LLVMMetadataRef ty = LLVMMDNodeInContext2(c->ctx, type, 3);
    LLVMMetadataRef tag[3] = {ty, ty, zero};
    c->tbaa[ptr->aux] = LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, tag, 3));
  }
  return c->tbaa[ptr->aux];
}

static void tag_access(cg *c, LLVMValueRef access, const ir_stmt *ptr) {
  LLVMValueRef tag = place_tag(c, ptr);
  if (tag) LLVMSetMetadata(access, LLVMGetMDKindIDInContext(c->ctx, "tbaa", 4), tag);
}

/* ptr[index] of an array of element type t whose address is ctx field `field` */
static LLVMValueRef ctx_array_load(cg *c, int field, LLVMTypeRef t, long long index) {
  LLVMValueRef base = cg_global(c, invariant(c, cg_ctx_field(c, field)));
  LLVMValueRef idx = LLVMConstInt(c->t_i64, (unsigned long long)index, 0);
  LLVMValueRef p = LLVMBuildGEP2(B, t, base, &idx, 1, "");
  return invariant(c, LLVMBuildLoad2(B, t, p, ""));
}

static LLVMValueRef arg(cg *c, ir_stmt *s) {
  if (s->aux < 0 || s->aux >= RT_MAX_ARGS) cg_fail(c, s, "argument number %d out of range", s->aux);
  LLVMValueRef bits = ctx_array_load(c, CG_CTX_ARGS, c->t_i64, s->aux);   /* context.h encoding */
  switch (s->type) {
  case IR_f32: return LLVMBuildBitCast(B, LLVMBuildTrunc(B, bits, c->t_i32, ""), cg_type(c, IR_f32), "");
  case IR_f64: return LLVMBuildBitCast(B, bits, cg_type(c, IR_f64), "");
  case IR_i1: return LLVMBuildICmp(B, LLVMIntNE, bits, LLVMConstInt(c->t_i64, 0, 0), "");
  default: return cg_int_convert(c, bits, false, cg_type(c, s->type));
  }
}

static ir_snode *place_of(cg *c, ir_stmt *s) {
  ir_program *p = c->k->prog;
  ir_snode *sn = ir_program_snode(p, s->aux);
  if (!sn)
    cg_fail(c, s, "'%s' names SNode %d, which this kernel's program does not have", ir_op_name(s->op), s->aux);
  if (sn->kind != IR_SN_place) cg_fail(c, s, "SNode %d is not a place", s->aux);
  if (!p->trees[sn->tree].materialized)
    cg_fail(c, s, "field '%s' belongs to a tree whose layout was not computed", sn->name ? sn->name : "?");
  return sn;
}

static bool axis_split_above(const ir_snode *lvl, int axis) {
  for (const ir_snode *q = lvl->parent; q; q = q->parent)
    for (int k = 0; k < q->naxes; k++)
      if (q->axes[k] == axis) return true;
  return false;
}

void cg_phys_indices(cg *c, ir_stmt *s, const ir_snode *sn, LLVMValueRef *phys) {
  for (int a = 0; a < IR_MAX_INDICES; a++) phys[a] = NULL;
  for (int i = 0; i < sn->nidx; i++) {
    int a = sn->physical_index_position[i];
    if (a < 0 || a >= IR_MAX_INDICES) cg_fail(c, s, "bad physical axis %d", a);
    phys[a] = cg_int_convert(c, cg_get(c, s->ops[i]), ir_type_is_signed(s->ops[i]->type), c->t_i64);
  }
}

LLVMValueRef cg_cell_index(cg *c, ir_stmt *s, const ir_snode *lvl, LLVMValueRef *phys) {
  LLVMTypeRef i64 = c->t_i64;
  LLVMValueRef cell = LLVMConstInt(i64, 0, 0);
  for (int k = 0; k < lvl->naxes; k++) {
    int a = lvl->axes[k];
    if (!phys[a]) cg_fail(c, s, "level S%d splits axis %d, which the field's indices do not reach", lvl->id, a);
    LLVMValueRef coord = phys[a];
    if (lvl->below[a] > 1) coord = LLVMBuildUDiv(B, coord, LLVMConstInt(i64, (unsigned long long)lvl->below[a], 0), "");
    /* the outermost level of an axis needs no wrap for in-range indices */
    if (axis_split_above(lvl, a)) coord = LLVMBuildURem(B, coord, LLVMConstInt(i64, (unsigned long long)lvl->shape[k], 0), "");
    cell = LLVMBuildAdd(B, LLVMBuildMul(B, cell, LLVMConstInt(i64, (unsigned long long)lvl->shape[k], 0), ""), coord, "");
  }
  return cell;
}

LLVMValueRef cg_global(cg *c, LLVMValueRef p) {
  unsigned as = c->target->global_as;
  if (!as) return p;
  LLVMValueRef g = LLVMBuildAddrSpaceCast(B, p, LLVMPointerTypeInContext(c->ctx, as), "");
  return LLVMBuildAddrSpaceCast(B, g, c->t_ptr, "");
}

LLVMValueRef cg_root(cg *c, int tree) { return cg_global(c, ctx_array_load(c, CG_CTX_ROOTS, c->t_ptr, tree)); }

/* The element's address: the tree's base plus, for each level from the root
** down, cell index * cell_bytes + the child container's offset (snode.h; the
** host twin is ir_snode_offset). Fields under sparse levels: cg_sparse.c. */
static LLVMValueRef global_ptr(cg *c, ir_stmt *s) {
  ir_snode *place = place_of(c, s);
  if (s->nops != place->nidx)
    cg_fail(c, s, "field '%s' takes %d indices, got %d", place->name ? place->name : "?", place->nidx, s->nops);
  if (ir_snode_under_sparse(place)) return cg_sparse_global_ptr(c, s, place);
  LLVMValueRef phys[IR_MAX_INDICES];
  cg_phys_indices(c, s, place, phys);
  ir_snode *path[64];
  int n = 0;
  for (ir_snode *q = place; q; q = q->parent) {
    if (n == 64) cg_fail(c, s, "SNode tree deeper than 64 levels");
    path[n++] = q;
  }
  LLVMTypeRef i64 = c->t_i64;
  LLVMValueRef off = LLVMConstInt(i64, 0, 0);
  for (int l = n - 1; l > 0; l--) {                /* path[n-1] is the root */
    ir_snode *lvl = path[l], *child = path[l - 1];
    LLVMValueRef cell = cg_cell_index(c, s, lvl, phys);
    off = LLVMBuildAdd(B, off, LLVMBuildMul(B, cell, LLVMConstInt(i64, (unsigned long long)lvl->cell_bytes, 0), ""), "");
    if (child->offset) off = LLVMBuildAdd(B, off, LLVMConstInt(i64, (unsigned long long)child->offset, 0), "");
  }
  LLVMValueRef base = cg_root(c, place->tree);
  return LLVMBuildGEP2(B, c->t_i8, base, &off, 1, "");
}

static void check_index(cg *c, ir_stmt *s) {
  ir_snode *place = place_of(c, s);
  int64_t axis = s->imm.ival;
  if (axis < 0 || axis >= place->nidx) cg_fail(c, s, "check_index on axis %lld of a %d-index field", (long long)axis, place->nidx);
  ir_stmt *ix = s->ops[0];
  LLVMValueRef v = cg_int_convert(c, cg_get(c, ix), ir_type_is_signed(ix->type), c->t_i64);
  /* unsigned compare: negative indices are huge */
  LLVMValueRef bad = LLVMBuildICmp(B, LLVMIntUGE, v, LLVMConstInt(c->t_i64, (unsigned long long)place->total_shape[axis], 0), "");
  LLVMTypeRef tys[5] = {c->t_ptr, c->t_i32, c->t_i32, c->t_i64, c->t_i32};
  LLVMValueRef args[5] = {c->ctxv, LLVMConstInt(c->t_i32, (unsigned long long)place->id, 0),
                          LLVMConstInt(c->t_i32, (unsigned long long)axis, 0), v,
                          LLVMConstInt(c->t_i32, (unsigned long long)s->loc.line, 0)};
  cg_fail_if(c, bad, "rt_raise_index_error", 5, tys, args);
}

/* Two f32 atomic adds in a row to the halves of one aligned 8-byte word --
** what lt.atomic_add of a vec2 to a vec2 cell becomes -- are one 8-byte
** compare-and-swap loop on the CPU, where a float atomic add is such a loop
** anyway: half the locked instructions of a scatter such as MPM's P2G. The
** two adds stay atomic (together now). Candidates are consecutive adds to
** two places of one parent 4 bytes apart; the pairing itself is checked at
** run time (the second address is the first plus 4, the first 8-byte
** aligned), else they are two adds. Not across the parts and pieces of a
** split task (cg_split.c), and not on NVPTX, whose float adds are native.
**
** pair_of: the atomic that pairs with s, the next statement but constants
** (a vector constant's components come between the two adds); NULL if none. */
static ir_stmt *pair_of(cg *c, ir_stmt *s) {
  ir_stmt *n = s->next;
  while (n && n != c->part_end && n->op == IR_const) n = n->next;
  if (!n || n == c->part_end || strcmp(c->target->name, "x86_64") != 0 || LLVMCountParams(c->fn) != 4) return NULL;
  if (s->op != IR_atomic_add || n->op != IR_atomic_add || s->type != IR_f32 || n->type != IR_f32) return NULL;
  if (s->ops[0]->op != IR_global_ptr || n->ops[0]->op != IR_global_ptr) return NULL;
  const ir_snode *a = place_of(c, s->ops[0]), *b = place_of(c, n->ops[0]);
  return a->parent == b->parent && b->offset == a->offset + 4 ? n : NULL;
}

/* The pair (s, n = pair_of(s)); sets both statements' values (the old
** values, as lt.atomic_add returns them). The constants between them are
** emitted first (again later, to the same values). */
static void atomic_pair(cg *c, ir_stmt *s, ir_stmt *n) {
  for (ir_stmt *k = s->next; k != n; k = k->next) cg_stmt(c, k);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(c->ctx), v2 = LLVMVectorType(f32, 2);
  LLVMValueRef p = cg_get(c, s->ops[0]), q = cg_get(c, n->ops[0]);
  LLVMValueRef x = cg_get(c, s->ops[1]), y = cg_get(c, n->ops[1]);
  /* as pointers, so LLVM folds it where both come from one base */
  LLVMValueRef four = LLVMConstInt(c->t_i64, 4, 0);
  LLVMValueRef adjacent = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildGEP2(B, c->t_i8, p, &four, 1, ""), q, "");
  LLVMValueRef pi = LLVMBuildPtrToInt(B, p, c->t_i64, "");
  LLVMValueRef aligned = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, pi, LLVMConstInt(c->t_i64, 7, 0), ""),
                                       LLVMConstInt(c->t_i64, 0, 0), "");
  LLVMBasicBlockRef wide = cg_new_bb(c, "atomic2.wide"), loop = cg_new_bb(c, "atomic2.loop");
  LLVMBasicBlockRef two = cg_new_bb(c, "atomic2.two"), done = cg_new_bb(c, "atomic2.done");
  LLVMBuildCondBr(B, LLVMBuildAnd(B, adjacent, aligned, ""), wide, two);

  LLVMPositionBuilderAtEnd(B, wide);
  LLVMValueRef add = LLVMBuildInsertElement(B, LLVMGetUndef(v2), x, LLVMConstInt(c->t_i32, 0, 0), "");
  add = LLVMBuildInsertElement(B, add, y, LLVMConstInt(c->t_i32, 1, 0), "");
  LLVMValueRef first = LLVMBuildLoad2(B, c->t_i64, p, "");
  LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(first, 8);
  LLVMBuildBr(B, loop);
  LLVMPositionBuilderAtEnd(B, loop);
  LLVMValueRef old = LLVMBuildPhi(B, c->t_i64, "old");
  LLVMValueRef sum = LLVMBuildFAdd(B, LLVMBuildBitCast(B, old, v2, ""), add, "");
  LLVMValueRef cas = LLVMBuildAtomicCmpXchg(B, p, old, LLVMBuildBitCast(B, sum, c->t_i64, ""),
                                            LLVMAtomicOrderingSequentiallyConsistent,
                                            LLVMAtomicOrderingSequentiallyConsistent, 0);
  LLVMValueRef seen = LLVMBuildExtractValue(B, cas, 0, "");
  LLVMBasicBlockRef from[2] = {wide, loop};
  LLVMValueRef in[2] = {first, seen};
  LLVMAddIncoming(old, in, from, 2);
  LLVMValueRef oldv = LLVMBuildBitCast(B, old, v2, "");   /* what the successful CAS replaced */
  LLVMValueRef wx = LLVMBuildExtractElement(B, oldv, LLVMConstInt(c->t_i32, 0, 0), "");
  LLVMValueRef wy = LLVMBuildExtractElement(B, oldv, LLVMConstInt(c->t_i32, 1, 0), "");
  LLVMBuildCondBr(B, LLVMBuildExtractValue(B, cas, 1, ""), done, loop);
  LLVMBasicBlockRef wide_end = loop;

  LLVMPositionBuilderAtEnd(B, two);
  LLVMValueRef tx = LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpFAdd, p, x, LLVMAtomicOrderingSequentiallyConsistent, 0);
  LLVMValueRef ty = LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpFAdd, q, y, LLVMAtomicOrderingSequentiallyConsistent, 0);
  LLVMBuildBr(B, done);

  LLVMPositionBuilderAtEnd(B, done);
  LLVMBasicBlockRef ends[2] = {wide_end, two};
  LLVMValueRef rx = LLVMBuildPhi(B, f32, ""), ry = LLVMBuildPhi(B, f32, "");
  LLVMValueRef ix[2] = {wx, tx}, iy[2] = {wy, ty};
  LLVMAddIncoming(rx, ix, ends, 2);
  LLVMAddIncoming(ry, iy, ends, 2);
  cg_set(c, s, rx);
  cg_set(c, n, ry);
  c->paired = n;
}

/* atomic_mul, which no target has an instruction for: a compare-and-swap
** loop on the value's bits (an integer of its width; LLVM widens a narrow
** one where the target needs it). The result is the value the successful
** exchange replaced. */
static LLVMValueRef atomic_mul(cg *c, ir_stmt *s) {
  bool f = ir_type_is_float(s->type);
  LLVMTypeRef t = cg_type(c, s->type), it = LLVMIntTypeInContext(c->ctx, (unsigned)ir_type_bits(s->type));
  LLVMValueRef p = cg_get(c, s->ops[0]), v = cg_get(c, s->ops[1]);
  LLVMValueRef first = LLVMBuildLoad2(B, it, p, "");
  LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(first, (unsigned)ir_type_bits(s->type) / 8);
  LLVMBasicBlockRef entry = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef loop = cg_new_bb(c, "atomic_mul.loop"), done = cg_new_bb(c, "atomic_mul.done");
  LLVMBuildBr(B, loop);
  LLVMPositionBuilderAtEnd(B, loop);
  LLVMValueRef old = LLVMBuildPhi(B, it, "old");
  LLVMValueRef prod = f ? LLVMBuildBitCast(B, LLVMBuildFMul(B, LLVMBuildBitCast(B, old, t, ""), v, ""), it, "")
                        : LLVMBuildMul(B, old, v, "");
  LLVMValueRef cas = LLVMBuildAtomicCmpXchg(B, p, old, prod, LLVMAtomicOrderingSequentiallyConsistent,
                                            LLVMAtomicOrderingSequentiallyConsistent, 0);
  LLVMValueRef seen = LLVMBuildExtractValue(B, cas, 0, "");
  LLVMBasicBlockRef from[2] = {entry, loop};
  LLVMValueRef in[2] = {first, seen};
  LLVMAddIncoming(old, in, from, 2);
  LLVMBuildCondBr(B, LLVMBuildExtractValue(B, cas, 1, ""), done, loop);
  LLVMPositionBuilderAtEnd(B, done);
  return f ? LLVMBuildBitCast(B, old, t, "") : old;
}

static LLVMValueRef atomic(cg *c, ir_stmt *s) {
  ir_type t = s->type;
  bool f = ir_type_is_float(t), sgn = ir_type_is_signed(t);
  if (t == IR_i1 || t == IR_void) cg_fail(c, s, "atomic on a %s value", ir_type_name(t));
  if (f && (s->op == IR_atomic_and || s->op == IR_atomic_or || s->op == IR_atomic_xor))
    cg_fail(c, s, "%s on a %s value", ir_op_name(s->op), ir_type_name(t));
  LLVMAtomicRMWBinOp op;
  switch (s->op) {
  case IR_atomic_add: op = f ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
  case IR_atomic_sub: op = f ? LLVMAtomicRMWBinOpFSub : LLVMAtomicRMWBinOpSub; break;
  case IR_atomic_min: op = f ? LLVMAtomicRMWBinOpFMin : sgn ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
  case IR_atomic_max: op = f ? LLVMAtomicRMWBinOpFMax : sgn ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
  case IR_atomic_and: op = LLVMAtomicRMWBinOpAnd; break;
  case IR_atomic_or: op = LLVMAtomicRMWBinOpOr; break;
  case IR_atomic_xor: op = LLVMAtomicRMWBinOpXor; break;
  default: return atomic_mul(c, s);
  }
  return LLVMBuildAtomicRMW(B, op, cg_get(c, s->ops[0]), cg_get(c, s->ops[1]),
                            LLVMAtomicOrderingSequentiallyConsistent, 0);
}

/* An adstack's memory: {i32 count, [N x T] values}. */
static LLVMTypeRef adstack_type(cg *c, const ir_stmt *st) {
  LLVMTypeRef f[2] = {c->t_i32, LLVMArrayType(cg_type(c, st->type), (unsigned)st->imm.ival)};
  return LLVMStructTypeInContext(c->ctx, f, 2, 0);
}

/* adstack_push / adstack_pop / adstack_top; a push on a full stack fails
** the run with the statement's message (a compiler check: "\1..."). */
static LLVMValueRef adstack_op(cg *c, ir_stmt *s) {
  ir_stmt *st = s->ops[0];
  LLVMTypeRef t = adstack_type(c, st);
  LLVMValueRef h = cg_get(c, st);
  LLVMValueRef cnt = LLVMBuildStructGEP2(B, t, h, 0, "");
  LLVMValueRef n = LLVMBuildLoad2(B, c->t_i32, cnt, "");
  LLVMValueRef one = LLVMConstInt(c->t_i32, 1, 0);
  if (s->op == IR_adstack_pop) {
    LLVMBuildStore(B, LLVMBuildSub(B, n, one, ""), cnt);
    return NULL;
  }
  LLVMValueRef at = s->op == IR_adstack_top ? LLVMBuildSub(B, n, one, "") : n;
  if (s->op == IR_adstack_push) {
    LLVMValueRef full = LLVMBuildICmp(B, LLVMIntUGE, n, LLVMConstInt(c->t_i32, (unsigned long long)st->imm.ival, 0), "");
    LLVMTypeRef tys[3] = {c->t_ptr, c->t_i32, c->t_i32};
    LLVMValueRef args[3] = {c->ctxv, LLVMConstInt(c->t_i32, (unsigned long long)s->aux, 0),
                            LLVMConstInt(c->t_i32, (unsigned long long)s->loc.line, 0)};
    cg_fail_if(c, full, "rt_raise_assert", 3, tys, args);
  }
  LLVMValueRef idx[3] = {LLVMConstInt(c->t_i32, 0, 0), LLVMConstInt(c->t_i32, 1, 0), at};
  LLVMValueRef slot = LLVMBuildGEP2(B, t, h, idx, 3, "");
  if (s->op == IR_adstack_top) return LLVMBuildLoad2(B, cg_type(c, st->type), slot, "");
  LLVMBuildStore(B, cg_get(c, s->ops[1]), slot);
  LLVMBuildStore(B, LLVMBuildAdd(B, n, one, ""), cnt);
  return NULL;
}

bool cg_memory(cg *c, ir_stmt *s) {
  LLVMValueRef v = NULL;
  switch (s->op) {
  case IR_arg: v = arg(c, s); break;
  case IR_alloca: {
    LLVMTypeRef t = cg_type(c, s->type);
    v = cg_entry_alloca(c, t, "");
    LLVMBuildStore(B, LLVMConstNull(t), v);      /* zero where the local is declared */
    break;
  }
  case IR_adstack: {              /* in the entry block; empty where it is declared */
    LLVMTypeRef t = adstack_type(c, s);
    v = cg_entry_alloca(c, t, "");
    LLVMBuildStore(B, LLVMConstInt(c->t_i32, 0, 0), LLVMBuildStructGEP2(B, t, v, 0, ""));
    break;
  }
  case IR_adstack_push: case IR_adstack_pop: adstack_op(c, s); return true;
  case IR_adstack_top: v = adstack_op(c, s); break;
  case IR_local_load:
  case IR_global_load:
    v = LLVMBuildLoad2(B, cg_type(c, s->type), cg_get(c, s->ops[0]), "");
    if (s->op == IR_global_load) tag_access(c, v, s->ops[0]);
    break;
  case IR_local_store:
  case IR_global_store: {
    LLVMValueRef st = LLVMBuildStore(B, cg_get(c, s->ops[1]), cg_get(c, s->ops[0]));
    if (s->op == IR_global_store) tag_access(c, st, s->ops[0]);
    return true;
  }
  case IR_global_ptr: v = global_ptr(c, s); break;
  case IR_global_tmp: {
    LLVMValueRef base = cg_global(c, invariant(c, cg_ctx_field(c, CG_CTX_GTMP)));
    LLVMValueRef off = LLVMConstInt(c->t_i64, (unsigned long long)s->aux, 0);
    v = LLVMBuildGEP2(B, c->t_i8, base, &off, 1, "");
    break;
  }
  case IR_atomic_add: case IR_atomic_sub: case IR_atomic_min: case IR_atomic_max: case IR_atomic_mul:
  case IR_atomic_and: case IR_atomic_or: case IR_atomic_xor:
    if (s == c->paired) {         /* done with the one before (atomic_pair) */
      c->paired = NULL;
      return true;
    }
    ir_stmt *n = pair_of(c, s);
    if (n) {
      atomic_pair(c, s, n);
      return true;
    }
    v = atomic(c, s);
    break;
  case IR_check_index: check_index(c, s); return true;
  default: return false;
  }
  cg_set(c, s, v);
  return true;
}
