/*
** cg_ptx.c -- jit_emit_ptx: the shared code generator with the NVPTX target
** hooks. Each task function becomes internal and is wrapped in a PTX kernel
** entry of the same name taking (rt_context *ctx, i64 begin, i64 end):
** a serial task (and task_clear_list) runs on global thread 0 only; task_gc
** runs its stage `begin` with every thread a worker; a range_for task is a
** grid-stride loop over [begin, end) (bounds kept in global temporaries are
** read from ctx->gtmp instead of the parameters).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>

#include "llvm_codegen.h"

extern const unsigned char *lt_runtime_bc_nvptx64;
extern const size_t lt_runtime_bc_nvptx64_size;

/* Math without an NVPTX instruction: libdevice's __nv_* functions, left as
** external calls (the CUDA backend links libdevice). */
static const char *ptx_math_fn(ir_op op, ir_type t, char *buf, size_t len) {
  const char *sfx = t == IR_f32 ? "f32" : "f64", *f = t == IR_f32 ? "f" : "";
  const char *intrinsic = NULL, *lib = NULL;
  switch (op) {
  case IR_sqrt: intrinsic = "sqrt"; break;
  case IR_floor: intrinsic = "floor"; break;
  case IR_ceil: intrinsic = "ceil"; break;
  case IR_round: intrinsic = "round"; break;
  case IR_trunc: intrinsic = "trunc"; break;
  case IR_sin: lib = "sin"; break;
  case IR_cos: lib = "cos"; break;
  case IR_tan: lib = "tan"; break;
  case IR_asin: lib = "asin"; break;
  case IR_acos: lib = "acos"; break;
  case IR_atan: lib = "atan"; break;
  case IR_exp: lib = "exp"; break;
  case IR_log: lib = "log"; break;
  case IR_pow: lib = "pow"; break;
  case IR_atan2: lib = "atan2"; break;
  default: return NULL;
  }
  if (intrinsic) snprintf(buf, len, "llvm.%s.%s", intrinsic, sfx);
  else snprintf(buf, len, "__nv_%s%s", lib, f);
  return buf;
}

static LLVMValueRef sreg(cg *c, const char *name) {
  char full[64];
  snprintf(full, sizeof full, "llvm.nvvm.read.ptx.sreg.%s", name);
  return LLVMBuildZExt(c->b, cg_call(c, full, c->t_i32, 0, NULL, NULL), c->t_i64, "");
}

/* sext(*(i32 *)(ctx->gtmp + offset)) */
static LLVMValueRef gtmp_bound(cg *c, int offset) {
  LLVMValueRef off = LLVMConstInt(c->t_i64, (unsigned long long)offset, 0);
  LLVMValueRef p = LLVMBuildGEP2(c->b, c->t_i8, cg_ctx_field(c, CG_CTX_GTMP), &off, 1, "");
  return LLVMBuildSExt(c->b, LLVMBuildLoad2(c->b, c->t_i32, p, ""), c->t_i64, "");
}

static void ptx_finish_task(cg *c, LLVMValueRef task, ir_stmt *s, int index) {
  size_t len;
  char name[200];
  snprintf(name, sizeof name, "%s", LLVMGetValueName2(task, &len));
  char body[220];
  snprintf(body, sizeof body, "%s_body", name);
  LLVMSetValueName2(task, body, strlen(body));
  LLVMSetLinkage(task, LLVMInternalLinkage);

  LLVMTypeRef params[3] = {c->t_ptr, c->t_i64, c->t_i64};
  LLVMValueRef k = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->t_void, params, 3, 0));
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, k, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c->ctx, k, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, k, "done");
  LLVMPositionBuilderAtEnd(c->b, entry);
  LLVMValueRef ctx = LLVMGetParam(k, 0), begin = LLVMGetParam(k, 1), end = LLVMGetParam(k, 2);
  LLVMValueRef fn = c->fn;
  c->fn = k;   /* cg_call declares into the module; sreg needs no function state */
  LLVMValueRef tid = sreg(c, "tid.x"), ntid = sreg(c, "ntid.x");
  LLVMValueRef gid = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sreg(c, "ctaid.x"), ntid, ""), tid, "");
  LLVMValueRef stride = LLVMBuildMul(c->b, sreg(c, "nctaid.x"), ntid, "");
  c->fn = fn;
  LLVMTypeRef tty = LLVMGlobalGetValueType(task);
  LLVMValueRef tid32 = LLVMBuildTrunc(c->b, gid, c->t_i32, "");
  if (s->op == IR_task_serial || s->op == IR_task_clear_list) {
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, gid, LLVMConstInt(c->t_i64, 0, 0), ""), loop, done);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef a[4] = {ctx, tid32, LLVMConstInt(c->t_i64, 0, 0), LLVMConstInt(c->t_i64, 1, 0)};
    LLVMBuildCall2(c->b, tty, task, a, 4, "");
    LLVMBuildBr(c->b, done);
  } else if (s->op == IR_task_gc) {
    /* every thread is one worker of the stage passed as `begin` (jit.h) */
    LLVMBuildBr(c->b, loop);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef a[4] = {ctx, tid32, begin, stride};
    LLVMBuildCall2(c->b, tty, task, a, 4, "");
    LLVMBuildBr(c->b, done);
  } else {
    /* bounds in global temporaries (set by an earlier task) are read here;
    ** the list tasks get theirs (list sizes) from the launcher */
    LLVMValueRef saved = c->ctxv;
    c->ctxv = ctx;
    if (s->op == IR_task_range_for && s->range.begin_gtmp >= 0) begin = gtmp_bound(c, s->range.begin_gtmp);
    if (s->op == IR_task_range_for && s->range.end_gtmp >= 0) end = gtmp_bound(c, s->range.end_gtmp);
    c->ctxv = saved;
    LLVMValueRef first = LLVMBuildAdd(c->b, begin, gid, "");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, first, end, ""), loop, done);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef i = LLVMBuildPhi(c->b, c->t_i64, "i");
    LLVMValueRef next = LLVMBuildAdd(c->b, i, LLVMConstInt(c->t_i64, 1, 0), "");
    LLVMValueRef a[4] = {ctx, tid32, i, next};
    LLVMBuildCall2(c->b, tty, task, a, 4, "");
    LLVMValueRef inc = LLVMBuildAdd(c->b, i, stride, "");
    LLVMValueRef in[2] = {first, inc};
    LLVMBasicBlockRef from[2] = {entry, loop};
    LLVMAddIncoming(i, in, from, 2);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, inc, end, ""), loop, done);
  }
  LLVMPositionBuilderAtEnd(c->b, done);
  LLVMBuildRetVoid(c->b);

  /* !nvvm.annotations = !{!{ptr @k, !"kernel", i32 1}} */
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(k), LLVMMDStringInContext2(c->ctx, "kernel", 6),
                           LLVMValueAsMetadata(LLVMConstInt(c->t_i32, 1, 0))};
  LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations",
                              LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, md, 3)));
  (void)index;
}

static const cg_target ptx_target = {"nvptx64", &lt_runtime_bc_nvptx64, &lt_runtime_bc_nvptx64_size,
                                     ptx_math_fn, ptx_finish_task};

static bool runtime_ok;
static char runtime_err[512];

static void init_nvptx(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  /* every RT_FUNCTIONS entry must be in the bitcode, checked once */
  runtime_ok = cg_runtime_check(&ptx_target, runtime_err, sizeof runtime_err);
}

char *jit_emit_ptx(ir_kernel *k, const char *sm, char *err, size_t errlen) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_nvptx);
  if (!runtime_ok) {
    snprintf(err, errlen, "%s", runtime_err);
    return NULL;
  }
  if (!sm || strncmp(sm, "sm_", 3) != 0) {
    snprintf(err, errlen, "bad GPU architecture '%s': expected a name like sm_70", sm ? sm : "(null)");
    return NULL;
  }
  const char *triple = "nvptx64-nvidia-cuda";
  char *msg = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    snprintf(err, errlen, "this LLVM has no NVPTX target: %s", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, sm, "", LLVMCodeGenLevelAggressive,
                                                    LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) {
    snprintf(err, errlen, "cannot create an NVPTX target machine for %s", sm);
    return NULL;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  cg_module m;
  char *ptx = NULL;
  char prefix[96];
  cg_symbol_prefix(k, prefix, sizeof prefix);
  if (!cg_build(&ptx_target, ctx, k, prefix, &m, err, errlen)) goto out;
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  char *dls = LLVMCopyStringRepOfTargetData(dl);
  LLVMSetDataLayout(m.mod, dls);
  LLVMDisposeMessage(dls);
  LLVMDisposeTargetData(dl);
  LLVMSetTarget(m.mod, triple);
  LLVMMemoryBufferRef buf = NULL;
  if (cg_optimize(m.mod, tm, true, err, errlen)) {
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m.mod, LLVMAssemblyFile, &msg, &buf)) {
      snprintf(err, errlen, "PTX emission for kernel '%s' failed: %s", k->name, msg);
      LLVMDisposeMessage(msg);
    } else {
      size_t n = LLVMGetBufferSize(buf);
      ptx = malloc(n + 1);
      if (ptx) {
        memcpy(ptx, LLVMGetBufferStart(buf), n);
        ptx[n] = 0;
      } else {
        snprintf(err, errlen, "out of memory");
      }
      LLVMDisposeMemoryBuffer(buf);
    }
  }
  LLVMDisposeModule(m.mod);
  cg_module_free(&m);
out:
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ptx;
}
