/*
** ir.c -- IR core: type and op tables, the kernel arena, statement linking,
** the builder (with the result-type rules of docs/arithmetic.md), walking,
** numbering and cloning.
*/
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snode.h"

/* ---- types ------------------------------------------------------------- */

static const struct {
  const char *name;
  int bits;
  bool is_int, is_signed, is_float;
} type_info[IR_NUM_TYPES] = {
#define T(name, bits, isint, issigned, isfloat) {#name, bits, isint, issigned, isfloat},
    IR_TYPES(T)
#undef T
};

const char *ir_type_name(ir_type t) {
  return (unsigned)t < IR_NUM_TYPES ? type_info[t].name : "?";
}

int ir_type_from_name(const char *name) {
  for (int i = 0; i < IR_NUM_TYPES; i++)
    if (strcmp(type_info[i].name, name) == 0) return i;
  return -1;
}

int ir_type_bits(ir_type t) { return (unsigned)t < IR_NUM_TYPES ? type_info[t].bits : 0; }
bool ir_type_is_int(ir_type t) { return (unsigned)t < IR_NUM_TYPES && type_info[t].is_int; }
bool ir_type_is_signed(ir_type t) { return (unsigned)t < IR_NUM_TYPES && type_info[t].is_signed; }
bool ir_type_is_float(ir_type t) { return (unsigned)t < IR_NUM_TYPES && type_info[t].is_float; }

/* ---- ops ----------------------------------------------------------------- */

/* ops.def's "___" (nothing) in the aux, rule, cpu and ptx columns */
#define IR_AUX____ IR_AUX_none
#define IR_RULE____ IR_RULE_none
#define IR_MATH____ IR_MATH_none

static const struct {
  const char *name;
  int nops;
  const char *flags;
  ir_aux aux;
  ir_rule rule;
  ir_emit emit;
  ir_math cpu, ptx;
} op_info[IR_NUM_OPS] = {
#define _(name, nops, flags, aux, rule, emit, cpu, ptx, doc) \
  {#name, nops, flags, IR_AUX_##aux, IR_RULE_##rule, IR_EMIT_##emit, IR_MATH_##cpu, IR_MATH_##ptx},
#include "ops.def"
#undef _
};

const char *ir_op_name(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].name : "?"; }

int ir_op_from_name(const char *name) {
  for (int i = 0; i < IR_NUM_OPS; i++)
    if (strcmp(op_info[i].name, name) == 0) return i;
  return -1;
}

int ir_op_nops(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].nops : 0; }
ir_aux ir_op_aux(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].aux : IR_AUX_none; }
ir_rule ir_op_rule(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].rule : IR_RULE_none; }
ir_emit ir_op_emit(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].emit : IR_EMIT_control; }
ir_math ir_op_cpu_math(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].cpu : IR_MATH_none; }
ir_math ir_op_ptx_math(ir_op op) { return (unsigned)op < IR_NUM_OPS ? op_info[op].ptx : IR_MATH_none; }

/* The flag letters of ops.def, decoded on every call: the table is tiny and
** this keeps ops.def the only place that says which op has which flag. */
unsigned ir_op_flags(ir_op op) {
  if ((unsigned)op >= IR_NUM_OPS) return 0;
  unsigned f = 0;
  for (const char *c = op_info[op].flags; *c; c++) {
    switch (*c) {
    case 'P': f |= IR_PURE; break;
    case 'E': f |= IR_EFFECT; break;
    case 'B': f |= IR_BLOCKS; break;
    case 'T': f |= IR_TASK; break;
    case 'J': f |= IR_JUMP; break;
    case 'V': f |= IR_VALUE; break;
    case 'R': f |= IR_RUNTIME; break;
    case 'L': f |= IR_LOAD; break;
    case 'S': f |= IR_STORE; break;
    default: break;
    }
  }
  return f;
}

/* ---- arena ---------------------------------------------------------------- */

/* A list of chunks; big requests get a chunk of their own. Freed all at once. */
typedef struct chunk {
  struct chunk *next;
  size_t used, size;
  max_align_t data[];
} chunk;

struct ir_arena {
  chunk *head;
};

#define CHUNK_SIZE (32 * 1024)

static void oom(void) {
  fprintf(stderr, "lattice: out of memory in the IR arena\n");
  abort();
}

void *ir_alloc(ir_kernel *k, size_t size) {
  ir_arena *a = k->arena;
  size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
  if (size == 0) size = sizeof(max_align_t);
  chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t csize = size > CHUNK_SIZE / 2 ? size : CHUNK_SIZE;
    c = malloc(sizeof(chunk) + csize);
    if (!c) oom();
    c->used = 0;
    c->size = csize;
    if (size > CHUNK_SIZE / 2 && a->head) {
      /* keep filling the current chunk; put the big one behind it */
      c->next = a->head->next;
      a->head->next = c;
    } else {
      c->next = a->head;
      a->head = c;
    }
  }
  void *p = (char *)c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

const char *ir_strdup(ir_kernel *k, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = ir_alloc(k, n);
  memcpy(p, s, n);
  return p;
}

/* ---- kernels -------------------------------------------------------------- */

ir_kernel *ir_kernel_new(const char *name, ir_program *prog) {
  ir_kernel *k = calloc(1, sizeof(ir_kernel));
  ir_arena *a = calloc(1, sizeof(ir_arena));
  if (!k || !a) oom();
  k->arena = a;
  k->name = ir_strdup(k, name ? name : "kernel");
  k->prog = prog;
  k->ret_type = IR_void;
  k->body = ir_block_new(k, NULL);
  return k;
}

void ir_kernel_free(ir_kernel *k) {
  if (!k) return;
  chunk *c = k->arena->head;
  while (c) {
    chunk *next = c->next;
    free(c);
    c = next;
  }
  free(k->arena);
  free(k);
}

void ir_fail(ir_kernel *k, ir_loc loc, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (loc.file)
    snprintf(k->error, sizeof k->error, "%s:%d: %s", loc.file, loc.line, msg);
  else if (loc.line > 0)
    snprintf(k->error, sizeof k->error, "line %d: %s", loc.line, msg);
  else
    snprintf(k->error, sizeof k->error, "%s", msg);
  if (!k->on_error) {
    /* nobody to unwind to: that is a bug in Lattice, not a user error */
    fprintf(stderr, "lattice: internal error (ir_fail without on_error): %s\n", k->error);
    abort();
  }
  longjmp(*k->on_error, 1);
}

/* ---- statements and blocks -------------------------------------------------- */

ir_block *ir_block_new(ir_kernel *k, ir_stmt *owner) {
  ir_block *b = ir_alloc(k, sizeof(ir_block));
  b->owner = owner;
  return b;
}

ir_stmt *ir_new(ir_kernel *k, ir_op op, ir_type type, int nops, ir_stmt *const *ops) {
  if (nops < 0 || nops > IR_MAX_OPS) {
    snprintf(k->error, sizeof k->error, "ir_new: %d operands for %s (at most %d)", nops,
             ir_op_name(op), IR_MAX_OPS);
    fprintf(stderr, "lattice: internal error: %s\n", k->error);
    abort();
  }
  ir_stmt *s = ir_alloc(k, sizeof(ir_stmt));
  s->op = op;
  s->type = type;
  s->id = k->next_id++;
  s->nops = nops;
  for (int i = 0; i < nops; i++) s->ops[i] = ops ? ops[i] : NULL;
  s->range.begin_gtmp = s->range.end_gtmp = -1;
  return s;
}

void ir_append(ir_block *blk, ir_stmt *s) {
  s->parent = blk;
  s->next = NULL;
  s->prev = blk->last;
  if (blk->last)
    blk->last->next = s;
  else
    blk->first = s;
  blk->last = s;
}

void ir_insert_before(ir_stmt *pos, ir_stmt *s) {
  ir_block *blk = pos->parent;
  s->parent = blk;
  s->next = pos;
  s->prev = pos->prev;
  if (pos->prev)
    pos->prev->next = s;
  else
    blk->first = s;
  pos->prev = s;
}

void ir_insert_after(ir_stmt *pos, ir_stmt *s) {
  ir_block *blk = pos->parent;
  s->parent = blk;
  s->prev = pos;
  s->next = pos->next;
  if (pos->next)
    pos->next->prev = s;
  else
    blk->last = s;
  pos->next = s;
}

void ir_remove(ir_stmt *s) {
  ir_block *blk = s->parent;
  if (!blk) return;
  if (s->prev)
    s->prev->next = s->next;
  else
    blk->first = s->next;
  if (s->next)
    s->next->prev = s->prev;
  else
    blk->last = s->prev;
  s->prev = s->next = NULL;
  s->parent = NULL;
}

void ir_remap_operands(ir_stmt *s, ir_stmt *const *map, int n) {
  for (int i = 0; i < s->nops; i++) {
    ir_stmt *o = s->ops[i];
    if (o && o->id >= 0 && o->id < n && map[o->id]) s->ops[i] = map[o->id];
  }
}

void ir_replace_uses(ir_block *scope, ir_stmt *from, ir_stmt *to) {
  if (!scope) return;
  for (ir_stmt *s = scope->first; s; s = s->next) {
    for (int i = 0; i < s->nops; i++)
      if (s->ops[i] == from) s->ops[i] = to;
    if (s->loop == from) s->loop = to;
    ir_replace_uses(s->blocks[0], from, to);
    ir_replace_uses(s->blocks[1], from, to);
  }
}

/* ---- result types (docs/arithmetic.md) ------------------------------------- */

ir_type ir_promote(ir_type a, ir_type b) {
  if (a == b) return a;
  if (a == IR_void || b == IR_void) return IR_void;
  bool fa = ir_type_is_float(a), fb = ir_type_is_float(b);
  if (fa || fb) {
    /* an integer operand counts as nothing: i64 + f32 is f32 */
    if (fa && fb) return ir_type_bits(a) >= ir_type_bits(b) ? a : b;
    return fa ? a : b;
  }
  int wa = ir_type_bits(a), wb = ir_type_bits(b);
  if (wa != wb) return wa > wb ? a : b;
  /* equal width: unsigned wins */
  return ir_type_is_signed(a) ? b : a;
}

/* The float type an operation that always computes in floating point uses:
** f64 when either operand is 64 bits wide (i64, u64, f64), f32 otherwise. */
static ir_type float_result(ir_type a, ir_type b, bool binary) {
  if (ir_type_bits(a) == 64 || (binary && ir_type_bits(b) == 64)) return IR_f64;
  return IR_f32;
}

/* By the op's typing rule (ops.def's rule column). */
ir_type ir_result_type(ir_op op, ir_type a, ir_type b) {
  bool binary = ir_op_nops(op) == 2;
  switch (ir_op_rule(op)) {
  case IR_RULE_cmp: case IR_RULE_logic:
    return IR_i1;
  case IR_RULE_fp:
    return float_result(a, b, binary);
  case IR_RULE_bits:
    if (binary && a == IR_i1 && b == IR_i1) return IR_i1;
    return binary ? ir_promote(a, b) : a;
  case IR_RULE_num:
    return binary ? ir_promote(a, b) : a;
  case IR_RULE_shift: case IR_RULE_none:
  default:
    return a;
  }
}

/* ---- builder ------------------------------------------------------------------ */

void ir_builder_init(ir_builder *b, ir_kernel *k) {
  b->k = k;
  b->block = k->body;
  b->loc = (ir_loc){NULL, 0};
}

ir_stmt *ir_b_op(ir_builder *b, ir_op op, ir_type type, int nops, ir_stmt *const *ops) {
  ir_stmt *s = ir_new(b->k, op, type, nops, ops);
  s->loc = b->loc;
  ir_append(b->block, s);
  return s;
}

ir_stmt *ir_b_const_int(ir_builder *b, ir_type t, int64_t v) {
  ir_stmt *s = ir_b_op(b, IR_const, t, 0, NULL);
  s->imm.ival = v;
  return s;
}

ir_stmt *ir_b_const_float(ir_builder *b, ir_type t, double v) {
  ir_stmt *s = ir_b_op(b, IR_const, t, 0, NULL);
  /* an f32 constant holds exactly the value an f32 can represent */
  s->imm.fval = t == IR_f32 ? (double)(float)v : v;
  return s;
}

ir_stmt *ir_b_arg(ir_builder *b, int index) {
  ir_type t = index >= 0 && index < b->k->nargs ? b->k->arg_types[index] : IR_void;
  ir_stmt *s = ir_b_op(b, IR_arg, t, 0, NULL);
  s->aux = index;
  return s;
}

ir_stmt *ir_b_unary(ir_builder *b, ir_op op, ir_stmt *a) {
  return ir_b_op(b, op, ir_result_type(op, a->type, IR_void), 1, &a);
}

ir_stmt *ir_b_binary(ir_builder *b, ir_op op, ir_stmt *a, ir_stmt *c) {
  ir_stmt *ops[2] = {a, c};
  return ir_b_op(b, op, ir_result_type(op, a->type, c->type), 2, ops);
}

ir_stmt *ir_b_cast(ir_builder *b, ir_type t, ir_stmt *a) { return ir_b_op(b, IR_cast, t, 1, &a); }

ir_stmt *ir_b_select(ir_builder *b, ir_stmt *c, ir_stmt *x, ir_stmt *y) {
  ir_stmt *ops[3] = {c, x, y};
  return ir_b_op(b, IR_select, ir_promote(x->type, y->type), 3, ops);
}

ir_stmt *ir_b_alloca(ir_builder *b, ir_type t) { return ir_b_op(b, IR_alloca, t, 0, NULL); }

ir_stmt *ir_b_local_load(ir_builder *b, ir_stmt *var) {
  return ir_b_op(b, IR_local_load, var->type, 1, &var);
}

ir_stmt *ir_b_local_store(ir_builder *b, ir_stmt *var, ir_stmt *v) {
  ir_stmt *ops[2] = {var, v};
  return ir_b_op(b, IR_local_store, IR_void, 2, ops);
}

ir_stmt *ir_b_global_ptr(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx) {
  const ir_snode *sn = ir_program_snode(b->k->prog, snode_id);
  ir_type t = sn ? sn->dtype : IR_void;
  ir_stmt *s = ir_b_op(b, IR_global_ptr, t, nidx, idx);
  s->aux = snode_id;
  return s;
}

ir_stmt *ir_b_global_load(ir_builder *b, ir_stmt *ptr) {
  return ir_b_op(b, IR_global_load, ptr->type, 1, &ptr);
}

void ir_mark_write(ir_kernel *k, ir_stmt *p) {
  ir_program *prog = k->prog;
  if (!p || p->op != IR_global_ptr || !prog || p->aux < 0 || p->aux >= prog->nsnodes) return;
  /* a dense field needs no activation: its flag stays 0, so nothing changes */
  if (prog->snodes[p->aux] && ir_snode_under_sparse(prog->snodes[p->aux])) p->imm.ival = 1;
}

ir_stmt *ir_b_global_store(ir_builder *b, ir_stmt *ptr, ir_stmt *v) {
  ir_stmt *ops[2] = {ptr, v};
  ir_mark_write(b->k, ptr);
  return ir_b_op(b, IR_global_store, IR_void, 2, ops);
}

ir_stmt *ir_b_atomic(ir_builder *b, ir_op op, ir_stmt *ptr, ir_stmt *v) {
  ir_stmt *ops[2] = {ptr, v};
  ir_mark_write(b->k, ptr);
  return ir_b_op(b, op, ptr->type, 2, ops);
}

ir_stmt *ir_b_if(ir_builder *b, ir_stmt *cond, bool with_else) {
  ir_stmt *s = ir_b_op(b, IR_if, IR_void, 1, &cond);
  s->blocks[0] = ir_block_new(b->k, s);
  if (with_else) s->blocks[1] = ir_block_new(b->k, s);
  return s;
}

ir_stmt *ir_b_while(ir_builder *b) {
  ir_stmt *s = ir_b_op(b, IR_while, IR_void, 0, NULL);
  s->blocks[0] = ir_block_new(b->k, s);
  return s;
}

ir_stmt *ir_b_range_for(ir_builder *b, ir_stmt *begin, ir_stmt *end) {
  ir_stmt *ops[2] = {begin, end};
  ir_stmt *s = ir_b_op(b, IR_range_for, IR_void, 2, ops);
  s->blocks[0] = ir_block_new(b->k, s);
  return s;
}

ir_stmt *ir_b_loop_index(ir_builder *b, ir_stmt *loop) {
  /* the index has the type of the loop's bounds; task bounds are i32 */
  ir_type t = IR_i32;
  if (loop && loop->op == IR_range_for && loop->nops > 0 && loop->ops[0])
    t = loop->ops[0]->type;
  ir_stmt *s = ir_b_op(b, IR_loop_index, t, 0, NULL);
  s->loop = loop;
  return s;
}

ir_stmt *ir_b_jump(ir_builder *b, ir_op op, ir_stmt *value) {
  return ir_b_op(b, op, IR_void, value ? 1 : 0, value ? &value : NULL);
}

/* ---- sparse SNodes ------------------------------------------------------------- */

static ir_stmt *snode_op(ir_builder *b, ir_op op, ir_type t, int snode_id, int nidx,
                         ir_stmt *const *idx, ir_stmt *value) {
  ir_stmt *ops[IR_MAX_OPS] = {0};
  int n = 0;
  for (int i = 0; i < nidx && n < IR_MAX_INDICES; i++) ops[n++] = idx[i];
  if (value) ops[n++] = value;
  ir_stmt *s = ir_b_op(b, op, t, n, ops);
  s->aux = snode_id;
  return s;
}

ir_stmt *ir_b_snode_activate(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx) {
  return snode_op(b, IR_snode_activate, IR_void, snode_id, nidx, idx, NULL);
}

ir_stmt *ir_b_snode_deactivate(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx) {
  return snode_op(b, IR_snode_deactivate, IR_void, snode_id, nidx, idx, NULL);
}

ir_stmt *ir_b_snode_is_active(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx) {
  return snode_op(b, IR_snode_is_active, IR_i1, snode_id, nidx, idx, NULL);
}

ir_stmt *ir_b_snode_append(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx,
                           ir_stmt *value) {
  return snode_op(b, IR_snode_append, IR_i32, snode_id, nidx, idx, value);
}

ir_stmt *ir_b_snode_reserve(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx) {
  return snode_op(b, IR_snode_reserve, IR_i32, snode_id, nidx, idx, NULL);
}

ir_stmt *ir_b_snode_length(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx) {
  return snode_op(b, IR_snode_length, IR_i32, snode_id, nidx, idx, NULL);
}

ir_stmt *ir_b_snode_deactivate_all(ir_builder *b, int snode_id) {
  return snode_op(b, IR_snode_deactivate_all, IR_void, snode_id, 0, NULL, NULL);
}

ir_stmt *ir_b_struct_for(ir_builder *b, int snode_id) {
  const ir_snode *sn = ir_program_snode(b->k->prog, snode_id);
  if (sn && sn->kind == IR_SN_place && sn->parent) snode_id = sn->parent->id;
  ir_stmt *s = ir_b_op(b, IR_struct_for, IR_void, 0, NULL);
  s->aux = snode_id;
  s->blocks[0] = ir_block_new(b->k, s);
  return s;
}

ir_stmt *ir_b_struct_index(ir_builder *b, ir_stmt *loop, int k) {
  ir_stmt *s = ir_b_op(b, IR_loop_index, IR_i32, 0, NULL);
  s->loop = loop;
  s->imm.ival = k;
  return s;
}

/* ---- walking and numbering ------------------------------------------------------ */

void ir_walk(ir_block *blk, void (*fn)(ir_stmt *s, void *ud), void *ud) {
  if (!blk) return;
  ir_stmt *next;
  for (ir_stmt *s = blk->first; s; s = next) {
    next = s->next; /* fn may unlink s */
    fn(s, ud);
    ir_walk(s->blocks[0], fn, ud);
    ir_walk(s->blocks[1], fn, ud);
  }
}

static void number_one(ir_stmt *s, void *ud) { s->id = (*(int *)ud)++; }

void ir_number(ir_kernel *k) {
  int n = 0;
  ir_walk(k->body, number_one, &n);
  k->next_id = n;
}

/* ---- cloning ------------------------------------------------------------------- */

/* Old statement -> new statement, open addressing on the pointer value. */
typedef struct {
  const ir_stmt **keys;
  ir_stmt **vals;
  size_t cap;
} stmt_map;

static size_t ptr_hash(const void *p, size_t cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 7) & (cap - 1);
}

static void map_put(stmt_map *m, const ir_stmt *k, ir_stmt *v) {
  size_t i = ptr_hash(k, m->cap);
  while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
  m->keys[i] = k;
  m->vals[i] = v;
}

static ir_stmt *map_get(const stmt_map *m, const ir_stmt *k) {
  if (!k) return NULL;
  size_t i = ptr_hash(k, m->cap);
  while (m->keys[i]) {
    if (m->keys[i] == k) return m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  return NULL;
}

static size_t count_stmts(const ir_block *blk) {
  size_t n = 0;
  if (!blk) return 0;
  for (const ir_stmt *s = blk->first; s; s = s->next)
    n += 1 + count_stmts(s->blocks[0]) + count_stmts(s->blocks[1]);
  return n;
}

static ir_block *clone_block(ir_kernel *nk, const ir_block *blk, ir_stmt *owner, stmt_map *m) {
  ir_block *nb = ir_block_new(nk, owner);
  for (const ir_stmt *s = blk->first; s; s = s->next) {
    ir_stmt *ns = ir_alloc(nk, sizeof(ir_stmt));
    *ns = *s;
    ns->parent = NULL;
    ns->prev = ns->next = NULL;
    ns->loc.file = ir_strdup(nk, s->loc.file);
    map_put(m, s, ns);
    ir_append(nb, ns);
    for (int i = 0; i < 2; i++)
      if (s->blocks[i]) ns->blocks[i] = clone_block(nk, s->blocks[i], ns, m);
  }
  return nb;
}

static void remap_block(ir_block *blk, const stmt_map *m) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int i = 0; i < s->nops; i++) {
      ir_stmt *t = map_get(m, s->ops[i]);
      /* an operand outside the kernel (never valid) is kept as is */
      if (t) s->ops[i] = t;
    }
    if (s->loop) {
      ir_stmt *t = map_get(m, s->loop);
      if (t) s->loop = t;
    }
    if (s->blocks[0]) remap_block(s->blocks[0], m);
    if (s->blocks[1]) remap_block(s->blocks[1], m);
  }
}

ir_kernel *ir_kernel_clone(const ir_kernel *k) {
  ir_kernel *nk = ir_kernel_new(k->name, k->prog);
  nk->nargs = k->nargs;
  for (int i = 0; i < 16; i++) {
    nk->arg_types[i] = k->arg_types[i];
    nk->arg_names[i] = ir_strdup(nk, k->arg_names[i]);
  }
  nk->ret_type = k->ret_type;
  nk->gtmp_size = k->gtmp_size;
  nk->offloaded = k->offloaded;
  nk->debug = k->debug;
  nk->fma = k->fma;
  nk->fast_math = k->fast_math;
  nk->grad = k->grad;
  nk->ad_stack = k->ad_stack;
  nk->fwd = k->fwd;
  nk->fwd_args = k->fwd_args;
  nk->next_id = k->next_id;
  for (int i = 0; i < k->nstrings; i++) ir_kernel_add_string(nk, k->strings[i]);

  size_t n = count_stmts(k->body), cap = 16;
  while (cap < 2 * n + 2) cap *= 2;
  stmt_map m = {calloc(cap, sizeof(*m.keys)), calloc(cap, sizeof(*m.vals)), cap};
  if (!m.keys || !m.vals) oom();
  nk->body = clone_block(nk, k->body, NULL, &m);
  remap_block(nk->body, &m);
  free(m.keys);
  free(m.vals);
  return nk;
}

/* ---- the string table (print formats, assert messages) ------------------------ */

int ir_kernel_add_string(ir_kernel *k, const char *s) {
  if (k->nstrings == k->strings_cap) {
    int cap = k->strings_cap ? 2 * k->strings_cap : 8;
    const char **n = ir_alloc(k, (size_t)cap * sizeof *n);   /* the old array stays in the arena */
    for (int i = 0; i < k->nstrings; i++) n[i] = k->strings[i];
    k->strings = n;
    k->strings_cap = cap;
  }
  k->strings[k->nstrings] = ir_strdup(k, s ? s : "");
  return k->nstrings++;
}

const char *ir_kernel_string(const ir_kernel *k, int i) {
  return i >= 0 && i < k->nstrings ? k->strings[i] : NULL;
}

void ir_name_local(ir_kernel *k, ir_stmt *a, const char *name) {
  if (a->op == IR_alloca && a->imm.ival == 0) a->imm.ival = 1 + ir_kernel_add_string(k, name);
}

const char *ir_local_name(const ir_kernel *k, const ir_stmt *s) {
  if (s->op != IR_alloca && s->op != IR_global_tmp) return NULL;
  return s->imm.ival > 0 && s->imm.ival <= INT32_MAX ? ir_kernel_string(k, (int)s->imm.ival - 1) : NULL;
}
