/*
** fold_eval.c -- scalar semantics of the pure ops (docs/arithmetic.md).
**
** Integers are computed in uint64_t (so wraparound is defined behaviour in C)
** and re-normalised to the type's width; f32 arithmetic is done in C `float`
** variables so every result is rounded once to float, exactly as the code
** generator's `fadd float` etc. do.
*/
#include "fold_eval.h"

#include <math.h>
#include <string.h>

/* Local copies of the type table: this file must not depend on anything but
** ops.def and ir.h's macros, so tests can link it alone. */
static const int tbits[] = {
#define T(name, bits, isint, issigned, isfloat) bits,
    IR_TYPES(T)
#undef T
};
static const bool tint[] = {
#define T(name, bits, isint, issigned, isfloat) isint,
    IR_TYPES(T)
#undef T
};
static const bool tsigned[] = {
#define T(name, bits, isint, issigned, isfloat) issigned,
    IR_TYPES(T)
#undef T
};
static const bool tfloat[] = {
#define T(name, bits, isint, issigned, isfloat) isfloat,
    IR_TYPES(T)
#undef T
};

static bool valid(ir_type t) { return t > IR_void && t < IR_NUM_TYPES; }
static bool is_int(ir_type t) { return valid(t) && tint[t]; }
static bool is_float(ir_type t) { return valid(t) && tfloat[t]; }
static bool is_sint(ir_type t) { return is_int(t) && tsigned[t]; }

/* Keep the low `bits` of v and extend by the type's signedness. */
static int64_t norm(ir_type t, uint64_t v) {
  int w = tbits[t];
  if (w >= 64) return (int64_t)v;
  uint64_t m = (UINT64_C(1) << w) - 1;
  v &= m;
  if (tsigned[t] && ((v >> (w - 1)) & 1)) v |= ~m;
  return (int64_t)v;
}

ir_scalar ir_scalar_int(ir_type t, int64_t v) {
  ir_scalar r;
  r.type = t;
  r.i = norm(t, (uint64_t)v);
  return r;
}

ir_scalar ir_scalar_float(ir_type t, double v) {
  ir_scalar r;
  r.type = t;
  r.f = t == IR_f32 ? (double)(float)v : v;
  return r;
}

/* Bits of an integer value at its width (no extension). */
static uint64_t ubits(ir_scalar a) {
  int w = tbits[a.type];
  return w >= 64 ? (uint64_t)a.i : (uint64_t)a.i & ((UINT64_C(1) << w) - 1);
}

/* ---- unary ------------------------------------------------------------------- */

static double fun1(ir_op op, double x, bool f32) {
  float y = (float)x;
  switch (op) {
#define F(name, fn) \
  case IR_##name: return f32 ? (double)fn##f(y) : fn(x);
    F(sqrt, sqrt) F(sin, sin) F(cos, cos) F(tan, tan) F(asin, asin) F(acos, acos)
    F(atan, atan) F(tanh, tanh) F(exp, exp) F(log, log) F(floor, floor) F(ceil, ceil)
    F(round, round) F(trunc, trunc) F(abs, fabs)
#undef F
  case IR_neg: return f32 ? (double)(-y) : -x;
  default: return NAN;
  }
}

bool ir_eval_unary(ir_op op, ir_scalar a, ir_scalar *out) {
  ir_type t = a.type;
  if (is_float(t)) {
    switch (op) {
    case IR_neg: case IR_abs: case IR_sqrt: case IR_sin: case IR_cos: case IR_tan:
    case IR_asin: case IR_acos: case IR_atan: case IR_tanh: case IR_exp: case IR_log:
    case IR_floor: case IR_ceil: case IR_round: case IR_trunc:
      *out = ir_scalar_float(t, fun1(op, a.f, t == IR_f32));
      return true;
    default: return false;
    }
  }
  if (!is_int(t)) return false;
  uint64_t u = (uint64_t)a.i;
  switch (op) {
  case IR_neg: *out = ir_scalar_int(t, (int64_t)(0 - u)); return true;
  case IR_bit_not: *out = ir_scalar_int(t, (int64_t)~u); return true;
  case IR_abs:  /* abs(MIN) == MIN: 0 - MIN wraps back to MIN */
    *out = ir_scalar_int(t, (int64_t)(tsigned[t] && a.i < 0 ? 0 - u : u));
    return true;
  case IR_logic_not:
    if (t != IR_i1) return false;
    *out = ir_scalar_int(IR_i1, !a.i);
    return true;
  default: return false;
  }
}

/* ---- binary ------------------------------------------------------------------ */

/* Lua's float modulo: fmod gives a - trunc(a/b)*b, with a's sign; when that
** differs from the divisor's sign, move it by one b (floored). */
static double fmod_lua(double a, double b, bool f32) {
  if (f32) {
    float m = fmodf((float)a, (float)b), fb = (float)b;
    if (m != 0 && ((m < 0) != (fb < 0))) m += fb;
    return m;
  }
  double m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

static bool eval_float(ir_op op, ir_type t, double x, double y, ir_scalar *out) {
  bool f32 = t == IR_f32;
  float a = (float)x, b = (float)y;
  double r;
  switch (op) {
  case IR_add: r = f32 ? (double)(a + b) : x + y; break;
  case IR_sub: r = f32 ? (double)(a - b) : x - y; break;
  case IR_mul: r = f32 ? (double)(a * b) : x * y; break;
  case IR_div: r = f32 ? (double)(a / b) : x / y; break;
  case IR_floordiv: r = f32 ? (double)floorf(a / b) : floor(x / y); break;
  case IR_mod: r = fmod_lua(x, y, f32); break;
  case IR_pow: r = f32 ? (double)powf(a, b) : pow(x, y); break;
  case IR_atan2: r = f32 ? (double)atan2f(a, b) : atan2(x, y); break;
  case IR_min: r = f32 ? (double)fminf(a, b) : fmin(x, y); break;  /* NaN: the other */
  case IR_max: r = f32 ? (double)fmaxf(a, b) : fmax(x, y); break;
  case IR_cmp_lt: *out = ir_scalar_int(IR_i1, x < y); return true;
  case IR_cmp_le: *out = ir_scalar_int(IR_i1, x <= y); return true;
  case IR_cmp_gt: *out = ir_scalar_int(IR_i1, x > y); return true;
  case IR_cmp_ge: *out = ir_scalar_int(IR_i1, x >= y); return true;
  case IR_cmp_eq: *out = ir_scalar_int(IR_i1, x == y); return true;
  case IR_cmp_ne: *out = ir_scalar_int(IR_i1, x != y); return true;
  default: return false;
  }
  *out = ir_scalar_float(t, r);
  return true;
}

/* Shift the width-bit pattern v of type t left (c > 0) or logically right
** (c < 0) by |c|; |c| >= width gives 0. */
static int64_t shift(ir_type t, uint64_t v, int64_t c, bool left) {
  int w = tbits[t];
  if (c < 0) {
    if (c <= -(int64_t)w) return 0;
    c = -c;
    left = !left;
  }
  if (c >= w) return 0;
  return norm(t, left ? v << c : v >> c);
}

bool ir_eval_binary(ir_op op, ir_scalar a, ir_scalar b, ir_scalar *out) {
  ir_type t = a.type;
  if (t != b.type || !valid(t)) return false;
  if (is_float(t)) return eval_float(op, t, a.f, b.f, out);
  bool s = tsigned[t];
  uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;  /* normalised: compare as-is */
  int64_t r;
  switch (op) {
  case IR_add: r = (int64_t)(x + y); break;
  case IR_sub: r = (int64_t)(x - y); break;
  case IR_mul: r = (int64_t)(x * y); break;
  case IR_floordiv:
    if (y == 0) r = 0;
    else if (!s) r = (int64_t)(x / y);
    else if (b.i == -1) r = (int64_t)(0 - x);  /* MIN // -1 wraps to MIN */
    else {
      int64_t q = a.i / b.i;
      if (a.i % b.i != 0 && ((a.i < 0) != (b.i < 0))) q -= 1;
      r = q;
    }
    break;
  case IR_mod:
    if (y == 0) r = 0;
    else if (!s) r = (int64_t)(x % y);
    else if (b.i == -1) r = 0;
    else {
      int64_t m = a.i % b.i;
      if (m != 0 && ((m < 0) != (b.i < 0))) m += b.i;
      r = m;
    }
    break;
  case IR_min: r = (s ? a.i < b.i : x < y) ? a.i : b.i; break;
  case IR_max: r = (s ? a.i > b.i : x > y) ? a.i : b.i; break;
  case IR_bit_and: r = (int64_t)(x & y); break;
  case IR_bit_or: r = (int64_t)(x | y); break;
  case IR_bit_xor: r = (int64_t)(x ^ y); break;
  case IR_shl: r = shift(t, ubits(a), b.i, true); break;
  case IR_shr: r = shift(t, ubits(a), b.i, false); break;
#define C(name, cmpop)                                                  \
  case IR_##name:                                                       \
    *out = ir_scalar_int(IR_i1, s ? a.i cmpop b.i : x cmpop y);         \
    return true;
    C(cmp_lt, <) C(cmp_le, <=) C(cmp_gt, >) C(cmp_ge, >=) C(cmp_eq, ==) C(cmp_ne, !=)
#undef C
  default: return false;  /* div, pow, atan2 need floats (typecheck casts) */
  }
  *out = ir_scalar_int(t, r);
  return true;
}

/* ---- conversions --------------------------------------------------------------- */

/* float -> integer type t: truncate toward zero, saturate, NaN -> 0. */
static int64_t float_to_int(ir_type t, double v) {
  if (isnan(v)) return 0;
  int w = tbits[t];
  if (t == IR_i1) return v >= 1.0 ? 1 : 0;
  if (tsigned[t]) {
    double lo = -ldexp(1.0, w - 1), hi = ldexp(1.0, w - 1);  /* exact powers of 2 */
    if (v <= lo) return norm(t, (uint64_t)1 << (w - 1));     /* MIN */
    if (v >= hi) return w == 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (w - 1)) - 1);
    return (int64_t)trunc(v);
  }
  double hi = ldexp(1.0, w);
  if (v <= 0.0) return 0;
  if (v >= hi) return norm(t, UINT64_MAX);
  return (int64_t)(uint64_t)trunc(v);
}

bool ir_eval_cast(ir_type to, ir_scalar a, ir_scalar *out) {
  if (!valid(to) || !valid(a.type)) return false;
  if (is_float(a.type)) {
    if (is_float(to)) *out = ir_scalar_float(to, a.f);
    else *out = ir_scalar_int(to, float_to_int(to, a.f));
    return true;
  }
  if (is_int(to)) {
    /* a.i is already extended by the source's signedness (sext/zext), so
    ** keeping the target's low bits is LLVM's trunc/sext/zext. */
    *out = ir_scalar_int(to, to == IR_i1 ? (a.i & 1) : a.i);
    return true;
  }
  /* integer -> float: one rounding, straight from the integer */
  bool s = is_sint(a.type);
  double r;
  if (to == IR_f32) r = s ? (double)(float)a.i : (double)(float)(uint64_t)a.i;
  else r = s ? (double)a.i : (double)(uint64_t)a.i;
  *out = ir_scalar_float(to, r);
  return true;
}

bool ir_eval_bitcast(ir_type to, ir_scalar a, ir_scalar *out) {
  if (!valid(to) || !valid(a.type) || tbits[to] != tbits[a.type]) return false;
  uint64_t bits;
  if (a.type == IR_f32) {
    float f = (float)a.f;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
  } else if (a.type == IR_f64) {
    memcpy(&bits, &a.f, 8);
  } else {
    bits = ubits(a);
  }
  if (to == IR_f32) {
    uint32_t u = (uint32_t)bits;
    float f;
    memcpy(&f, &u, 4);
    *out = ir_scalar_float(to, f);
  } else if (to == IR_f64) {
    double d;
    memcpy(&d, &bits, 8);
    *out = ir_scalar_float(to, d);
  } else {
    *out = ir_scalar_int(to, (int64_t)bits);
  }
  return true;
}

ir_scalar ir_scalar_of_const(const ir_stmt *s) {
  return is_float(s->type) ? ir_scalar_float(s->type, s->imm.fval)
                           : ir_scalar_int(s->type, s->imm.ival);
}

void ir_scalar_to_const(ir_stmt *s, ir_scalar v) {
  s->type = v.type;
  if (is_float(v.type)) s->imm.fval = v.f;
  else s->imm.ival = v.i;
}
