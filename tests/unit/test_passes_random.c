/*
** test_passes_random.c -- the passes keep a kernel's meaning.
**
** Builds a few hundred random kernels with the C builder (mixed-type
** arithmetic, casts, comparisons, selects, locals, ifs, while loops with
** breaks, nested range_for loops, field loads/stores/atomics, top-level
** range_for loops bounded by arguments, in which the kernel's locals only
** take parallel sums and fields are indexed by the loop's index), then runs each twice in a small
** reference interpreter written here: once after typecheck only, once after
** the whole ir_compile pipeline (constfold/cse/dce/offload, verified after
** every pass). Field memory and the kernel's result must be identical.
**
** The interpreter evaluates scalars with fold_eval.c, so this checks the
** transformations (what offload moves into global temporaries, what CSE
** merges, what DCE drops), not the arithmetic; test_fold_eval.c checks that.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/ir/ir.h"
#include "../../src/ir/passes/fold_eval.h"
#include "../../src/ir/passes/passes.h"
#include "../../src/ir/snode.h"

#define NFIELDS 4
#define FIELD_LEN 16
#define NARGS 3
#define MAX_STEPS 200000

static uint64_t rng;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng % n);
}

/* ---- the reference interpreter -------------------------------------------------- */

typedef enum { F_NORMAL, F_BREAK, F_CONTINUE, F_RETURN } flow;

typedef struct {
  int field;        /* -1: a global temporary */
  int64_t index;    /* element, or gtmp slot */
} pointer;

typedef struct {
  ir_kernel *k;
  int fieldno[IR_MAX_SNODES];
  ir_scalar *val, *local;
  pointer *ptr;
  int64_t *index;
  ir_scalar args[NARGS];
  ir_scalar mem[NFIELDS][FIELD_LEN];
  ir_scalar gtmp[256];
  ir_scalar ret;
  bool returned;
  long steps;
  char error[256];
} interp;

static flow run_block(interp *in, ir_block *b);

static void fail(interp *in, const ir_stmt *s, const char *what) {
  if (!in->error[0])
    snprintf(in->error, sizeof in->error, "$%d %s: %s", s->id, ir_op_name(s->op), what);
}

static ir_scalar *deref(interp *in, const ir_stmt *s, const ir_stmt *p) {
  pointer q = in->ptr[p->id];
  if (q.field < 0) {
    if (q.index < 0 || q.index >= 256) {
      fail(in, s, "gtmp slot out of range");
      return &in->gtmp[0];
    }
    return &in->gtmp[q.index];
  }
  if (q.index < 0 || q.index >= FIELD_LEN) {
    fail(in, s, "field index out of range");
    return &in->mem[q.field][0];
  }
  return &in->mem[q.field][q.index];
}

static ir_scalar zero_of(ir_type t) {
  return ir_type_is_float(t) ? ir_scalar_float(t, 0.0) : ir_scalar_int(t, 0);
}

static int64_t task_bound(interp *in, int64_t v, int gtmp) {
  return gtmp >= 0 ? in->gtmp[gtmp / 8].i : v;
}

static flow run_loop(interp *in, ir_stmt *s, int64_t b, int64_t e) {
  for (int64_t i = b; i < e && !in->error[0]; i++) {
    in->index[s->id] = i;
    flow f = run_block(in, s->blocks[0]);
    if (f == F_BREAK) break;
    if (f == F_RETURN) return f;
  }
  return F_NORMAL;
}

static flow run_stmt(interp *in, ir_stmt *s) {
  ir_scalar *v = &in->val[s->id];
  ir_scalar a = s->nops > 0 ? in->val[s->ops[0]->id] : (ir_scalar){0};
  ir_scalar c = s->nops > 1 ? in->val[s->ops[1]->id] : (ir_scalar){0};
  if (++in->steps > MAX_STEPS) {
    fail(in, s, "too many steps");
    return F_RETURN;
  }
  unsigned flags = ir_op_flags(s->op);
  switch (s->op) {
  case IR_const: *v = ir_scalar_of_const(s); break;
  case IR_arg: *v = in->args[s->aux]; break;
  case IR_cast: if (!ir_eval_cast(s->type, a, v)) fail(in, s, "cast"); break;
  case IR_bitcast: if (!ir_eval_bitcast(s->type, a, v)) fail(in, s, "bitcast"); break;
  case IR_select: *v = a.i ? c : in->val[s->ops[2]->id]; break;
  case IR_alloca: in->local[s->id] = zero_of(s->type); break;
  case IR_local_load: *v = in->local[s->ops[0]->id]; break;
  case IR_local_store: in->local[s->ops[0]->id] = c; break;
  case IR_global_ptr:
    in->ptr[s->id] = (pointer){in->fieldno[s->aux], a.i};
    break;
  case IR_global_tmp: in->ptr[s->id] = (pointer){-1, s->aux / 8}; break;
  case IR_global_load: *v = *deref(in, s, s->ops[0]); break;
  case IR_global_store: *deref(in, s, s->ops[0]) = c; break;
  case IR_atomic_add: case IR_atomic_sub: case IR_atomic_min: case IR_atomic_max: {
    ir_scalar *m = deref(in, s, s->ops[0]);
    ir_op op = s->op == IR_atomic_add ? IR_add : s->op == IR_atomic_sub ? IR_sub
             : s->op == IR_atomic_min ? IR_min : IR_max;
    *v = *m;
    if (!ir_eval_binary(op, *m, c, m)) fail(in, s, "atomic");
    break;
  }
  case IR_if:
    return run_block(in, a.i ? s->blocks[0] : s->blocks[1]);
  case IR_while:
    while (!in->error[0]) {
      flow f = run_block(in, s->blocks[0]);
      if (f == F_BREAK) break;
      if (f == F_RETURN) return f;
    }
    break;
  case IR_range_for: return run_loop(in, s, a.i, c.i);
  case IR_task_range_for:
    if (run_loop(in, s, task_bound(in, s->range.begin, s->range.begin_gtmp),
                 task_bound(in, s->range.end, s->range.end_gtmp)) == F_RETURN && in->error[0])
      return F_RETURN;
    break;
  case IR_task_serial:
    /* a return leaves the task only (ops.def); offload must stop later tasks */
    if (run_block(in, s->blocks[0]) == F_RETURN && in->error[0]) return F_RETURN;
    break;
  case IR_loop_index: *v = ir_scalar_int(s->type, in->index[s->loop->id]); break;
  case IR_break: return F_BREAK;
  case IR_continue: return F_CONTINUE;
  case IR_return:
    if (s->nops) in->ret = a;
    in->returned = true;
    return F_RETURN;
  default:
    if (!(flags & IR_PURE)) fail(in, s, "not interpreted");
    else if (s->nops == 1 && !ir_eval_unary(s->op, a, v)) fail(in, s, "unary");
    else if (s->nops == 2 && !ir_eval_binary(s->op, a, c, v)) fail(in, s, "binary");
    break;
  }
  return F_NORMAL;
}

static flow run_block(interp *in, ir_block *b) {
  if (!b) return F_NORMAL;
  for (ir_stmt *s = b->first; s && !in->error[0]; s = s->next) {
    flow f = run_stmt(in, s);
    if (f != F_NORMAL) return f;
  }
  return F_NORMAL;
}

/* Runs k on args; fields are zero at the start. */
static void run_kernel(interp *in, ir_kernel *k, ir_program *p, const ir_scalar *args) {
  memset(in, 0, sizeof *in);
  in->k = k;
  ir_number(k);
  size_t n = (size_t)k->next_id + 1;
  in->val = calloc(n, sizeof *in->val);
  in->local = calloc(n, sizeof *in->local);
  in->ptr = calloc(n, sizeof *in->ptr);
  in->index = calloc(n, sizeof *in->index);
  int f = 0;
  for (int i = 0; i < p->nsnodes; i++)
    if (p->snodes[i]->kind == IR_SN_place) {
      in->fieldno[i] = f;
      for (int j = 0; j < FIELD_LEN; j++) in->mem[f][j] = zero_of(p->snodes[i]->dtype);
      f++;
    }
  memcpy(in->args, args, sizeof in->args);
  run_block(in, k->body);
  free(in->val), free(in->local), free(in->ptr), free(in->index);
}

/* ---- random kernels ------------------------------------------------------------ */

static const ir_type num_types[] = {IR_i8, IR_i16, IR_i32, IR_i64, IR_u8, IR_u16, IR_u32, IR_u64,
                                    IR_f32, IR_f64};
#define NNUM (int)(sizeof num_types / sizeof num_types[0])

typedef struct {
  ir_builder b;
  ir_stmt *pool[4096];
  int npool;
  ir_stmt *locals[8];
  int nlocals;
  ir_snode *fields[NFIELDS];
  ir_stmt *loop_idx;   /* innermost loop index in scope, or NULL */
  int budget;          /* statements left to emit */
  bool par;            /* inside a top-level range_for (a parallel task): the
                          kernel's locals are only updated by reductions there
                          (s = s + v), never read: the reduce pass refuses races */
  ir_stmt *par_idx;    /* that task's loop index: every field access there uses it,
                          as iterations of a parallel loop must not share elements
                          (the race check, src/ir/passes/races.c) */
} gen;

static bool is_num(const ir_stmt *s) { return s->type != IR_i1 && s->type != IR_void; }

static ir_stmt *pick(gen *g, int want) { /* want: 0 number, 1 integer, 2 i1 */
  for (int tries = 0; tries < 40 && g->npool; tries++) {
    ir_stmt *s = g->pool[rnd((unsigned)g->npool)];
    if (want == 0 && is_num(s)) return s;
    if (want == 1 && is_num(s) && ir_type_is_int(s->type)) return s;
    if (want == 2 && s->type == IR_i1) return s;
  }
  return NULL;
}

static void push(gen *g, ir_stmt *s) {
  if (g->npool < 4096) g->pool[g->npool++] = s;
}

static ir_stmt *constant(gen *g) {
  ir_type t = num_types[rnd(NNUM)];
  static const double fv[] = {0.0, -0.0, 1.0, -2.5, 3.75, 1e9, -7.0, 0.1};
  static const int64_t iv[] = {0, 1, -1, 2, 3, 7, 15, 16, 31, 100, -128, 255, 65535,
                               2147483647, -2147483648LL};
  if (ir_type_is_float(t)) return ir_b_const_float(&g->b, t, fv[rnd(8)]);
  return ir_b_const_int(&g->b, t, ir_scalar_int(t, iv[rnd(15)]).i);
}

/* A number of type t from v (explicit cast: float -> int needs one). */
static ir_stmt *as_type(gen *g, ir_stmt *v, ir_type t) {
  return v->type == t ? v : ir_b_cast(&g->b, t, v);
}

/* An i32 index in [0, FIELD_LEN). */
static ir_stmt *index_value(gen *g) {
  ir_stmt *v = g->par ? g->par_idx : g->loop_idx && rnd(3) ? g->loop_idx : pick(g, 1);
  if (!v) v = constant(g);
  v = as_type(g, v, IR_i32);
  return ir_b_binary(&g->b, IR_bit_and, v, ir_b_const_int(&g->b, IR_i32, FIELD_LEN - 1));
}

static void value(gen *g) {
  ir_stmt *a = pick(g, 0), *c = pick(g, 0);
  if (!a || !c) {
    push(g, constant(g));
    return;
  }
  static const ir_op arith[] = {IR_add, IR_sub, IR_mul, IR_floordiv, IR_mod, IR_min, IR_max, IR_div};
  static const ir_op ints[] = {IR_bit_and, IR_bit_or, IR_bit_xor, IR_shl, IR_shr};
  static const ir_op cmps[] = {IR_cmp_lt, IR_cmp_le, IR_cmp_gt, IR_cmp_ge, IR_cmp_eq, IR_cmp_ne};
  ir_stmt *r;
  switch (rnd(10)) {
  case 0: r = constant(g); break;
  case 1: case 2: r = ir_b_binary(&g->b, arith[rnd(8)], a, c); break;
  case 3:
    a = pick(g, 1), c = pick(g, 1);
    r = a && c ? ir_b_binary(&g->b, ints[rnd(5)], a, c) : constant(g);
    break;
  case 4: r = ir_b_binary(&g->b, cmps[rnd(6)], a, c); break;
  case 5: r = ir_b_cast(&g->b, num_types[rnd(NNUM)], a); break;
  case 6: {
    ir_op u = ir_type_is_float(a->type) ? (rnd(2) ? IR_floor : IR_sqrt) : (rnd(2) ? IR_neg : IR_bit_not);
    r = ir_b_unary(&g->b, rnd(3) ? u : IR_abs, a);
    break;
  }
  case 7: {
    ir_stmt *cond = pick(g, 2);
    r = cond ? ir_b_select(&g->b, cond, a, c) : ir_b_binary(&g->b, IR_cmp_ne, a, c);
    break;
  }
  case 8: {
    ir_stmt *p = pick(g, 2), *q = pick(g, 2);
    if (p && q) r = rnd(2) ? ir_b_binary(&g->b, rnd(2) ? IR_bit_and : IR_bit_or, p, q)
                           : ir_b_op(&g->b, IR_logic_not, IR_i1, 1, &p);
    else r = constant(g);
    break;
  }
  default:
    if (g->nlocals && rnd(2) && !g->par) {
      r = ir_b_local_load(&g->b, g->locals[rnd((unsigned)g->nlocals)]);
    } else {
      ir_stmt *idx = index_value(g);
      r = ir_b_global_load(&g->b, ir_b_global_ptr(&g->b, g->fields[rnd(NFIELDS)]->id, 1, &idx));
    }
    break;
  }
  push(g, r);
}

static void stmts(gen *g, int depth, bool top);

static void block_into(gen *g, ir_block *blk, int depth) {
  ir_block *saved = g->b.block;
  int mark = g->npool;
  g->b.block = blk;
  stmts(g, depth, false);
  g->b.block = saved;
  g->npool = mark; /* values of the block are not visible after it */
}

static void stmt(gen *g, int depth, bool top) {
  g->budget--;
  unsigned r = rnd(top ? 15 : 12);
  if (r == 14) { /* top level: an early return under a condition */
    ir_stmt *c = pick(g, 2);
    if (!c) return;
    ir_stmt *s = ir_b_if(&g->b, c, false);
    block_into(g, s->blocks[0], 1);
    ir_block *saved = g->b.block;
    g->b.block = s->blocks[0];
    ir_stmt *v = pick(g, 0);
    ir_b_jump(&g->b, IR_return, as_type(g, v ? v : constant(g), IR_i32));
    g->b.block = saved;
  } else if (r < 5) {
    value(g);
  } else if (r < 7) { /* store into a field (explicit cast when float -> int) */
    ir_snode *f = g->fields[rnd(NFIELDS)];
    ir_stmt *v = pick(g, 0);
    if (!v) return;
    if (ir_type_is_float(v->type) && ir_type_is_int(f->dtype)) v = as_type(g, v, f->dtype);
    ir_stmt *idx = index_value(g);
    ir_stmt *p = ir_b_global_ptr(&g->b, f->id, 1, &idx);
    if (rnd(4) == 0 && ir_type_is_int(f->dtype) && ir_type_is_int(v->type))
      push(g, ir_b_atomic(&g->b, rnd(2) ? IR_atomic_add : IR_atomic_max, p, v));
    else
      ir_b_global_store(&g->b, p, v);
  } else if (r < 8) { /* store into a local */
    if (!g->nlocals) return;
    ir_stmt *var = g->locals[rnd((unsigned)g->nlocals)];
    ir_stmt *v = pick(g, 0);
    if (!v) return;
    if (ir_type_is_float(v->type) && ir_type_is_int(var->type)) v = as_type(g, v, var->type);
    if (g->par) {                    /* a parallel sum: integers, so any order gives the same bits */
      if (!ir_type_is_int(var->type)) return;
      v = as_type(g, v, var->type);
      ir_stmt *old = ir_b_local_load(&g->b, var);
      v = rnd(2) ? ir_b_binary(&g->b, IR_add, old, v) : ir_b_binary(&g->b, IR_sub, old, v);
    }
    ir_b_local_store(&g->b, var, v);
  } else if (r < 9 && depth < 3) { /* if / else */
    ir_stmt *c = pick(g, 2);
    if (!c) return;
    ir_stmt *s = ir_b_if(&g->b, c, rnd(2));
    block_into(g, s->blocks[0], depth + 1);
    if (s->blocks[1]) block_into(g, s->blocks[1], depth + 1);
  } else if (r < 10 && depth < 2) { /* while with a counter and a break */
    ir_stmt *cnt = ir_b_alloca(&g->b, IR_i32);
    ir_stmt *s = ir_b_while(&g->b);
    ir_block *saved = g->b.block;
    g->b.block = s->blocks[0];
    ir_stmt *cv = ir_b_local_load(&g->b, cnt);
    ir_stmt *stop = ir_b_binary(&g->b, IR_cmp_ge, cv, ir_b_const_int(&g->b, IR_i32, 1 + rnd(3)));
    ir_stmt *brk = ir_b_if(&g->b, stop, false);
    g->b.block = brk->blocks[0];
    ir_b_jump(&g->b, IR_break, NULL);
    g->b.block = s->blocks[0];
    ir_b_local_store(&g->b, cnt, ir_b_binary(&g->b, IR_add, cv, ir_b_const_int(&g->b, IR_i32, 1)));
    g->b.block = saved;
    block_into(g, s->blocks[0], depth + 1);
  } else if (depth < 2) { /* range_for; at the top level with an argument-driven end */
    ir_stmt *end = pick(g, 1);
    end = end ? ir_b_binary(&g->b, IR_bit_and, as_type(g, end, IR_i32), ir_b_const_int(&g->b, IR_i32, 7))
              : ir_b_const_int(&g->b, IR_i32, (int64_t)rnd(6));
    ir_stmt *s = ir_b_range_for(&g->b, ir_b_const_int(&g->b, IR_i32, (int64_t)rnd(2)), end);
    ir_block *saved = g->b.block;
    ir_stmt *outer_idx = g->loop_idx;
    bool outer_par = g->par;
    int mark = g->npool;
    g->b.block = s->blocks[0];
    g->loop_idx = ir_b_loop_index(&g->b, s);
    if (depth == 0) {
      g->par = true;
      g->par_idx = g->loop_idx;
    }
    push(g, g->loop_idx);
    stmts(g, depth + 1, false);
    g->b.block = saved;
    g->npool = mark;
    g->loop_idx = outer_idx;
    g->par = outer_par;
  }
}

static void stmts(gen *g, int depth, bool top) {
  int n = top ? 14 + (int)rnd(10) : 1 + (int)rnd(5);
  for (int i = 0; i < n && g->budget > 0; i++) stmt(g, depth, top);
}

static ir_kernel *random_kernel(gen *g, ir_program *p) {
  ir_kernel *k = ir_kernel_new("random", p);
  k->nargs = NARGS;
  for (int i = 0; i < NARGS; i++) k->arg_types[i] = num_types[rnd(NNUM)];
  k->ret_type = IR_i32;
  memset(g, 0, sizeof *g);
  ir_builder_init(&g->b, k);
  for (int i = 0; i < NFIELDS; i++) g->fields[i] = NULL;
  int f = 0;
  for (int i = 0; i < p->nsnodes && f < NFIELDS; i++)
    if (p->snodes[i]->kind == IR_SN_place) g->fields[f++] = p->snodes[i];
  for (int i = 0; i < NARGS; i++) push(g, ir_b_arg(&g->b, i));
  g->nlocals = 1 + (int)rnd(3);
  for (int i = 0; i < g->nlocals; i++) g->locals[i] = ir_b_alloca(&g->b, num_types[rnd(NNUM)]);
  g->budget = 60;
  stmts(g, 0, true);
  ir_stmt *r = pick(g, 0);
  ir_b_jump(&g->b, IR_return, as_type(g, r ? r : ir_b_const_int(&g->b, IR_i32, 0), IR_i32));
  return k;
}

static bool same_scalar(ir_scalar a, ir_scalar b) {
  if (a.type != b.type) return false;
  if (ir_type_is_float(a.type)) return memcmp(&a.f, &b.f, sizeof a.f) == 0 || (a.f != a.f && b.f != b.f);
  return a.i == b.i;
}

int main(int argc, char **argv) {
  int trials = argc > 1 ? atoi(argv[1]) : 400;
  ir_program *p = ir_program_new();
  char err[256];
  static const ir_type ftypes[NFIELDS] = {IR_i32, IR_f32, IR_u8, IR_f64};
  static const char *fnames[NFIELDS] = {"a", "b", "c", "d"};
  for (int i = 0; i < NFIELDS; i++) {
    int axis = 0;
    int64_t shape = FIELD_LEN;
    ir_snode *root = ir_snode_root(p);
    ir_snode *d = ir_snode_dense(p, root, 1, &axis, &shape, err, sizeof err);
    if (!d || !ir_snode_place(p, d, ftypes[i], fnames[i], err, sizeof err) ||
        !ir_snode_layout(p, root, err, sizeof err)) {
      fprintf(stderr, "field setup: %s\n", err);
      return 1;
    }
  }
  int failures = 0, compiled = 0, offloaded_tasks = 0;
  static interp ref, opt;
  static gen g;
  for (int t = 0; t < trials; t++) {
    rng = 0x2545F4914F6CDD1Du * (uint64_t)(t + 1);
    ir_kernel *k = random_kernel(&g, p);
    ir_kernel *kr = ir_kernel_clone(k), *ko = ir_kernel_clone(k);
    bool ok_r = ir_run_passes(kr, "typecheck", true, NULL, NULL);
    bool ok_o = ir_compile(ko, true, NULL, NULL);
    if (!ok_r || !ok_o) {
      /* the generator only builds valid kernels: any error is a bug */
      fprintf(stderr, "trial %d: compile failed: %s\n", t, ok_r ? ko->error : kr->error);
      failures++;
    } else {
      compiled++;
      for (ir_stmt *s = ko->body->first; s; s = s->next) offloaded_tasks++;
      for (int run = 0; run < 3; run++) {
        ir_scalar args[NARGS];
        for (int i = 0; i < NARGS; i++) {
          ir_type at = k->arg_types[i];
          int64_t iv[] = {0, 5, -3, 100, 2147483647};
          double fv[] = {0.5, -2.0, 7.25, 1e6, -0.0};
          args[i] = ir_type_is_float(at) ? ir_scalar_float(at, fv[rnd(5)]) : ir_scalar_int(at, iv[rnd(5)]);
        }
        run_kernel(&ref, kr, p, args);
        run_kernel(&opt, ko, p, args);
        bool same = !ref.error[0] && !opt.error[0] && ref.returned == opt.returned &&
                    same_scalar(ref.ret, opt.ret);
        for (int f = 0; f < NFIELDS && same; f++)
          for (int j = 0; j < FIELD_LEN && same; j++) same = same_scalar(ref.mem[f][j], opt.mem[f][j]);
        if (!same) {
          failures++;
          fprintf(stderr, "trial %d run %d: results differ (ref error '%s', opt error '%s')\n", t, run,
                  ref.error, opt.error);
          if (failures < 3) {
            char *a = ir_print(kr), *b = ir_print(ko);
            fprintf(stderr, "--- reference:\n%s--- compiled:\n%s", a, b);
            free(a), free(b);
          }
          break;
        }
      }
    }
    ir_kernel_free(k), ir_kernel_free(kr), ir_kernel_free(ko);
  }
  ir_program_free(p);
  printf("test_passes_random: %d kernels compiled (%d tasks), %d failures\n", compiled,
         offloaded_tasks, failures);
  return failures ? 1 : 0;
}
