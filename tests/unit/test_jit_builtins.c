/*
** test_jit_builtins.c -- the builtins ops through the passes and the CPU
** backend, without Lua: random draws equal rt_random_hash computed here for
** every (iteration, draw) and do not change with the thread count, print
** records hold the values in order, check_bound and assert raise their
** errors, ndarray elements are read and written through ext_ptr. The same
** kernels must give PTX (assembled when LT_PTXAS names a ptxas).
*/
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "ir/passes/passes.h"
#include "jit/cpu/cpu.h"
#include "jit_helpers.h"
#include "runtime/builtins.h"

static ir_kernel *compile_text(const char *text, ir_program *p) {
  char err[512] = "";
  ir_kernel *k = ir_parse(text, p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  if (!k) return NULL;
  bool ok = ir_compile(k, true, NULL, NULL);
  CHECKF(ok, "%s", k->error);
  if (!ok) {
    ir_kernel_free(k);
    return NULL;
  }
  return k;
}

static void check_ptx(ir_kernel *k) {
  char err[1024];
  char *ptx = jit_emit_ptx(k, "sm_70", err, sizeof err);
  CHECKF(ptx != NULL, "%s: %s", k->name, err);
  if (!ptx) return;
  const char *ptxas = getenv("LT_PTXAS");
  if (ptxas && *ptxas && access(ptxas, X_OK) == 0) {
    char src[128], cmd[600];
    snprintf(src, sizeof src, "/tmp/lt_test_builtins_%d.ptx", (int)getpid());
    FILE *f = fopen(src, "w");
    if (f) {
      fputs(ptx, f);
      fclose(f);
      snprintf(cmd, sizeof cmd, "'%s' -arch=sm_75 -c '%s' -o /dev/null", ptxas, src);
      CHECKF(system(cmd) == 0, "ptxas rejected the PTX of %s (%s)", k->name, src);
      remove(src);
    }
  }
  free(ptx);
}

/* out[i * 3 + d] = random<u64> (iteration i, draw d) of site 1, 1000 iterations */
static void test_random(void) {
  static const char *text =
      "kernel draws(u64 out) {\n"
      "  <u64> $0 = arg 0\n"
      "  <i32> $1 = const 0\n"
      "  <i32> $2 = const 1000\n"
      "  <i32> $3 = const 1\n"
      "  <i32> $4 = const 3\n"
      "  $5 = range_for $1 $2 {\n"
      "    <i32> $6 = loop_index $5\n"
      "    <i32> $7 = alloca\n"
      "    $8 = while {\n"
      "      <i32> $9 = local_load $7\n"
      "      <i1> $10 = cmp_ge $9 $4\n"
      "      $11 = if $10 {\n"
      "        $12 = break\n"
      "      }\n"
      "      <u64> $13 = random $6 $9 site 1\n"
      "      <i32> $14 = mul $6 $4\n"
      "      <i32> $15 = add $14 $9\n"
      "      <u64*> $16 = ext_ptr $0 $15\n"
      "      $17 = global_store $16 $13\n"
      "      <i32> $18 = add $9 $3\n"
      "      $19 = local_store $7 $18\n"
      "    }\n"
      "  }\n"
      "}\n";
  ir_program *p = ir_program_new();
  ir_kernel *k = compile_text(text, p);
  if (!k) { ir_program_free(p); return; }
  static uint64_t out[2][3000];
  rt_builtins rb = {.seed = 77, .launch = 5};
  for (int run = 0; run < 2; run++) {
    char err[512];
    jit_backend *be = jit_cpu_create(run == 0 ? 1 : 4, NULL, err, sizeof err);
    CHECKF(be != NULL, "%s", err);
    if (!be) break;
    jit_kernel *jk = be->compile(be, k, err, sizeof err);
    CHECKF(jk != NULL, "%s", err);
    if (jk) {
      h_ctx h;
      h_ctx_init(&h, p);
      h.ctx.builtins = &rb;
      h.args[0] = (uint64_t)(uintptr_t)out[run];
      CHECK(jit_launch(be, NULL, jk, &h.ctx));
      h_ctx_free(&h, p);
      be->release(be, jk);
    }
    be->destroy(be);
  }
  int bad = 0, differ = 0;
  for (int i = 0; i < 1000; i++)
    for (int d = 0; d < 3; d++) {
      if (out[0][i * 3 + d] != rt_random_hash(77, 5, 1, (uint32_t)i, (uint32_t)d)) bad++;
      if (out[0][i * 3 + d] != out[1][i * 3 + d]) differ++;
    }
  CHECKF(bad == 0, "%d draws differ from rt_random_hash", bad);
  CHECKF(differ == 0, "%d draws differ between 1 and 4 threads", differ);
  CHECK(rt_random_hash(77, 5, 1, 0, 0) != rt_random_hash(78, 5, 1, 0, 0));
  CHECK(rt_random_hash(77, 5, 1, 0, 0) != rt_random_hash(77, 6, 1, 0, 0));
  CHECK(rt_random_hash(77, 5, 1, 0, 0) != rt_random_hash(77, 5, 2, 0, 0));
  check_ptx(k);
  ir_kernel_free(k);
  ir_program_free(p);
}

/* print, check_bound and assert in one serial kernel */
static void test_print_errors(void) {
  static const char *text =
      "kernel misc(u64 a, i32 \"a.shape[1]\", i32 n) debug {\n"
      "  <u64> $0 = arg 0\n"
      "  <i32> $1 = arg 1\n"
      "  <i32> $2 = arg 2\n"
      "  <f64> $3 = const 2.5\n"
      "  <i1> $4 = const 1\n"
      "  $5 = print \"n=% x=% ok=%\" $2 $3 $4\n"
      "  $6 = check_bound $2 $1 arg 0 axis 0\n"
      "  <i32*> $7 = ext_ptr $0 $2\n"
      "  <i32> $8 = global_load $7\n"
      "  <i32> $9 = const 1\n"
      "  <i32> $10 = add $8 $9\n"
      "  $11 = global_store $7 $10\n"
      "  <i32> $12 = const 7\n"
      "  <i1> $13 = cmp_ne $2 $12\n"
      "  $14 = assert $13 \"n must not be 7\"\n"
      "  $15 = print \"after\"\n"
      "}\n";
  ir_program *p = ir_program_new();
  ir_kernel *k = compile_text(text, p);
  if (!k) { ir_program_free(p); return; }
  char err[512];
  jit_backend *be = jit_cpu_create(2, &(jit_options){.debug = true}, err, sizeof err);
  CHECKF(be != NULL, "%s", err);
  jit_kernel *jk = be ? be->compile(be, k, err, sizeof err) : NULL;
  CHECKF(jk != NULL, "%s", err);
  if (jk) {
    int32_t arr[8] = {0};
    static char buf[256];
    rt_builtins rb = {.print_data = buf, .print_cap = 70};   /* room for the first record only */
    int64_t ns[3] = {3, 9, 7};
    int32_t want_err[3] = {RT_ERR_OK, RT_ERR_NDINDEX, RT_ERR_ASSERT};
    for (int r = 0; r < 3; r++) {
      h_ctx h;
      h_ctx_init(&h, p);
      h.ctx.builtins = &rb;
      rb.print_used = rb.print_dropped = 0;
      h.args[0] = (uint64_t)(uintptr_t)arr;
      h.args[1] = 8;
      h.args[2] = (uint64_t)ns[r];
      jit_launch(be, NULL, jk, &h.ctx);
      CHECKF(h.error == want_err[r], "run %d: error %d, want %d", r, h.error, want_err[r]);
      /* the first record: header + 3 slots = 64 bytes; "after" (16) does not fit when reached */
      const rt_print_header *hd = (const rt_print_header *)buf;
      const rt_print_slot *sl = (const rt_print_slot *)(hd + 1);
      CHECK(hd->bytes == 64 && hd->nvalues == 3 && sl[0].type == IR_i32 && (int64_t)sl[0].bits == ns[r]);
      double x;
      memcpy(&x, &sl[1].bits, 8);
      CHECK(sl[1].type == IR_f64 && x == 2.5 && sl[2].type == IR_i1 && sl[2].bits == 1);
      CHECK(!strcmp(ir_kernel_string(k, hd->string), "n=% x=% ok=%"));
      if (r == 0) CHECK(rb.print_used == 64 + 16 && rb.print_dropped == 1);
      if (r == 1) CHECK(h.error_info[0] == 0 && h.error_info[1] == 0 && h.error_info[2] == 9);
      if (r == 2) CHECK(!strcmp(ir_kernel_string(k, (int)h.error_info[0]), "n must not be 7"));
      if (r > 0) CHECKF(rb.print_dropped == 0, "run %d: the kernel stopped before the second print", r);
      h_ctx_free(&h, p);
    }
    CHECK(arr[3] == 1 && arr[7] == 1);   /* the bounds check stopped the write at 9 */
    be->release(be, jk);
  }
  if (be) be->destroy(be);
  check_ptx(k);
  ir_kernel_free(k);
  ir_program_free(p);
}

int main(void) {
  test_random();
  test_print_errors();
  return check_finish("test_jit_builtins");
}
