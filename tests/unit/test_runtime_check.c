/*
** test_runtime_check.c -- cg_runtime_check, which lt.init runs once: every
** function RT_FUNCTIONS lists must be defined in a target's runtime bitcode.
** It reads the bitcode lazily (the bodies stay unread), so this checks that
** a defined function still counts as defined, and that a missing one, one
** only declared, and bytes that are not bitcode are refused with a message.
** Also cg_runtime_link's marking of the loads of fields fixed while tasks run:
** in a module of tasks every read of an SNode's meta and of the runtime's
** pool base or sink is !invariant.load, no read of a field that changes (the
** reserve) is, and in the request kernel's module (which writes them) none is.
*/
#include <stddef.h>
#include <string.h>

#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>

#include "check.h"
#include "jit/llvm/llvm_codegen.h"
#include "runtime/context.h"
#include "runtime/runtime.h"

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

/* The struct a load's TBAA tag names, and the field's offset; false if none. */
static int load_field(LLVMValueRef load, unsigned tbaa, const char **base, unsigned *len, unsigned long long *off) {
  LLVMValueRef tag = LLVMGetMetadata(load, tbaa);
  if (!tag || LLVMGetMDNodeNumOperands(tag) < 3 || LLVMGetMDNodeNumOperands(tag) > 4) return 0;
  LLVMValueRef ops[4] = {0}, bops[64] = {0};
  LLVMGetMDNodeOperands(tag, ops);
  if (!ops[0] || !ops[2] || !LLVMIsAConstantInt(ops[2])) return 0;
  unsigned nb = LLVMGetMDNodeNumOperands(ops[0]);
  if (nb < 1 || nb > 64) return 0;
  LLVMGetMDNodeOperands(ops[0], bops);
  *base = LLVMGetMDString(bops[0], len);
  *off = LLVMConstIntGetZExtValue(ops[2]);
  return *base != NULL;
}

typedef struct { int meta, meta_inv, pool, pool_inv, sink, sink_inv, reserve, reserve_inv, inv; } load_counts;

static load_counts count_loads(int tasks) {
  load_counts n = {0};
  char err[512];
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("tasks", ctx);
  CHECKF(cg_runtime_link(&cpu_target, m, tasks, err, sizeof err), "%s", err);
  unsigned tbaa = LLVMGetMDKindIDInContext(ctx, "tbaa", 4), inv = LLVMGetMDKindIDInContext(ctx, "invariant.load", 14);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
        if (LLVMGetInstructionOpcode(i) != LLVMLoad) continue;
        int is_inv = LLVMGetMetadata(i, inv) != NULL;
        n.inv += is_inv;
        const char *base;
        unsigned len;
        unsigned long long off;
        if (!load_field(i, tbaa, &base, &len, &off) || LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic) continue;
        if (len == 7 && memcmp(base, "rt_meta", 7) == 0) {
          n.meta++;
          n.meta_inv += is_inv;
        } else if (len == 10 && memcmp(base, "rt_runtime", 10) == 0) {
          int *c = off == offsetof(rt_runtime, pool)      ? &n.pool
                   : off == offsetof(rt_runtime, sink)    ? &n.sink
                   : off == offsetof(rt_runtime, reserve) ? &n.reserve
                                                          : NULL;
          if (c) c[0]++, c[1] += is_inv;
        }
      }
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  return n;
}

static void test_fixed_loads(void) {
  load_counts t = count_loads(1);
  CHECKF(t.meta >= 5 && t.meta_inv == t.meta, "tasks: %d of %d reads of metas invariant", t.meta_inv, t.meta);
  CHECKF(t.pool >= 1 && t.pool_inv == t.pool, "tasks: %d of %d reads of the pool base invariant", t.pool_inv, t.pool);
  CHECKF(t.sink >= 1 && t.sink_inv == t.sink, "tasks: %d of %d reads of the sink invariant", t.sink_inv, t.sink);
  CHECKF(t.reserve >= 1 && t.reserve_inv == 0, "tasks: %d of %d reads of the reserve invariant", t.reserve_inv,
         t.reserve);
  load_counts s = count_loads(0);
  CHECKF(s.meta >= 5 && s.inv == 0, "request kernel: %d invariant loads", s.inv);
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

  test_fixed_loads();
  return check_finish("test_runtime_check");
}
