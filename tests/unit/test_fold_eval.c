/*
** test_fold_eval.c -- ir_eval_* (src/ir/passes/fold_eval.c) against plain C.
**
** Each reference is computed here with C's own fixed-width types (int8_t,
** uint16_t, ...) and the floored / saturating / shift rules of
** docs/arithmetic.md written out by hand, over edge values (MIN, MAX, -1, 0,
** NaN, inf, -0.0) and a few thousand pseudo-random ones.
*/
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/ir/passes/fold_eval.h"

/* The checkers below are one macro for signed and unsigned types, so `x < 0`
** is sometimes always false: that is intended. */
#pragma GCC diagnostic ignored "-Wtype-limits"

/* A case is a comparison when its op is in cmp_lt..cmp_ne (below). */
_Static_assert(IR_cmp_ne - IR_cmp_lt == 5, "ORDER CMP (ops.def): the six comparisons, one after the other");

static int failures, checks;

#define FAIL(...)                                                  \
  do {                                                             \
    if (failures++ < 40) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
      fprintf(stderr, __VA_ARGS__);                                \
      fprintf(stderr, "\n");                                       \
    }                                                              \
  } while (0)

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* Interesting 64-bit patterns; each type takes their low bits. */
static int64_t edge[] = {0, 1, -1, 2, -2, 3, -3, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 65, 100, -100,
                         127, 128, -128, -129, 255, 256, 32767, 32768, -32768, 65535, 65536,
                         INT32_MAX, INT32_MIN, (int64_t)UINT32_MAX, INT64_MAX, INT64_MIN,
                         INT64_MIN + 1, INT64_MAX - 1, 0x5555555555555555, -0x5555555555555555};
#define NEDGE (int)(sizeof edge / sizeof edge[0])
#define NVALS (NEDGE + 120)

static int64_t value(int i) {
  if (i < NEDGE) return edge[i];
  int64_t v = (int64_t)next_rand();
  return v >> (next_rand() % 64); /* all magnitudes */
}

/* One checker per integer type: T the C type, UT its unsigned twin, W its width. */
#define INT_TESTS(NAME, IRT, T, UT, W, SIGNED)                                                   \
  static void test_##NAME(void) {                                                                \
    T vals[NVALS];                                                                               \
    for (int i = 0; i < NVALS; i++) vals[i] = (T)value(i);                                       \
    for (int i = 0; i < NVALS; i++) {                                                            \
      T a = vals[i];                                                                             \
      ir_scalar sa = ir_scalar_int(IRT, (int64_t)a), r;                                          \
      /* the scalar holds a, extended by the type's signedness */                                \
      if (sa.i != (int64_t)a) FAIL(#NAME " normalise %" PRId64, (int64_t)a);                     \
      T negr = (T)(UT)(0 - (UT)a);                                                               \
      T absr = (SIGNED && a < 0) ? negr : a;                                                     \
      T notr = (T)(UT)~(UT)a;                                                                    \
      checks += 3;                                                                               \
      if (!ir_eval_unary(IR_neg, sa, &r) || r.type != IRT || r.i != (int64_t)negr)               \
        FAIL(#NAME " neg %" PRId64, (int64_t)a);                                                 \
      if (!ir_eval_unary(IR_abs, sa, &r) || r.i != (int64_t)absr) FAIL(#NAME " abs %" PRId64, (int64_t)a); \
      if (!ir_eval_unary(IR_bit_not, sa, &r) || r.i != (int64_t)notr)                            \
        FAIL(#NAME " bit_not %" PRId64, (int64_t)a);                                             \
      if (ir_eval_unary(IR_sqrt, sa, &r)) FAIL(#NAME " sqrt of an integer must not fold");       \
      for (int j = 0; j < NVALS; j++) {                                                          \
        T b = vals[j];                                                                           \
        ir_scalar sb = ir_scalar_int(IRT, (int64_t)b);                                           \
        struct {                                                                                 \
          ir_op op;                                                                              \
          int64_t want;                                                                          \
        } cases[32];                                                                             \
        int n = 0;                                                                               \
        cases[n].op = IR_add, cases[n++].want = (int64_t)(T)(UT)((uint64_t)a + (uint64_t)b);     \
        cases[n].op = IR_sub, cases[n++].want = (int64_t)(T)(UT)((uint64_t)a - (uint64_t)b);     \
        cases[n].op = IR_mul, cases[n++].want = (int64_t)(T)(UT)((uint64_t)a * (uint64_t)b);     \
        cases[n].op = IR_bit_and, cases[n++].want = (int64_t)(T)(a & b);                         \
        cases[n].op = IR_bit_or, cases[n++].want = (int64_t)(T)(a | b);                          \
        cases[n].op = IR_bit_xor, cases[n++].want = (int64_t)(T)(a ^ b);                         \
        cases[n].op = IR_min, cases[n++].want = (int64_t)(a < b ? a : b);                        \
        cases[n].op = IR_max, cases[n++].want = (int64_t)(a > b ? a : b);                        \
        cases[n].op = IR_cmp_lt, cases[n++].want = a < b;                                        \
        cases[n].op = IR_cmp_le, cases[n++].want = a <= b;                                       \
        cases[n].op = IR_cmp_gt, cases[n++].want = a > b;                                        \
        cases[n].op = IR_cmp_ge, cases[n++].want = a >= b;                                       \
        cases[n].op = IR_cmp_eq, cases[n++].want = a == b;                                       \
        cases[n].op = IR_cmp_ne, cases[n++].want = a != b;                                       \
        /* shifts: logical on the W-bit pattern; |count| >= W gives 0; a negative count         \
        ** shifts the other way */                                                              \
        {                                                                                        \
          int64_t c = (int64_t)b;                                                                \
          UT ua = (UT)a;                                                                         \
          T l, rr;                                                                               \
          if (c >= W || c <= -W) l = rr = 0;                                                     \
          else if (c >= 0) l = (T)(UT)((uint64_t)ua << c), rr = (T)(UT)(ua >> c);                \
          else l = (T)(UT)(ua >> -c), rr = (T)(UT)((uint64_t)ua << -c);                          \
          cases[n].op = IR_shl, cases[n++].want = (int64_t)l;                                    \
          cases[n].op = IR_shr, cases[n++].want = (int64_t)rr;                                   \
        }                                                                                        \
        /* floored division and modulo, x // 0 == x % 0 == 0, MIN // -1 == MIN */               \
        {                                                                                        \
          T q, m;                                                                                \
          if (b == 0) q = m = 0;                                                                 \
          else if (SIGNED && b == (T)-1) q = negr, m = 0;                                        \
          else {                                                                                 \
            q = (T)(a / b);                                                                      \
            m = (T)(a % b);                                                                      \
            if (m != 0 && ((m < 0) != (b < 0))) q = (T)(q - 1), m = (T)(m + b);                  \
          }                                                                                      \
          cases[n].op = IR_floordiv, cases[n++].want = (int64_t)q;                               \
          cases[n].op = IR_mod, cases[n++].want = (int64_t)m;                                    \
        }                                                                                        \
        for (int c = 0; c < n; c++) {                                                            \
          checks++;                                                                              \
          bool cmp = cases[c].op >= IR_cmp_lt && cases[c].op <= IR_cmp_ne;                       \
          if (!ir_eval_binary(cases[c].op, sa, sb, &r)) {                                        \
            FAIL(#NAME " %s did not evaluate", ir_op_name(cases[c].op));                         \
            continue;                                                                            \
          }                                                                                      \
          if (r.type != (cmp ? IR_i1 : IRT) || r.i != cases[c].want)                             \
            FAIL(#NAME " %s %" PRId64 " %" PRId64 ": got %" PRId64 ", want %" PRId64,            \
                 ir_op_name(cases[c].op), (int64_t)a, (int64_t)b, r.i, cases[c].want);           \
        }                                                                                        \
        /* the floored results satisfy a == q*b + m with m of b's sign and |m| < |b|;            \
        ** 8/16-bit: q == floor(a / b) computed in double (exact at those widths) */             \
        if (b != 0) {                                                                            \
          ir_scalar q, m;                                                                        \
          ir_eval_binary(IR_floordiv, sa, sb, &q);                                               \
          ir_eval_binary(IR_mod, sa, sb, &m);                                                    \
          checks++;                                                                              \
          if ((T)(UT)((uint64_t)q.i * (uint64_t)b + (uint64_t)m.i) != a)                         \
            FAIL(#NAME " %" PRId64 " // %" PRId64 " identity", (int64_t)a, (int64_t)b);          \
          if ((T)m.i != 0 && (((T)m.i < 0) != (b < 0)))                                          \
            FAIL(#NAME " %" PRId64 " %% %" PRId64 " sign", (int64_t)a, (int64_t)b);              \
          if (W <= 16 && !(SIGNED && b == (T)-1) &&                                              \
              (T)q.i != (T)floor((double)a / (double)b))                                         \
            FAIL(#NAME " %" PRId64 " // %" PRId64 " vs floor", (int64_t)a, (int64_t)b);          \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }

INT_TESTS(i8, IR_i8, int8_t, uint8_t, 8, 1)
INT_TESTS(i16, IR_i16, int16_t, uint16_t, 16, 1)
INT_TESTS(i32, IR_i32, int32_t, uint32_t, 32, 1)
INT_TESTS(i64, IR_i64, int64_t, uint64_t, 64, 1)
INT_TESTS(u8, IR_u8, uint8_t, uint8_t, 8, 0)
INT_TESTS(u16, IR_u16, uint16_t, uint16_t, 16, 0)
INT_TESTS(u32, IR_u32, uint32_t, uint32_t, 32, 0)
INT_TESTS(u64, IR_u64, uint64_t, uint64_t, 64, 0)

/* ---- floats ----------------------------------------------------------------------- */

static double fvals[64];
static int nfvals;

static void init_fvals(void) {
  double e[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, -7.25, 1e10, -1e10,
                1e-30, 16777217.0, 3.4e38, -3.4e38, 1e300, INFINITY, -INFINITY, NAN,
                2147483647.5, -2147483648.5, 4294967296.0, 9.3e18, -9.3e18, 2e19, 255.9, -0.9};
  nfvals = 0;
  for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) fvals[nfvals++] = e[i];
  while (nfvals < 64) fvals[nfvals++] = ((double)(int64_t)next_rand() / 9.2e18) * 1000.0;
}

static bool same_bits(double a, double b) {
  if (isnan(a) && isnan(b)) return true;
  return memcmp(&a, &b, sizeof a) == 0;
}

/* Floored float modulo: C's fmod truncates, so a nonzero remainder whose sign
** bit differs from the divisor's moves by one divisor. */
static double lua_fmod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && !signbit(m) != !signbit(b)) m += b;
  return m;
}
static float lua_fmodf(float a, float b) {
  float m = fmodf(a, b);
  if (m != 0 && !signbit(m) != !signbit(b)) m += b;
  return m;
}
static double ref_min(double a, double b) { return isnan(a) ? b : isnan(b) ? a : a < b ? a : b; }
static double ref_max(double a, double b) { return isnan(a) ? b : isnan(b) ? a : a > b ? a : b; }

static void check_f(const char *what, ir_op op, ir_scalar r, ir_type t, double want, double a, double b) {
  checks++;
  bool ok = r.type == t && same_bits(r.f, want);
  /* min/max may pick either zero when both are zeros */
  if ((op == IR_min || op == IR_max) && r.f == 0 && want == 0) ok = r.type == t;
  if (!ok) FAIL("%s %s %g %g: got %.17g want %.17g", what, ir_op_name(op), a, b, r.f, want);
}

static void test_floats(void) {
  for (int i = 0; i < nfvals; i++)
    for (int j = 0; j < nfvals; j++) {
      double x = fvals[i], y = fvals[j];
      float a = (float)x, b = (float)y;
      ir_scalar s64a = ir_scalar_float(IR_f64, x), s64b = ir_scalar_float(IR_f64, y);
      ir_scalar s32a = ir_scalar_float(IR_f32, x), s32b = ir_scalar_float(IR_f32, y), r;
      struct {
        ir_op op;
        double w64, w32;
      } c[] = {
          {IR_add, x + y, a + b},
          {IR_sub, x - y, a - b},
          {IR_mul, x * y, a * b},
          {IR_div, x / y, a / b},
          {IR_floordiv, floor(x / y), floorf(a / b)},
          {IR_mod, lua_fmod(x, y), lua_fmodf(a, b)},
          {IR_pow, pow(x, y), powf(a, b)},
          {IR_atan2, atan2(x, y), atan2f(a, b)},
          {IR_min, ref_min(x, y), (float)ref_min(a, b)},
          {IR_max, ref_max(x, y), (float)ref_max(a, b)},
      };
      for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        if (!ir_eval_binary(c[k].op, s64a, s64b, &r)) FAIL("f64 %s", ir_op_name(c[k].op));
        else check_f("f64", c[k].op, r, IR_f64, c[k].w64, x, y);
        if (!ir_eval_binary(c[k].op, s32a, s32b, &r)) FAIL("f32 %s", ir_op_name(c[k].op));
        else check_f("f32", c[k].op, r, IR_f32, c[k].w32, a, b);
      }
      /* comparisons: false with NaN except ~= */
      struct {
        ir_op op;
        int w;
      } cc[] = {{IR_cmp_lt, x < y}, {IR_cmp_le, x <= y}, {IR_cmp_gt, x > y},
                {IR_cmp_ge, x >= y}, {IR_cmp_eq, x == y}, {IR_cmp_ne, x != y}};
      for (size_t k = 0; k < sizeof cc / sizeof cc[0]; k++) {
        checks++;
        if (!ir_eval_binary(cc[k].op, s64a, s64b, &r) || r.type != IR_i1 || r.i != cc[k].w)
          FAIL("f64 %s %g %g", ir_op_name(cc[k].op), x, y);
      }
      /* integer-only ops do not evaluate on floats; mixed types never do */
      if (ir_eval_binary(IR_bit_and, s64a, s64b, &r) || ir_eval_binary(IR_shl, s32a, s32b, &r) ||
          ir_eval_binary(IR_add, s32a, s64b, &r))
        FAIL("float bit op / mixed types evaluated");
    }
  for (int i = 0; i < nfvals; i++) {
    double x = fvals[i];
    float a = (float)x;
    struct {
      ir_op op;
      double w64, w32;
    } c[] = {
        {IR_neg, -x, -a},           {IR_abs, fabs(x), fabsf(a)},     {IR_sqrt, sqrt(x), sqrtf(a)},
        {IR_sin, sin(x), sinf(a)},  {IR_cos, cos(x), cosf(a)},       {IR_tan, tan(x), tanf(a)},
        {IR_asin, asin(x), asinf(a)}, {IR_acos, acos(x), acosf(a)},  {IR_atan, atan(x), atanf(a)},
        {IR_tanh, tanh(x), tanhf(a)}, {IR_exp, exp(x), expf(a)},     {IR_log, log(x), logf(a)},
        {IR_floor, floor(x), floorf(a)},
        {IR_ceil, ceil(x), ceilf(a)}, {IR_round, round(x), roundf(a)}, {IR_trunc, trunc(x), truncf(a)},
    };
    ir_scalar r;
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
      if (!ir_eval_unary(c[k].op, ir_scalar_float(IR_f64, x), &r)) FAIL("f64 %s", ir_op_name(c[k].op));
      else check_f("f64", c[k].op, r, IR_f64, c[k].w64, x, 0);
      if (!ir_eval_unary(c[k].op, ir_scalar_float(IR_f32, x), &r)) FAIL("f32 %s", ir_op_name(c[k].op));
      else check_f("f32", c[k].op, r, IR_f32, c[k].w32, a, 0);
    }
  }
}

/* ---- conversions ------------------------------------------------------------------ */

/* float -> integer reference in long double (exact for every bound used here) */
static int64_t sat(long double v, long double lo, long double hi, int64_t ilo, int64_t ihi) {
  if (isnan(v)) return 0;
  if (v <= lo) return ilo;
  if (v >= hi) return ihi;
  return (int64_t)truncl(v);
}
static uint64_t satu(long double v, long double hi, uint64_t ihi) {
  if (isnan(v) || v <= 0) return 0;
  if (v >= hi) return ihi;
  return (uint64_t)truncl(v);
}

static void test_casts(void) {
  /* float -> every integer type */
  for (int i = 0; i < nfvals; i++) {
    double x = fvals[i];
    ir_scalar r;
    struct {
      ir_type t;
      int64_t want;
    } c[] = {
        {IR_i8, sat(x, INT8_MIN, INT8_MAX, INT8_MIN, INT8_MAX)},
        {IR_i16, sat(x, INT16_MIN, INT16_MAX, INT16_MIN, INT16_MAX)},
        {IR_i32, sat(x, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX)},
        {IR_i64, sat(x, (long double)INT64_MIN, (long double)INT64_MAX, INT64_MIN, INT64_MAX)},
        {IR_u8, (int64_t)satu(x, UINT8_MAX, UINT8_MAX)},
        {IR_u16, (int64_t)satu(x, UINT16_MAX, UINT16_MAX)},
        {IR_u32, (int64_t)satu(x, UINT32_MAX, UINT32_MAX)},
        {IR_u64, (int64_t)satu(x, (long double)UINT64_MAX, UINT64_MAX)},
        {IR_i1, (int64_t)satu(x, 1, 1)},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
      checks += 2;
      if (!ir_eval_cast(c[k].t, ir_scalar_float(IR_f64, x), &r) || r.type != c[k].t || r.i != c[k].want)
        FAIL("cast f64 %.17g -> %s: got %" PRId64 " want %" PRId64, x, ir_type_name(c[k].t), r.i,
             c[k].want);
      /* from f32: the value is rounded to float first */
      float a = (float)x;
      ir_scalar s = ir_scalar_float(IR_f32, x);
      ir_scalar want;
      ir_eval_cast(c[k].t, ir_scalar_float(IR_f64, (double)a), &want);
      if (!ir_eval_cast(c[k].t, s, &r) || r.i != want.i) FAIL("cast f32 %g -> %s", a, ir_type_name(c[k].t));
    }
    checks += 2;
    if (!ir_eval_cast(IR_f32, ir_scalar_float(IR_f64, x), &r) || !same_bits(r.f, (double)(float)x))
      FAIL("cast f64 -> f32 %g", x);
    if (!ir_eval_cast(IR_f64, ir_scalar_float(IR_f32, x), &r) || !same_bits(r.f, (double)(float)x))
      FAIL("cast f32 -> f64 %g", x);
  }
  /* integer -> integer (keeps the low bits; C's conversions do the same on gcc/clang)
  ** and integer -> float (one rounding) */
  for (int i = 0; i < NVALS; i++) {
    int64_t v = value(i);
    ir_scalar r;
    ir_scalar src[] = {ir_scalar_int(IR_i8, v), ir_scalar_int(IR_u16, v), ir_scalar_int(IR_i32, v),
                       ir_scalar_int(IR_u32, v), ir_scalar_int(IR_i64, v), ir_scalar_int(IR_u64, v)};
    int64_t csrc[] = {(int8_t)v, (uint16_t)v, (int32_t)v, (uint32_t)v, v, v};
    for (int s = 0; s < 6; s++) {
      int64_t c = csrc[s];
      bool u64 = s == 5;
      struct {
        ir_type t;
        int64_t want;
      } ci[] = {{IR_i8, (int8_t)c}, {IR_i16, (int16_t)c}, {IR_i32, (int32_t)c}, {IR_i64, c},
                {IR_u8, (uint8_t)c}, {IR_u16, (uint16_t)c}, {IR_u32, (uint32_t)c}, {IR_u64, c},
                {IR_i1, c & 1}};
      for (size_t k = 0; k < sizeof ci / sizeof ci[0]; k++) {
        checks++;
        if (!ir_eval_cast(ci[k].t, src[s], &r) || r.type != ci[k].t || r.i != ci[k].want)
          FAIL("cast %s %" PRId64 " -> %s", ir_type_name(src[s].type), c, ir_type_name(ci[k].t));
      }
      float wf = u64 ? (float)(uint64_t)c : (float)c;
      double wd = u64 ? (double)(uint64_t)c : (double)c;
      checks += 2;
      if (!ir_eval_cast(IR_f32, src[s], &r) || !same_bits(r.f, (double)wf))
        FAIL("cast %s %" PRId64 " -> f32", ir_type_name(src[s].type), c);
      if (!ir_eval_cast(IR_f64, src[s], &r) || !same_bits(r.f, wd))
        FAIL("cast %s %" PRId64 " -> f64", ir_type_name(src[s].type), c);
    }
  }
  /* a value whose double rounding differs: 2^53 + 2^29 + 1 to f32 must round once */
  {
    int64_t v = (INT64_C(1) << 53) + (INT64_C(1) << 29) + 1;
    ir_scalar r;
    checks++;
    ir_eval_cast(IR_f32, ir_scalar_int(IR_i64, v), &r);
    if ((float)r.f != (float)v) FAIL("i64 -> f32 double rounding");
  }
}

static void test_bool_and_bitcast(void) {
  ir_scalar t = ir_scalar_int(IR_i1, 1), f = ir_scalar_int(IR_i1, 0), r;
  checks += 6;
  if (!ir_eval_unary(IR_logic_not, t, &r) || r.i != 0) FAIL("not true");
  if (!ir_eval_unary(IR_logic_not, f, &r) || r.i != 1) FAIL("not false");
  if (!ir_eval_binary(IR_bit_and, t, f, &r) || r.type != IR_i1 || r.i != 0) FAIL("true and false");
  if (!ir_eval_binary(IR_bit_or, t, f, &r) || r.i != 1) FAIL("true or false");
  if (!ir_eval_binary(IR_bit_xor, t, t, &r) || r.i != 0) FAIL("true xor true");
  if (ir_eval_unary(IR_logic_not, ir_scalar_int(IR_i32, 0), &r)) FAIL("logic_not of i32 evaluated");
  /* integer division and power are float ops: typecheck casts first */
  if (ir_eval_binary(IR_div, ir_scalar_int(IR_i32, 6), ir_scalar_int(IR_i32, 3), &r))
    FAIL("integer div evaluated");
  for (int i = 0; i < nfvals; i++) {
    float a = (float)fvals[i];
    double d = fvals[i];
    uint32_t ua;
    uint64_t ud;
    memcpy(&ua, &a, 4);
    memcpy(&ud, &d, 8);
    checks += 4;
    if (!ir_eval_bitcast(IR_u32, ir_scalar_float(IR_f32, a), &r) || (uint32_t)r.i != ua)
      FAIL("bitcast f32 %g -> u32", a);
    if (!ir_eval_bitcast(IR_i64, ir_scalar_float(IR_f64, d), &r) || (uint64_t)r.i != ud)
      FAIL("bitcast f64 %g -> i64", d);
    if (!ir_eval_bitcast(IR_f32, ir_scalar_int(IR_i32, (int32_t)ua), &r) || !same_bits(r.f, a))
      FAIL("bitcast i32 -> f32 %g", a);
    if (!ir_eval_bitcast(IR_f64, ir_scalar_int(IR_u64, (int64_t)ud), &r) || !same_bits(r.f, d))
      FAIL("bitcast u64 -> f64 %g", d);
  }
  if (ir_eval_bitcast(IR_i64, ir_scalar_float(IR_f32, 1.0), &r)) FAIL("bitcast of unequal widths");
}

int main(void) {
  init_fvals();
  test_i8(), test_i16(), test_i32(), test_i64();
  test_u8(), test_u16(), test_u32(), test_u64();
  test_floats();
  test_casts();
  test_bool_and_bitcast();
  printf("test_fold_eval: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
