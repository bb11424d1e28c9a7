/*
** cg_runtime.c -- the device runtime bitcode (the C files of src/runtime, compiled by
** clang at build time and embedded): checked once, linked into every module.
*/
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

#include "../../runtime/runtime.h"
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

/* ---- fields fixed while kernels run ----------------------------------------------
** An SNode's description (rt_meta) and the runtime's layout fields (the pool's
** base, the slot shift, the arrays' addresses) are written when the runtime is
** set up and never while a task runs. Their loads in the runtime's functions
** carry clang's struct-path TBAA tags, which name the struct and the field's
** offset; those loads get !invariant.load here. Without it, the atomics of an
** append or an activation (acquire or stronger) make LLVM reload every one of
** them after each atomic: the generated append loop read the meta's runtime
** pointer, the pool's base, the slot shift, the capacity and the cell size
** again on every element. Fields that do change (the bump pointer, the
** counters, the error) are not in the list. Only modules of tasks get this:
** the request kernel writes these fields (rt_runtime_init, add_snode). */
static const size_t fixed_rt_fields[] = {
    offsetof(rt_runtime, pool),      offsetof(rt_runtime, pool_size),  offsetof(rt_runtime, nsnodes),
    offsetof(rt_runtime, slot_shift), offsetof(rt_runtime, metas),     offsetof(rt_runtime, allocators),
    offsetof(rt_runtime, lists),     offsetof(rt_runtime, active),     offsetof(rt_runtime, changed),
    offsetof(rt_runtime, ambient),   offsetof(rt_runtime, sink),       offsetof(rt_runtime, ambient_bytes),
    offsetof(rt_runtime, active_stride),
};

static bool md_name_is(LLVMValueRef md, const char *name) {
  unsigned len = 0;
  const char *s = md ? LLVMGetMDString(md, &len) : NULL;
  return s && len == strlen(name) && memcmp(s, name, len) == 0;
}

/* Whether a TBAA access tag (base type, access type, offset[, constant]:
** the form clang emits; any other is left alone) names a fixed field;
** *meta_rt: whether it is rt_meta's runtime pointer. */
static bool tag_is_fixed(LLVMValueRef tag, bool *meta_rt) {
  if (!LLVMIsAMDNode(tag)) return false;
  unsigned nt = LLVMGetMDNodeNumOperands(tag);
  if (nt < 3 || nt > 4) return false;
  LLVMValueRef ops[4] = {0};
  LLVMGetMDNodeOperands(tag, ops);
  if (!ops[2] || !LLVMIsAConstantInt(ops[2]) || !ops[0] || !LLVMIsAMDNode(ops[0])) return false;
  unsigned nb = LLVMGetMDNodeNumOperands(ops[0]);
  LLVMValueRef base[64];
  if (nb < 1 || nb > 64) return false;
  LLVMGetMDNodeOperands(ops[0], base);
  unsigned long long off = LLVMConstIntGetZExtValue(ops[2]);
  if (md_name_is(base[0], "rt_meta")) {
    *meta_rt = off == offsetof(rt_meta, rt);
    return true;
  }
  if (!md_name_is(base[0], "rt_runtime")) return false;
  for (size_t i = 0; i < sizeof fixed_rt_fields / sizeof fixed_rt_fields[0]; i++)
    if (off == fixed_rt_fields[i]) return true;
  return false;
}

static void mark_fixed_loads(LLVMModuleRef mod) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  unsigned tbaa = LLVMGetMDKindIDInContext(ctx, "tbaa", 4);
  unsigned inv = LLVMGetMDKindIDInContext(ctx, "invariant.load", 14);
  LLVMValueRef empty = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, NULL, 0));
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
        if (LLVMGetInstructionOpcode(i) != LLVMLoad || LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic ||
            LLVMGetVolatile(i))
          continue;
        LLVMValueRef tag = LLVMGetMetadata(i, tbaa);
        bool meta_rt = false;
        if (!tag || !tag_is_fixed(tag, &meta_rt)) continue;
        LLVMSetMetadata(i, inv, empty);
        if (meta_rt) cg_dereferenceable(ctx, i, sizeof(rt_runtime));   /* the runtime: readable */
      }
}

bool cg_runtime_link(const cg_target *t, LLVMModuleRef mod, bool tasks, char *err, size_t errlen) {
  LLVMModuleRef rt = parse(t, LLVMGetModuleContext(mod), false, err, errlen);
  if (!rt) return false;
  LLVMSetTarget(mod, LLVMGetTarget(rt));
  LLVMSetDataLayout(mod, LLVMGetDataLayoutStr(rt));
  if (tasks) mark_fixed_loads(rt);
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
