/*
** cuda_emulate.c -- kernels for the mock driver, linked into the test
** suite's `lattice-mockgpu` (tests/tests.cmake), not into Lattice: when the
** driver library is the test stand-in (mock_driver.c beside this file, which
** exports lt_mock_cuda_native), every kernel is also built for the host with
** the same PTX kernel entries (cg_ptx_emulation: thread numbers from
** lt_emu_sregs) and handed to the mock, which runs each launch's grid one
** thread after another. So the whole CUDA backend (launch block, entries,
** task launches, lists, GC, copies, host requests) runs the test suite on a
** machine without a GPU; only PTX code generation itself is not exercised
** (ptxas checks that). It reaches the backend through cuda_set_test_hooks,
** called before main; with a real driver (no such entry point) nothing here
** runs.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "jit/cpu/cpu.h"
#include "jit/cuda/cuda.h"
#include "jit/llvm/llvm_codegen.h"

typedef int (*native_fn)(CUmodule mod, const char *name, void (*entry)(void *, int64_t, int64_t),
                         int32_t *sregs);

typedef struct {
  native_fn hand_over;          /* the mock's lt_mock_cuda_native */
  cpu_host host;
  int32_t sregs[4];             /* lt_emu_sregs: tid.x, ntid.x, ctaid.x, nctaid.x */
  unsigned serial;
} cuda_emu;

static void emulate_free(void *state) {
  cuda_emu *e = state;
  if (!e) return;
  cpu_host_close(&e->host);
  free(e);
}

/* cuda_test_hooks.attach: NULL for a real driver */
static void *emulate_new(void *driver_lib, char *err, size_t errlen) {
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
    emulate_free(e);
    return NULL;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(e->host.jit);
  LLVMOrcCSymbolMapPair sym = {LLVMOrcLLJITMangleAndIntern(e->host.jit, "lt_emu_sregs"),
                               {(LLVMOrcExecutorAddress)(uintptr_t)e->sregs, {LLVMJITSymbolGenericFlagsExported, 0}}};
  LLVMErrorRef r = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(&sym, 1));
  if (r) {
    cpu_llvm_error(r, "cannot define lt_emu_sregs", err, errlen);
    emulate_free(e);
    return NULL;
  }
  return e;
}

/* cuda_test_hooks.kernel_loaded: builds k's entries for the host and hands
** them to the mock under the PTX module's names. */
static bool emulate_kernel(void *state, ir_kernel *k, CUmodule mod, int ntasks, const cuda_entry_name *names,
                           char *err, size_t errlen) {
  cuda_emu *e = state;
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
  for (int i = 0; !r && i < m.ntasks && i < ntasks; i++) {
    LLVMOrcExecutorAddress addr = 0;
    r = LLVMOrcLLJITLookup(e->host.jit, &addr, m.names[i]);
    if (!r && e->hand_over(mod, names[i], (void (*)(void *, int64_t, int64_t))(uintptr_t)addr, e->sregs)) {
      snprintf(err, errlen, "the mock driver refused the host version of %s", names[i]);
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

static const cuda_test_hooks hooks = {emulate_new, emulate_kernel, emulate_free};

__attribute__((constructor)) static void install(void) { cuda_set_test_hooks(&hooks); }
