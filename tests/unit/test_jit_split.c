/*
** test_jit_split.c -- very large tasks compiled as several functions
** (src/jit/llvm/cg_split.c). On hand-built kernels writing many fields, the
** LLVM module of cg_build (before optimisation, so the counts do not depend
** on LLVM's choices) must hold one function per part of the task, or per
** piece of a block, each with at most CG_PART_ACCESSES field stores, which
** is what keeps LLVM's compile time linear in the number of fields (its
** loop access analysis compares the accesses of a loop pairwise past 250);
** where a part would break the kernel (a value loaded from a field the
** task writes) the block is cut into pieces instead; nothing is cut after
** a return. The split kernels then run and are checked against the C
** formula; a codegen error inside a part or piece fails the compile.
*/
#include <stdio.h>

#include "check.h"
#include "jit/cpu/cpu.h"
#include "jit_helpers.h"

static jit_backend *be;
static char err[1024];

static ir_stmt *ci32(ir_builder *b, int64_t v) { return ir_b_const_int(b, IR_i32, v); }
static ir_stmt *bin(ir_builder *b, ir_op op, ir_stmt *x, ir_stmt *y) {
  ir_stmt *o[2] = {x, y};
  return ir_b_op(b, op, IR_i32, 2, o);
}

/* n i32 places of 64 cells under one dense level */
static ir_snode **places(ir_program *p, int n) {
  static ir_snode *pl[4000];
  ir_snode *root = ir_snode_root(p);
  int axis = 0;
  int64_t shape = 64;
  ir_snode *d = ir_snode_dense(p, root, 1, &axis, &shape, err, sizeof err);
  for (int k = 0; k < n && d; k++) {
    char name[16];
    snprintf(name, sizeof name, "g%d", k);
    pl[k] = ir_snode_place(p, d, IR_i32, name, err, sizeof err);
    if (!pl[k]) break;
  }
  if (!d || !ir_snode_layout(p, root, err, sizeof err)) {
    fprintf(stderr, "places: %s\n", err);
    abort();
  }
  return pl;
}

/* What cg_build made of k's first task: its parts (functions named
** TASK_partM, in order), the pieces cut out of blocks (..._pieceM), and the
** field stores (those carrying a TBAA tag) of each function. */
typedef struct {
  int nparts, npieces;
  int stores[64];     /* per part, in order; [0] is the task's function when not split */
  int loads[64];
  int piece_stores[64];
  int total;          /* in every function */
} shape;

static void count(LLVMValueRef f, unsigned tbaa, int *stores, int *loads) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
      if (!LLVMGetMetadata(in, tbaa)) continue;
      if (LLVMGetInstructionOpcode(in) == LLVMStore) (*stores)++;
      if (LLVMGetInstructionOpcode(in) == LLVMLoad && loads) (*loads)++;
    }
}

static shape module_shape(ir_kernel *k) {
  shape sh = {0};
  LLVMContextRef ctx = LLVMContextCreate();
  cg_module m;
  bool ok = cg_build(&cpu_target, ctx, k, k->name, &m, err, sizeof err);
  CHECKF(ok, "cg_build %s: %s", k->name, err);
  if (!ok) {
    LLVMContextDispose(ctx);
    return sh;
  }
  unsigned tbaa = LLVMGetMDKindIDInContext(ctx, "tbaa", 4);
  char task[160], part[200];
  snprintf(task, sizeof task, "%s_task0", k->name);
  for (int i = 0; i < 64; i++) {
    snprintf(part, sizeof part, "%s_part%d", task, i);
    LLVMValueRef f = LLVMGetNamedFunction(m.mod, part);
    if (!f && i == 0) f = LLVMGetNamedFunction(m.mod, task);   /* not split */
    if (!f) break;
    if (strstr(LLVMGetValueName2(f, &(size_t){0}), "_part")) sh.nparts++;
    count(f, tbaa, &sh.stores[i], &sh.loads[i]);
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(m.mod); f; f = LLVMGetNextFunction(f)) {
    int stores = 0;
    count(f, tbaa, &stores, NULL);
    sh.total += stores;
    if (strstr(LLVMGetValueName2(f, &(size_t){0}), "_piece") && sh.npieces < 64)
      sh.piece_stores[sh.npieces++] = stores;
  }
  LLVMDisposeModule(m.mod);
  cg_module_free(&m);
  LLVMContextDispose(ctx);
  return sh;
}

static jit_kernel *compile(ir_kernel *k) {
  jit_kernel *jk = be->compile(be, k, err, sizeof err);
  CHECKF(jk != NULL, "compiling %s: %s", k->name, err);
  return jk;
}

/* g_q[i] = i * (q + 1) + arg0 over i in [0, 64) for 0 < q < n, except
** g_{n/2}[i] = i + arg0 (a pure value defined at the top); g_0[i], loaded
** at the top, is added to the last store. With read_written g_0 is stored
** too (first). n field addresses, n + 1 with read_written (g_0 is then
** loaded and stored through two global_ptrs). */
static int bad_at = -1;   /* test_error_inside: where wide() puts a bad statement */

static ir_kernel *wide(ir_program *p, ir_snode **g, int n, const char *name, bool read_written) {
  ir_kernel *k = ir_kernel_new(name, p);
  k->nargs = 1;
  k->arg_types[0] = IR_i32;
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *t = h_task(&b, IR_task_range_for, 0, 64);
  ir_stmt *i = ir_b_loop_index(&b, t);
  ir_stmt *base = bin(&b, IR_add, i, ir_b_arg(&b, 0));   /* a pure value every part uses */
  ir_stmt *v0 = ir_b_global_load(&b, h_ptr(&b, g[0], i));
  for (int q = read_written ? 0 : 1; q < n; q++) {
    if (q == bad_at) {
      ir_stmt *idx[2] = {i, i};
      ir_b_global_store(&b, ir_b_global_ptr(&b, g[1]->id, 2, idx), i);
    }
    ir_stmt *v = bin(&b, IR_add, bin(&b, IR_mul, i, ci32(&b, q + 1)), ir_b_arg(&b, 0));
    if (q == n - 1) v = bin(&b, IR_add, v, v0);
    ir_b_global_store(&b, h_ptr(&b, g[q], i), q == n / 2 ? bin(&b, IR_add, base, ci32(&b, 0)) : v);
  }
  return k;
}

static void test_split_counts(void) {
  ir_program *p = ir_program_new();
  ir_snode **g = places(p, 1000);
  /* 999 stores and a read-only g_0: five parts, each within the bound, each
  ** reloading g_0 rather than carrying the value across */
  ir_kernel *k = wide(p, g, 1000, "wide", false);
  shape sh = module_shape(k);
  CHECKF(sh.nparts == 5 && sh.npieces == 0, "%d parts, %d pieces", sh.nparts, sh.npieces);
  CHECK(sh.total == 999);
  for (int m = 0; m < sh.nparts; m++) {
    CHECKF(sh.stores[m] > 0 && sh.stores[m] <= CG_PART_ACCESSES, "part %d: %d stores", m, sh.stores[m]);
    if (m + 1 < sh.nparts) CHECKF(sh.loads[m] == (m == 0), "part %d loads g_0 %d times", m, sh.loads[m]);
  }
  CHECKF(sh.loads[sh.nparts - 1] == 1, "last part loads g_0 %d times", sh.loads[sh.nparts - 1]);
  jit_kernel *jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    for (int i = 0; i < 64; i++) *(int32_t *)h_elem(&h, g[0], i) = 1000 + i;
    h.args[0] = 5;
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int bad = 0;
    for (int q = 1; q < 1000; q++)
      for (int i = 0; i < 64; i++) {
        int32_t want = q == 500 ? i + 5 : i * (q + 1) + 5 + (q == 999 ? 1000 + i : 0);
        if (*(int32_t *)h_elem(&h, g[q], i) != want) bad++;
      }
    CHECKF(bad == 0, "%d wrong cells", bad);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);

  /* the value loaded from g_0 is used by the last store and g_0 is written
  ** (by the first): no part may recompute it, so the task is not cut into
  ** parts; its loop body is cut into pieces called in place instead, the
  ** value passed on in memory; 1001 addresses (g_0 loaded and stored
  ** through two global_ptrs, not CSE'd here) make six pieces */
  k = wide(p, g, 1000, "whole", true);
  sh = module_shape(k);
  CHECKF(sh.nparts == 0 && sh.npieces == 6 && sh.total == 1000, "%d parts, %d pieces, %d stores", sh.nparts,
         sh.npieces, sh.total);
  for (int m = 0; m < sh.npieces; m++)
    CHECKF(sh.piece_stores[m] > 0 && sh.piece_stores[m] <= CG_PART_ACCESSES, "piece %d: %d stores", m,
           sh.piece_stores[m]);
  jk = compile(k);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, p);
    for (int i = 0; i < 64; i++) *(int32_t *)h_elem(&h, g[0], i) = 1000 + i;
    h.args[0] = 3;
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    int bad = 0;
    for (int q = 0; q < 1000; q++)
      for (int i = 0; i < 64; i++) {
        int32_t want = q == 500 ? i + 3 : i * (q + 1) + 3 + (q == 999 ? 1000 + i : 0);
        if (*(int32_t *)h_elem(&h, g[q], i) != want) bad++;
      }
    CHECKF(bad == 0, "%d wrong cells", bad);
    h_ctx_free(&h, p);
    be->release(be, jk);
  }
  ir_kernel_free(k);

  /* at most CG_SPLIT_ACCESSES field addresses: whole; one more: split */
  k = wide(p, g, CG_SPLIT_ACCESSES, "small", false);
  sh = module_shape(k);
  CHECKF(sh.nparts == 0, "%d parts", sh.nparts);
  ir_kernel_free(k);
  k = wide(p, g, CG_SPLIT_ACCESSES + 1, "above", false);
  sh = module_shape(k);
  CHECKF(sh.nparts == 2, "%d parts", sh.nparts);
  ir_kernel_free(k);
  ir_program_free(p);
}

/* A serial task with a return under an if after 500 stores: the parts after
** it would still run, so the last cut comes before it. */
static void test_no_cut_after_return(void) {
  ir_program *p = ir_program_new();
  ir_snode **g = places(p, 1000);
  ir_kernel *k = ir_kernel_new("ret", p);
  k->nargs = 1;
  k->arg_types[0] = IR_i32;
  k->ret_type = IR_i32;
  ir_builder b;
  ir_builder_init(&b, k);
  h_task(&b, IR_task_serial, 0, 0);
  ir_block *top = b.block;
  for (int q = 0; q < 1000; q++) {
    if (q == 500) {
      ir_stmt *o[2] = {ir_b_arg(&b, 0), ci32(&b, 0)};
      ir_stmt *br = ir_b_if(&b, ir_b_op(&b, IR_cmp_ne, IR_i1, 2, o), false);
      b.block = br->blocks[0];
      ir_b_jump(&b, IR_return, ci32(&b, 7));
      b.block = top;
    }
    ir_b_global_store(&b, h_ptr(&b, g[q], ci32(&b, q % 64)), ci32(&b, q + 1));
  }
  ir_b_jump(&b, IR_return, ci32(&b, 9));
  shape sh = module_shape(k);
  CHECKF(sh.nparts == 3, "%d parts", sh.nparts);
  CHECKF(sh.nparts == 3 && sh.stores[0] == 200 && sh.stores[1] == 200 && sh.stores[2] == 600,
         "stores per part %d %d %d", sh.stores[0], sh.stores[1], sh.stores[2]);
  jit_kernel *jk = compile(k);
  for (int early = 0; jk && early < 2; early++) {
    h_ctx h;
    h_ctx_init(&h, p);
    h.args[0] = (uint64_t)early;
    CHECK(jit_launch(be, NULL, jk, &h.ctx));
    CHECK(h.ret[0] == (early ? 7u : 9u));
    int bad = 0;
    for (int q = 0; q < 1000; q++)
      if (*(int32_t *)h_elem(&h, g[q], q % 64) != (early && q >= 500 ? 0 : q + 1)) bad++;
    CHECKF(bad == 0, "early %d: %d wrong cells", early, bad);
    h_ctx_free(&h, p);
  }
  if (jk) be->release(be, jk);
  ir_kernel_free(k);
  ir_program_free(p);
}

/* A statement codegen refuses (a global_ptr with two indices into a
** one-index field) in the middle of a part or of a piece: the compile fails
** with its message (the sanitizer build checks that nothing leaks). */
static void test_error_inside(void) {
  ir_program *p = ir_program_new();
  ir_snode **g = places(p, 1000);
  for (int read_written = 0; read_written < 2; read_written++) {
    bad_at = 300;
    ir_kernel *k = wide(p, g, 600, read_written ? "bad_pieces" : "bad_parts", read_written);
    bad_at = -1;
    CHECK(be->compile(be, k, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "takes 1 indices, got 2");
    ir_kernel_free(k);
  }
  ir_program_free(p);
}

int main(void) {
  be = jit_cpu_create(2, NULL, err, sizeof err);
  CHECKF(be != NULL, "%s", err);
  if (!be) return check_finish("test_jit_split");
  test_split_counts();
  test_no_cut_after_return();
  test_error_inside();
  be->destroy(be);
  return check_finish("test_jit_split");
}
