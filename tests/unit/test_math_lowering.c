/*
** test_math_lowering.c -- the functions that compute the math ops on each
** target, as ops.def's cpu and ptx columns give them (cg_math_name): the
** CPU target's hook (cpu_target.math_fn) and the NVPTX naming, for f32 and
** f64, against the list below, which is what docs/internals.md ("Math
** lowering") promises: LLVM intrinsics where LLVM lowers them to an
** instruction or to the C library itself, the C library's functions (CPU)
** and libdevice's (NVPTX) for the rest. Ops that are not math have none.
*/
#include <stdio.h>

#include "check.h"
#include "jit/cpu/cpu.h"
#include "jit/llvm/llvm_codegen.h"

/* op, CPU: 'i' intrinsic / 'l' libm, NVPTX: 'i' intrinsic / 'l' libdevice */
static const struct {
  ir_op op;
  const char *name;
  char cpu, ptx;
} math[] = {
    {IR_sqrt, "sqrt", 'i', 'i'},   {IR_sin, "sin", 'i', 'l'},     {IR_cos, "cos", 'i', 'l'},
    {IR_tan, "tan", 'l', 'l'},     {IR_asin, "asin", 'l', 'l'},   {IR_acos, "acos", 'l', 'l'},
    {IR_atan, "atan", 'l', 'l'},   {IR_tanh, "tanh", 'l', 'l'},   {IR_exp, "exp", 'i', 'l'},
    {IR_log, "log", 'i', 'l'},     {IR_floor, "floor", 'i', 'i'}, {IR_ceil, "ceil", 'i', 'i'},
    {IR_round, "round", 'i', 'i'}, {IR_trunc, "trunc", 'i', 'i'}, {IR_pow, "pow", 'i', 'l'},
    {IR_atan2, "atan2", 'l', 'l'},
};
#define NMATH (int)(sizeof math / sizeof math[0])

static void expect(char how, const char *lib_prefix, const char *name, ir_type t, char *out, size_t len) {
  if (how == 'i') snprintf(out, len, "llvm.%s.%s", name, t == IR_f32 ? "f32" : "f64");
  else snprintf(out, len, "%s%s%s", lib_prefix, name, t == IR_f32 ? "f" : "");
}

int main(void) {
  char buf[64], want[64];
  static const ir_type types[2] = {IR_f32, IR_f64};
  for (int i = 0; i < NMATH; i++)
    for (int j = 0; j < 2; j++) {
      ir_type t = types[j];
      const char *got = cpu_target.math_fn(math[i].op, t, buf, sizeof buf);
      expect(math[i].cpu, "", math[i].name, t, want, sizeof want);
      CHECKF(got && strcmp(got, want) == 0, "CPU %s %s: %s, want %s", math[i].name, ir_type_name(t),
             got ? got : "NULL", want);
      got = cg_math_name(ir_op_ptx_math(math[i].op), "__nv_", math[i].op, t, buf, sizeof buf);
      expect(math[i].ptx, "__nv_", math[i].name, t, want, sizeof want);
      CHECKF(got && strcmp(got, want) == 0, "NVPTX %s %s: %s, want %s", math[i].name, ir_type_name(t),
             got ? got : "NULL", want);
    }
  /* every other op: no function on either target */
  for (int op = 0; op < IR_NUM_OPS; op++) {
    bool listed = false;
    for (int i = 0; i < NMATH; i++) listed |= math[i].op == (ir_op)op;
    if (listed) continue;
    CHECKF(cpu_target.math_fn((ir_op)op, IR_f32, buf, sizeof buf) == NULL, "CPU %s", ir_op_name((ir_op)op));
    CHECKF(ir_op_ptx_math((ir_op)op) == IR_MATH_none, "NVPTX %s", ir_op_name((ir_op)op));
  }
  return check_finish("test_math_lowering");
}
