/*
** cuda_emulate.c -- kernels for the mock driver: when the driver library is
** Lattice's test stand-in (tests/cuda/mock_driver.c, which exports
** lt_mock_cuda_native), every kernel is also built for the host with the same
** PTX kernel entries (cg_ptx_emulation: thread numbers from lt_emu_sregs) and
** handed to the mock, which runs each launch's grid one thread after another.
** So the whole backend (launch block, entries, task launches, lists, GC,
** copies, host requests) runs the test suite on a machine without a GPU;
** only PTX code generation itself is not exercised (ptxas checks that).
** The real driver has no such entry point, and then nothing here runs.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "../cpu/cpu.h"
#include "../llvm/llvm_codegen.h"
#include "cuda.h"

typedef int (*native_fn)(CUmodule mod, const char *name, void (*entry)(void *, int64_t, int64_t),
                         int32_t *sregs);

struct cuda_emu {
  native_fn hand_over;          /* the mock's lt_mock_cuda_native */
  cpu_host host;
  int32_t sregs[4];             /* lt_emu_sregs: tid.x, ntid.x, ctaid.x, nctaid.x */
  unsigned serial;
};

void cuda_emulate_free(cuda_emu *e) {
  if (!e) return;
  cpu_host_close(&e->host);
  free(e);
}

cuda_emu *cuda_emulate_new(void *driver_lib, char *err, size_t errlen) {
  union {
    void *p;
    native_fn f;
  } u = {dlsym(driver_lib, "lt_mock_cuda_native")};
  if (!u.p) return NULL;   /* a real driver */
  cuda_emu *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->hand_over = u.f;
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  if (!cpu_host_open(&e->host, err, errlen)) {
    cuda_emulate_free(e);
    return NULL;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(e->host.jit);
  LLVMOrcCSymbolMapPair sym = {LLVMOrcLLJITMangleAndIntern(e->host.jit, "lt_emu_sregs"),
                               {(LLVMOrcExecutorAddress)(uintptr_t)e->sregs, {LLVMJITSymbolGenericFlagsExported, 0}}};
  LLVMErrorRef r = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(&sym, 1));
  if (r) {
    cpu_llvm_error(r, "cannot define lt_emu_sregs", err, errlen);
    cuda_emulate_free(e);
    return NULL;
  }
  return e;
}

/* Builds k's entries for the host and hands them to the mock under the PTX
** module's names. */
bool cuda_emulate_kernel(cuda_emu *e, ir_kernel *k, CUmodule mod, const cg_module *ptx, char *err,
                         size_t errlen) {
  char prefix[96];
  int n = cg_symbol_prefix(k, prefix, sizeof prefix);
  snprintf(prefix + n, sizeof prefix - (size_t)n, "_emu%u", e->serial++);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  cg_module m;
  bool ok = cg_build(cg_ptx_emulation(&cpu_target), ctx, k, prefix, &m, err, errlen);
  if (ok) {
    LLVMTargetRef target;
    char *msg = NULL;
    LLVMGetTargetFromTriple(e->host.triple, &target, &msg);
    LLVMDisposeMessage(msg);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, e->host.triple, e->host.cpu, e->host.features,
                                                      LLVMCodeGenLevelDefault, LLVMRelocPIC, LLVMCodeModelSmall);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(m.mod, dl);
    LLVMDisposeTargetData(dl);
    LLVMSetTarget(m.mod, e->host.triple);
    ok = cg_optimize(m.mod, tm, false, err, errlen);
    LLVMDisposeTargetMachine(tm);
    if (!ok) {
      LLVMDisposeModule(m.mod);
      cg_module_free(&m);
    }
  }
  if (!ok) {
    LLVMOrcDisposeThreadSafeContext(tsc);
    return false;
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m.mod, tsc);
  LLVMOrcDisposeThreadSafeContext(tsc);
  LLVMErrorRef r = LLVMOrcLLJITAddLLVMIRModule(e->host.jit, LLVMOrcLLJITGetMainJITDylib(e->host.jit), tsm);
  for (int i = 0; !r && i < m.ntasks && i < ptx->ntasks; i++) {
    LLVMOrcExecutorAddress addr = 0;
    r = LLVMOrcLLJITLookup(e->host.jit, &addr, m.names[i]);
    if (!r && e->hand_over(mod, ptx->names[i], (void (*)(void *, int64_t, int64_t))(uintptr_t)addr, e->sregs)) {
      snprintf(err, errlen, "the mock driver refused the host version of %s", ptx->names[i]);
      cg_module_free(&m);
      return false;
    }
  }
  cg_module_free(&m);
  if (r) {
    cpu_llvm_error(r, "building a kernel for the mock GPU", err, errlen);
    return false;
  }
  return true;
}
