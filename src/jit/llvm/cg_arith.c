/*
** cg_arith.c -- constants, casts, arithmetic, comparisons and math, with the
** exact semantics of docs/arithmetic.md (the constant folder in
** src/ir/passes/fold_eval.c must agree bit for bit). Integer division and
** shifts are guarded with selects so no input is undefined behaviour or traps.
*/
#include <stdio.h>

#include "llvm_codegen.h"

#define B (c->b)

static LLVMValueRef ci(LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }

static LLVMValueRef call1(cg *c, const char *name, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  return cg_call(c, name, t, 1, &t, &a);
}

static LLVMValueRef call2(cg *c, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t[2] = {LLVMTypeOf(a), LLVMTypeOf(b)};
  LLVMValueRef v[2] = {a, b};
  return cg_call(c, name, t[0], 2, t, v);
}

static const char *sfx(ir_type t) { return t == IR_f32 ? "f32" : "f64"; }

const char *cg_math_name(ir_math how, const char *lib_prefix, ir_op op, ir_type t, char *buf, size_t len) {
  switch (how) {
  case IR_MATH_llvm: snprintf(buf, len, "llvm.%s.%s", ir_op_name(op), sfx(t)); return buf;
  case IR_MATH_lib: snprintf(buf, len, "%s%s%s", lib_prefix, ir_op_name(op), t == IR_f32 ? "f" : ""); return buf;
  default: return NULL;
  }
}

/* ---- the kernel's float mode ---------------------------------------------------------
** Default: every float operation rounds on its own, as docs/arithmetic.md and
** constant folding say. lt.init{fma = true}: a multiply and the add or
** subtract using it may fuse into one multiply-add (LLVM's `contract`, nothing
** else). lt.init{fast_math = true}: also `reassoc` (sums and products
** regrouped, reductions vectorised), `arcp` (x / y as x * (1 / y)), `afn`
** (approximate math functions) and `nsz` (the sign of a zero result may
** differ), on the operators and math functions below; never `nnan` or `ninf`,
** so NaN and infinities still compute as IEEE says (comparisons, lt.min with
** a NaN operand, x ~= x stay right). Casts, comparisons, `//` and `%` stay
** exact. */
static LLVMFastMathFlags fp_mode(cg *c) {
  if (c->k->fast_math)
    return LLVMFastMathAllowContract | LLVMFastMathAllowReassoc | LLVMFastMathAllowReciprocal |
           LLVMFastMathApproxFunc | LLVMFastMathNoSignedZeros;
  return c->k->fma ? LLVMFastMathAllowContract : LLVMFastMathNone;
}

/* + - *: the kernel's mode; the other operators and the math functions:
** fast math's flags, or none. */
static LLVMValueRef fp(cg *c, LLVMValueRef v) {
  LLVMFastMathFlags f = fp_mode(c);
  if (f != LLVMFastMathNone && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, f);
  return v;
}
static LLVMValueRef fast(cg *c, LLVMValueRef v) { return c->k->fast_math ? fp(c, v) : v; }

/* A math op through the target's hook (intrinsic or library function):
** exact_math without flags, math in the kernel's mode, where in fast math an
** f32 square root is the target's approximate one if it has one (NVPTX's
** sqrt.approx.f32, which LLVM itself picks only with `ninf`). */
static LLVMValueRef exact_math(cg *c, ir_stmt *s, ir_op op, ir_type t, LLVMValueRef a, LLVMValueRef b) {
  char buf[64];
  if (!ir_type_is_float(t)) cg_fail(c, s, "'%s' needs a float operand, got %s", ir_op_name(op), ir_type_name(t));
  const char *name = c->target->math_fn(op, t, buf, sizeof buf);
  if (!name) cg_fail(c, s, "'%s' is not available on %s", ir_op_name(op), c->target->name);
  return b ? call2(c, name, a, b) : call1(c, name, a);
}

static LLVMValueRef math(cg *c, ir_stmt *s, ir_op op, ir_type t, LLVMValueRef a, LLVMValueRef b) {
  if (op == IR_sqrt && t == IR_f32 && c->k->fast_math && c->target->approx_sqrt_f32)
    return call1(c, c->target->approx_sqrt_f32, a);
  return fast(c, exact_math(c, s, op, t, a, b));
}

/* ---- casts ------------------------------------------------------------------- */

static LLVMValueRef cast(cg *c, ir_stmt *s, LLVMValueRef v, ir_type from, ir_type to) {
  LLVMTypeRef T = cg_type(c, to);
  char name[64];
  if (from == to) return v;
  bool fi = ir_type_is_float(from), ti = ir_type_is_float(to);
  if (!fi && !ti) return cg_int_convert(c, v, ir_type_is_signed(from), T);   /* i1: bit 0 */
  if (!fi) return ir_type_is_signed(from) ? LLVMBuildSIToFP(B, v, T, "") : LLVMBuildUIToFP(B, v, T, "");
  if (!ti) {   /* saturating, NaN -> 0 (to i1: 1 for x >= 1, else 0) */
    snprintf(name, sizeof name, "llvm.%s.sat.i%d.%s", ir_type_is_signed(to) ? "fptosi" : "fptoui",
             ir_type_bits(to), sfx(from));
    LLVMTypeRef ft = LLVMTypeOf(v);
    return cg_call(c, name, T, 1, &ft, &v);
  }
  if (ir_type_bits(to) > ir_type_bits(from)) return LLVMBuildFPExt(B, v, T, "");
  return LLVMBuildFPTrunc(B, v, T, "");
}

/* ---- integer division, modulo and shifts ---------------------------------------- */

/* a // b (floordiv) or a % b (mod), floored; b == 0 gives 0, MIN // -1 gives MIN. */
static LLVMValueRef int_divmod(cg *c, bool is_mod, bool sgn, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  unsigned w = LLVMGetIntTypeWidth(t);
  LLVMValueRef zero = ci(t, 0), one = ci(t, 1);
  LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  if (!sgn) {
    LLVMValueRef bs = LLVMBuildSelect(B, bz, one, b, "");
    LLVMValueRef r = is_mod ? LLVMBuildURem(B, a, bs, "") : LLVMBuildUDiv(B, a, bs, "");
    return LLVMBuildSelect(B, bz, zero, r, "");
  }
  LLVMValueRef min = LLVMConstInt(t, 1ull << (w - 1), 0);
  LLVMValueRef ovf = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, a, min, ""),
                                  LLVMBuildICmp(B, LLVMIntEQ, b, ci(t, -1), ""), "");
  /* with b := 1 in both bad cases: MIN / 1 == MIN and MIN % 1 == 0 are the answers */
  LLVMValueRef bs = LLVMBuildSelect(B, LLVMBuildOr(B, bz, ovf, ""), one, b, "");
  LLVMValueRef q = LLVMBuildSDiv(B, a, bs, ""), r = LLVMBuildSRem(B, a, bs, "");
  /* truncated -> floored: adjust when the remainder and the divisor differ in sign */
  LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
                                  LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, bs, ""), zero, ""), "");
  LLVMValueRef res = is_mod ? LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, bs, ""), r, "")
                            : LLVMBuildSub(B, q, LLVMBuildZExt(B, adj, t, ""), "");
  return LLVMBuildSelect(B, bz, zero, res, "");
}

/* Lua shifts: counts >= width give 0, negative counts shift the other way. */
static LLVMValueRef int_shift(cg *c, bool left, LLVMValueRef a, LLVMValueRef n, ir_type nt) {
  LLVMTypeRef t = LLVMTypeOf(a), i64 = c->t_i64;
  unsigned w = LLVMGetIntTypeWidth(t);
  LLVMValueRef n64 = cg_int_convert(c, n, ir_type_is_signed(nt), i64);
  LLVMValueRef neg = ir_type_is_signed(nt) ? LLVMBuildICmp(B, LLVMIntSLT, n64, ci(i64, 0), "")
                                           : LLVMConstInt(c->t_i1, 0, 0);
  LLVMValueRef mag = LLVMBuildSelect(B, neg, LLVMBuildNeg(B, n64, ""), n64, "");
  LLVMValueRef big = LLVMBuildICmp(B, LLVMIntUGE, mag, ci(i64, w), "");
  LLVMValueRef m = cg_int_convert(c, LLVMBuildSelect(B, big, ci(i64, 0), mag, ""), false, t);
  LLVMValueRef l = LLVMBuildShl(B, a, m, ""), r = LLVMBuildLShr(B, a, m, "");
  LLVMValueRef v = left ? LLVMBuildSelect(B, neg, r, l, "") : LLVMBuildSelect(B, neg, l, r, "");
  return LLVMBuildSelect(B, big, ci(t, 0), v, "");
}

/* ---- float division and modulo ------------------------------------------------------ */

static LLVMValueRef float_mod(cg *c, LLVMValueRef a, LLVMValueRef b) {
  /* Lua: m = fmod(a, b) has a's sign; when m ~= 0 and its sign differs from
  ** b's, the floored result is m + b. */
  LLVMValueRef zero = LLVMConstReal(LLVMTypeOf(a), 0);
  LLVMValueRef m;
  if (c->target->fmod_fn) {
    char name[32];
    snprintf(name, sizeof name, "%s%s", c->target->fmod_fn, LLVMTypeOf(a) == LLVMFloatTypeInContext(c->ctx) ? "f" : "");
    m = call2(c, name, a, b);
  } else {
    m = LLVMBuildFRem(B, a, b, "");
  }
  LLVMValueRef nz = LLVMBuildFCmp(B, LLVMRealONE, m, zero, "");
  LLVMValueRef differ = LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, m, zero, ""),
                                     LLVMBuildFCmp(B, LLVMRealOLT, b, zero, ""), "");
  LLVMValueRef adj = LLVMBuildAnd(B, nz, differ, "");
  return LLVMBuildSelect(B, adj, LLVMBuildFAdd(B, m, b, ""), m, "");
}

/* ---- comparisons ------------------------------------------------------------------- */

/* The predicates below are indexed by op - IR_cmp_lt. */
_Static_assert(IR_cmp_le == IR_cmp_lt + 1 && IR_cmp_gt == IR_cmp_lt + 2 && IR_cmp_ge == IR_cmp_lt + 3 &&
                   IR_cmp_eq == IR_cmp_lt + 4 && IR_cmp_ne == IR_cmp_lt + 5,
               "ORDER CMP: ops.def's comparisons are lt le gt ge eq ne, one after the other");

static LLVMValueRef compare(cg *c, ir_op op, ir_type t, LLVMValueRef a, LLVMValueRef b) {
  if (ir_type_is_float(t)) {
    /* ordered predicates: false with NaN; ~= is unordered: true with NaN */
    static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE,
                                           LLVMRealOEQ, LLVMRealUNE};
    _Static_assert(sizeof fp / sizeof fp[0] == IR_cmp_ne - IR_cmp_lt + 1, "ORDER CMP: a predicate per comparison");
    return LLVMBuildFCmp(B, fp[op - IR_cmp_lt], a, b, "");
  }
  static const LLVMIntPredicate sp[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
  static const LLVMIntPredicate up[] = {LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE, LLVMIntEQ, LLVMIntNE};
  _Static_assert(sizeof sp / sizeof sp[0] == IR_cmp_ne - IR_cmp_lt + 1 && sizeof up == sizeof sp,
                 "ORDER CMP: a predicate per comparison");
  return LLVMBuildICmp(B, (ir_type_is_signed(t) ? sp : up)[op - IR_cmp_lt], a, b, "");
}

/* ---- binary ------------------------------------------------------------------------ */

/* x / y in the kernel's float mode: in fast math an f32 division by a
** value that is not a constant is the target's approximate one if it has one
** (NVPTX's div.approx.f32, which LLVM uses only under unsafe-fp-math for a
** whole function; a constant divisor becomes a multiply by its reciprocal). */
static LLVMValueRef fdiv(cg *c, ir_type t, LLVMValueRef a, LLVMValueRef b) {
  if (t == IR_f32 && c->k->fast_math && c->target->approx_div_f32 && !LLVMIsConstant(b))
    return call2(c, c->target->approx_div_f32, a, b);
  return fast(c, LLVMBuildFDiv(B, a, b, ""));
}

static LLVMValueRef binary(cg *c, ir_stmt *s) {
  ir_type t = s->ops[0]->type;
  LLVMValueRef a = cg_get(c, s->ops[0]), b = cg_get(c, s->ops[1]);
  bool f = ir_type_is_float(t), sgn = ir_type_is_signed(t);
  if (s->op != IR_shl && s->op != IR_shr && s->ops[1]->type != t)
    cg_fail(c, s, "operands of '%s' have different types (%s, %s); run typecheck first",
            ir_op_name(s->op), ir_type_name(t), ir_type_name(s->ops[1]->type));
  ir_rule rule = ir_op_rule(s->op);   /* booleans: bit_and/or/xor and the comparisons */
  if (t == IR_i1 && rule != IR_RULE_bits && rule != IR_RULE_cmp)
    cg_fail(c, s, "'%s' does not apply to booleans", ir_op_name(s->op));
  char name[64];
  switch (s->op) {
  case IR_add: return f ? fp(c, LLVMBuildFAdd(B, a, b, "")) : LLVMBuildAdd(B, a, b, "");
  case IR_sub: return f ? fp(c, LLVMBuildFSub(B, a, b, "")) : LLVMBuildSub(B, a, b, "");
  case IR_mul: return f ? fp(c, LLVMBuildFMul(B, a, b, "")) : LLVMBuildMul(B, a, b, "");
  case IR_div:
    if (!f) cg_fail(c, s, "'/' needs float operands after typecheck, got %s", ir_type_name(t));
    return fdiv(c, t, a, b);
  case IR_floordiv:   /* exact in every mode: an approximate quotient could floor to one less */
    if (f) return exact_math(c, s, IR_floor, t, LLVMBuildFDiv(B, a, b, ""), NULL);
    return int_divmod(c, false, sgn, a, b);
  case IR_mod: return f ? float_mod(c, a, b) : int_divmod(c, true, sgn, a, b);
  case IR_pow: return math(c, s, IR_pow, t, a, b);
  case IR_atan2: return math(c, s, IR_atan2, t, a, b);
  case IR_min:
  case IR_max:
    if (f) {   /* minnum/maxnum: with one NaN operand, the other one */
      snprintf(name, sizeof name, "llvm.%s.%s", s->op == IR_min ? "minnum" : "maxnum", sfx(t));
      return fast(c, call2(c, name, a, b));
    } else {
      LLVMIntPredicate p = s->op == IR_min ? (sgn ? LLVMIntSLT : LLVMIntULT) : (sgn ? LLVMIntSGT : LLVMIntUGT);
      return LLVMBuildSelect(B, LLVMBuildICmp(B, p, a, b, ""), a, b, "");
    }
  case IR_bit_and: case IR_bit_or: case IR_bit_xor: case IR_shl: case IR_shr:
    if (f) cg_fail(c, s, "'%s' needs integer operands, got %s", ir_op_name(s->op), ir_type_name(t));
    if (s->op == IR_bit_and) return LLVMBuildAnd(B, a, b, "");
    if (s->op == IR_bit_or) return LLVMBuildOr(B, a, b, "");
    if (s->op == IR_bit_xor) return LLVMBuildXor(B, a, b, "");
    if (ir_type_is_float(s->ops[1]->type)) cg_fail(c, s, "shift count must be an integer");
    return int_shift(c, s->op == IR_shl, a, b, s->ops[1]->type);
  case IR_cmp_lt: case IR_cmp_le: case IR_cmp_gt: case IR_cmp_ge: case IR_cmp_eq: case IR_cmp_ne:
    return compare(c, s->op, t, a, b);
  default: return NULL;
  }
}

/* ---- unary ------------------------------------------------------------------------- */

static LLVMValueRef unary(cg *c, ir_stmt *s) {
  ir_type t = s->ops[0]->type;
  LLVMValueRef a = cg_get(c, s->ops[0]);
  bool f = ir_type_is_float(t);
  char name[64];
  switch (s->op) {
  case IR_neg: return f ? fast(c, LLVMBuildFNeg(B, a, "")) : LLVMBuildNeg(B, a, "");
  case IR_bit_not:
    if (f) cg_fail(c, s, "'~' needs an integer operand, got %s", ir_type_name(t));
    return LLVMBuildNot(B, a, "");
  case IR_logic_not:
    if (t != IR_i1) cg_fail(c, s, "'not' needs a boolean (i1) operand, got %s", ir_type_name(t));
    return LLVMBuildNot(B, a, "");
  case IR_abs:
    if (f) { snprintf(name, sizeof name, "llvm.fabs.%s", sfx(t)); return fast(c, call1(c, name, a)); }
    if (!ir_type_is_signed(t)) return a;
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, ci(LLVMTypeOf(a), 0), ""),
                           LLVMBuildNeg(B, a, ""), a, "");
  default:   /* sqrt, sin, ..., trunc: the target's math functions */
    return ir_op_rule(s->op) == IR_RULE_fp ? math(c, s, s->op, t, a, NULL) : NULL;
  }
}

bool cg_arith(cg *c, ir_stmt *s) {
  LLVMValueRef v = NULL;
  switch (s->op) {
  case IR_const:
    if (ir_type_is_float(s->type)) v = LLVMConstReal(cg_type(c, s->type), s->imm.fval);
    else v = ci(cg_type(c, s->type), s->imm.ival);
    break;
  case IR_cast: v = cast(c, s, cg_get(c, s->ops[0]), s->ops[0]->type, s->type); break;
  case IR_bitcast:
    if (ir_type_bits(s->type) != ir_type_bits(s->ops[0]->type))
      cg_fail(c, s, "bitcast between %s and %s of different sizes", ir_type_name(s->ops[0]->type),
              ir_type_name(s->type));
    v = LLVMBuildBitCast(B, cg_get(c, s->ops[0]), cg_type(c, s->type), "");
    break;
  case IR_select:
    v = LLVMBuildSelect(B, cg_get(c, s->ops[0]), cg_get(c, s->ops[1]), cg_get(c, s->ops[2]), "");
    break;
  default:
    if (s->nops == 1 && ir_op_nops(s->op) == 1 && (ir_op_flags(s->op) & IR_PURE)) v = unary(c, s);
    else if (s->nops == 2 && ir_op_nops(s->op) == 2 && (ir_op_flags(s->op) & IR_PURE)) v = binary(c, s);
    if (!v) return false;
  }
  cg_set(c, s, v);
  return true;
}
