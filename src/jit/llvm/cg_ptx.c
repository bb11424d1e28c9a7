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
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm_codegen.h"

extern const unsigned char *lt_runtime_bc_nvptx64;
extern const size_t lt_runtime_bc_nvptx64_size;

/* Math as ops.def's ptx column says: LLVM intrinsics where NVPTX has an
** instruction, else libdevice's __nv_* functions, left as external calls
** (the CUDA backend links libdevice). */
static const char *ptx_math_fn(ir_op op, ir_type t, char *buf, size_t len) {
  return cg_math_name(ir_op_ptx_math(op), "__nv_", op, t, buf, len);
}

static LLVMValueRef sreg32(cg *c, const char *name) {
  if (c->target->emulated) {
    static const char *const names[4] = {"tid.x", "ntid.x", "ctaid.x", "nctaid.x"};
    unsigned i = 0;
    while (i < 3 && strcmp(names[i], name) != 0) i++;
    LLVMTypeRef arr = LLVMArrayType2(c->t_i32, 4);
    LLVMValueRef g = LLVMGetNamedGlobal(c->mod, "lt_emu_sregs");
    if (!g) g = LLVMAddGlobal(c->mod, arr, "lt_emu_sregs");
    LLVMValueRef idx[2] = {LLVMConstInt(c->t_i64, 0, 0), LLVMConstInt(c->t_i64, i, 0)};
    return LLVMBuildLoad2(c->b, c->t_i32, LLVMBuildGEP2(c->b, arr, g, idx, 2, ""), "");
  }
  char full[64];
  snprintf(full, sizeof full, "llvm.nvvm.read.ptx.sreg.%s", name);
  return cg_call(c, full, c->t_i32, 0, NULL, NULL);
}

static LLVMValueRef sreg(cg *c, const char *name) { return LLVMBuildZExt(c->b, sreg32(c, name), c->t_i64, ""); }

static LLVMValueRef i64c(cg *c, long long v) { return LLVMConstInt(c->t_i64, (unsigned long long)v, 1); }

/* sext(*(i32 *)(ctx->gtmp + offset)) */
static LLVMValueRef gtmp_bound(cg *c, int offset) {
  LLVMValueRef off = LLVMConstInt(c->t_i64, (unsigned long long)offset, 0);
  LLVMValueRef p = LLVMBuildGEP2(c->b, c->t_i8, cg_ctx_field(c, CG_CTX_GTMP), &off, 1, "");
  return LLVMBuildSExt(c->b, LLVMBuildLoad2(c->b, c->t_i32, p, ""), c->t_i64, "");
}

/* The SNode whose list a list task walks: a listgen reads its parent's list,
** struct_for and deactivate_all their own level's. -1: not a list task. */
static int list_of(cg *c, const ir_stmt *s) {
  if (s->op != IR_task_listgen && s->op != IR_task_struct_for && s->op != IR_task_deactivate_all) return -1;
  const ir_snode *sn = c->k->prog ? ir_program_snode(c->k->prog, s->aux) : NULL;
  if (!sn) return -1;
  if (s->op == IR_task_listgen) return sn->parent ? sn->parent->id : -1;
  return sn->id;
}

/* GC stage 2: the threads of a block are the lanes of one worker. */
static void ptx_gc_lanes(cg *c, LLVMValueRef *lane, LLVMValueRef *nlanes) {
  *lane = sreg32(c, "tid.x");
  *nlanes = sreg32(c, "ntid.x");
}

/* !nvvm.annotations = !{!{ptr @k, !"kernel", i32 1}}: k is a kernel entry. */
static void mark_kernel(cg *c, LLVMValueRef k) {
  LLVMMetadataRef md[3] = {LLVMValueAsMetadata(k), LLVMMDStringInContext2(c->ctx, "kernel", 6),
                           LLVMValueAsMetadata(LLVMConstInt(c->t_i32, 1, 0))};
  LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations",
                              LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, md, 3)));
}

/* Wraps task function `task` in the kernel entry NAME(ctx, begin, end)
** (src/jit/cuda/README.md lists what each kind of task does with them).
** Every entry returns at once when an earlier task raised an error. */
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
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(c->ctx, k, "start");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c->ctx, k, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, k, "done");
  LLVMPositionBuilderAtEnd(c->b, entry);
  LLVMValueRef ctx = LLVMGetParam(k, 0), begin = LLVMGetParam(k, 1), end = LLVMGetParam(k, 2);
  LLVMValueRef fn = c->fn, saved = c->ctxv;
  c->fn = k;   /* cg_call declares into the module; sreg needs no function state */
  c->ctxv = ctx;
  LLVMValueRef err = LLVMBuildLoad2(c->b, c->t_i32, cg_ctx_field(c, CG_CTX_ERROR), "");
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, err, LLVMConstInt(c->t_i32, 0, 0), ""), done, start);
  LLVMPositionBuilderAtEnd(c->b, start);
  LLVMValueRef tid = sreg(c, "tid.x"), ntid = sreg(c, "ntid.x");
  LLVMValueRef gid = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sreg(c, "ctaid.x"), ntid, ""), tid, "");
  LLVMValueRef stride = LLVMBuildMul(c->b, sreg(c, "nctaid.x"), ntid, "");
  LLVMTypeRef tty = LLVMGlobalGetValueType(task);
  LLVMValueRef tid32 = LLVMBuildTrunc(c->b, gid, c->t_i32, "");
  if (s->op == IR_task_serial || s->op == IR_task_clear_list) {
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, gid, i64c(c, 0), ""), loop, done);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef a[4] = {ctx, tid32, i64c(c, 0), i64c(c, 1)};
    LLVMBuildCall2(c->b, tty, task, a, 4, "");
    LLVMBuildBr(c->b, done);
  } else if (s->op == IR_task_gc) {
    /* stage `begin`: in stage 2 each block is a worker and its threads the
    ** lanes that zero a cell (ptx_gc_lanes); otherwise every thread is one */
    LLVMBuildBr(c->b, loop);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef blockwise = LLVMBuildICmp(c->b, LLVMIntEQ, begin, i64c(c, 2), "");
    LLVMValueRef worker = LLVMBuildSelect(c->b, blockwise, LLVMBuildTrunc(c->b, sreg(c, "ctaid.x"), c->t_i32, ""), tid32, "");
    LLVMValueRef nworkers = LLVMBuildSelect(c->b, blockwise, sreg(c, "nctaid.x"), stride, "");
    LLVMValueRef a[4] = {ctx, worker, begin, nworkers};
    LLVMBuildCall2(c->b, tty, task, a, 4, "");
    LLVMBuildBr(c->b, done);
  } else {
    /* bounds in global temporaries (set by an earlier task) are read here,
    ** and a list task launched with end < 0 reads its list's size */
    if (s->op == IR_task_range_for && s->range.begin_gtmp >= 0) begin = gtmp_bound(c, s->range.begin_gtmp);
    if (s->op == IR_task_range_for && s->range.end_gtmp >= 0) end = gtmp_bound(c, s->range.end_gtmp);
    int list = list_of(c, s);
    LLVMValueRef size_fn = list >= 0 ? LLVMGetNamedFunction(c->mod, "rt_listgen_size") : NULL;
    if (size_fn && !LLVMIsDeclaration(size_fn)) {
      LLVMValueRef a[2] = {cg_ctx_field(c, CG_CTX_RUNTIME), LLVMConstInt(c->t_i32, (unsigned long long)list, 0)};
      LLVMValueRef n = LLVMBuildSExt(c->b, LLVMBuildCall2(c->b, LLVMGlobalGetValueType(size_fn), size_fn, a, 2, ""),
                                     c->t_i64, "");
      end = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, end, i64c(c, 0), ""), n, end, "");
    }
    LLVMValueRef first = LLVMBuildAdd(c->b, begin, gid, "");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, first, end, ""), loop, done);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef i = LLVMBuildPhi(c->b, c->t_i64, "i");
    LLVMValueRef next = LLVMBuildAdd(c->b, i, i64c(c, 1), "");
    LLVMValueRef a[4] = {ctx, tid32, i, next};
    LLVMBuildCall2(c->b, tty, task, a, 4, "");
    LLVMValueRef inc = LLVMBuildAdd(c->b, i, stride, "");
    LLVMValueRef in[2] = {first, inc};
    LLVMBasicBlockRef from[2] = {start, loop};
    LLVMAddIncoming(i, in, from, 2);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, inc, end, ""), loop, done);
  }
  c->fn = fn;
  c->ctxv = saved;
  LLVMPositionBuilderAtEnd(c->b, done);
  LLVMBuildRetVoid(c->b);
  mark_kernel(c, k);
  (void)index;
}

static const cg_target ptx_target = {"nvptx64", &lt_runtime_bc_nvptx64, &lt_runtime_bc_nvptx64_size,
                                     ptx_math_fn, ptx_finish_task, ptx_gc_lanes, false, "__nv_fmod",
                                     "llvm.nvvm.div.approx.f", "llvm.nvvm.sqrt.approx.f", 1};

static cg_target emu_target;
static const cg_target *emu_host;
static void init_emulation(void) {
  emu_target = (cg_target){"host emulating nvptx64", emu_host->bc, emu_host->bc_size, emu_host->math_fn,
                           ptx_finish_task, ptx_gc_lanes, true, NULL};
}

const cg_target *cg_ptx_emulation(const cg_target *host) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  emu_host = host;
  pthread_once(&once, init_emulation);
  return &emu_target;
}

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

static const char *const triple = "nvptx64-nvidia-cuda";

/* A target machine for sm (one per compilation: they are not thread-safe). */
static LLVMTargetMachineRef ptx_tm(const char *sm, char *err, size_t errlen) {
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
  char *msg = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    snprintf(err, errlen, "this LLVM has no NVPTX target: %s", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, sm, "", LLVMCodeGenLevelAggressive,
                                                    LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) snprintf(err, errlen, "cannot create an NVPTX target machine for %s", sm);
  return tm;
}

static bool is_libdevice_call(LLVMValueRef f) {
  size_t n;
  const char *name = LLVMGetValueName2(f, &n);
  return n > 5 && strncmp(name, "__nv_", 5) == 0;
}

/* jit.h: o->libdevice, then the toolkit under o->cuda_home, o->cuda_path
** and the usual install places. */
char *jit_find_libdevice(const jit_options *o) {
  const char *file = o ? o->libdevice : NULL;
  if (file && *file) return access(file, R_OK) == 0 ? strdup(file) : NULL;
  const char *homes[] = {o ? o->cuda_home : NULL, o ? o->cuda_path : NULL, "/usr/local/cuda",
                         "/usr/lib/nvidia-cuda-toolkit", "/opt/cuda"};
  const char *subs[] = {"nvvm/libdevice/libdevice.10.bc", "libdevice/libdevice.10.bc"};
  char path[1024];
  for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
    if (!homes[i] || !*homes[i]) continue;
    for (size_t j = 0; j < 2; j++) {
      snprintf(path, sizeof path, "%s/%s", homes[i], subs[j]);
      if (access(path, R_OK) == 0) return strdup(path);
    }
  }
  return NULL;
}

/* Links CUDA's libdevice into mod when mod calls one of its __nv_ functions
** (math without an NVPTX instruction, ptx_math_fn). */
static bool link_libdevice(LLVMModuleRef mod, const char *libdevice, const char *kernel, char *err,
                           size_t errlen) {
  const char *need = NULL;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && !need; f = LLVMGetNextFunction(f))
    if (LLVMIsDeclaration(f) && is_libdevice_call(f)) need = LLVMGetValueName2(f, &(size_t){0});
  if (!need) return true;
  if (!libdevice) {
    /* "__nv_sinf" -> "sin" (the f32 variant ends in f; no base name does) */
    char fn[64];
    snprintf(fn, sizeof fn, "%s", need + 5);
    size_t n = strlen(fn);
    if (n > 1 && fn[n - 1] == 'f') fn[n - 1] = 0;
    snprintf(err, errlen,
             "kernel '%s' uses %s, which on CUDA needs libdevice from the CUDA toolkit "
             "(nvvm/libdevice/libdevice.10.bc): set CUDA_HOME to the toolkit or LT_LIBDEVICE to the file",
             kernel, fn);
    return false;
  }
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(libdevice, &buf, &msg)) {
    snprintf(err, errlen, "cannot read libdevice %s: %s", libdevice, msg);
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMModuleRef ld = NULL;
  bool bad = LLVMParseBitcodeInContext2(LLVMGetModuleContext(mod), buf, &ld);
  LLVMDisposeMemoryBuffer(buf);
  if (bad) {
    snprintf(err, errlen, "%s is not LLVM bitcode (is it CUDA's libdevice?)", libdevice);
    return false;
  }
  LLVMSetTarget(ld, LLVMGetTarget(mod));
  LLVMSetDataLayout(ld, LLVMGetDataLayoutStr(mod));
  if (LLVMLinkModules2(mod, ld)) {   /* consumes ld */
    snprintf(err, errlen, "cannot link libdevice %s into kernel '%s'", libdevice, kernel);
    return false;
  }
  /* internal, so the optimiser inlines what is used and drops the rest */
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && is_libdevice_call(f)) LLVMSetLinkage(f, LLVMInternalLinkage);
  /* libdevice asks __nvvm_reflect whether to flush denormals: no (as the CPU) */
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0)));
  return true;
}

/* Optimises mod for tm and prints it as PTX (malloc'd), or NULL and err. */
static char *emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *what, char *err, size_t errlen) {
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  char *dls = LLVMCopyStringRepOfTargetData(dl);
  LLVMSetDataLayout(mod, dls);
  LLVMDisposeMessage(dls);
  LLVMDisposeTargetData(dl);
  LLVMSetTarget(mod, triple);
  /* Pointers marked global (cg_global) make their accesses global before
  ** the optimiser folds the marking casts away: ld.global/st.global instead
  ** of generic ones, which resolve the address's space at run time, as the
  ** hand-written CUDA kernels of bench/triad.cu get from nvcc */
  LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, "function(infer-address-spaces)", tm, o);
  LLVMDisposePassBuilderOptions(o);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "LLVM address-space inference failed for %s: %s", what, m);
    LLVMDisposeErrorMessage(m);
    return NULL;
  }
  if (!cg_optimize(mod, tm, true, err, errlen)) return NULL;
  char *msg = NULL, *ptx = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf)) {
    snprintf(err, errlen, "PTX emission for %s failed: %s", what, msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  size_t n = LLVMGetBufferSize(buf);
  ptx = malloc(n + 1);
  if (ptx) {
    memcpy(ptx, LLVMGetBufferStart(buf), n);
    ptx[n] = 0;
  } else {
    snprintf(err, errlen, "out of memory");
  }
  LLVMDisposeMemoryBuffer(buf);
  return ptx;
}

char *cg_ptx_kernel(ir_kernel *k, const char *sm, bool link, const char *libdevice, const char *given,
                    cg_module *info, char *err, size_t errlen) {
  memset(info, 0, sizeof *info);
  LLVMTargetMachineRef tm = ptx_tm(sm, err, errlen);
  if (!tm) return NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  char *ptx = NULL;
  char prefix[96], what[160];
  if (given) snprintf(prefix, sizeof prefix, "%s", given);
  else cg_symbol_prefix(k, prefix, sizeof prefix);
  snprintf(what, sizeof what, "kernel '%s'", k->name);
  if (cg_build(&ptx_target, ctx, k, prefix, info, err, errlen)) {
    LLVMSetTarget(info->mod, triple);
    if (!link || link_libdevice(info->mod, libdevice, k->name, err, errlen))
      ptx = emit(info->mod, tm, what, err, errlen);
    LLVMDisposeModule(info->mod);
    info->mod = NULL;
    if (!ptx) cg_module_free(info);
  }
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ptx;
}

char *jit_emit_ptx(ir_kernel *k, const char *sm, char *err, size_t errlen) {
  cg_module m;
  char *ptx = cg_ptx_kernel(k, sm, false, NULL, NULL, &m, err, errlen);
  if (ptx) cg_module_free(&m);
  return ptx;
}

char *cg_ptx_service(const char *sm, char *err, size_t errlen) {
  LLVMTargetMachineRef tm = ptx_tm(sm, err, errlen);
  if (!tm) return NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("lt_service", ctx);
  char *ptx = NULL;
  if (cg_runtime_link(&ptx_target, mod, false, err, errlen)) {
    LLVMValueRef serve = LLVMGetNamedFunction(mod, "rt_serve");
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i32 = LLVMInt32TypeInContext(ctx);
    LLVMTypeRef params[2] = {ptr, ptr};
    LLVMValueRef k = LLVMAddFunction(mod, "lt_serve", LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 2, 0));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, k, "entry");
    LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(ctx, k, "run");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, k, "done");
    LLVMPositionBuilderAtEnd(b, entry);
    /* one thread does the request, whatever the launch */
    LLVMTypeRef sty = LLVMFunctionType(i32, NULL, 0, 0);
    LLVMValueRef tid = LLVMAddFunction(mod, "llvm.nvvm.read.ptx.sreg.tid.x", sty);
    LLVMValueRef ctaid = LLVMAddFunction(mod, "llvm.nvvm.read.ptx.sreg.ctaid.x", sty);
    LLVMValueRef first = LLVMBuildOr(b, LLVMBuildCall2(b, sty, tid, NULL, 0, ""),
                                     LLVMBuildCall2(b, sty, ctaid, NULL, 0, ""), "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, first, LLVMConstInt(i32, 0, 0), ""), run, done);
    LLVMPositionBuilderAtEnd(b, run);
    LLVMValueRef a[2] = {LLVMGetParam(k, 0), LLVMGetParam(k, 1)};
    LLVMBuildCall2(b, LLVMGlobalGetValueType(serve), serve, a, 2, "");
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    LLVMMetadataRef md[3] = {LLVMValueAsMetadata(k), LLVMMDStringInContext2(ctx, "kernel", 6),
                             LLVMValueAsMetadata(LLVMConstInt(i32, 1, 0))};
    LLVMAddNamedMetadataOperand(mod, "nvvm.annotations", LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, md, 3)));
    ptx = emit(mod, tm, "the runtime's host requests (lt_serve)", err, errlen);
  }
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ptx;
}
