/*
** test_ir_roundtrip.c -- the text form: kernels that use every op in ops.def
** print, parse back and print identically; hand-written text prints back as
** written; constants keep their exact bits; bad text gives "line N: ...".
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/snode.h"

static bool seen[IR_NUM_OPS];

static void mark(ir_stmt *s, void *ud) {
  (void)ud;
  seen[s->op] = true;
}

/* print -> parse -> print gives the same text, and the parsed kernel verifies */
static void roundtrip(ir_kernel *k, ir_program *p) {
  char err[512];
  CHECKF(ir_verify(k, err, sizeof err), "%s", err);
  ir_walk(k->body, mark, NULL);
  /* a clone prints the same and is valid on its own */
  ir_kernel *c = ir_kernel_clone(k);
  char *a = ir_print_ex(k, IR_PRINT_LOC), *b = ir_print_ex(c, IR_PRINT_LOC);
  CHECK_STREQ(a, b);
  CHECKF(ir_verify(c, err, sizeof err), "%s", err);
  free(a);
  free(b);
  ir_kernel_free(c);
  for (unsigned flags = 0; flags <= IR_PRINT_LOC; flags++) {
    char *t1 = ir_print_ex(k, flags);
    ir_kernel *k2 = ir_parse(t1, p, err, sizeof err);
    CHECKF(k2 != NULL, "%s\n%s", err, t1);
    if (!k2) {
      free(t1);
      continue;
    }
    char *t2 = ir_print_ex(k2, flags);
    CHECK_STREQ(t1, t2);
    CHECKF(ir_verify(k2, err, sizeof err), "%s", err);
    CHECK(k2->next_id > 0);
    free(t1);
    free(t2);
    ir_kernel_free(k2);
  }
}

/* With IR_PRINT_FIELDS the text parses on its own into a fresh program, whose
** SNodes have the same ids, and prints back identically. The text; freed by
** the caller. */
static char *fields_roundtrip(ir_kernel *k) {
  char err[512];
  char *t1 = ir_print_ex(k, IR_PRINT_FIELDS | IR_PRINT_LOC);
  ir_program *p2 = ir_program_new();
  ir_kernel *k2 = ir_parse(t1, p2, err, sizeof err);
  CHECKF(k2 != NULL, "%s\n%s", err, t1);
  if (k2) {
    char *t2 = ir_print_ex(k2, IR_PRINT_FIELDS | IR_PRINT_LOC);
    CHECK_STREQ(t1, t2);
    CHECKF(ir_verify(k2, err, sizeof err), "%s", err);
    free(t2);
  }
  ir_kernel_free(k2);
  ir_program_free(p2);
  return t1;
}

static ir_stmt *in_block(ir_builder *b, ir_block *blk) {
  b->block = blk;
  return NULL;
}

static void build_serial(ir_program *p, ir_snode *x) {
  ir_kernel *k = ir_kernel_new("every_op", p);
  k->nargs = 2;
  k->arg_types[0] = IR_f32;
  k->arg_names[0] = "t";
  k->arg_types[1] = IR_i32; /* unnamed */
  k->ret_type = IR_f64;
  k->debug = true;
  ir_builder b;
  ir_builder_init(&b, k);
  b.loc = (ir_loc){"paint.lua", 3};
  ir_stmt *t = ir_b_arg(&b, 0), *n = ir_b_arg(&b, 1);
  ir_stmt *ci = ir_b_const_int(&b, IR_i32, -7);
  ir_b_const_int(&b, IR_u64, (int64_t)UINT64_MAX);
  ir_b_const_int(&b, IR_i64, INT64_MIN);
  ir_b_const_int(&b, IR_i1, 1);
  ir_b_const_float(&b, IR_f32, 0.1);
  ir_b_const_float(&b, IR_f64, -0.0);
  ir_b_const_float(&b, IR_f64, INFINITY);
  ir_b_const_float(&b, IR_f64, -INFINITY);
  ir_b_const_float(&b, IR_f64, NAN);
  ir_b_const_float(&b, IR_f64, 1e-300);
  ir_stmt *tf = ir_b_cast(&b, IR_f64, t);
  ir_b_op(&b, IR_bitcast, IR_i32, 1, &t);
  _Static_assert(IR_trunc - IR_neg == 17 && IR_cmp_ne - IR_add == 20 && IR_atomic_xor - IR_atomic_add == 7,
                 "ORDER UNARY/BINARY/CMP/ATOMIC (ops.def): the ranges below hold every op of their kind");
  for (ir_op op = IR_neg; op <= IR_trunc; op++) {
    if (op == IR_logic_not) continue;
    ir_b_unary(&b, op, op == IR_bit_not || op == IR_abs ? n : tf);
  }
  for (ir_op op = IR_add; op <= IR_cmp_ne; op++) ir_b_binary(&b, op, n, ci);
  ir_stmt *c = ir_b_binary(&b, IR_cmp_le, n, ci);
  ir_b_unary(&b, IR_logic_not, c);
  ir_b_select(&b, c, n, ci);
  ir_stmt *var = ir_b_alloca(&b, IR_f64);
  ir_b_local_store(&b, var, tf);
  ir_b_local_load(&b, var);
  ir_stmt *stack = ir_b_op(&b, IR_adstack, IR_f64, 0, NULL);   /* the autodiff pass's adjoint stack */
  stack->imm.ival = 64;
  ir_stmt *push_ops[2] = {stack, tf};
  ir_stmt *push = ir_b_op(&b, IR_adstack_push, IR_void, 2, push_ops);
  push->aux = ir_kernel_add_string(k, "\1the stack is full");
  ir_b_op(&b, IR_adstack_top, IR_f64, 1, &stack);
  ir_b_op(&b, IR_adstack_pop, IR_void, 1, &stack);
  ir_stmt *idx[2] = {n, ci};
  ir_stmt *ptr = ir_b_global_ptr(&b, x->id, 2, idx);
  ir_b_global_store(&b, ptr, t);
  ir_b_global_load(&b, ptr);
  for (ir_op op = IR_atomic_add; op <= IR_atomic_xor; op++) ir_b_atomic(&b, op, ptr, t);
  ir_b_atomic(&b, IR_atomic_mul, var, tf);   /* an atomic on a local */
  ir_stmt *chk = ir_b_op(&b, IR_check_index, IR_void, 1, &n);
  chk->aux = x->id;
  chk->imm.ival = 1;
  ir_stmt *gt = ir_b_op(&b, IR_global_tmp, IR_f32, 0, NULL);
  gt->aux = 16;
  ir_b_global_store(&b, gt, t);
  b.loc.line = 9;
  ir_stmt *iff = ir_b_if(&b, c, true);
  in_block(&b, iff->blocks[0]);
  ir_stmt *w = ir_b_while(&b);
  in_block(&b, w->blocks[0]);
  ir_stmt *inner_if = ir_b_if(&b, c, false);
  in_block(&b, inner_if->blocks[0]);
  ir_b_jump(&b, IR_break, NULL);
  in_block(&b, w->blocks[0]);
  ir_b_jump(&b, IR_continue, NULL);
  in_block(&b, iff->blocks[1]);
  ir_stmt *loop = ir_b_range_for(&b, ci, n);
  in_block(&b, loop->blocks[0]);
  ir_stmt *li = ir_b_loop_index(&b, loop);
  ir_b_binary(&b, IR_add, li, n);
  in_block(&b, k->body);
  b.loc = (ir_loc){NULL, 0};
  ir_b_jump(&b, IR_return, tf);
  roundtrip(k, p);
  /* x's name is taken twice in this program, but once in the trees the text
  ** declares (the program it parses into has no others): x is its name there */
  char *text = ir_print(k);
  CHECK_CONTAINS(text, "global_ptr S2place<f32> [");
  free(text);
  text = fields_roundtrip(k);
  CHECKF(strncmp(text, "field x <f32> dense [i:16, j:8]\nkernel every_op(", 45) == 0 &&
         strstr(text, "global_ptr x [") != NULL, "%s", text);
  free(text);
  ir_kernel_free(k);
}

static void build_offloaded(ir_program *p) {
  ir_kernel *k = ir_kernel_new("tasks", p);
  k->offloaded = true;
  k->gtmp_size = 16;
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *ts = ir_b_op(&b, IR_task_serial, IR_void, 0, NULL);
  ts->blocks[0] = ir_block_new(k, ts);
  b.block = ts->blocks[0];
  ir_stmt *g = ir_b_op(&b, IR_global_tmp, IR_i32, 0, NULL);
  g->aux = 4;
  ir_b_global_store(&b, g, ir_b_const_int(&b, IR_i32, 100));
  b.block = k->body;
  ir_stmt *tr = ir_b_op(&b, IR_task_range_for, IR_void, 0, NULL);
  tr->blocks[0] = ir_block_new(k, tr);
  tr->range = (ir_task_range){.begin = 0, .end = 0, .begin_gtmp = -1, .end_gtmp = 4, .block_dim = 128};
  b.block = tr->blocks[0];
  ir_stmt *li = ir_b_loop_index(&b, tr);
  CHECK(li->type == IR_i32);
  b.block = k->body;
  ir_stmt *tr2 = ir_b_op(&b, IR_task_range_for, IR_void, 0, NULL);
  tr2->blocks[0] = ir_block_new(k, tr2);
  tr2->range = (ir_task_range){.begin = -5, .end = 204800, .begin_gtmp = -1, .end_gtmp = -1};
  roundtrip(k, p);
  char *t = ir_print(k);
  CHECK_CONTAINS(t, "kernel tasks() offloaded gtmp=16 {\n  $0 = task_serial {\n");
  CHECK_CONTAINS(t, "$4 = task_range_for 0 gtmp[4] block_dim=128 {\n    <i32> $5 = loop_index $4\n");
  CHECK_CONTAINS(t, "task_range_for -5 204800 block_dim=0 {\n  }\n");
  free(t);
  ir_kernel_free(k);
}

/* Hand-written canonical text prints back exactly as written. */
static const char *canonical =
    "kernel \"paint@ex.lua:3\"(f32 t, i32 n) -> i32 debug {\n"
    "  <i32> $0 = const 4\n"
    "  <f32> $1 = arg 0\n"
    "  <i1> $2 = cmp_lt $0 $0\n"
    "  $3 = if $2 {\n"
    "    <f32> $4 = const 0.5\n"
    "  } else {\n"
    "    $5 = while {\n"
    "      $6 = break\n"
    "    }\n"
    "  }\n"
    "  $7 = range_for $0 $0 {\n"
    "    <i32> $8 = loop_index $7\n"
    "    <f32*> $9 = global_ptr x [$8, $8]\n"
    "    $10 = global_store $9 $1\n"
    "    $11 = check_index $8 x axis 1\n"
    "    <f64*> $12 = global_ptr b []\n"
    "  }\n"
    "  <f32*> $13 = global_tmp 8\n"
    "  $20 = return $0\n"
    "}\n";

static void test_text(void) {
  ir_program *p = ir_program_new();
  char err[512];
  /* fields first, then the canonical kernel */
  char *src = malloc(strlen(canonical) + 200);
  sprintf(src, "# fields\nfield x <f32> dense [i:64, j:32]\nfield a <f64>, b <f64>\n%s", canonical);
  ir_kernel *k = ir_parse(src, p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    char *t = ir_print(k);
    CHECK_STREQ(t, canonical);
    CHECK(k->next_id == 21);
    CHECK(k->nargs == 2 && k->ret_type == IR_i32 && k->debug && !k->offloaded);
    CHECKF(ir_verify(k, err, sizeof err), "%s", err);
    free(t);
    ir_kernel_free(k);
  }
  /* the declarations made SNodes: x is a 64x32 f32 field, a and b share a root */
  CHECK(p->ntrees == 2 && p->trees[0].materialized && p->trees[0].bytes == 64 * 32 * 4);
  CHECK(p->snodes[2]->kind == IR_SN_place && p->snodes[2]->nidx == 2);
  CHECK(p->nsnodes == 6 && p->snodes[5]->dtype == IR_f64 && p->trees[1].bytes == 16);
  free(src);
  /* a label finds the same field, which then prints by its name */
  k = ir_parse("kernel k() {\n  <f64*> $0 = global_ptr S5place<f64> []\n}\n", p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    char *t = ir_print(k);
    CHECK_STREQ(t, "kernel k() {\n  <f64*> $0 = global_ptr b []\n}\n");
    free(t);
    ir_kernel_free(k);
  }

  /* with IR_PRINT_FIELDS the text stands alone: a fresh program gets the fields */
  const char *decl =
      "field x <f32> dense [j:32, i:64]\n"
      "field a <f64>, n <i32> dense [j:4] dense [i:3, j:2]\n"
      "field s <u8>\n"
      "kernel k() {\n"
      "  <i32> $0 = const 0\n"
      "  <f32*> $1 = global_ptr x [$0, $0]\n"
      "  <i32*> $2 = global_ptr n [$0, $0]\n"
      "  <u8*> $3 = global_ptr s []\n"
      "}\n";
  ir_program *p1 = ir_program_new(), *p2 = ir_program_new();
  k = ir_parse(decl, p1, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    char *t = ir_print_ex(k, IR_PRINT_FIELDS);
    CHECK_STREQ(t, decl);
    ir_kernel *k2 = ir_parse(t, p2, err, sizeof err);
    CHECKF(k2 != NULL, "%s", err);
    char *t2 = k2 ? ir_print_ex(k2, IR_PRINT_FIELDS) : NULL;
    CHECK_STREQ(t2, decl);
    CHECK(p2->nsnodes == p1->nsnodes && p2->trees[1].bytes == p1->trees[1].bytes);
    free(t);
    free(t2);
    ir_kernel_free(k);
    ir_kernel_free(k2);
  }
  ir_program_free(p1);
  ir_program_free(p2);

  /* the parsed loc comes back with --loc */
  const char *with_loc =
      "kernel k() {\n"
      "  <i32> $0 = const 1  @\"dir/a b.lua\":12\n"
      "  $1 = while {  @13\n"
      "    $2 = break  @x.lua:14\n"
      "  }\n"
      "}\n";
  k = ir_parse(with_loc, p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    char *t = ir_print_ex(k, IR_PRINT_LOC);
    CHECK_STREQ(t, with_loc);
    CHECK(k->body->first->loc.line == 12 && strcmp(k->body->first->loc.file, "dir/a b.lua") == 0);
    free(t);
    t = ir_print(k);
    CHECK(!strchr(t, '@'));
    free(t);
    ir_kernel_free(k);
  }
  ir_program_free(p);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Constants keep their exact bits through print and parse. */
static void test_constants(void) {
  ir_kernel *k = ir_kernel_new("c", NULL);
  ir_builder b;
  ir_builder_init(&b, k);
  enum { N = 3000 };
  double want64[N];
  float want32[N];
  int64_t wanti[N];
  for (int i = 0; i < N; i++) {
    uint64_t bits = next64();
    double d;
    memcpy(&d, &bits, 8);
    if (isnan(d)) d = 1.5;
    uint32_t b32 = (uint32_t)next64();
    float f;
    memcpy(&f, &b32, 4);
    if (isnan(f)) f = 2.5f;
    want64[i] = d;
    want32[i] = f;
    wanti[i] = (int64_t)next64();
    ir_b_const_float(&b, IR_f64, d);
    ir_b_const_float(&b, IR_f32, f);
    ir_b_const_int(&b, i % 2 ? IR_u64 : IR_i64, wanti[i]);
  }
  char *t = ir_print(k), err[256];
  ir_kernel *k2 = ir_parse(t, NULL, err, sizeof err);
  CHECKF(k2 != NULL, "%s", err);
  int bad = 0, i = 0;
  for (ir_stmt *s = k2 ? k2->body->first : NULL; s; s = s->next->next->next, i++) {
    bad += memcmp(&s->imm.fval, &want64[i], 8) != 0;
    float f = (float)s->next->imm.fval;
    bad += memcmp(&f, &want32[i], 4) != 0;
    bad += s->next->next->imm.ival != wanti[i];
  }
  CHECK(i == N);
  CHECKF(bad == 0, "%d constants changed", bad);
  free(t);
  ir_kernel_free(k);
  ir_kernel_free(k2);
}

static void test_errors(void) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"kernel k() {\n  <i32> $0 = add $1 $2\n}\n", "line 2: $1 is used before it is defined"},
      {"kernel k() {\n\n  $0 = frob\n}\n", "line 3: unknown operation 'frob'"},
      {"kernel k() {\n  <i32> $0 = const 1\n", "line 3: missing '}'"},
      {"kernel k() {\n  <i32> $0 = const 1\n  <i32> $0 = const 2\n}\n", "line 3: $0 is defined twice"},
      {"kernel k(i7 x) {\n}\n", "line 1: unknown type 'i7'"},
      {"kernel k() {\n  <i32> $0 = const 0\n  <f32*> $1 = global_ptr q [$0]\n}\n", "line 3: unknown field 'q'"},
      {"kernel k() {\n}\nkernel j() {\n}\n", "line 3: unexpected 'kernel' after the kernel (one kernel per text)"},
      {"kernel k() {\n  <f32> $0 = global_tmp 8\n}\n", "line 2: global_tmp gives a pointer: write its type as <T*>"},
      {"kernel k() {\n  <i32*> $0 = const 1\n}\n", "only global_ptr, global_tmp and ext_ptr have a pointer type"},
      {"kernel k() {\n  <i32> $0 = const 1\n  <i32> $1 = loop_index $0\n}\n", "line 3: loop_index reads a range_for"},
      {"kernel k() {\n  <i32> $0 = const 1 2\n}\n", "line 2: unexpected '2' after the const statement"},
      {"field x <f32> dense [i:0]\nkernel k() {\n}\n", "line 1: dense under S0root: extent 0 along axis i"},
      {"field x <f32> dense [q:4]\nkernel k() {\n}\n", "line 1: expected an axis letter"},
      {"field x <f32>\nfield x <i32>\nkernel k() {\n}\n", "line 2: field 'x' is declared twice"},
      {"", "line 1: no kernel in the text"},
      {"kernel k() {\n  <i1> $0 = const 1\n  $1 = if $0\n  }\n}\n", "line 3: if needs its body"},
      {"kernel k() {\n  <i32> $0 = const abc\n}\n", "line 2: bad integer constant"},
      {"kernel k() {\n  <f32> $0 = const 1.5x\n}\n", "line 2: bad f32 constant '1.5x'"},
      {"kernel k() {\n  $0 = const 1\n}\n", "line 2: a const needs a value type"},
      {"kernel k() {\n  <i32> $0 = arg 16\n}\n", "line 2: an argument number 16 is out of range"},
      {"kernel k() {\n  <i32> $0 = const 1 ; \n}\n", "line 2: unexpected character ';'"},
      {"kernel k() {\n  <i32> $ = const 1\n}\n", "line 2: '$' must be followed by a statement number"},
      {"kernel k() {\n  <i32> $0 = const 0\n  <f32*> $1 = global_ptr S99 [$0]\n}\n", "line 3: no SNode S99"},
      {"field x <f32> dense [i:4]\nkernel k() {\n  <i32> $0 = const 0\n  <f32*> $1 = global_ptr S2place<i32> [$0]\n}\n",
       "line 4: S2 holds f32, not i32"},
      {"kernel k() {\n  <i32> $0 = const 1\n  $1 = while {\n  } else {\n  }\n}\n", "line 4: expected a statement"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ir_program *p = ir_program_new();
    char err[512] = "";
    ir_kernel *k = ir_parse(cases[i].text, p, err, sizeof err);
    CHECKF(k == NULL, "case %zu was accepted", i);
    CHECK_CONTAINS(err, cases[i].want);
    ir_kernel_free(k);
    ir_program_free(p);
  }
  /* field declarations need a program */
  char err[256];
  CHECK(!ir_parse("field x <f32>\nkernel k() {\n}\n", NULL, err, sizeof err));
  CHECK_CONTAINS(err, "line 1: field declarations need a program");
}

/* Damaged text never crashes the parser: it parses (and then prints and
** verifies without crashing) or fails with "line N: ...". */
static void test_mutations(void) {
  static const char alphabet[] = "$<>{}[]*=,:@#\"\n 0123456789-.abcdefijklmnoprstuxS";
  size_t len = strlen(canonical);
  char *t = malloc(len + 64);
  int bad = 0, parsed = 0;
  for (int iter = 0; iter < 4000; iter++) {
    memcpy(t, canonical, len + 1);
    size_t n = len;
    int edits = 1 + (int)(next64() % 4);
    for (int e = 0; e < edits; e++) {
      size_t at = (size_t)(next64() % n);
      switch (next64() % 3) {
      case 0: t[at] = alphabet[next64() % (sizeof alphabet - 1)]; break;
      case 1: memmove(t + at, t + at + 1, n - at); n--; break;
      default:
        memmove(t + at + 1, t + at, n - at + 1);
        t[at] = alphabet[next64() % (sizeof alphabet - 1)];
        n++;
      }
    }
    ir_program *p = ir_program_new();
    char err[512] = "";
    /* fields the canonical text names */
    ir_kernel *k = ir_parse("field x <f32> dense [i:4, j:4]\nfield b <f64>\nkernel k() {\n}\n", p, err, sizeof err);
    ir_kernel_free(k);
    k = ir_parse(t, p, err, sizeof err);
    if (k) {
      parsed++;
      char *out = ir_print(k);
      ir_verify(k, err, sizeof err);
      free(out);
      ir_kernel_free(k);
    } else {
      bad += strncmp(err, "line ", 5) != 0;
    }
    ir_program_free(p);
  }
  CHECKF(bad == 0, "%d errors without a line number", bad);
  CHECK(parsed > 0);
  free(t);
}

/* The sparse ops: a pre-offload kernel and an offloaded one over
** root -> pointer [i:4] -> dense [j:8] -> y and root -> dense [i:2] -> dynamic [j:16] -> z. */
static void build_sparse(ir_program *p) {
  char err[256];
  ir_snode *r = ir_snode_root(p);
  ir_snode *ptr = ir_snode_pointer(p, r, 1, (int[]){0}, (int64_t[]){4}, err, sizeof err);
  ir_snode *d = ir_snode_dense(p, ptr, 1, (int[]){1}, (int64_t[]){8}, err, sizeof err);
  ir_snode *y = ir_snode_place(p, d, IR_f32, "y", err, sizeof err);
  CHECKF(y && ir_snode_layout(p, r, err, sizeof err), "%s", err);
  ir_snode *r2 = ir_snode_root(p);
  ir_snode *d2 = ir_snode_dense(p, r2, 1, (int[]){0}, (int64_t[]){2}, err, sizeof err);
  ir_snode *dyn = ir_snode_dynamic(p, d2, 1, 16, 0, err, sizeof err);
  CHECKF(dyn && ir_snode_place(p, dyn, IR_i32, "z", err, sizeof err), "%s", err);
  CHECKF(ir_snode_layout(p, r2, err, sizeof err), "%s", err);

  ir_kernel *k = ir_kernel_new("sparse_ops", p);
  k->nargs = 1;
  k->arg_types[0] = IR_i32;
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *n = ir_b_arg(&b, 0);
  ir_b_snode_activate(&b, ptr->id, 1, &n);
  ir_b_snode_is_active(&b, ptr->id, 1, &n);
  ir_b_snode_deactivate(&b, ptr->id, 1, &n);
  ir_b_snode_append(&b, dyn->id, 1, &n, n);
  ir_b_snode_reserve(&b, dyn->id, 1, &n);
  ir_b_snode_length(&b, dyn->id, 1, &n);
  ir_b_snode_deactivate_all(&b, ptr->id);
  ir_stmt *sf = ir_b_struct_for(&b, y->id);
  CHECK(sf->aux == d->id); /* a place stands for its parent level */
  b.block = sf->blocks[0];
  ir_stmt *ij[2] = {ir_b_struct_index(&b, sf, 0), ir_b_struct_index(&b, sf, 1)};
  ir_stmt *gp = ir_b_global_ptr(&b, y->id, 2, ij);
  ir_b_global_store(&b, gp, ir_b_const_float(&b, IR_f32, 1.5));
  CHECK(gp->imm.ival == 1); /* a write into a sparse field activates */
  roundtrip(k, p);
  /* y's and z's trees start at S5 and S9, after trees the kernel does not
  ** use: `tree` form (a `field` takes the lowest ids free, S0...) */
  char *text = fields_roundtrip(k);
  CHECKF(strstr(text, "tree S5root {\n  S6pointer [i:4] {\n    S7dense [j:8] {\n      S8place<f32> y\n") &&
         strstr(text, "tree S9root {\n  S10dense [i:2] {\n    S11dynamic [j:16] {\n      S12place<i32> z\n"),
         "%s", text);
  free(text);
  ir_kernel_free(k);

  k = ir_kernel_new("sparse_tasks", p);
  k->offloaded = true;
  ir_builder_init(&b, k);
  ir_b_op(&b, IR_task_clear_list, IR_void, 0, NULL)->aux = ptr->id;
  ir_b_op(&b, IR_task_listgen, IR_void, 0, NULL)->aux = ptr->id;
  ir_b_op(&b, IR_task_clear_list, IR_void, 0, NULL)->aux = d->id;
  ir_b_op(&b, IR_task_listgen, IR_void, 0, NULL)->aux = d->id;
  ir_stmt *t = ir_b_op(&b, IR_task_struct_for, IR_void, 0, NULL);
  t->aux = d->id;
  t->range.block_dim = 32;
  t->blocks[0] = ir_block_new(k, t);
  b.block = t->blocks[0];
  ir_stmt *j = ir_b_struct_index(&b, t, 1);
  ir_b_snode_deactivate(&b, ptr->id, 1, &j);
  b.block = k->body;
  ir_b_op(&b, IR_task_gc, IR_void, 0, NULL)->aux = ptr->id;
  ir_b_op(&b, IR_task_deactivate_all, IR_void, 0, NULL)->aux = dyn->id;
  roundtrip(k, p);
  ir_kernel_free(k);
}

/* The builtins (ndarray access, random, print, assert), with strings that
** need escapes. */
static void build_builtins(ir_program *p) {
  ir_kernel *k = ir_kernel_new("builtins", p);
  k->nargs = 2;
  k->arg_types[0] = IR_u64;
  k->arg_names[0] = ir_strdup(k, "a");
  k->arg_types[1] = IR_i32;
  k->arg_names[1] = ir_strdup(k, "a.shape[1]");
  k->debug = true;
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *a = ir_b_arg(&b, 0), *n = ir_b_arg(&b, 1);
  ir_stmt *i = ir_b_cast(&b, IR_i64, ir_b_const_int(&b, IR_i32, 2));
  ir_stmt *ops[2] = {i, ir_b_cast(&b, IR_i64, n)};
  ir_stmt *chk = ir_b_op(&b, IR_check_bound, IR_void, 2, ops);
  chk->aux = 0;
  chk->imm.ival = 0;
  ops[0] = a;
  ops[1] = i;
  ir_stmt *e = ir_b_global_load(&b, ir_b_op(&b, IR_ext_ptr, IR_f32, 2, ops));
  ops[0] = n;
  ops[1] = ir_b_const_int(&b, IR_i32, 0);
  ir_b_op(&b, IR_random, IR_f64, 2, ops)->imm.ival = 3;
  ir_stmt *c = ir_b_binary(&b, IR_cmp_lt, e, e);
  ops[0] = e;
  ops[1] = c;
  ir_b_op(&b, IR_print, IR_void, 2, ops)->aux = ir_kernel_add_string(k, "e =\t% \"100%%\" \\ %");
  ir_b_op(&b, IR_assert, IR_void, 1, &c)->aux = ir_kernel_add_string(k, "e < e");
  /* a record of 4 values: 1 of its own, 2 written by print_more, 1 left nil */
  ir_stmt *rec = ir_b_op(&b, IR_print, IR_u64, 1, &e);
  rec->aux = ir_kernel_add_string(k, "% % % %");
  rec->imm.ival = 4;
  ir_stmt *more[3] = {rec, c, e};
  ir_b_op(&b, IR_print_more, IR_void, 3, more)->imm.ival = 1;
  roundtrip(k, p);
  char *t = ir_print(k);
  CHECKF(strstr(t, "<u64> $13 = print \"% % % %\" $7 values 4\n") && strstr(t, "$14 = print_more $13 at 1 $10 $7\n"), "%s", t);
  free(t);
  ir_kernel_free(k);
}

/* docs/ir.md documents every op of ops.def (a table row naming it). */
static void test_docs_in_sync(void) {
  const char *dir = getenv("LT_SOURCE_DIR");
  if (!dir) return; /* run outside ctest: nothing to compare */
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/ir.md", dir);
  FILE *f = fopen(path, "rb");
  CHECKF(f != NULL, "cannot open %s", path);
  if (!f) return;
  static char doc[1 << 17];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  doc[n] = 0;
  fclose(f);
  for (int op = 0; op < IR_NUM_OPS; op++) {
    char want[64];
    snprintf(want, sizeof want, "`%s`", ir_op_name((ir_op)op));
    CHECKF(strstr(doc, want) != NULL, "docs/ir.md does not document %s", want);
  }
}

int main(void) {
  test_docs_in_sync();
  ir_program *p = ir_program_new();
  char err[256];
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = ir_snode_dense(p, r, 2, (int[]){0, 1}, (int64_t[]){16, 8}, err, sizeof err);
  ir_snode *x = ir_snode_place(p, d, IR_f32, "x", err, sizeof err);
  /* a second field named x: the printer must fall back to its label */
  ir_snode_place(p, ir_snode_root(p), IR_f32, "x", err, sizeof err);
  CHECK(ir_snode_layout(p, r, err, sizeof err));
  build_serial(p, x);
  build_offloaded(p);
  build_sparse(p);
  build_builtins(p);
  for (int op = 0; op < IR_NUM_OPS; op++) CHECKF(seen[op], "op %s is not covered", ir_op_name((ir_op)op));
  ir_program_free(p);
  test_text();
  test_constants();
  test_errors();
  test_mutations();
  return check_finish("test_ir_roundtrip");
}
