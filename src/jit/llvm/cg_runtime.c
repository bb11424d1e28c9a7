/*
** cg_runtime.c -- the device runtime bitcode (the C files of src/runtime, compiled by
** clang at build time and embedded): checked once, linked into every module.
*/
#include <stdio.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

#include "llvm_codegen.h"

static const char *const rt_names[] = {
#define F(name, ret, params) #name,
    RT_FUNCTIONS(F)
#undef F
};

/* The runtime bitcode as a module of ctx; lazy: its function bodies are read
** when something needs them. */
static LLVMModuleRef parse(const cg_target *t, LLVMContextRef ctx, bool lazy, char *err, size_t errlen) {
  if (!*t->bc || *t->bc_size == 0) {
    snprintf(err, errlen, "the %s runtime bitcode is empty (build problem: see src/runtime)", t->name);
    return NULL;
  }
  /* LLVM reports unreadable bitcode through the context, whose default
  ** handler ends the process: what is not bitcode stops here */
  if (*t->bc_size < 4 || memcmp(*t->bc, "BC\xC0\xDE", 4) != 0) {
    snprintf(err, errlen, "the %s runtime bitcode is not LLVM bitcode (build problem: rebuild src/runtime)", t->name);
    return NULL;
  }
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRange((const char *)*t->bc, *t->bc_size, "lattice-runtime", 0);
  LLVMModuleRef m = NULL;
  /* a lazy module owns buf (also when reading fails); a parsed one does not */
  if (lazy ? LLVMGetBitcodeModuleInContext2(ctx, buf, &m) : LLVMParseBitcodeInContext2(ctx, buf, &m)) {
    snprintf(err, errlen, "cannot read the %s runtime bitcode (build problem: rebuild src/runtime)", t->name);
    m = NULL;
  }
  if (!lazy) LLVMDisposeMemoryBuffer(buf);
  return m;
}

/* The names are checked on a lazily read module: the function bodies stay
** unread (a function with a body that is not read yet is no declaration), so
** the check costs 0.5 ms instead of the 4 ms of reading the whole bitcode,
** at every lt.init. */
bool cg_runtime_check(const cg_target *t, char *err, size_t errlen) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = parse(t, ctx, true, err, errlen);
  bool ok = m != NULL;
  for (size_t i = 0; ok && i < sizeof rt_names / sizeof rt_names[0]; i++) {
    LLVMValueRef f = LLVMGetNamedFunction(m, rt_names[i]);
    if (!f || LLVMIsDeclaration(f)) {
      snprintf(err, errlen,
               "the %s runtime bitcode does not define %s, which RT_FUNCTIONS in "
               "src/runtime/context.h lists: define it in src/runtime/*.c",
               t->name, rt_names[i]);
      ok = false;
    }
  }
  if (m) LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  return ok;
}

bool cg_runtime_link(const cg_target *t, LLVMModuleRef mod, char *err, size_t errlen) {
  LLVMModuleRef rt = parse(t, LLVMGetModuleContext(mod), false, err, errlen);
  if (!rt) return false;
  LLVMSetTarget(mod, LLVMGetTarget(rt));
  LLVMSetDataLayout(mod, LLVMGetDataLayoutStr(rt));
  if (LLVMLinkModules2(mod, rt)) {   /* consumes rt */
    snprintf(err, errlen, "cannot link the %s runtime bitcode into the kernel module", t->name);
    return false;
  }
  /* Internal linkage so the runtime inlines and each module has its own copy;
  ** no per-function CPU so the target machine's (host or sm_XX) applies. */
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    LLVMSetLinkage(f, LLVMInternalLinkage);
    LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-cpu", 10);
    LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-features", 15);
    /* -fno-builtin and frame pointers are for compiling the runtime, not kernels */
    LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "no-builtins", 11);
    LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "frame-pointer", 13);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g)) LLVMSetLinkage(g, LLVMInternalLinkage);
  return true;
}
