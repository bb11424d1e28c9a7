/*
** cg_append.c -- appends to dynamic lists (snode_append, snode_reserve): the
** runtime call that reserves an element and finds its cell, the count of a
** task function's appends kept in a variable, and on the CPU, appends
** gathered per list in a table of the thread (runtime.h, "buffered appends").
**
** Why buffer. In a bucket fill (bench/dynamic.lua: 262 144 ids into 1024
** lists) every append is an atomic add on its list's length, and with two
** threads the lines that hold the lengths and the newest cells move between
** the cores at nearly every append: a second thread made the fill slower. A
** task function may instead collect each list's values in its thread's
** table and append RT_APPEND_VALUE_BYTES of them at once
** (rt_dynamic_append_many): for i32 ids a sixteenth of the atomic adds, and
** each batch's cells written by one core.
**
** Buffering changes when values reach their list, never which values do,
** so it is done only where nothing can tell the difference (plan_buffer):
** the task function has a single append to the level and never reads the
** index it gives, nothing else in it touches the level or a level under it
** (no read of an element or a length, no second append), and nothing in it
** deactivates anything (a list freed while its values wait in a table).
** The function hands over everything its table holds before it returns, on
** every path (cg_task_exit), so the next task sees every element; the
** values one thread appends to one list reach it in the order appended.
** Whether to buffer is the runtime's to say, as the task starts: without a
** table for the thread (one thread, where appends never meet) the same
** code makes the plain appends. A full list drops
** the values past its capacity as it drops single appends, and a debug
** kernel raises the same error, naming the append's line.
*/
#include <stddef.h>
#include <stdlib.h>

#include "../../runtime/runtime.h"
#include "cg_sparse.h"

#define B (c->b)

/* ---- counting appends --------------------------------------------------------------
** Every append adds one to its level's active count (rt_count_active). A
** locked add per element cost as much as the append itself, so a task
** function counts its appends to each level (up to 4) in a variable and adds
** the sum once, as it returns; appends it cannot count so (in an outlined
** piece, cg_split.c, or to a fifth level) the runtime counts. */
static void find_appends(ir_stmt *s, void *ud) {
  cg *c = ud;
  if ((s->op != IR_snode_append && s->op != IR_snode_reserve) || c->ncount == 4) return;
  for (int k = 0; k < c->ncount; k++)
    if (c->count_snode[k] == s->aux) return;
  c->count_snode[c->ncount++] = s->aux;
}

/* The task function's count of appends to level id, or NULL. */
static LLVMValueRef append_counter(cg *c, int id) {
  if (c->fn != c->count_fn) return NULL;
  for (int k = 0; k < c->ncount; k++)
    if (c->count_snode[k] == id) return c->count_var[k];
  return NULL;
}

/* The task's thread number (parameter 1 of a task function); a piece of an
** outlined task (cg_split.c) has none and takes 0. */
static LLVMValueRef thread_number(cg *c) {
  return LLVMCountParams(c->fn) == 4 && LLVMTypeOf(LLVMGetParam(c->fn, 1)) == c->t_i32 ? LLVMGetParam(c->fn, 1)
                                                                                     : i32c(c, 0);
}

/* Adds `n` (i32) elements to the active count of level id. */
static void count(cg *c, int id, LLVMValueRef n) {
  LLVMValueRef counter = append_counter(c, id), n64 = LLVMBuildSExt(B, n, c->t_i64, "");
  if (counter) {
    LLVMBuildStore(B, LLVMBuildAdd(B, LLVMBuildLoad2(B, c->t_i64, counter, ""), n64, ""), counter);
    return;
  }
  LLVMValueRef a[3] = {sp_meta(c, id), thread_number(c), n64};
  sp_call_rt(c, NULL, "rt_dynamic_count", a, 3);
}

/* ---- which level to buffer -------------------------------------------------------- */

typedef struct {
  cg *c;
  const ir_snode *lvl;     /* the candidate: the level of the function's first append */
  ir_stmt *site;           /* that append */
  bool ok;
} buffer_plan;

/* n is lvl or a level or place under it */
static bool within(const ir_snode *n, const ir_snode *lvl) {
  for (; n; n = n->parent)
    if (n == lvl) return true;
  return false;
}

static void find_site(ir_stmt *s, void *ud) {
  buffer_plan *p = ud;
  if (s->op == IR_snode_append && !p->site) p->site = s;
}

/* Clears p->ok when s reads the site's index, deactivates anything, or
** names the level or something under it (a bounds check only reads its
** shape). */
static void check_use(ir_stmt *s, void *ud) {
  buffer_plan *p = ud;
  if (!p->ok || s == p->site) return;
  for (int i = 0; i < s->nops; i++)
    if (s->ops[i] == p->site) p->ok = false;
  if (s->op == IR_snode_deactivate || s->op == IR_snode_deactivate_all || s->op == IR_task_deactivate_all)
    p->ok = false;
  ir_aux a = ir_op_aux(s->op);
  if ((a == IR_AUX_place || a == IR_AUX_level) && s->op != IR_check_index) {
    const ir_snode *sn = ir_program_snode(p->c->k->prog, s->aux);
    if (!sn || within(sn, p->lvl)) p->ok = false;
  }
}

static void plan_buffer(cg *c, ir_stmt *task) {
  c->buf_snode = -1;
  c->buf_site = NULL;
  if (!c->target->buffer_appends || !task->blocks[0]) return;
  buffer_plan p = {c, NULL, NULL, true};
  ir_walk(task->blocks[0], find_site, &p);
  if (!p.site) return;
  p.lvl = ir_program_snode(c->k->prog, p.site->aux);
  if (!p.lvl || p.lvl->kind != IR_SN_dynamic || p.lvl->nchildren != 1 || p.lvl->children[0]->kind != IR_SN_place ||
      p.lvl->chunk_cells <= 0)
    return;
  int bits = ir_type_bits(p.lvl->children[0]->dtype);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return;
  check_use(task, &p);
  ir_walk(task->blocks[0], check_use, &p);
  if (!p.ok) return;
  c->buf_snode = p.lvl->id;
  c->buf_site = p.site;
}

/* ---- the thread's table ----------------------------------------------------------- */

static LLVMValueRef entry_field(cg *c, LLVMValueRef e, int offset, LLVMTypeRef t, const char *name) {
  return LLVMBuildLoad2(B, t, gep(c, e, i64c(c, offset)), name);
}

static void set_field(cg *c, LLVMValueRef e, int offset, LLVMValueRef v) {
  LLVMBuildStore(B, v, gep(c, e, i64c(c, offset)));
}

/* The table of the thread, or NULL: the runtime has none for it (one
** thread, where appends do not meet; LT_APPEND_TABLES=off; no memory), and
** the appends are the plain ones. */
static void open_table(cg *c) {
  LLVMValueRef a[2] = {sp_runtime(c), thread_number(c)};
  c->buf_table = sp_call_rt(c, c->buf_site, "rt_append_table", a, 2);
  c->buf_taken = gep(c, c->buf_table, i64c(c, (long long)RT_APPEND_ENTRIES * RT_APPEND_ENTRY_BYTES));
  c->buf_ntaken = cg_entry_alloca(c, c->t_i32, "append.ntaken");
  LLVMBuildStore(B, i32c(c, 0), c->buf_ntaken);
}

/* Hands the k (i32) values at `values` over to the list of `node`, counts
** what was stored, and in a debug kernel raises the append error when the
** list could not take them all. */
static void hand_over(cg *c, const ir_snode *lvl, LLVMValueRef node, LLVMValueRef values, LLVMValueRef k) {
  const ir_snode *place = lvl->children[0];
  LLVMValueRef a[8] = {sp_meta(c, lvl->id), node, i32c(c, lvl->chunk_cells), i64c(c, lvl->cell_bytes), values, k,
                       i32c(c, ir_type_bits(place->dtype) / 8), i64c(c, place->offset)};
  LLVMValueRef stored = sp_call_rt(c, c->buf_site, "rt_dynamic_append_many", a, 8);
  count(c, lvl->id, stored);
  if (!c->k->debug) return;
  LLVMBasicBlockRef full = cg_new_bb(c, "append.full"), on = cg_new_bb(c, "append.on");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, stored, k, ""), full, on);
  LLVMPositionBuilderAtEnd(B, full);
  LLVMValueRef e[3] = {c->ctxv, i32c(c, lvl->id), i32c(c, c->buf_site->loc.line)};
  sp_call_rt(c, c->buf_site, "rt_raise_append_error", e, 3);
  LLVMBuildBr(B, on);
  LLVMPositionBuilderAtEnd(B, on);
}

/* The buffered append: the list's entry (by its node's address), taken
** from another list if need be (handing that one's values over), then the
** value stored in it; a full entry is handed over at once. */
static void buffered_append(cg *c, const ir_snode *lvl, LLVMValueRef node, LLVMValueRef v) {
  const ir_snode *place = lvl->children[0];
  int vb = ir_type_bits(place->dtype) / 8, per_batch = RT_APPEND_VALUE_BYTES / vb;
  LLVMValueRef addr = LLVMBuildPtrToInt(B, node, c->t_i64, "");
  LLVMValueRef h = LLVMBuildXor(B, LLVMBuildLShr(B, addr, i64c(c, 5), ""), LLVMBuildLShr(B, addr, i64c(c, 15), ""), "");
  h = LLVMBuildAnd(B, h, i64c(c, RT_APPEND_ENTRIES - 1), "append.slot");
  LLVMValueRef e = gep(c, c->buf_table, LLVMBuildMul(B, h, i64c(c, RT_APPEND_ENTRY_BYTES), ""));
  LLVMValueRef tag = entry_field(c, e, 0, c->t_i64, "append.tag");
  LLVMBasicBlockRef miss = cg_new_bb(c, "append.miss"), evict = cg_new_bb(c, "append.evict");
  LLVMBasicBlockRef fresh = cg_new_bb(c, "append.fresh"), note = cg_new_bb(c, "append.note");
  LLVMBasicBlockRef take = cg_new_bb(c, "append.take"), have = cg_new_bb(c, "append.have");
  LLVMBasicBlockRef batch = cg_new_bb(c, "append.batch"), keep = cg_new_bb(c, "append.keep");
  LLVMBasicBlockRef done = cg_new_bb(c, "append.done");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, tag, addr, ""), have, miss);
  /* another list's entry, or a free one */
  LLVMPositionBuilderAtEnd(B, miss);
  LLVMValueRef held = entry_field(c, e, 8, c->t_i32, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, held, i32c(c, 0), ""), evict, fresh);
  LLVMPositionBuilderAtEnd(B, evict);
  hand_over(c, lvl, LLVMBuildIntToPtr(B, tag, c->t_ptr, ""), gep(c, e, i64c(c, 16)), held);
  LLVMBuildBr(B, take);
  /* an entry with no values: free (tag 0), so not yet in the list of taken
  ** entries, or taken earlier in this call and already there */
  LLVMPositionBuilderAtEnd(B, fresh);
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, tag, i64c(c, 0), ""), note, take);
  LLVMPositionBuilderAtEnd(B, note);
  LLVMValueRef n = LLVMBuildLoad2(B, c->t_i32, c->buf_ntaken, "");
  LLVMValueRef at = gep(c, c->buf_taken, LLVMBuildMul(B, LLVMBuildZExt(B, n, c->t_i64, ""), i64c(c, 2), ""));
  LLVMBuildStore(B, LLVMBuildTrunc(B, h, LLVMInt16TypeInContext(c->ctx), ""), at);
  LLVMBuildStore(B, LLVMBuildAdd(B, n, i32c(c, 1), ""), c->buf_ntaken);
  LLVMBuildBr(B, take);
  LLVMPositionBuilderAtEnd(B, take);
  set_field(c, e, 0, addr);
  set_field(c, e, 8, i32c(c, 0));
  LLVMBuildBr(B, have);
  /* the value into the entry */
  LLVMPositionBuilderAtEnd(B, have);
  LLVMValueRef k = entry_field(c, e, 8, c->t_i32, "append.held");
  LLVMValueRef off = LLVMBuildAdd(B, LLVMBuildMul(B, LLVMBuildZExt(B, k, c->t_i64, ""), i64c(c, vb), ""), i64c(c, 16), "");
  LLVMBuildStore(B, v, gep(c, e, off));
  LLVMValueRef k1 = LLVMBuildAdd(B, k, i32c(c, 1), "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, k1, i32c(c, per_batch), ""), batch, keep);
  LLVMPositionBuilderAtEnd(B, batch);
  hand_over(c, lvl, node, gep(c, e, i64c(c, 16)), k1);
  set_field(c, e, 8, i32c(c, 0));
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, keep);
  set_field(c, e, 8, k1);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
}

/* Before a return: every taken entry's values handed over and the entry
** freed, so that the table is empty between calls. */
static void empty_table(cg *c) {
  const ir_snode *lvl = ir_program_snode(c->k->prog, c->buf_snode);
  LLVMValueRef i = cg_entry_alloca(c, c->t_i32, "append.i");
  LLVMBuildStore(B, i32c(c, 0), i);
  LLVMBasicBlockRef head = cg_new_bb(c, "empty.head"), body = cg_new_bb(c, "empty.body");
  LLVMBasicBlockRef give = cg_new_bb(c, "empty.give"), next = cg_new_bb(c, "empty.next");
  LLVMBasicBlockRef done = cg_new_bb(c, "empty.done");
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, head);
  LLVMValueRef iv = LLVMBuildLoad2(B, c->t_i32, i, "");
  LLVMValueRef n = LLVMBuildLoad2(B, c->t_i32, c->buf_ntaken, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, iv, n, ""), body, done);
  LLVMPositionBuilderAtEnd(B, body);
  LLVMValueRef at = gep(c, c->buf_taken, LLVMBuildMul(B, LLVMBuildZExt(B, iv, c->t_i64, ""), i64c(c, 2), ""));
  LLVMValueRef h = LLVMBuildZExt(B, LLVMBuildLoad2(B, LLVMInt16TypeInContext(c->ctx), at, ""), c->t_i64, "");
  LLVMValueRef e = gep(c, c->buf_table, LLVMBuildMul(B, h, i64c(c, RT_APPEND_ENTRY_BYTES), ""));
  LLVMValueRef held = entry_field(c, e, 8, c->t_i32, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, held, i32c(c, 0), ""), give, next);
  LLVMPositionBuilderAtEnd(B, give);
  hand_over(c, lvl, LLVMBuildIntToPtr(B, entry_field(c, e, 0, c->t_i64, ""), c->t_ptr, ""), gep(c, e, i64c(c, 16)),
            held);
  LLVMBuildBr(B, next);
  LLVMPositionBuilderAtEnd(B, next);
  set_field(c, e, 0, i64c(c, 0));
  set_field(c, e, 8, i32c(c, 0));
  LLVMBuildStore(B, LLVMBuildAdd(B, iv, i32c(c, 1), ""), i);
  LLVMBuildBr(B, head);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMBuildStore(B, i32c(c, 0), c->buf_ntaken);
}

/* ---- a task function's start and returns ------------------------------------------- */

void cg_append_begin(cg *c, ir_stmt *task) {
  c->ncount = 0;
  c->count_fn = c->fn;
  c->buf_snode = -1;
  c->buf_site = NULL;
  if (!task->blocks[0]) return;
  ir_walk(task->blocks[0], find_appends, c);
  if (!c->ncount) return;
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
  LLVMPositionBuilderAtEnd(eb, c->entry);
  for (int k = 0; k < c->ncount; k++) {
    c->count_var[k] = LLVMBuildAlloca(eb, c->t_i64, "appended");
    LLVMBuildStore(eb, LLVMConstInt(c->t_i64, 0, 0), c->count_var[k]);
  }
  LLVMDisposeBuilder(eb);
  plan_buffer(c, task);
  if (c->buf_site) open_table(c);
}

void cg_task_exit(cg *c) {
  if (c->fn != c->count_fn) return;
  if (c->buf_site) empty_table(c);
  for (int k = 0; k < c->ncount; k++) {
    LLVMValueRef a[3] = {sp_meta(c, c->count_snode[k]), thread_number(c),
                         LLVMBuildLoad2(B, c->t_i64, c->count_var[k], "")};
    sp_call_rt(c, NULL, "rt_dynamic_count", a, 3);
  }
}

/* ---- the append ------------------------------------------------------------------- */

/* snode_append: reserve an element and find its cell in one runtime call
** (the chunk size is a constant here, so its division folds), then store
** the value into the cell. A full list gives -1 and drops the value; debug
** kernels raise an error. snode_reserve is the same call without the store
** (the kernel stores each place of the element through global_ptr: an
** append of several places, sparse.lua). The buffered append (above) gives
** no index: its plan made sure that nothing reads it. */
LLVMValueRef sp_append(cg *c, ir_stmt *s, const ir_snode *lvl, LLVMValueRef node) {
  bool store_value = s->op == IR_snode_append;
  if (store_value && (lvl->nchildren != 1 || lvl->children[0]->kind != IR_SN_place))
    cg_fail(c, s, "snode_append needs a dynamic SNode holding exactly one place");
  const ir_snode *place = store_value ? lvl->children[0] : NULL;
  LLVMValueRef v = store_value ? cg_get(c, s->ops[s->nops - 1]) : NULL;
  if (v && LLVMTypeOf(v) != cg_type(c, place->dtype))
    cg_fail(c, s, "snode_append of a %s value to a field of %s (run typecheck first)",
            ir_type_name(s->ops[s->nops - 1]->type), ir_type_name(place->dtype));
  LLVMBasicBlockRef after = NULL;
  if (s == c->buf_site && c->fn == c->count_fn) {
    /* with a table, buffered; without, the plain append below (the test
    ** does not change in the loop: LLVM takes it out) */
    LLVMBasicBlockRef buffered = cg_new_bb(c, "append.buffered"), plain = cg_new_bb(c, "append.plain");
    after = cg_new_bb(c, "append.after");
    LLVMBuildCondBr(B, LLVMBuildIsNull(B, c->buf_table, ""), plain, buffered);
    LLVMPositionBuilderAtEnd(B, buffered);
    buffered_append(c, lvl, node, v);
    LLVMBuildBr(B, after);
    LLVMPositionBuilderAtEnd(B, plain);
  }
  LLVMValueRef slot = cg_entry_alloca(c, c->t_i32, "append.index");
  /* counted here (then the runtime is told stripe -1) or by the runtime in
  ** the stripe of the task's thread */
  LLVMValueRef counter = append_counter(c, lvl->id);
  LLVMValueRef stripe = counter ? i32c(c, -1) : thread_number(c);
  LLVMValueRef a[5] = {sp_meta(c, lvl->id), node, i32c(c, (int)lvl->chunk_cells), stripe, slot};
  LLVMValueRef cell = sp_call_rt(c, s, "rt_dynamic_append_cell", a, 5);
  LLVMValueRef idx = LLVMBuildLoad2(B, c->t_i32, slot, "");
  LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSGE, idx, i32c(c, 0), "");
  LLVMBasicBlockRef store = cg_new_bb(c, "append.store"), full = cg_new_bb(c, "append.full");
  LLVMBasicBlockRef done = cg_new_bb(c, "append.done");
  LLVMBuildCondBr(B, ok, store, full);
  LLVMPositionBuilderAtEnd(B, store);
  if (store_value) LLVMBuildStore(B, v, gep(c, cell, i64c(c, place->offset)));
  if (counter)
    LLVMBuildStore(B, LLVMBuildAdd(B, LLVMBuildLoad2(B, c->t_i64, counter, ""), i64c(c, 1), ""), counter);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, full);
  if (c->k->debug) {
    LLVMValueRef e[3] = {c->ctxv, i32c(c, lvl->id), i32c(c, s->loc.line)};
    sp_call_rt(c, s, "rt_raise_append_error", e, 3);
  }
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  if (!after) return idx;
  LLVMBuildBr(B, after);
  LLVMPositionBuilderAtEnd(B, after);
  return i32c(c, 0);   /* nothing reads it (plan_buffer) */
}
