/*
** simplify_index.c -- simplify the integer arithmetic that computes field
** indices, using the value ranges that loop bounds give.
**
** `lt.ndrange({1, 4095}, {1, 4095})` is traced as one linear loop index l
** with i = l // 4094 + 1 and j = l % 4094 + 1, and a stencil reads
** x[i + 1][j], x[i - 1][j], ...: chains of constant offsets on floored
** divisions. Rewrites, on integer types (not i1), in program order:
**
**  - constant offsets merge: (a + c1) + c2, (a + c1) - c2, (a - c1) + c2,
**    c2 + (a + c1), ... become a + c (integers wrap, so this is exact);
**    a + 0 and a - 0 become a;
**  - with a known range of values (below): a % c is a when 0 <= a < c, and
**    a // c is 0 there; (a * c) // c is a and (a * c) % c is 0 when a * c
**    cannot wrap;
**  - a % 2^k becomes a & (2^k - 1) (floored modulo: exact for every a), and
**    a // 2^k becomes a logical shift when a >= 0 (or is unsigned);
**  - any other a // c and a % c with a >= 0 and a constant c > 0 is done
**    unsigned (cast, op, cast back): a floored signed division needs sign
**    fixups that the code generator cannot drop without the range.
**
** Ranges: a constant; the index of a task_range_for or range_for whose
** begin has a range (up to the end's, or else the type's, largest value),
** of a struct loop (0 to 2^31 - 1); and what add, sub, mul, floordiv/mod by a positive
** constant, and with a non-negative constant, shr by a constant, min, max,
** select and integer casts make of ranges, as long as the result cannot
** wrap in its type. Everything else has no range.
**
** Not done: anything on floats; loop-index strength reduction (turning the
** linear index back into nested loops would change the offload lowering).
*/
#include "passes.h"
#include "fold_eval.h"

typedef struct {
  bool known;
  int64_t lo, hi;
} range;

typedef struct {
  ir_kernel *k;
  int n;                /* ids 0..n-1 before the pass (ir_number) */
  range *r;             /* by id */
  ir_stmt **repl;       /* by id: what a removed statement became */
  bool changed;
} simp;

static bool is_index_type(ir_type t) { return ir_type_is_int(t) && t != IR_i1; }

/* The values of type t, as int64 bounds; u64 counts only up to INT64_MAX. */
static void type_bounds(ir_type t, __int128 *lo, __int128 *hi) {
  int w = ir_type_bits(t);
  if (ir_type_is_signed(t)) {
    *lo = -((__int128)1 << (w - 1));
    *hi = ((__int128)1 << (w - 1)) - 1;
  } else {
    *lo = 0;
    *hi = w >= 64 ? INT64_MAX : ((__int128)1 << w) - 1;
  }
}

static range make(ir_type t, __int128 lo, __int128 hi) {
  __int128 tl, th;
  type_bounds(t, &tl, &th);
  if (lo > hi || lo < tl || hi > th) return (range){false, 0, 0};
  return (range){true, (int64_t)lo, (int64_t)hi};
}

static range get(const simp *st, const ir_stmt *s) {
  if (!s) return (range){false, 0, 0};
  if (s->op == IR_const && is_index_type(s->type)) {
    if (!ir_type_is_signed(s->type) && s->imm.ival < 0) return (range){false, 0, 0};
    return (range){true, s->imm.ival, s->imm.ival};
  }
  return s->id >= 0 && s->id < st->n ? st->r[s->id] : (range){false, 0, 0};
}

static bool const_int(const ir_stmt *s, int64_t *v) {
  if (!s || s->op != IR_const || !is_index_type(s->type)) return false;
  *v = s->imm.ival;
  return true;
}

static range loop_index_range(const simp *st, const ir_stmt *s) {
  const ir_stmt *l = s->loop;
  range none = {false, 0, 0};
  if (!l) return none;
  /* an unknown end still bounds the index by its type's largest value */
  __int128 tl, th;
  type_bounds(s->type, &tl, &th);
  switch (l->op) {
  case IR_task_range_for:
    if (l->range.begin_gtmp >= 0) return none;
    return make(s->type, l->range.begin, l->range.end_gtmp >= 0 ? th : (__int128)l->range.end - 1);
  case IR_range_for: {
    range b = get(st, l->ops[0]), e = get(st, l->ops[1]);
    if (!b.known) return none;
    return make(s->type, b.lo, e.known ? (__int128)e.hi - 1 : th);
  }
  case IR_struct_for: case IR_task_struct_for:
    /* a virtual index: never negative, below 2^31 (snode.c) */
    return make(s->type, 0, INT32_MAX);
  default: return none;
  }
}

/* The range of s's value from its operands' ranges. */
static range compute(const simp *st, const ir_stmt *s) {
  range none = {false, 0, 0};
  if (!is_index_type(s->type)) return none;
  if (s->op == IR_loop_index) return loop_index_range(st, s);
  if (s->op == IR_cast) {
    range a = is_index_type(s->ops[0]->type) ? get(st, s->ops[0]) : none;
    return a.known ? make(s->type, a.lo, a.hi) : none;
  }
  if (s->nops < 2) return none;
  range a = get(st, s->ops[0]), b = get(st, s->ops[1]);
  int64_t c;
  switch (s->op) {
  case IR_add: if (a.known && b.known) return make(s->type, (__int128)a.lo + b.lo, (__int128)a.hi + b.hi); break;
  case IR_sub: if (a.known && b.known) return make(s->type, (__int128)a.lo - b.hi, (__int128)a.hi - b.lo); break;
  case IR_mul:
    if (a.known && b.known) {
      __int128 p[4] = {(__int128)a.lo * b.lo, (__int128)a.lo * b.hi, (__int128)a.hi * b.lo, (__int128)a.hi * b.hi};
      __int128 lo = p[0], hi = p[0];
      for (int i = 1; i < 4; i++) lo = p[i] < lo ? p[i] : lo, hi = p[i] > hi ? p[i] : hi;
      return make(s->type, lo, hi);
    }
    break;
  case IR_floordiv:
    if (a.known && const_int(s->ops[1], &c) && c > 0) {
      /* floored: exact for negative a too */
      __int128 lo = a.lo >= 0 ? a.lo / c : -((-(__int128)a.lo + c - 1) / c);
      __int128 hi = a.hi >= 0 ? a.hi / c : -((-(__int128)a.hi + c - 1) / c);
      return make(s->type, lo, hi);
    }
    break;
  case IR_mod:
    if (const_int(s->ops[1], &c) && c > 0) {
      if (a.known && a.lo >= 0 && a.hi < c) return a;
      return make(s->type, 0, (__int128)c - 1);
    }
    break;
  case IR_bit_and:
    if (const_int(s->ops[1], &c) && c >= 0) return make(s->type, 0, c);
    if (const_int(s->ops[0], &c) && c >= 0) return make(s->type, 0, c);
    break;
  case IR_shr:
    if (a.known && a.lo >= 0 && const_int(s->ops[1], &c) && c >= 0 && c < ir_type_bits(s->type))
      return make(s->type, a.lo >> c, a.hi >> c);
    break;
  case IR_min: if (a.known && b.known) return make(s->type, a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi); break;
  case IR_max: if (a.known && b.known) return make(s->type, a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi); break;
  case IR_select: {
    range x = get(st, s->ops[1]), y = get(st, s->ops[2]);
    if (x.known && y.known) return make(s->type, x.lo < y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi);
    break;
  }
  default: break;
  }
  return none;
}

/* ---- rewriting ------------------------------------------------------------------ */

static ir_stmt *new_before(simp *st, ir_stmt *pos, ir_op op, ir_type t, int nops, ir_stmt *const *ops) {
  ir_stmt *s = ir_new(st->k, op, t, nops, ops);
  s->loc = pos->loc;
  ir_insert_before(pos, s);
  return s;
}

static ir_stmt *new_const(simp *st, ir_stmt *pos, ir_type t, int64_t v) {
  ir_stmt *c = new_before(st, pos, IR_const, t, 0, NULL);
  ir_scalar_to_const(c, ir_scalar_int(t, v)); /* wraps to t's width */
  return c;
}

/* s's value is x: its users read x from now on. */
static void replace(simp *st, ir_stmt *s, ir_stmt *x) {
  st->repl[s->id] = x;
  ir_remove(s);
  st->changed = true;
}

static void to_const(simp *st, ir_stmt *s, int64_t v) {
  s->op = IR_const;
  s->nops = 0;
  s->ops[0] = s->ops[1] = NULL;
  ir_scalar_to_const(s, ir_scalar_int(s->type, v));
  st->changed = true;
}

/* a = x + c or x - c or c + x (integers): *x and the signed offset *c. */
static bool offset_of(const ir_stmt *a, ir_stmt **x, int64_t *c) {
  if (!a || (a->op != IR_add && a->op != IR_sub) || a->nops != 2 || !is_index_type(a->type)) return false;
  if (const_int(a->ops[1], c)) {
    *x = a->ops[0];
    if (a->op == IR_sub) *c = (int64_t)(0 - (uint64_t)*c);
    return true;
  }
  if (a->op == IR_add && const_int(a->ops[0], c)) {
    *x = a->ops[1];
    return true;
  }
  return false;
}

/* (x + c1) + c2 and friends -> x + (c1 + c2); x + 0 -> x. Returns true when
** s was removed. */
static bool merge_offsets(simp *st, ir_stmt *s) {
  ir_stmt *a, *x;
  int64_t c2, c1;
  if (!offset_of(s, &a, &c2)) return false;
  int64_t c = c2;
  if (offset_of(a, &x, &c1) && x->type == s->type) {
    c = (int64_t)((uint64_t)c1 + (uint64_t)c2);
    a = x;
  } else if (c2 != 0 || a->type != s->type) {
    return false; /* nothing to merge */
  }
  if (ir_scalar_int(s->type, c).i == 0) {
    replace(st, s, a);
    return true;
  }
  if (s->op == IR_add && s->ops[0] == a && s->ops[1]->op == IR_const && s->ops[1]->imm.ival == c) return false;
  s->op = IR_add;
  s->ops[0] = a;
  s->ops[1] = new_const(st, s, s->type, c);
  st->changed = true;
  return false;
}

static bool is_pow2(int64_t c, int *k) {
  if (c <= 0 || (c & (c - 1))) return false;
  *k = 0;
  while (((int64_t)1 << *k) != c) (*k)++;
  return true;
}

static ir_type unsigned_of(ir_type t) {
  switch (t) {
  case IR_i8: return IR_u8;
  case IR_i16: return IR_u16;
  case IR_i32: return IR_u32;
  case IR_i64: return IR_u64;
  default: return t;
  }
}

/* a // c, a % c with a constant c > 0. Returns true when s was removed. */
static bool divmod(simp *st, ir_stmt *s) {
  int64_t c, m;
  int k;
  ir_stmt *a = s->ops[0];
  if (!is_index_type(s->type) || !const_int(s->ops[1], &c) || c <= 0) return false;
  range ra = get(st, a);
  bool mod = s->op == IR_mod;
  if (ra.known && ra.lo >= 0 && ra.hi < c) {
    if (mod) replace(st, s, a);
    else to_const(st, s, 0);
    return mod;
  }
  /* (x * c) // c, (x * c) % c without wrapping */
  if (a->op == IR_mul && a->type == s->type) {
    ir_stmt *x = NULL;
    if (const_int(a->ops[1], &m) && m == c) x = a->ops[0];
    else if (const_int(a->ops[0], &m) && m == c) x = a->ops[1];
    if (x && get(st, a).known) {
      if (mod) to_const(st, s, 0);
      else replace(st, s, x);
      return !mod;
    }
  }
  bool nonneg = !ir_type_is_signed(s->type) || (ra.known && ra.lo >= 0);
  if (is_pow2(c, &k)) {
    if (mod) {
      s->op = IR_bit_and;
      s->ops[1] = new_const(st, s, s->type, c - 1);
      st->changed = true;
    } else if (nonneg) {
      s->op = IR_shr;
      s->ops[1] = new_const(st, s, s->type, k);
      st->changed = true;
    }
    return false;
  }
  if (nonneg && ir_type_is_signed(s->type)) {
    ir_type u = unsigned_of(s->type);
    ir_stmt *ua = new_before(st, s, IR_cast, u, 1, &a);
    ir_stmt *ops[2] = {ua, new_const(st, s, u, c)};
    ir_stmt *q = new_before(st, s, s->op, u, 2, ops);
    s->op = IR_cast;
    s->nops = 1;
    s->ops[0] = q;
    s->ops[1] = NULL;
    st->changed = true;
  }
  return false;
}

static void simp_block(simp *st, ir_block *blk) {
  ir_stmt *next;
  for (ir_stmt *s = blk ? blk->first : NULL; s; s = next) {
    next = s->next;
    ir_remap_operands(s, st->repl, st->n);
    if (s->id >= 0 && s->id < st->n) {
      st->r[s->id] = compute(st, s); /* the value stays what it is: so does its range */
      bool removed = false;
      if (s->op == IR_add || s->op == IR_sub) removed = merge_offsets(st, s);
      else if (s->op == IR_floordiv || s->op == IR_mod) removed = divmod(st, s);
      if (removed) continue;
    }
    simp_block(st, s->blocks[0]);
    simp_block(st, s->blocks[1]);
  }
}

bool ir_pass_simplify_index(ir_kernel *k) {
  ir_number(k);
  simp st = {.k = k, .n = k->next_id};
  size_t n = st.n > 0 ? (size_t)st.n : 1;
  st.r = ir_alloc(k, n * sizeof *st.r);
  st.repl = ir_alloc(k, n * sizeof *st.repl);
  simp_block(&st, k->body);
  return st.changed;
}
