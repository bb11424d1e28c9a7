/*
** test_ir_builder.c -- type and op tables, result types (docs/arithmetic.md,
** checked against a reference written here from the document), statement
** linking, structured builders, walking, numbering, cloning and ir_fail.
*/
#include <stdlib.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/snode.h"

static const ir_type all_types[] = {IR_i1, IR_i8, IR_i16, IR_i32, IR_i64, IR_u8,
                                    IR_u16, IR_u32, IR_u64, IR_f32, IR_f64};
#define NTYPES (int)(sizeof all_types / sizeof all_types[0])

/* ops.def's columns, against what the code that reads them assumes. */
static void test_columns(void) {
  for (int i = 0; i < IR_NUM_OPS; i++) {
    ir_op op = (ir_op)i;
    unsigned f = ir_op_flags(op);
    const char *name = ir_op_name(op);
    /* neither P nor E: the reads DCE removes when unused (the legend's list) */
    bool read = op == IR_local_load || op == IR_global_load || op == IR_snode_is_active || op == IR_snode_length ||
                op == IR_adstack_top;
    CHECKF(!(f & (IR_PURE | IR_EFFECT)) == read, "%s", name);
    CHECKF(!((f & IR_PURE) && (f & IR_EFFECT)), "%s is pure and has an effect", name);
    /* L and S: through a pointer operand ops[0] */
    if (f & (IR_LOAD | IR_STORE)) CHECKF(ir_op_nops(op) >= 1 && !(f & IR_PURE), "%s", name);
    /* the typing rules are for pure unary and binary ops */
    ir_rule rule = ir_op_rule(op);
    if (rule != IR_RULE_none)
      CHECKF((f & IR_PURE) && (f & IR_VALUE) && (ir_op_nops(op) == 1 || ir_op_nops(op) == 2), "%s", name);
    if (rule == IR_RULE_shift || rule == IR_RULE_cmp) CHECKF(ir_op_nops(op) == 2, "%s", name);
    if (rule == IR_RULE_logic) CHECKF(ir_op_nops(op) == 1, "%s", name);
    /* math lowerings: exactly the fp ops except the division, on both targets */
    bool math = rule == IR_RULE_fp && op != IR_div;
    CHECKF((ir_op_cpu_math(op) != IR_MATH_none) == math, "%s", name);
    CHECKF((ir_op_ptx_math(op) != IR_MATH_none) == math, "%s", name);
    /* arithmetic is cg_arith's; tasks are control's (serial, range) or sparse's */
    CHECKF((unsigned)ir_op_emit(op) < IR_NUM_EMITS, "%s", name);
    if (rule != IR_RULE_none) CHECKF(ir_op_emit(op) == IR_EMIT_arith, "%s", name);
    if (f & IR_TASK)
      CHECKF(ir_op_emit(op) == (ir_op_aux(op) == IR_AUX_level ? IR_EMIT_sparse : IR_EMIT_control), "%s", name);
    /* a level's ops are sparse's and call the runtime */
    if (ir_op_aux(op) == IR_AUX_level) CHECKF(ir_op_emit(op) == IR_EMIT_sparse && (f & IR_RUNTIME), "%s", name);
    CHECKF(ir_op_names_snode(op) == (ir_op_aux(op) == IR_AUX_place || ir_op_aux(op) == IR_AUX_level), "%s", name);
  }
  CHECK(ir_op_aux(IR_arg) == IR_AUX_arg && ir_op_aux(IR_check_bound) == IR_AUX_arg);
  CHECK(ir_op_aux(IR_global_ptr) == IR_AUX_place && ir_op_aux(IR_global_tmp) == IR_AUX_gtmp);
  CHECK(ir_op_aux(IR_print) == IR_AUX_str && ir_op_aux(IR_const) == IR_AUX_none);
  CHECK(ir_op_names_snode(IR_task_listgen) && ir_op_names_snode(IR_check_index) && !ir_op_names_snode(IR_check_bound));
  CHECK(ir_op_rule(IR_add) == IR_RULE_num && ir_op_rule(IR_div) == IR_RULE_fp && ir_op_rule(IR_bit_not) == IR_RULE_bits);
  CHECK(ir_op_rule(IR_shl) == IR_RULE_shift && ir_op_rule(IR_cmp_eq) == IR_RULE_cmp && ir_op_rule(IR_logic_not) == IR_RULE_logic);
  CHECK(ir_op_rule(IR_select) == IR_RULE_none && ir_op_rule(IR_cast) == IR_RULE_none);
  CHECK(ir_op_emit(IR_loop_index) == IR_EMIT_control && ir_op_emit(IR_ext_ptr) == IR_EMIT_builtins);
  CHECK(ir_op_emit(IR_global_tmp) == IR_EMIT_memory && ir_op_emit(IR_struct_for) == IR_EMIT_sparse);
  /* out of range */
  CHECK(ir_op_flags(IR_NUM_OPS) == 0 && ir_op_rule(IR_NUM_OPS) == IR_RULE_none && ir_op_aux(IR_NUM_OPS) == IR_AUX_none);
  CHECK(ir_op_cpu_math(IR_NUM_OPS) == IR_MATH_none && ir_op_ptx_math(IR_NUM_OPS) == IR_MATH_none);
}

static void test_tables(void) {
  for (int t = 0; t < IR_NUM_TYPES; t++) CHECK(ir_type_from_name(ir_type_name((ir_type)t)) == t);
  CHECK(ir_type_from_name("f16") == -1);
  CHECK(ir_type_bits(IR_i1) == 1 && ir_type_bits(IR_u16) == 16 && ir_type_bits(IR_f64) == 64);
  CHECK(ir_type_is_int(IR_i1) && !ir_type_is_signed(IR_u8) && ir_type_is_signed(IR_i8));
  CHECK(ir_type_is_float(IR_f32) && !ir_type_is_int(IR_f32) && !ir_type_is_float(IR_i64));

  for (int op = 0; op < IR_NUM_OPS; op++) CHECK(ir_op_from_name(ir_op_name((ir_op)op)) == op);
  CHECK(ir_op_from_name("frobnicate") == -1);
  /* flags as ops.def spells them */
  CHECK(ir_op_flags(IR_const) == (IR_PURE | IR_VALUE));
  CHECK(ir_op_flags(IR_local_load) == IR_VALUE);
  CHECK(ir_op_flags(IR_global_store) == (IR_EFFECT | IR_STORE));
  CHECK(ir_op_flags(IR_global_load) == (IR_VALUE | IR_LOAD));
  CHECK(ir_op_flags(IR_atomic_min) == (IR_EFFECT | IR_VALUE | IR_LOAD | IR_STORE));
  CHECK(ir_op_flags(IR_print) == (IR_EFFECT | IR_RUNTIME));
  CHECK(ir_op_flags(IR_if) == (IR_EFFECT | IR_BLOCKS));
  CHECK(ir_op_flags(IR_break) == (IR_EFFECT | IR_JUMP));
  CHECK(ir_op_flags(IR_task_range_for) == (IR_EFFECT | IR_BLOCKS | IR_TASK));
  CHECK(ir_op_nops(IR_select) == 3 && ir_op_nops(IR_global_ptr) == -1 && ir_op_nops(IR_while) == 0);
  CHECK_STREQ(ir_op_name(IR_cmp_ne), "cmp_ne");
  test_columns();
}

/* Reference promotion, from docs/arithmetic.md: floats win (the wider one);
** integers: wider wins, unsigned at equal width. */
static ir_type ref_promote(ir_type a, ir_type b) {
  bool fa = ir_type_is_float(a), fb = ir_type_is_float(b);
  if (fa && fb) return ir_type_bits(a) >= ir_type_bits(b) ? a : b;
  if (fa) return a;
  if (fb) return b;
  if (ir_type_bits(a) != ir_type_bits(b)) return ir_type_bits(a) > ir_type_bits(b) ? a : b;
  return ir_type_is_signed(a) ? b : a;
}

static ir_type ref_float(ir_type a, ir_type b) {
  return (ir_type_bits(a) == 64 || ir_type_bits(b) == 64) ? IR_f64 : IR_f32;
}

static void test_result_types(void) {
  /* spot checks quoted from the document */
  CHECK(ir_promote(IR_i64, IR_f32) == IR_f32);
  CHECK(ir_promote(IR_i32, IR_u32) == IR_u32);
  CHECK(ir_promote(IR_i8, IR_i8) == IR_i8);
  CHECK(ir_promote(IR_u8, IR_i16) == IR_i16);
  CHECK(ir_promote(IR_f32, IR_f64) == IR_f64);
  CHECK(ir_result_type(IR_div, IR_i32, IR_i32) == IR_f32);
  CHECK(ir_result_type(IR_div, IR_i64, IR_i32) == IR_f64);
  CHECK(ir_result_type(IR_div, IR_f32, IR_i8) == IR_f32);
  CHECK(ir_result_type(IR_pow, IR_u64, IR_f32) == IR_f64);
  CHECK(ir_result_type(IR_sqrt, IR_i32, IR_void) == IR_f32);
  CHECK(ir_result_type(IR_sqrt, IR_i64, IR_void) == IR_f64);
  CHECK(ir_result_type(IR_floor, IR_f64, IR_void) == IR_f64);
  CHECK(ir_result_type(IR_abs, IR_i8, IR_void) == IR_i8);
  CHECK(ir_result_type(IR_neg, IR_u16, IR_void) == IR_u16);
  CHECK(ir_result_type(IR_bit_not, IR_i64, IR_void) == IR_i64);
  CHECK(ir_result_type(IR_shl, IR_i8, IR_i64) == IR_i8);
  CHECK(ir_result_type(IR_shr, IR_u32, IR_i8) == IR_u32);
  CHECK(ir_result_type(IR_bit_and, IR_i1, IR_i1) == IR_i1);
  CHECK(ir_result_type(IR_bit_or, IR_i16, IR_u16) == IR_u16);
  CHECK(ir_result_type(IR_logic_not, IR_i1, IR_void) == IR_i1);

  /* every pair against the reference; the loops walk op ranges */
  _Static_assert(IR_max - IR_add == 8 && IR_sqrt - IR_abs == 1 && IR_trunc - IR_sqrt == 13 && IR_cmp_ne - IR_cmp_lt == 5,
                 "ORDER BINARY/UNARY/CMP (ops.def): add..max, sqrt..trunc and cmp_lt..cmp_ne as the loops below expect");
  int bad = 0;
  for (int x = 0; x < NTYPES; x++)
    for (int y = 0; y < NTYPES; y++) {
      ir_type a = all_types[x], b = all_types[y];
      if (a == IR_i1 || b == IR_i1) continue; /* i1 takes no part in arithmetic */
      bad += ir_promote(a, b) != ref_promote(a, b);
      bad += ir_promote(a, b) != ir_promote(b, a);
      for (ir_op op = IR_add; op <= IR_max; op++)
        if (op != IR_div && op != IR_pow) bad += ir_result_type(op, a, b) != ref_promote(a, b);
      bad += ir_result_type(IR_div, a, b) != ref_float(a, b);
      bad += ir_result_type(IR_pow, a, b) != ref_float(a, b);
      bad += ir_result_type(IR_atan2, a, b) != ref_float(a, b);
      for (ir_op op = IR_cmp_lt; op <= IR_cmp_ne; op++) bad += ir_result_type(op, a, b) != IR_i1;
      bad += ir_result_type(IR_shl, a, b) != a;
      for (ir_op op = IR_sqrt; op <= IR_trunc; op++)
        bad += ir_result_type(op, a, IR_void) != ref_float(a, IR_void);
    }
  CHECKF(bad == 0, "%d mismatches", bad);
}

static int count_block(ir_block *b) {
  int n = 0;
  for (ir_stmt *s = b->first; s; s = s->next) n++;
  return n;
}

static void collect(ir_stmt *s, void *ud) {
  int *ids = ud;
  ids[++ids[0]] = s->id;
}

static void test_linking(void) {
  ir_kernel *k = ir_kernel_new("link", NULL);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *c1 = ir_b_const_int(&b, IR_i32, 1);
  ir_stmt *c2 = ir_b_const_int(&b, IR_i32, 2);
  ir_stmt *add = ir_b_binary(&b, IR_add, c1, c2);
  CHECK(k->body->first == c1 && k->body->last == add && c1->next == c2 && add->prev == c2);
  CHECK(c1->parent == k->body && add->type == IR_i32 && add->ops[0] == c1 && add->ops[1] == c2);

  ir_stmt *c0 = ir_new(k, IR_const, IR_i32, 0, NULL);
  ir_insert_before(c1, c0);
  CHECK(k->body->first == c0 && c0->next == c1 && c1->prev == c0 && c0->parent == k->body);
  ir_stmt *c3 = ir_new(k, IR_const, IR_i32, 0, NULL);
  ir_insert_after(add, c3);
  CHECK(k->body->last == c3 && add->next == c3 && c3->prev == add);
  ir_stmt *c25 = ir_new(k, IR_const, IR_i32, 0, NULL);
  ir_insert_after(c2, c25);
  CHECK(c2->next == c25 && c25->next == add && add->prev == c25);
  CHECK(count_block(k->body) == 6);

  ir_remove(c25);
  CHECK(c2->next == add && add->prev == c2 && c25->parent == NULL);
  ir_remove(c0);
  CHECK(k->body->first == c1 && c1->prev == NULL);
  ir_remove(c3);
  CHECK(k->body->last == add && add->next == NULL);
  CHECK(count_block(k->body) == 3);

  /* replace_uses reaches nested blocks and loop references */
  ir_stmt *cond = ir_b_binary(&b, IR_cmp_lt, c1, c2);
  CHECK(cond->type == IR_i1);
  ir_stmt *iff = ir_b_if(&b, cond, true);
  CHECK(iff->blocks[0] && iff->blocks[1] && iff->blocks[0]->owner == iff && iff->parent == k->body);
  b.block = iff->blocks[1];
  ir_stmt *loop = ir_b_range_for(&b, c1, c2);
  b.block = loop->blocks[0];
  ir_stmt *idx = ir_b_loop_index(&b, loop);
  ir_stmt *use = ir_b_binary(&b, IR_mul, add, idx);
  b.block = k->body;
  CHECK(idx->loop == loop && idx->type == IR_i32 && loop->parent == iff->blocks[1]);
  ir_replace_uses(k->body, add, c2);
  CHECK(use->ops[0] == c2 && use->ops[1] == idx);
  ir_stmt *other = ir_b_while(&b);
  CHECK(other->blocks[0] && !other->blocks[1] && b.block == k->body && k->body->last == other);
  ir_replace_uses(k->body, loop, other);
  CHECK(idx->loop == other);

  /* numbering follows print order: a statement before its blocks */
  ir_number(k);
  int ids[64] = {0};
  ir_walk(k->body, collect, ids);
  CHECK(ids[0] == 9);
  for (int i = 1; i <= ids[0]; i++) CHECK(ids[i] == i - 1);
  CHECK(k->next_id == 9);
  CHECK(iff->id == 4 && loop->id == 5 && idx->id == 6 && use->id == 7 && other->id == 8);
  ir_kernel_free(k);
}

static void test_builders(void) {
  ir_program *p = ir_program_new();
  char err[256];
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = ir_snode_dense(p, r, 1, (int[]){0}, (int64_t[]){8}, err, sizeof err);
  ir_snode *x = ir_snode_place(p, d, IR_u16, "x", err, sizeof err);
  CHECK(ir_snode_layout(p, r, err, sizeof err));

  ir_kernel *k = ir_kernel_new("b", p);
  k->nargs = 2;
  k->arg_types[0] = IR_f64;
  k->arg_types[1] = IR_i8;
  ir_builder b;
  ir_builder_init(&b, k);
  b.loc = (ir_loc){"file.lua", 7};
  ir_stmt *a0 = ir_b_arg(&b, 0), *a1 = ir_b_arg(&b, 1);
  CHECK(a0->type == IR_f64 && a0->aux == 0 && a1->type == IR_i8 && a1->aux == 1);
  CHECK(a0->loc.line == 7 && a0->loc.file && strcmp(a0->loc.file, "file.lua") == 0);
  ir_stmt *f = ir_b_const_float(&b, IR_f32, 0.1);
  CHECK(f->imm.fval == (double)0.1f); /* f32 constants hold f32 values */
  ir_stmt *g = ir_b_const_float(&b, IR_f64, 0.1);
  CHECK(g->imm.fval == 0.1);
  CHECK(ir_b_unary(&b, IR_sqrt, a1)->type == IR_f32);
  CHECK(ir_b_unary(&b, IR_neg, a1)->type == IR_i8);
  CHECK(ir_b_binary(&b, IR_add, a0, a1)->type == IR_f64);
  CHECK(ir_b_binary(&b, IR_div, a1, a1)->type == IR_f32);
  CHECK(ir_b_cast(&b, IR_u64, a0)->type == IR_u64);
  ir_stmt *cmp = ir_b_binary(&b, IR_cmp_eq, a1, a1);
  CHECK(ir_b_select(&b, cmp, a1, f)->type == IR_f32);
  ir_stmt *var = ir_b_alloca(&b, IR_i32);
  CHECK(ir_b_local_load(&b, var)->type == IR_i32);
  CHECK(ir_b_local_store(&b, var, a1)->type == IR_void);
  ir_stmt *i = ir_b_const_int(&b, IR_i32, 3);
  ir_stmt *ptr = ir_b_global_ptr(&b, x->id, 1, &i);
  CHECK(ptr->type == IR_u16 && ptr->aux == x->id && ptr->nops == 1 && ptr->ops[0] == i);
  CHECK(ir_b_global_load(&b, ptr)->type == IR_u16);
  CHECK(ir_b_global_store(&b, ptr, i)->type == IR_void);
  ir_stmt *old = ir_b_atomic(&b, IR_atomic_add, ptr, i);
  CHECK(old->op == IR_atomic_add && old->type == IR_u16);
  ir_stmt *w = ir_b_while(&b);
  b.block = w->blocks[0];
  CHECK(ir_b_jump(&b, IR_break, NULL)->nops == 0);
  b.block = k->body;
  ir_stmt *ret = ir_b_jump(&b, IR_return, i);
  CHECK(ret->nops == 1 && ret->ops[0] == i);
  k->ret_type = IR_i32;
  char verr[512];
  CHECKF(ir_verify(k, verr, sizeof verr), "%s", verr);

  /* a clone is deep: same text, its own statements */
  ir_kernel *c = ir_kernel_clone(k);
  char *t1 = ir_print(k), *t2 = ir_print(c);
  CHECK_STREQ(t1, t2);
  CHECK(c->body != k->body && c->body->first != k->body->first);
  CHECK(c->body->last->op == IR_return && c->body->last->ops[0] != i);
  CHECK(c->body->last->ops[0]->parent == c->body);
  CHECK(c->body->first->loc.line == 7 && strcmp(c->body->first->loc.file, "file.lua") == 0);
  CHECKF(ir_verify(c, verr, sizeof verr), "%s", verr);
  ir_remove(c->body->first->next);
  char *t3 = ir_print(k);
  CHECK_STREQ(t1, t3);
  free(t1);
  free(t2);
  free(t3);
  ir_kernel_free(k); /* the clone survives its original */
  char *t4 = ir_print(c);
  CHECK(t4 && strstr(t4, "kernel b("));
  free(t4);
  ir_kernel_free(c);
  ir_program_free(p);
}

static void fail_here(ir_kernel *k) { ir_fail(k, (ir_loc){"script.lua", 42}, "bad thing %d", 5); }

static void test_fail_and_arena(void) {
  ir_kernel *k = ir_kernel_new("f", NULL);
  jmp_buf jb;
  k->on_error = &jb;
  volatile int reached = 0;
  if (setjmp(jb) == 0) {
    fail_here(k);
    reached = 1;
  }
  CHECK(reached == 0);
  CHECK_STREQ(k->error, "script.lua:42: bad thing 5");

  /* many small and a few big allocations, all zeroed, freed at once */
  ir_builder b;
  ir_builder_init(&b, k);
  for (int n = 0; n < 100000; n++) ir_b_const_int(&b, IR_i64, n);
  int n = 0, bad = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next, n++) bad += s->imm.ival != n;
  CHECK(n == 100000 && bad == 0);
  unsigned char *big = ir_alloc(k, 1 << 20);
  int nz = 0;
  for (int q = 0; q < 1 << 20; q++) nz += big[q] != 0;
  CHECK(nz == 0);
  CHECK_STREQ(ir_strdup(k, "hello"), "hello");
  CHECK(ir_strdup(k, NULL) == NULL);
  ir_kernel_free(k);
}

int main(void) {
  test_tables();
  test_result_types();
  test_linking();
  test_builders();
  test_fail_and_arena();
  return check_finish("test_ir_builder");
}
