/*
** test_ir_verify.c -- the verifier accepts valid kernels and rejects broken
** ones with a message naming the offending statement ("$5 = add: ...").
*/
#include <stdlib.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/snode.h"

static char err[1024];

/* The kernel is rejected and the message contains `want`. */
#define REJECTS(k, flags, want)                                        \
  do {                                                                 \
    bool ok_ = ir_verify_ex((k), (flags), err, sizeof err);            \
    CHECKF(!ok_, "accepted, expected: %s", want);                      \
    CHECK_CONTAINS(err, want);                                         \
  } while (0)

#define ACCEPTS(k, flags)                                              \
  do {                                                                 \
    bool ok_ = ir_verify_ex((k), (flags), err, sizeof err);            \
    CHECKF(ok_, "%s", err);                                            \
  } while (0)

typedef struct {
  ir_kernel *k;
  ir_builder b;
  ir_stmt *c1, *c2; /* two i32 constants at the top */
} fixture;

static void setup(fixture *f) {
  f->k = ir_kernel_new("v", NULL);
  ir_builder_init(&f->b, f->k);
  f->c1 = ir_b_const_int(&f->b, IR_i32, 1);
  f->c2 = ir_b_const_int(&f->b, IR_i32, 2);
}

static void test_valid_scopes(void) {
  fixture f;
  setup(&f);
  ir_builder *b = &f.b;
  ir_stmt *cond = ir_b_binary(b, IR_cmp_lt, f.c1, f.c2);
  ir_stmt *iff = ir_b_if(b, cond, true);
  b->block = iff->blocks[0];
  ir_stmt *loop = ir_b_range_for(b, f.c1, f.c2);
  b->block = loop->blocks[0];
  ir_stmt *i = ir_b_loop_index(b, loop);
  ir_stmt *inner = ir_b_if(b, cond, false);
  b->block = inner->blocks[0];
  ir_b_binary(b, IR_add, i, f.c1); /* outer values are visible inside */
  ir_b_jump(b, IR_break, NULL);
  b->block = iff->blocks[1];
  ir_stmt *w = ir_b_while(b);
  b->block = w->blocks[0];
  ir_b_jump(b, IR_continue, NULL);
  b->block = f.k->body;
  ir_b_binary(b, IR_mul, f.c1, f.c2);
  ACCEPTS(f.k, 0);
  ACCEPTS(f.k, IR_VERIFY_TYPES);
  ir_kernel_free(f.k);
}

static void test_visibility(void) {
  /* a value defined in an if's body, used after the if */
  fixture f;
  setup(&f);
  ir_builder *b = &f.b;
  ir_stmt *cond = ir_b_binary(b, IR_cmp_eq, f.c1, f.c2);
  ir_stmt *iff = ir_b_if(b, cond, false);
  b->block = iff->blocks[0];
  ir_stmt *inside = ir_b_const_int(b, IR_i32, 3);
  b->block = f.k->body;
  ir_stmt *use = ir_b_binary(b, IR_add, inside, f.c1);
  char want[128];
  snprintf(want, sizeof want, "$%d = add: operand $%d (const) is not visible here", use->id, inside->id);
  REJECTS(f.k, 0, want);
  ir_kernel_free(f.k);

  /* a use before the definition in the same block */
  setup(&f);
  ir_stmt *late = ir_new(f.k, IR_const, IR_i32, 0, NULL);
  ir_stmt *ops[2] = {late, f.c1};
  ir_stmt *early = ir_b_op(&f.b, IR_add, IR_i32, 2, ops);
  ir_append(f.k->body, late);
  snprintf(want, sizeof want, "$%d = add: operand $%d (const) is not visible", early->id, late->id);
  REJECTS(f.k, 0, want);
  ir_kernel_free(f.k);

  /* a statement using itself, and one from another kernel */
  setup(&f);
  ir_stmt *self = ir_b_binary(&f.b, IR_add, f.c1, f.c2);
  self->ops[0] = self;
  REJECTS(f.k, 0, "is not visible");
  ir_kernel *other = ir_kernel_new("o", NULL);
  ir_builder ob;
  ir_builder_init(&ob, other);
  self->ops[0] = ir_b_const_int(&ob, IR_i32, 9);
  REJECTS(f.k, 0, "is not visible");
  ir_kernel_free(other);
  ir_kernel_free(f.k);
}

static void test_loops_and_jumps(void) {
  fixture f;
  setup(&f);
  ir_builder *b = &f.b;
  ir_stmt *loop = ir_b_range_for(b, f.c1, f.c2);
  ir_stmt *outside = ir_b_loop_index(b, loop); /* after the loop, not in it */
  char want[128];
  snprintf(want, sizeof want, "$%d = loop_index: reads the index of $%d (range_for), which does not enclose it",
           outside->id, loop->id);
  REJECTS(f.k, 0, want);
  ir_kernel_free(f.k);

  setup(&f);
  outside = ir_b_loop_index(&f.b, f.c1);
  REJECTS(f.k, 0, "loop_index: does not refer to a range_for");
  ir_kernel_free(f.k);

  setup(&f);
  ir_stmt *cond = ir_b_binary(&f.b, IR_cmp_eq, f.c1, f.c2);
  ir_stmt *iff = ir_b_if(&f.b, cond, false);
  f.b.block = iff->blocks[0];
  ir_stmt *brk = ir_b_jump(&f.b, IR_break, NULL);
  snprintf(want, sizeof want, "$%d = break: is not inside a while or range_for", brk->id);
  REJECTS(f.k, 0, want);
  ir_kernel_free(f.k);

  setup(&f);
  ir_b_jump(&f.b, IR_continue, NULL);
  REJECTS(f.k, 0, "continue: is not inside a while or range_for");
  ir_kernel_free(f.k);

  /* a loop outside a task does not count inside it */
  setup(&f);
  ir_stmt *w = ir_b_while(&f.b);
  f.b.block = w->blocks[0];
  ir_stmt *t = ir_b_op(&f.b, IR_task_serial, IR_void, 0, NULL);
  t->blocks[0] = ir_block_new(f.k, t);
  f.b.block = t->blocks[0];
  ir_b_jump(&f.b, IR_break, NULL);
  REJECTS(f.k, 0, "task_serial: a task must be at the top level of the kernel");
  ir_kernel_free(f.k);
}

static void test_counts_and_structure(void) {
  fixture f;
  setup(&f);
  ir_stmt *add = ir_b_binary(&f.b, IR_add, f.c1, f.c2);
  add->nops = 1;
  char want[128];
  snprintf(want, sizeof want, "$%d = add: has 1 operands, expected 2", add->id);
  REJECTS(f.k, 0, want);
  add->nops = 2;
  ACCEPTS(f.k, 0);
  ir_stmt *sel = ir_b_op(&f.b, IR_select, IR_i32, 2, (ir_stmt *[]){f.c1, f.c2});
  (void)sel;
  REJECTS(f.k, 0, "select: has 2 operands, expected 3");
  ir_kernel_free(f.k);

  setup(&f);
  ir_b_jump(&f.b, IR_return, NULL);
  ACCEPTS(f.k, 0); /* a kernel without a result may return nothing */
  f.k->ret_type = IR_i32;
  REJECTS(f.k, 0, "return: has 0 operands, expected 1");
  ir_kernel_free(f.k);

  setup(&f);
  ir_b_jump(&f.b, IR_return, f.c1);
  REJECTS(f.k, 0, "return: returns a value from a kernel without a result type");
  f.k->ret_type = IR_f32;
  ACCEPTS(f.k, 0);
  REJECTS(f.k, IR_VERIFY_TYPES, "returns i32 from a kernel returning f32");
  ir_kernel_free(f.k);

  /* broken links */
  setup(&f);
  ir_stmt *cond = ir_b_binary(&f.b, IR_cmp_eq, f.c1, f.c2);
  ir_stmt *iff = ir_b_if(&f.b, cond, false);
  iff->blocks[0]->owner = NULL;
  REJECTS(f.k, 0, "owner link");
  iff->blocks[0]->owner = iff;
  f.c2->parent = iff->blocks[0];
  REJECTS(f.k, 0, "parent link");
  f.c2->parent = f.k->body;
  f.c2->id = f.c1->id;
  REJECTS(f.k, 0, "two statements share the number $0");
  f.c2->id = 1;
  iff->blocks[1] = ir_block_new(f.k, iff);
  ACCEPTS(f.k, 0);
  ir_stmt *w = ir_b_while(&f.b);
  w->blocks[1] = ir_block_new(f.k, w);
  REJECTS(f.k, 0, "while: only if has a second (else) block");
  w->blocks[1] = NULL;
  w->blocks[0] = NULL;
  REJECTS(f.k, 0, "while: has no body block");
  ir_kernel_free(f.k);

  /* offloaded kernels hold only tasks at the top */
  setup(&f);
  f.k->offloaded = true;
  REJECTS(f.k, 0, "$0 = const: the kernel is offloaded, so its top level holds only tasks");
  ir_kernel_free(f.k);
}

static void test_types(void) {
  fixture f;
  setup(&f);
  ir_stmt *iff = ir_b_if(&f.b, f.c1, false);
  char want[128];
  snprintf(want, sizeof want, "$%d = if: the condition $0 is i32, not i1", iff->id);
  REJECTS(f.k, 0, want);
  ir_kernel_free(f.k);

  setup(&f);
  ir_stmt *cmp = ir_b_binary(&f.b, IR_cmp_lt, f.c1, f.c2);
  cmp->type = IR_i32;
  REJECTS(f.k, 0, "cmp_lt: a comparison gives i1, not i32");
  ir_kernel_free(f.k);

  setup(&f);
  ir_b_local_load(&f.b, f.c1);
  REJECTS(f.k, 0, "local_load: $0 is a const, not an alloca");
  ir_kernel_free(f.k);

  setup(&f);
  ir_stmt *st = ir_b_global_store(&f.b, f.c1, f.c2);
  (void)st;
  REJECTS(f.k, 0, "global_store: $0 is a const, not a global_ptr, global_tmp or ext_ptr");
  ir_kernel_free(f.k);

  setup(&f);
  ir_stmt *var = ir_b_alloca(&f.b, IR_i32);
  ir_stmt *store = ir_b_local_store(&f.b, var, f.c1);
  ir_b_binary(&f.b, IR_add, store, f.c1);
  REJECTS(f.k, 0, "add: operand $3 (local_store) has no value");
  ir_kernel_free(f.k);

  /* mixed operand types pass until typecheck has run */
  setup(&f);
  ir_stmt *x = ir_b_const_float(&f.b, IR_f32, 1.0);
  ir_b_binary(&f.b, IR_add, f.c1, x);
  ACCEPTS(f.k, 0);
  REJECTS(f.k, IR_VERIFY_TYPES, "add: operands are i32 and f32; typecheck makes them one type");
  ir_kernel_free(f.k);

  setup(&f);
  ir_b_binary(&f.b, IR_shl, f.c1, ir_b_const_int(&f.b, IR_i8, 3)); /* shifts may mix */
  ACCEPTS(f.k, IR_VERIFY_TYPES);
  ir_b_unary(&f.b, IR_sqrt, f.c1);
  REJECTS(f.k, IR_VERIFY_TYPES, "sqrt works on floats");
  ir_kernel_free(f.k);

  setup(&f);
  ir_stmt *a = ir_b_arg(&f.b, 0);
  char w2[64];
  snprintf(w2, sizeof w2, "$%d = arg: argument 0 does not exist", a->id);
  REJECTS(f.k, 0, w2);
  ir_kernel_free(f.k);

  /* fields: indices and element types against the program */
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = ir_snode_dense(p, r, 2, (int[]){0, 1}, (int64_t[]){4, 4}, err, sizeof err);
  ir_snode *fx = ir_snode_place(p, d, IR_f32, "x", err, sizeof err);
  CHECK(ir_snode_layout(p, r, err, sizeof err));
  ir_kernel *k = ir_kernel_new("g", p);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *i = ir_b_const_int(&b, IR_i32, 0);
  ir_stmt *ptr = ir_b_global_ptr(&b, fx->id, 1, &i);
  snprintf(want, sizeof want, "$%d = global_ptr: S2place<f32> takes 2 indices, 1 given", ptr->id);
  REJECTS(k, 0, want);
  ptr->ops[ptr->nops++] = i;
  ACCEPTS(k, 0);
  ptr->aux = d->id;
  REJECTS(k, 0, "S1dense is not a place");
  ptr->aux = 77;
  REJECTS(k, 0, "S77 is not an SNode of this program");
  ptr->aux = fx->id;
  ir_stmt *chk = ir_b_op(&b, IR_check_index, IR_void, 1, &i);
  chk->aux = fx->id;
  chk->imm.ival = 2;
  REJECTS(k, 0, "check_index: axis 2, but the field has 2 indices");
  chk->imm.ival = 1;
  ir_stmt *ld = ir_b_global_load(&b, ptr);
  ACCEPTS(k, IR_VERIFY_TYPES);
  ld->type = IR_f64;
  REJECTS(k, 0, "global_load: reads a f64 through a pointer to f32");
  ld->type = IR_f32;
  ir_b_global_store(&b, ptr, i);
  ACCEPTS(k, 0);
  REJECTS(k, IR_VERIFY_TYPES, "global_store: writes a i32 through a pointer to f32");
  ir_kernel_free(k);
  ir_program_free(p);
}

/* the same checks reached from text */
static void test_from_text(void) {
  ir_kernel *k = ir_parse(
      "kernel t() {\n"
      "  <i32> $0 = const 0\n"
      "  $1 = range_for $0 $0 {\n"
      "    <i32> $2 = loop_index $1\n"
      "  }\n"
      "  <i32> $3 = add $2 $0\n"
      "}\n",
      NULL, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (k) {
    REJECTS(k, 0, "kernel t: $3 = add: operand $2 (loop_index) is not visible here");
    ir_kernel_free(k);
  }
}

int main(void) {
  test_valid_scopes();
  test_visibility();
  test_loops_and_jumps();
  test_counts_and_structure();
  test_types();
  test_from_text();
  return check_finish("test_ir_verify");
}
