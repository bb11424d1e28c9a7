/*
** test_runtime_check.c -- cg_runtime_check, which lt.init runs once: every
** function RT_FUNCTIONS lists must be defined in a target's runtime bitcode.
** It reads the bitcode lazily (the bodies stay unread), so this checks that
** a defined function still counts as defined, and that a missing one, one
** only declared, and bytes that are not bitcode are refused with a message.
*/
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>

#include "check.h"
#include "jit/llvm/llvm_codegen.h"
#include "runtime/context.h"

extern const cg_target cpu_target;

static const char *const names[] = {
#define F(name, ret, params) #name,
    RT_FUNCTIONS(F)
#undef F
};

/* bitcode of a module that defines every RT_FUNCTIONS name except the one
** at `skip` (only declared when `declare`, else absent) */
static LLVMMemoryBufferRef module_without(size_t skip, int declare) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("partial", ctx);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, 0);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (i == skip && !declare) continue;
    LLVMValueRef f = LLVMAddFunction(m, names[i], fty);
    if (i == skip) continue;
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
  }
  LLVMMemoryBufferRef buf = LLVMWriteBitcodeToMemoryBuffer(m);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  return buf;
}

static int check_bytes(const unsigned char *bytes, size_t n, char *err, size_t errlen) {
  cg_target t = cpu_target;
  t.name = "test";
  t.bc = &bytes;
  t.bc_size = &n;
  err[0] = 0;
  return cg_runtime_check(&t, err, errlen);
}

static int check_buffer(LLVMMemoryBufferRef buf, char *err, size_t errlen) {
  return check_bytes((const unsigned char *)LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), err, errlen);
}

int main(void) {
  char err[512];
  size_t n = sizeof names / sizeof names[0];
  CHECK(n > 2);

  /* the real runtime passes */
  CHECKF(cg_runtime_check(&cpu_target, err, sizeof err), "%s", err);

  /* every name defined: passes (the bodies are read lazily, yet defined) */
  LLVMMemoryBufferRef all = module_without(n, 0);
  CHECKF(check_buffer(all, err, sizeof err), "%s", err);
  LLVMDisposeMemoryBuffer(all);

  /* one missing, then one declared only: refused, naming it */
  for (int declare = 0; declare <= 1; declare++) {
    size_t skip = declare ? n - 1 : 1;
    LLVMMemoryBufferRef buf = module_without(skip, declare);
    CHECK(!check_buffer(buf, err, sizeof err));
    CHECK_CONTAINS(err, "the test runtime bitcode does not define");
    CHECK_CONTAINS(err, names[skip]);
    LLVMDisposeMemoryBuffer(buf);
  }

  /* not bitcode, and empty: refused with a message, the process lives */
  static const unsigned char junk[] = "this is not bitcode";
  CHECK(!check_bytes(junk, sizeof junk, err, sizeof err));
  CHECK_CONTAINS(err, "the test runtime bitcode is not LLVM bitcode");
  CHECK(!check_bytes(junk, 0, err, sizeof err));
  CHECK_CONTAINS(err, "the test runtime bitcode is empty");
  return check_finish("test_runtime_check");
}
