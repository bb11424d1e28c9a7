/*
** cg_control.c -- structured control flow: if, while, range_for, break,
** continue, return, loop_index, and the loop of a range_for task.
**
** The IR's blocks nest, so each construct maps to a fixed shape of basic
** blocks; a jump ends its LLVM block and cg_open starts an unreachable one
** for any statement after it. A loop's current index is kept in the value map
** under the loop statement itself (loop_index reads it).
*/
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "llvm_codegen.h"

#define B (c->b)

/* ---- loop hints: what LLVM should not spend compile time on ------------------------
** A loop whose body reads or writes fields at indices computed from loaded
** values (particles scattering to a grid, g2p gathers) would vectorize into
** gathers and scatters: LLVM spends up to three times the compile time of
** the scalar loop on them, for little or no speed (mpm88's G2P: 45 ms to
** compile instead of 16, frames 3% faster). Such loops get
** llvm.loop.vectorize.enable = false; straight-line code still meets the SLP
** vectorizer, and loops with affine indices vectorize as before.
**
** A loop with a constant trip count of 32 or more (an ndrange row) is
** vectorized, and LLVM then unrolls the vector loop too, which more than
** doubled the compile time of mpm88's grid update (45 ms against 20) for no
** measurable gain: such loops get llvm.loop.unroll.disable (the vectorizer's
** own interleaving stays). So does a loop holding one at its top level (the
** task loop over an ndrange's rows): LLVM unrolled it four times, each copy
** with its own vectorized row loop, for nothing measurable either (a 3000^2
** stencil or clear), and mpm88's grid clearing compiled in 15 ms instead of
** 8.5. */
typedef struct {
  unsigned char *data;    /* [next_id]: the statement's value depends on memory */
  int n;
  bool gather;
} gather_scan;

static void scan_gather(ir_stmt *s, void *ud) {
  gather_scan *g = ud;
  if (s->id < 0 || s->id >= g->n) return;
  bool dep = s->op == IR_local_load || (ir_op_flags(s->op) & IR_LOAD);
  for (int i = 0; i < s->nops && !dep; i++) {
    const ir_stmt *o = s->ops[i];
    if (o && o->id >= 0 && o->id < g->n && g->data[o->id]) {
      if (s->op == IR_global_ptr || s->op == IR_ext_ptr) g->gather = true;
      else if (!(ir_op_flags(s->op) & IR_EFFECT)) dep = true;
    }
  }
  g->data[s->id] = dep;
}

static bool has_gathers(cg *c, ir_block *body) {
  gather_scan g = {.n = c->k->next_id};
  if (!body || g.n <= 0 || !(g.data = calloc((size_t)g.n, 1))) return false;
  ir_walk(body, scan_gather, &g);
  free(g.data);
  return g.gather;
}

/* Attaches a loop id with the given hints to latch: ("llvm.loop.x", i32
** value), an i1 false for a negative value, no value for *.disable names. */
static void loop_hints(cg *c, LLVMValueRef latch, const char *const *names, const int *values, int n) {
  LLVMMetadataRef ops[4];
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(c->ctx, NULL, 0);
  ops[0] = tmp;
  for (int i = 0; i < n && i < 3; i++) {
    LLVMTypeRef t = values[i] < 0 ? c->t_i1 : c->t_i32;
    LLVMMetadataRef h[2] = {LLVMMDStringInContext2(c->ctx, names[i], strlen(names[i])),
                            LLVMValueAsMetadata(LLVMConstInt(t, (unsigned long long)(values[i] < 0 ? 0 : values[i]), 0))};
    size_t len = strlen(names[i]);
    bool flag = len > 8 && strcmp(names[i] + len - 8, ".disable") == 0;   /* takes no value */
    ops[i + 1] = LLVMMDNodeInContext2(c->ctx, h, flag ? 1 : 2);
  }
  LLVMMetadataRef id = LLVMMDNodeInContext2(c->ctx, ops, (size_t)(n + 1));
  LLVMMetadataReplaceAllUsesWith(tmp, id);   /* a loop id refers to itself */
  LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(c->ctx, "llvm.loop", 9), LLVMMetadataAsValue(c->ctx, id));
}

static void push_loop(cg *c, ir_stmt *s, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont) {
  if (c->nloops == (int)(sizeof c->loops / sizeof c->loops[0]))
    cg_fail(c, s, "loops nested more than %d deep", c->nloops);
  c->loops[c->nloops].brk = brk;
  c->loops[c->nloops].cont = cont;
  c->nloops++;
}

static void emit_if(cg *c, ir_stmt *s) {
  LLVMBasicBlockRef then = cg_new_bb(c, "then"), merge;
  LLVMBasicBlockRef els = s->blocks[1] ? cg_new_bb(c, "else") : NULL;
  merge = cg_new_bb(c, "endif");
  LLVMBuildCondBr(B, cg_get(c, s->ops[0]), then, els ? els : merge);
  LLVMPositionBuilderAtEnd(B, then);
  cg_block(c, s->blocks[0]);
  cg_br(c, merge);
  if (els) {
    LLVMPositionBuilderAtEnd(B, els);
    cg_block(c, s->blocks[1]);
    cg_br(c, merge);
  }
  LLVMPositionBuilderAtEnd(B, merge);
}

static void emit_while(cg *c, ir_stmt *s) {
  LLVMBasicBlockRef body = cg_new_bb(c, "while"), exit = cg_new_bb(c, "endwhile");
  LLVMBuildBr(B, body);
  LLVMPositionBuilderAtEnd(B, body);
  push_loop(c, s, exit, body);
  cg_block(c, s->blocks[0]);
  c->nloops--;
  cg_br(c, body);
  LLVMPositionBuilderAtEnd(B, exit);
}

/* Whether blk holds, at its top level, a loop over a constant range of 32 or
** more (an ndrange row, which counted_loop marks unroll.disable). */
static bool holds_long_row(const ir_block *blk) {
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next)
    if (s->op == IR_range_for && s->ops[0]->op == IR_const && s->ops[1]->op == IR_const &&
        s->ops[1]->imm.ival - s->ops[0]->imm.ival >= 32)
      return true;
  return false;
}

/* for i in [begin, end): the counter lives in an entry-block alloca (mem2reg
** turns it into a phi); continue jumps to the increment. */
static void counted_loop(cg *c, ir_stmt *s, LLVMValueRef begin, LLVMValueRef end, bool sgn) {
  LLVMTypeRef t = LLVMTypeOf(begin);
  LLVMValueRef var = cg_entry_alloca(c, t, "i");
  LLVMBuildStore(B, begin, var);
  LLVMBasicBlockRef head = cg_new_bb(c, "for"), body = cg_new_bb(c, "for.body");
  LLVMBasicBlockRef next = cg_new_bb(c, "for.next"), exit = cg_new_bb(c, "endfor");
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, head);
  LLVMValueRef i = LLVMBuildLoad2(B, t, var, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, sgn ? LLVMIntSLT : LLVMIntULT, i, end, ""), body, exit);
  LLVMPositionBuilderAtEnd(B, body);
  cg_set(c, s, i);
  push_loop(c, s, exit, next);
  cg_block(c, s->blocks[0]);
  c->nloops--;
  cg_br(c, next);
  LLVMPositionBuilderAtEnd(B, next);
  LLVMBuildStore(B, LLVMBuildAdd(B, i, LLVMConstInt(t, 1, 0), ""), var);
  LLVMValueRef latch = LLVMBuildBr(B, head);
  if (has_gathers(c, s->blocks[0])) {
    static const char *const h[] = {"llvm.loop.vectorize.enable"};
    static const int v[] = {-1};
    loop_hints(c, latch, h, v, 1);
  } else if ((LLVMIsAConstantInt(begin) && LLVMIsAConstantInt(end) &&
              LLVMConstIntGetSExtValue(end) - LLVMConstIntGetSExtValue(begin) >= 32) ||
             holds_long_row(s->blocks[0])) {
    static const char *const h[] = {"llvm.loop.unroll.disable"};
    static const int v[] = {0};
    loop_hints(c, latch, h, v, 1);
  }
  LLVMPositionBuilderAtEnd(B, exit);
}

void cg_task_body(cg *c, ir_stmt *task, LLVMValueRef begin, LLVMValueRef end) {
  if (task->op == IR_task_serial) {
    cg_block(c, task->blocks[0]);
    return;
  }
  counted_loop(c, task, begin, end, true);
}

static void emit_return(cg *c, ir_stmt *s) {
  ir_stmt *v = s->nops > 0 ? s->ops[0] : NULL;
  if (v) {
    /* context.h: integers extended to 64 bits, floats as their bits */
    LLVMValueRef x = cg_get(c, v), bits;
    if (v->type == IR_f32) bits = LLVMBuildZExt(B, LLVMBuildBitCast(B, x, c->t_i32, ""), c->t_i64, "");
    else if (v->type == IR_f64) bits = LLVMBuildBitCast(B, x, c->t_i64, "");
    else bits = cg_int_convert(c, x, ir_type_is_signed(v->type), c->t_i64);
    LLVMBuildStore(B, bits, cg_ctx_field(c, CG_CTX_RET));
  }
  cg_task_exit(c);
  LLVMBuildRetVoid(B);
}

bool cg_control(cg *c, ir_stmt *s) {
  switch (s->op) {
  case IR_if: emit_if(c, s); return true;
  case IR_while: emit_while(c, s); return true;
  case IR_range_for: {
    ir_type t = s->ops[0]->type;
    if (!ir_type_is_int(t) || t == IR_i1) cg_fail(c, s, "range_for bounds must be integers, got %s", ir_type_name(t));
    LLVMValueRef end = cg_get(c, s->ops[1]);
    end = cg_int_convert(c, end, ir_type_is_signed(s->ops[1]->type), cg_type(c, t));
    counted_loop(c, s, cg_get(c, s->ops[0]), end, ir_type_is_signed(t));
    return true;
  }
  case IR_loop_index: {
    if (s->loop && s->loop->op == IR_task_struct_for) return cg_sparse(c, s);   /* the cell's index */
    if (!s->loop) cg_fail(c, s, "loop_index without a loop");
    ir_type lt = s->loop->op == IR_range_for ? s->loop->ops[0]->type : IR_i64;
    cg_set(c, s, cg_int_convert(c, cg_get(c, s->loop), ir_type_is_signed(lt), cg_type(c, s->type)));
    return true;
  }
  case IR_break:
  case IR_continue:
    if (c->nloops == 0) cg_fail(c, s, "'%s' outside a loop", ir_op_name(s->op));
    LLVMBuildBr(B, s->op == IR_break ? c->loops[c->nloops - 1].brk : c->loops[c->nloops - 1].cont);
    return true;
  case IR_return: emit_return(c, s); return true;
  default: return false;
  }
}
