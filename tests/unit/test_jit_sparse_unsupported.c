/*
** test_jit_sparse_unsupported.c -- until the code generator learns sparse
** SNodes, kernels that use them are refused with a clear message (CPU and
** PTX), never miscompiled as dense or crashed on.
*/
#include <stdlib.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/passes/passes.h"
#include "ir/snode.h"
#include "jit/jit.h"

static const char *const kernels[] = {
    /* a struct-for: list tasks and task_struct_for */
    "field x <f32> dense [i:4] bitmasked [i:4]\n"
    "kernel sf() {\n  $0 = struct_for S2bitmasked {\n    <i32> $1 = loop_index $0 0\n"
    "    <f32*> $2 = global_ptr x [$1]\n    <f32> $3 = const 1.0\n    $4 = global_store $2 $3\n  }\n}\n",
    /* a plain range_for writing a field under a pointer level */
    "field y <f32> pointer [i:4] dense [i:4]\n"
    "kernel rf() {\n  <i32> $0 = const 0\n  <i32> $1 = const 16\n  $2 = range_for $0 $1 {\n"
    "    <i32> $3 = loop_index $2\n    <f32*> $4 = global_ptr y [$3]\n    <f32> $5 = const 1.0\n"
    "    $6 = global_store $4 $5\n  }\n}\n",
    /* a sparse op in a serial task */
    "field z <i32> pointer [i:8]\n"
    "kernel act(i32 n) {\n  <i32> $0 = arg 0\n  $1 = snode_activate S1pointer [$0]\n}\n",
};

int main(void) {
  char err[1024];
  jit_backend *be = jit_cpu_create(1, false, err, sizeof err);
  CHECKF(be != NULL, "%s", err);
  for (size_t i = 0; be && i < sizeof kernels / sizeof kernels[0]; i++) {
    ir_program *p = ir_program_new();
    ir_kernel *k = ir_parse(kernels[i], p, err, sizeof err);
    CHECKF(k != NULL, "%s", err);
    if (!k) continue;
    CHECKF(ir_compile(k, true, NULL, NULL), "%s", k->error);
    err[0] = 0;
    jit_kernel *jk = be->compile(be, k, err, sizeof err);
    CHECKF(jk == NULL && strstr(err, "not supported yet"), "kernel %zu: %s", i,
           jk ? "compiled" : err);
    if (jk) be->release(be, jk);
    char *ptx = jit_emit_ptx(k, "sm_70", err, sizeof err);
    CHECKF(ptx == NULL && strstr(err, "not supported yet"), "kernel %zu (ptx): %s", i,
           ptx ? "emitted" : err);
    free(ptx);
    ir_kernel_free(k);
    ir_program_free(p);
  }
  if (be) be->destroy(be);
  return check_finish("test_jit_sparse_unsupported");
}
