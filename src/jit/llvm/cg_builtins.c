/*
** cg_builtins.c -- code for the kernel builtins: ndarray element addresses
** and bounds checks, lt.random, print and lt.assert (ops.def, "builtins").
**
** Everything here calls the device runtime (src/runtime/random.c, print.c,
** error.c) through rt_context.builtins, so the CPU and the NVPTX targets
** share it as it is.
*/
#include "llvm_codegen.h"

#define B (c->b)

/* An ndarray's element: the array's address is a u64 kernel argument. */
static LLVMValueRef ext_ptr(cg *c, ir_stmt *s) {
  LLVMValueRef base = cg_global(c, LLVMBuildIntToPtr(B, cg_get(c, s->ops[0]), c->t_ptr, ""));
  LLVMValueRef off = cg_int_convert(c, cg_get(c, s->ops[1]), true, c->t_i64);
  return LLVMBuildGEP2(B, cg_type(c, s->type), base, &off, 1, "");
}

void cg_fail_if(cg *c, LLVMValueRef bad, const char *fn, int n, LLVMTypeRef *tys, LLVMValueRef *args) {
  LLVMTypeRef bt[2] = {c->t_i1, c->t_i1};
  LLVMValueRef ba[2] = {bad, LLVMConstInt(c->t_i1, 0, 0)};
  bad = cg_call(c, "llvm.expect.i1", c->t_i1, 2, bt, ba);   /* keep the hot path straight */
  LLVMBasicBlockRef fail = cg_new_bb(c, "fail"), ok = cg_new_bb(c, "ok");
  LLVMBuildCondBr(B, bad, fail, ok);
  LLVMPositionBuilderAtEnd(B, fail);
  cg_call(c, fn, c->t_void, n, tys, args);
  cg_task_exit(c);
  LLVMBuildRetVoid(B);   /* the launcher skips the remaining chunks after an error */
  LLVMPositionBuilderAtEnd(B, ok);
}

static void check_bound(cg *c, ir_stmt *s) {
  LLVMValueRef v = cg_int_convert(c, cg_get(c, s->ops[0]), ir_type_is_signed(s->ops[0]->type), c->t_i64);
  LLVMValueRef n = cg_int_convert(c, cg_get(c, s->ops[1]), ir_type_is_signed(s->ops[1]->type), c->t_i64);
  LLVMValueRef bad = LLVMBuildICmp(B, LLVMIntUGE, v, n, "");   /* negative indices are huge */
  LLVMTypeRef tys[5] = {c->t_ptr, c->t_i32, c->t_i32, c->t_i64, c->t_i32};
  LLVMValueRef args[5] = {c->ctxv, LLVMConstInt(c->t_i32, (unsigned long long)s->aux, 0),
                          LLVMConstInt(c->t_i32, (unsigned long long)s->imm.ival, 0), v,
                          LLVMConstInt(c->t_i32, (unsigned long long)s->loc.line, 0)};
  cg_fail_if(c, bad, "rt_raise_ndarray_error", 5, tys, args);
}

static void assert_(cg *c, ir_stmt *s) {
  LLVMValueRef bad = LLVMBuildNot(B, cg_get(c, s->ops[0]), "");
  LLVMTypeRef tys[3] = {c->t_ptr, c->t_i32, c->t_i32};
  LLVMValueRef args[3] = {c->ctxv, LLVMConstInt(c->t_i32, (unsigned long long)s->aux, 0),
                          LLVMConstInt(c->t_i32, (unsigned long long)s->loc.line, 0)};
  cg_fail_if(c, bad, "rt_raise_assert", 3, tys, args);
}

/* 64 random bits -> the statement's type: floats in [0, 1) from the top 24
** (f32) or 53 (f64) bits, so every value is a multiple of 2^-24 / 2^-53 and
** 1.0 never appears; integers take the low bits (uniform over the type). */
static LLVMValueRef random_(cg *c, ir_stmt *s) {
  LLVMTypeRef tys[4] = {c->t_ptr, c->t_i32, c->t_i32, c->t_i32};
  LLVMValueRef args[4] = {c->ctxv, LLVMConstInt(c->t_i32, (unsigned long long)s->imm.ival, 0),
                          cg_get(c, s->ops[0]), cg_get(c, s->ops[1])};
  LLVMValueRef bits = cg_call(c, "rt_random_bits", c->t_i64, 4, tys, args);
  if (s->type == IR_f32 || s->type == IR_f64) {
    bool f32 = s->type == IR_f32;
    LLVMTypeRef ft = cg_type(c, s->type);
    LLVMValueRef top = LLVMBuildLShr(B, bits, LLVMConstInt(c->t_i64, f32 ? 40 : 11, 0), "");
    LLVMValueRef f = LLVMBuildUIToFP(B, top, ft, "");   /* exact: at most 24 / 53 bits */
    return LLVMBuildFMul(B, f, LLVMConstReal(ft, f32 ? 0x1p-24 : 0x1p-53), "");
  }
  return cg_int_convert(c, bits, false, cg_type(c, s->type));
}

/* The 64-bit slot encoding of print records (builtins.h). */
static LLVMValueRef print_bits(cg *c, ir_stmt *v) {
  LLVMValueRef x = cg_get(c, v);
  switch (v->type) {
  case IR_f32: return LLVMBuildZExt(B, LLVMBuildBitCast(B, x, c->t_i32, ""), c->t_i64, "");
  case IR_f64: return LLVMBuildBitCast(B, x, c->t_i64, "");
  default: return cg_int_convert(c, x, ir_type_is_signed(v->type), c->t_i64);
  }
}

/* Stores the values ops[from..] into the slots at, at + 1, ... of the record
** whose slots start at `slots` (known not null here). */
static void put_slots(cg *c, ir_stmt *s, LLVMValueRef slots, int from, int64_t at) {
  for (int i = from; i < s->nops; i++) {
    uint64_t slot = (uint64_t)(at + i - from);
    LLVMValueRef off = LLVMConstInt(c->t_i64, 16 * slot, 0);
    LLVMValueRef p = LLVMBuildGEP2(B, c->t_i8, slots, &off, 1, "");
    LLVMBuildStore(B, LLVMConstInt(c->t_i32, (unsigned long long)s->ops[i]->type, 0), p);
    off = LLVMConstInt(c->t_i64, 16 * slot + 8, 0);
    p = LLVMBuildGEP2(B, c->t_i8, slots, &off, 1, "");
    LLVMBuildStore(B, print_bits(c, s->ops[i]), p);
  }
}

/* print: reserves a record (for all its values: a u64 print's are written by
** the print_mores naming it, which get the slots' address, 0 when the buffer
** was full) and writes its own values; the others start as void ("nil"). */
static void print_(cg *c, ir_stmt *s) {
  int64_t total = s->type == IR_u64 ? s->imm.ival : s->nops;
  LLVMTypeRef tys[3] = {c->t_ptr, c->t_i32, c->t_i32};
  LLVMValueRef args[3] = {c->ctxv, LLVMConstInt(c->t_i32, (unsigned long long)s->aux, 0),
                          LLVMConstInt(c->t_i32, (unsigned long long)total, 0)};
  LLVMValueRef slots = cg_call(c, "rt_print_reserve", c->t_ptr, 3, tys, args);
  if (s->type == IR_u64) cg_set(c, s, LLVMBuildPtrToInt(B, slots, c->t_i64, ""));
  LLVMBasicBlockRef put = cg_new_bb(c, "print"), done = cg_new_bb(c, "printed");
  LLVMBuildCondBr(B, LLVMBuildIsNull(B, slots, ""), done, put);
  LLVMPositionBuilderAtEnd(B, put);
  put_slots(c, s, slots, 0, 0);
  if (total > s->nops) {
    LLVMValueRef off = LLVMConstInt(c->t_i64, 16ull * (uint64_t)s->nops, 0);
    LLVMValueRef rest = LLVMBuildGEP2(B, c->t_i8, slots, &off, 1, "");
    LLVMBuildMemSet(B, rest, LLVMConstInt(c->t_i8, 0, 0),
                    LLVMConstInt(c->t_i64, 16ull * (uint64_t)(total - s->nops), 0), 8);
  }
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

/* print_more: values imm.ival.. of the record ops[0] */
static void print_more(cg *c, ir_stmt *s) {
  LLVMValueRef slots = LLVMBuildIntToPtr(B, cg_get(c, s->ops[0]), c->t_ptr, "");
  LLVMBasicBlockRef put = cg_new_bb(c, "print"), done = cg_new_bb(c, "printed");
  LLVMBuildCondBr(B, LLVMBuildIsNull(B, slots, ""), done, put);
  LLVMPositionBuilderAtEnd(B, put);
  put_slots(c, s, slots, 1, s->imm.ival);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

bool cg_builtins(cg *c, ir_stmt *s) {
  switch (s->op) {
  case IR_ext_ptr: cg_set(c, s, ext_ptr(c, s)); return true;
  case IR_check_bound: check_bound(c, s); return true;
  case IR_random: cg_set(c, s, random_(c, s)); return true;
  case IR_print: print_(c, s); return true;
  case IR_print_more: print_more(c, s); return true;
  case IR_assert: assert_(c, s); return true;
  default: return false;
  }
}
