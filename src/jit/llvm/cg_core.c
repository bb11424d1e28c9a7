/*
** cg_core.c -- module and task functions, type mapping, the value map and
** statement dispatch of the shared LLVM code generator.
*/
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm_codegen.h"

void cg_fail(cg *c, const ir_stmt *s, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (s && s->loc.file)
    snprintf(c->err, c->errlen, "%s:%d: code generation (%s): %s", s->loc.file, s->loc.line,
             c->target->name, msg);
  else
    snprintf(c->err, c->errlen, "code generation (%s) of kernel '%s': %s", c->target->name,
             c->k->name, msg);
  longjmp(c->fail, 1);
}

LLVMTypeRef cg_type(cg *c, ir_type t) {
  switch (t) {
  case IR_void: return c->t_void;
  case IR_i1: return c->t_i1;
  case IR_i8: case IR_u8: return c->t_i8;
  case IR_i16: case IR_u16: return LLVMInt16TypeInContext(c->ctx);
  case IR_i32: case IR_u32: return c->t_i32;
  case IR_i64: case IR_u64: return c->t_i64;
  case IR_f32: return LLVMFloatTypeInContext(c->ctx);
  case IR_f64: return LLVMDoubleTypeInContext(c->ctx);
  default: cg_fail(c, NULL, "unknown type %d", (int)t);
  }
}

/* ---- statement -> value map: open addressing on the pointer ---------------- */

static size_t slot_of(const ir_stmt *s, size_t cap) {
  uintptr_t h = (uintptr_t)s;
  h ^= h >> 17;
  h *= (uintptr_t)0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 7) & (cap - 1);
}

void cg_set(cg *c, const ir_stmt *s, LLVMValueRef v) {
  if ((c->nslots + 1) * 2 > c->cap) {
    size_t ncap = c->cap ? c->cap * 2 : 256;
    cg_slot *n = calloc(ncap, sizeof *n);
    if (!n) cg_fail(c, s, "out of memory");
    for (size_t i = 0; i < c->cap; i++)
      if (c->slots[i].key) {
        size_t j = slot_of(c->slots[i].key, ncap);
        while (n[j].key) j = (j + 1) & (ncap - 1);
        n[j] = c->slots[i];
      }
    free(c->slots);
    c->slots = n;
    c->cap = ncap;
  }
  size_t j = slot_of(s, c->cap);
  while (c->slots[j].key && c->slots[j].key != s) j = (j + 1) & (c->cap - 1);
  if (!c->slots[j].key) c->nslots++;
  c->slots[j].key = s;
  c->slots[j].val = v;
}

LLVMValueRef cg_get(cg *c, const ir_stmt *s) {
  if (c->cap) {
    size_t j = slot_of(s, c->cap);
    while (c->slots[j].key) {
      if (c->slots[j].key == s) return c->slots[j].val;
      j = (j + 1) & (c->cap - 1);
    }
  }
  cg_fail(c, s, "operand $%d (%s) has no value here; was the kernel verified?", s->id,
          ir_op_name(s->op));
}

/* ---- small helpers ------------------------------------------------------------ */

/* A variable in the entry block, where mem2reg can turn it into registers. */
LLVMValueRef cg_entry_alloca(cg *c, LLVMTypeRef t, const char *name) {
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(eb, c->entry);
  LLVMValueRef v = LLVMBuildAlloca(eb, t, name);
  LLVMDisposeBuilder(eb);
  return v;
}

LLVMBasicBlockRef cg_new_bb(cg *c, const char *name) {
  return LLVMAppendBasicBlockInContext(c->ctx, c->fn, name);
}

void cg_open(cg *c) {
  if (LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(c->b)))
    LLVMPositionBuilderAtEnd(c->b, cg_new_bb(c, "dead"));
}

void cg_br(cg *c, LLVMBasicBlockRef bb) {
  if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(c->b))) LLVMBuildBr(c->b, bb);
}

LLVMValueRef cg_call(cg *c, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *ptys,
                     LLVMValueRef *args) {
  LLVMTypeRef fty = LLVMFunctionType(ret, ptys, (unsigned)n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(c->mod, name);
  if (!f) f = LLVMAddFunction(c->mod, name, fty);
  else fty = LLVMGlobalGetValueType(f);
  return LLVMBuildCall2(c->b, fty, f, args, (unsigned)n, "");
}

LLVMValueRef cg_ctx_field(cg *c, int index) {
  LLVMValueRef p = LLVMBuildStructGEP2(c->b, c->t_ctx, c->ctxv, (unsigned)index, "");
  return LLVMBuildLoad2(c->b, c->t_ptr, p, ""); /* every field is a pointer */
}

LLVMValueRef cg_int_convert(cg *c, LLVMValueRef v, bool is_signed, LLVMTypeRef to) {
  unsigned from_w = LLVMGetIntTypeWidth(LLVMTypeOf(v)), to_w = LLVMGetIntTypeWidth(to);
  if (from_w == to_w) return v;
  if (from_w > to_w) return LLVMBuildTrunc(c->b, v, to, "");
  return is_signed ? LLVMBuildSExt(c->b, v, to, "") : LLVMBuildZExt(c->b, v, to, "");
}

/* ---- dispatch ------------------------------------------------------------------ */

/* The emitter of each file, by ops.def's emit column. */
static bool (*const emitters[IR_NUM_EMITS])(cg *, ir_stmt *) = {
    [IR_EMIT_arith] = cg_arith,   [IR_EMIT_memory] = cg_memory,     [IR_EMIT_control] = cg_control,
    [IR_EMIT_sparse] = cg_sparse, [IR_EMIT_builtins] = cg_builtins,
};

void cg_stmt(cg *c, ir_stmt *s) {
  cg_open(c);
  if ((unsigned)s->op < IR_NUM_OPS && emitters[ir_op_emit(s->op)](c, s)) return;
  cg_fail(c, s, "statement '%s' cannot be compiled here (is the kernel offloaded?)",
          ir_op_name(s->op));
}

void cg_block(cg *c, ir_block *blk) {
  if (!blk) return;
  ir_stmt *s = blk->first, *end = NULL;
  if (blk == c->part_body) {   /* a part of a split task (cg_split.c) */
    for (int i = 0; i < c->part_ncarry; i++) cg_stmt(c, c->part_carry[i]);
    s = c->part_first;
    end = c->part_end;
  }
  if (cg_outline(c, blk, s, end)) return;   /* too large: as calls (cg_split.c) */
  for (; s != end; s = s->next) cg_stmt(c, s);
}

static LLVMTypeRef task_type(cg *c) {
  LLVMTypeRef params[4] = {c->t_ptr, c->t_i32, c->t_i64, c->t_i64};
  return LLVMFunctionType(c->t_void, params, 4, 0);
}

/* One function per task: allocas in the entry block, body from "body". */
static LLVMValueRef emit_task(cg *c, ir_stmt *task, const char *name) {
  c->fn = LLVMAddFunction(c->mod, name, task_type(c));
  c->ctxv = LLVMGetParam(c->fn, 0);
  LLVMSetValueName2(c->ctxv, "ctx", 3);
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(c->fn, 1, LLVMCreateEnumAttribute(c->ctx, noalias, 0));
  c->entry = cg_new_bb(c, "entry");
  LLVMBasicBlockRef body = cg_new_bb(c, "body");
  LLVMPositionBuilderAtEnd(c->b, body);
  c->nloops = 0;
  cg_append_begin(c, task);
  if (jit_task_is_sparse(task->op))
    cg_sparse_task_body(c, task, LLVMGetParam(c->fn, 2), LLVMGetParam(c->fn, 3));
  else
    cg_task_body(c, task, LLVMGetParam(c->fn, 2), LLVMGetParam(c->fn, 3));
  if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(c->b))) {
    cg_task_exit(c);
    LLVMBuildRetVoid(c->b);
  }
  c->ncount = 0;
  c->count_fn = NULL;
  c->buf_snode = -1;
  c->buf_site = NULL;
  LLVMPositionBuilderAtEnd(c->b, c->entry);
  LLVMBuildBr(c->b, body);
  return c->fn;
}

/* The function of a task: one, or for a very large task (cg_split.c) one
** per part, called in order by the task's function, which returns after a
** part that raised an error (rt_context.error set). */
static LLVMValueRef task_function(cg *c, ir_stmt *task, const char *name) {
  c->outline_ok = task->op == IR_task_range_for || task->op == IR_task_serial;
  cg_split_free(&c->split);   /* the previous task's */
  free(c->split_fns);
  c->split_fns = NULL;
  if (!cg_split_plan(c, task, &c->split)) cg_fail(c, task, "out of memory");
  cg_split sp = c->split;
  if (sp.nparts <= 1) return emit_task(c, task, name);
  LLVMValueRef *parts = c->split_fns = calloc((size_t)sp.nparts, sizeof *parts);
  if (!parts) cg_fail(c, task, "out of memory");
  unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
  for (int m = 0; m < sp.nparts; m++) {
    char pname[200];
    snprintf(pname, sizeof pname, "%s_part%d", name, m);
    c->part_body = task->blocks[0];
    c->part_first = sp.first[m];
    c->part_end = m + 1 < sp.nparts ? sp.first[m + 1] : NULL;
    c->part_carry = sp.carry[m];
    c->part_ncarry = sp.ncarry[m];
    parts[m] = emit_task(c, task, pname);
    LLVMSetLinkage(parts[m], LLVMInternalLinkage);
    LLVMAddAttributeAtIndex(parts[m], LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, noinline, 0));
  }
  c->part_body = NULL;
  c->part_carry = NULL;
  c->part_ncarry = 0;
  c->fn = LLVMAddFunction(c->mod, name, task_type(c));
  c->ctxv = LLVMGetParam(c->fn, 0);
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(c->fn, 1, LLVMCreateEnumAttribute(c->ctx, noalias, 0));
  LLVMPositionBuilderAtEnd(c->b, cg_new_bb(c, "entry"));
  LLVMValueRef args[4];
  for (unsigned i = 0; i < 4; i++) args[i] = LLVMGetParam(c->fn, i);
  LLVMBasicBlockRef done = cg_new_bb(c, "done");
  for (int m = 0; m < sp.nparts; m++) {
    LLVMBuildCall2(c->b, task_type(c), parts[m], args, 4, "");
    if (m + 1 == sp.nparts) break;
    LLVMValueRef err = LLVMBuildLoad2(c->b, c->t_i32, cg_ctx_field(c, CG_CTX_ERROR), "");
    LLVMSetOrdering(err, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(err, 4);
    LLVMBasicBlockRef next = cg_new_bb(c, "next");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, err, LLVMConstInt(c->t_i32, 0, 0), ""), done, next);
    LLVMPositionBuilderAtEnd(c->b, next);
  }
  LLVMBuildBr(c->b, done);
  LLVMPositionBuilderAtEnd(c->b, done);
  LLVMBuildRetVoid(c->b);
  return c->fn;
}

static void init_types(cg *c) {
  c->t_void = LLVMVoidTypeInContext(c->ctx);
  c->t_i1 = LLVMInt1TypeInContext(c->ctx);
  c->t_i8 = LLVMInt8TypeInContext(c->ctx);
  c->t_i32 = LLVMInt32TypeInContext(c->ctx);
  c->t_i64 = LLVMInt64TypeInContext(c->ctx);
  c->t_ptr = LLVMPointerTypeInContext(c->ctx, 0);
  /* rt_context: pointers only */
  LLVMTypeRef f[CG_CTX_NFIELDS];
  for (int i = 0; i < CG_CTX_NFIELDS; i++) f[i] = c->t_ptr;
  c->t_ctx = LLVMStructTypeInContext(c->ctx, f, CG_CTX_NFIELDS, 0);
}

/* Whether a task's code calls into the device runtime: bounds checks and
** anything touching sparse SNodes. Modules of tasks that do not (dense
** fields without debug checks, the common case) skip parsing and linking the
** runtime bitcode, which would otherwise dominate the compile time of a
** small kernel. */
typedef struct {
  const ir_program *prog;
  cg_runtime_use use;
} runtime_scan;

static void scan_runtime_use(ir_stmt *s, void *ud) {
  runtime_scan *r = ud;
  cg_runtime_use u = CG_RUNTIME_NONE;
  if (s->op == IR_global_ptr) {
    const ir_snode *sn = ir_program_snode(r->prog, s->aux);
    if (sn && ir_snode_under_sparse(sn)) u = CG_RUNTIME_SPARSE;
  } else if (ir_op_flags(s->op) & IR_RUNTIME) {   /* flag R of ops.def */
    u = ir_op_emit(s->op) == IR_EMIT_sparse ? CG_RUNTIME_SPARSE : CG_RUNTIME_SOME;   /* emit column */
  }
  if (u > r->use) r->use = u;
}

cg_runtime_use cg_task_runtime(const ir_kernel *k, ir_stmt *task) {
  runtime_scan r = {k->prog, CG_RUNTIME_NONE};
  scan_runtime_use(task, &r);
  for (int b = 0; b < 2; b++) ir_walk(task->blocks[b], scan_runtime_use, &r);
  return r.use;
}

static bool tasks_use_runtime(ir_kernel *k, const unsigned char *only) {
  int i = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next, i++)
    if ((!only || only[i]) && cg_task_runtime(k, s) != CG_RUNTIME_NONE) return true;
  return false;
}

bool cg_build(const cg_target *t, LLVMContextRef ctx, ir_kernel *k, const char *prefix,
              cg_module *out, char *err, size_t errlen) {
  return cg_build_tasks(t, ctx, k, prefix, NULL, out, err, errlen);
}

bool cg_build_tasks(const cg_target *t, LLVMContextRef ctx, ir_kernel *k, const char *prefix,
                    const unsigned char *only, cg_module *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  cg *c = calloc(1, sizeof *c);
  if (!c) { snprintf(err, errlen, "out of memory"); return false; }
  c->target = t;
  c->k = k;
  c->ctx = ctx;
  c->err = err;
  c->errlen = errlen;
  c->mod = LLVMModuleCreateWithNameInContext(k->name ? k->name : "kernel", ctx);
  c->b = LLVMCreateBuilderInContext(ctx);
  init_types(c);
  volatile bool ok = false;   /* read after longjmp */
  if (setjmp(c->fail)) goto done;
  if (!k->offloaded) cg_fail(c, NULL, "the kernel is not offloaded (run the offload pass first)");
  if (tasks_use_runtime(k, only) && !cg_runtime_link(t, c->mod, true, err, errlen)) goto done;
  c->ids_ok = cg_split_ids_ok(k);
  int ntasks = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next) ntasks++;
  out->names = calloc(ntasks ? ntasks : 1, sizeof *out->names);
  if (!out->names) cg_fail(c, NULL, "out of memory");
  for (ir_stmt *s = k->body->first; s; s = s->next) {
    if (!(ir_op_flags(s->op) & IR_TASK))
      cg_fail(c, s, "top-level statement '%s' is not a task (is the kernel offloaded?)",
              ir_op_name(s->op));
    char *name = out->names[out->ntasks];
    snprintf(name, sizeof out->names[0], "%s_task%d", prefix, out->ntasks);
    if (!only || only[out->ntasks]) {
      LLVMValueRef fn = task_function(c, s, name);
      if (t->finish_task) t->finish_task(c, fn, s, out->ntasks);
    }
    out->ntasks++;
  }
  char *msg = NULL;
  if (LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &msg)) {
    snprintf(err, errlen, "internal error: invalid LLVM IR for kernel '%s': %.700s", k->name, msg);
    LLVMDisposeMessage(msg);
    goto done;
  }
  LLVMDisposeMessage(msg);
  out->needs_runtime = c->uses_runtime;
  ok = true;
done:
  LLVMDisposeBuilder(c->b);
  free(c->slots);
  cg_split_free(&c->split);
  free(c->split_fns);
  free(c->writes);
  free(c->tbaa);
  if (ok) {
    out->mod = c->mod;
  } else {
    LLVMDisposeModule(c->mod);
    cg_module_free(out);
  }
  free(c);
  return ok;
}

int cg_symbol_prefix(const ir_kernel *k, char *out, size_t len) {
  int n = snprintf(out, len, "%.60s", k->name && *k->name ? k->name : "kernel");
  if (n < 0) n = 0;
  if ((size_t)n >= len) n = len ? (int)len - 1 : 0;
  for (int i = 0; i < n; i++) {
    char ch = out[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))) out[i] = '_';
  }
  return n;
}

void cg_module_free(cg_module *m) {
  free(m->names);
  m->names = NULL;
  m->ntasks = 0;
}

bool cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, bool thorough, char *err, size_t errlen) {
  LLVMPassBuilderOptionsRef opt = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opt, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opt, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(opt, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(opt, 1);
  LLVMErrorRef e = LLVMRunPasses(mod, thorough ? "globaldce,default<O3>" : "globaldce,default<O2>", tm, opt);
  LLVMDisposePassBuilderOptions(opt);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "LLVM optimisation failed: %s", m);
    LLVMDisposeErrorMessage(m);
    return false;
  }
  return true;
}
