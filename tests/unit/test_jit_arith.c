/*
** test_jit_arith.c -- every operator and cast of docs/arithmetic.md, compiled
** by the CPU JIT and run on all pairs of edge values (INT_MIN, -1, 0, NaN,
** +-inf, ...) for i8, i32, i64, u32, f32 and f64, compared bit for bit with
** the constant folder's evaluator (src/ir/passes/fold_eval.c) and, for a few
** rules, with plain C.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "ir/passes/fold_eval.h"
#include "jit_helpers.h"

#define MAXV 16

static int ncases, nvalues;   /* how much was compared, printed at the end */

typedef struct {
  ir_type t;
  int n;
  ir_scalar v[MAXV];
} value_set;

static value_set values(ir_type t) {
  value_set s = {t, 0, {{0}}};
  if (ir_type_is_float(t)) {
    double fl = t == IR_f32 ? FLT_MAX : DBL_MAX;
    double v[] = {NAN, -INFINITY, INFINITY, -0.0, 0.0, 1, -1, 0.5, -2.5, 3, 1e30, -7.25, 2.5, fl, 1e-3};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) s.v[s.n++] = ir_scalar_float(t, v[i]);
    return s;
  }
  int64_t common[] = {-1, 0, 1, 2, 3, 7, -7, 8, 31, 32, 33, 63, 64};
  for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) s.v[s.n++] = ir_scalar_int(t, common[i]);
  int w = ir_type_bits(t);
  int64_t min = ir_type_is_signed(t) ? (int64_t)((uint64_t)-1 << (w - 1)) : 0;
  int64_t max = ir_type_is_signed(t) ? (int64_t)(((uint64_t)1 << (w - 1)) - 1)
                                      : (int64_t)(w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1);
  s.v[s.n++] = ir_scalar_int(t, min);
  s.v[s.n++] = ir_scalar_int(t, max);
  s.v[s.n++] = ir_scalar_int(t, min + 1);
  return s;
}

/* ---- host memory <-> scalars ------------------------------------------------------ */

static void put(void *p, ir_scalar v) {
  if (v.type == IR_f32) { float f = (float)v.f; memcpy(p, &f, 4); }
  else if (v.type == IR_f64) memcpy(p, &v.f, 8);
  else memcpy(p, &v.i, (size_t)(ir_type_bits(v.type) + 7) / 8);   /* little endian */
}

static ir_scalar get(const void *p, ir_type t) {
  if (t == IR_f32) { float f; memcpy(&f, p, 4); return ir_scalar_float(t, f); }
  if (t == IR_f64) { double d; memcpy(&d, p, 8); return ir_scalar_float(t, d); }
  uint64_t u = 0;
  memcpy(&u, p, (size_t)(ir_type_bits(t) + 7) / 8);
  return ir_scalar_int(t, (int64_t)u);
}

static bool same(ir_scalar a, ir_scalar b, bool loose_zero) {
  if (a.type != b.type) return false;
  if (!ir_type_is_float(a.type)) return a.i == b.i;
  if (isnan(a.f) || isnan(b.f)) return isnan(a.f) && isnan(b.f);
  if (loose_zero && a.f == b.f) return true;   /* min/max(+0, -0) may give either zero */
  return memcmp(&a.f, &b.f, sizeof a.f) == 0;
}

static void show(char *buf, size_t n, ir_scalar v) {
  if (ir_type_is_float(v.type)) snprintf(buf, n, "%s %a", ir_type_name(v.type), v.f);
  else snprintf(buf, n, "%s %lld", ir_type_name(v.type), (long long)v.i);
}

/* ---- the kernels ---------------------------------------------------------------------- */

enum { UNARY, BINARY, CAST, BITCAST };

/* out[i] = op(A[i], B[i]) over all n*n pairs; compares with ir_eval_*. */
static void run_case(jit_backend *be, int kind, ir_op op, ir_type t, ir_type to) {
  value_set vs = values(t);
  int n = vs.n, nn = n * n;
  ir_scalar expect[MAXV * MAXV];
  bool defined[MAXV * MAXV];
  ir_type rt = to;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      ir_scalar *e = &expect[i * n + j];
      bool ok = kind == UNARY    ? ir_eval_unary(op, vs.v[i], e)
                : kind == BINARY ? ir_eval_binary(op, vs.v[i], vs.v[j], e)
                : kind == CAST   ? ir_eval_cast(to, vs.v[i], e)
                                 : ir_eval_bitcast(to, vs.v[i], e);
      defined[i * n + j] = ok;
      if (ok) rt = e->type;
    }
  bool any = false;
  for (int i = 0; i < nn; i++) any |= defined[i];
  if (!any) return;   /* op not defined on this type */

  ir_program *p = ir_program_new();
  ir_snode *A = h_field1(p, t, nn, "A"), *Bf = h_field1(p, t, nn, "B"), *O = h_field1(p, rt, nn, "out");
  ir_kernel *k = ir_kernel_new("arith", p);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *task = h_task(&b, IR_task_range_for, 0, nn);
  ir_stmt *i = ir_b_loop_index(&b, task);
  ir_stmt *ops[2] = {ir_b_global_load(&b, h_ptr(&b, A, i)), ir_b_global_load(&b, h_ptr(&b, Bf, i))};
  ir_op sop = kind == CAST ? IR_cast : kind == BITCAST ? IR_bitcast : op;
  ir_stmt *r = ir_b_op(&b, sop, rt, kind == BINARY ? 2 : 1, ops);
  ir_b_global_store(&b, h_ptr(&b, O, i), r);

  char err[1024];
  char what[96];
  snprintf(what, sizeof what, "%s %s -> %s", kind == CAST ? "cast" : kind == BITCAST ? "bitcast" : ir_op_name(op),
           ir_type_name(t), ir_type_name(rt));
  jit_kernel *jk = be->compile(be, k, err, sizeof err);
  CHECKF(jk != NULL, "%s: %s", what, err);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    for (int x = 0; x < n; x++)
      for (int y = 0; y < n; y++) {
        put(h_elem(&h, A, x * n + y), vs.v[x]);
        put(h_elem(&h, Bf, x * n + y), vs.v[y]);
      }
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int bad = 0;
    for (int e = 0; e < nn; e++) {
      if (!defined[e]) continue;
      ir_scalar got = get(h_elem(&h, O, e), rt);
      nvalues++;
      if (!same(got, expect[e], op == IR_min || op == IR_max) && bad++ < 4) {
        char sa[64], sb[64], sg[64], se[64];
        show(sa, sizeof sa, vs.v[e / n]);
        show(sb, sizeof sb, vs.v[e % n]);
        show(sg, sizeof sg, got);
        show(se, sizeof se, expect[e]);
        fprintf(stderr, "  %s (%s, %s): got %s, expected %s\n", what, sa, sb, sg, se);
      }
    }
    CHECKF(bad == 0, "%s: %d wrong results", what, bad);
    ncases++;
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);
  ir_program_free(p);
}

/* A few rules checked against plain C, independently of fold_eval.c. */
static int32_t c_floordiv(int32_t a, int32_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int32_t)(0u - (uint32_t)a);
  int32_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static void plain_c_checks(void) {
  ir_scalar r;
  CHECK(ir_eval_binary(IR_floordiv, ir_scalar_int(IR_i32, -7), ir_scalar_int(IR_i32, 2), &r) && r.i == c_floordiv(-7, 2));
  CHECK(c_floordiv(-7, 2) == -4 && c_floordiv(INT32_MIN, -1) == INT32_MIN && c_floordiv(5, 0) == 0);
}

int main(void) {
  char err[1024];
  jit_backend *be = jit_cpu_create(2, &(jit_options){.debug = true}, err, sizeof err);
  CHECKF(be != NULL, "%s", err);
  if (!be) return check_finish("test_jit_arith");
  plain_c_checks();
  static const ir_type types[] = {IR_i8, IR_i32, IR_i64, IR_u32, IR_f32, IR_f64};
  static const ir_type targets[] = {IR_i1, IR_i8, IR_i16, IR_i32, IR_i64, IR_u8, IR_u32, IR_u64, IR_f32, IR_f64};
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    ir_type t = types[ti];
    for (int op = 0; op < IR_NUM_OPS; op++) {
      if (!(ir_op_flags((ir_op)op) & IR_PURE) || op == IR_cast || op == IR_bitcast || op == IR_select)
        continue;
      if (ir_op_nops((ir_op)op) == 1) run_case(be, UNARY, (ir_op)op, t, t);
      else if (ir_op_nops((ir_op)op) == 2) run_case(be, BINARY, (ir_op)op, t, t);
    }
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
      run_case(be, CAST, IR_cast, t, targets[k]);
      if (ir_type_bits(targets[k]) == ir_type_bits(t)) run_case(be, BITCAST, IR_bitcast, t, targets[k]);
    }
  }
  be->destroy(be);
  printf("%d kernels, %d results compared\n", ncases, nvalues);
  CHECK(ncases > 150);
  return check_finish("test_jit_arith");
}
