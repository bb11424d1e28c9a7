/*
** mem2reg.c -- forward stored values of mutable locals to their loads; drop
** dead stores and unread locals.
**
** The IR has no phi nodes: a local (alloca) whose value merges from two
** paths (after an `if` that stores in one branch, at the top of a loop body
** that stores it) must stay in memory. What can become an SSA value is a load
** with exactly one reaching value, and that is what this pass finds, in two
** walks over the structured code:
**
**  1. forward: the known value of each local (the value last stored, zero
**     right after its alloca, or an earlier load of it) flows down each block;
**     a load of a known value is replaced by it. An `if` merges its branches
**     (a branch that ends in a jump does not fall through and does not
**     count): a value they agree on stays known; two different values become
**     a `select` on the `if`'s condition placed after it, when both can be
**     had before the `if` (a value must be visible where it is used, so a
**     few pure statements computing it may move out of its branch: they
**     cannot fault); otherwise the local is unknown. A loop forgets, on entry
**     and after it, every local stored anywhere in its body: a later
**     iteration (or the code after the loop) may see that store.
**  2. backward: liveness; a store whose local is not read before the next
**     store (or the local's end) is removed. Liveness over a loop is
**     over-approximated: every local loaded anywhere in the loop counts as
**     live throughout it.
**
** Then a local without loads disappears with its stores.
**
** Which locals: an alloca used only as the local of local_load/local_store
** (anything else might take its address). Before offload, a kernel-level
** local stored inside a top-level range_for/struct_for is left alone: it
** becomes a global temporary shared by the loop's threads, which the reduce
** pass turns into atomics (`s = s + v`). After offload every remaining
** alloca is private to its task (shared ones became global_tmp, which is
** memory, not a local), and each task is walked with an empty state.
*/
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  ir_kernel *k;
  int n;                /* statement ids 0..n-1 (ir_number) */
  int *slot;            /* by id: index of a promotable alloca, or -1 */
  int m;                /* promotable allocas */
  ir_stmt **repl;       /* by id: the value a removed load was replaced by */
  void *spare;          /* scratch arrays given back (a list through their first word) */
  bool changed;
} m2r;

/* The state's mark for "zero, as the alloca left it". */
static ir_stmt zero_mark;
#define ZERO (&zero_mark)

static int slot_of(const m2r *st, const ir_stmt *v) {
  return v && v->id >= 0 && v->id < st->n ? st->slot[v->id] : -1;
}

static void *xalloc(m2r *st, size_t n, size_t size) {
  return ir_alloc(st->k, (n ? n : 1) * size);  /* arena: nothing leaks on ir_fail */
}

/* A zeroed scratch array of m states (or m flags), reused once given back:
** the walks need one or two per level of nesting, not one per `if`. */
static void *take(m2r *st) {
  size_t bytes = (size_t)(st->m > 0 ? st->m : 1) * sizeof(ir_stmt *);
  void *p = st->spare;
  if (p) memcpy(&st->spare, p, sizeof st->spare);
  else p = ir_alloc(st->k, bytes);
  memset(p, 0, bytes);
  return p;
}

static void give(m2r *st, void *p) {
  memcpy(p, &st->spare, sizeof st->spare);
  st->spare = p;
}

/* ---- which allocas ---------------------------------------------------------- */

static void find_allocas(m2r *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_alloca && s->id >= 0 && s->id < st->n) st->slot[s->id] = 0;
    find_allocas(st, s->blocks[0]);
    find_allocas(st, s->blocks[1]);
  }
}

/* An alloca used any other way than as the local of a load or store loses
** its candidacy (slot -1). */
static void check_uses(m2r *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int i = 0; i < s->nops; i++) {
      ir_stmt *o = s->ops[i];
      if (!o || o->op != IR_alloca || o->id < 0 || o->id >= st->n) continue;
      bool ok = i == 0 && (s->op == IR_local_load || s->op == IR_local_store);
      if (!ok) st->slot[o->id] = -1;
    }
    check_uses(st, s->blocks[0]);
    check_uses(st, s->blocks[1]);
  }
}

/* Marks kernel-level allocas stored anywhere in blk (a parallel loop's body). */
static void exclude_stored(m2r *st, ir_block *blk) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    if (s->op == IR_local_store) {
      ir_stmt *v = s->ops[0];
      if (v->parent == st->k->body && v->id >= 0 && v->id < st->n) st->slot[v->id] = -1;
    }
    exclude_stored(st, s->blocks[0]);
    exclude_stored(st, s->blocks[1]);
  }
}

static void choose(m2r *st) {
  ir_kernel *k = st->k;
  for (int i = 0; i < st->n; i++) st->slot[i] = -1;
  find_allocas(st, k->body);
  check_uses(st, k->body);
  if (!k->offloaded)
    for (ir_stmt *s = k->body->first; s; s = s->next)
      if (s->op == IR_range_for || s->op == IR_struct_for) exclude_stored(st, s->blocks[0]);
  st->m = 0;
  for (int i = 0; i < st->n; i++)
    if (st->slot[i] == 0) st->slot[i] = st->m++;
}

/* ---- 1. forward: known values ------------------------------------------------ */

/* Is v usable in block blk: defined in blk or in a block enclosing it. */
static bool visible(const ir_stmt *v, const ir_block *blk) {
  if (v == ZERO) return true;
  for (const ir_block *b = blk; b; b = b->owner ? b->owner->parent : NULL)
    if (v->parent == b) return true;
  return false;
}

/* Slots stored anywhere in blk get no known value in `state`. */
static void kill_stored(m2r *st, ir_block *blk, ir_stmt **state) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    int sl = s->op == IR_local_store ? slot_of(st, s->ops[0]) : -1;
    if (sl >= 0) state[sl] = NULL;
    kill_stored(st, s->blocks[0], state);
    kill_stored(st, s->blocks[1], state);
  }
}

static bool fwd_block(m2r *st, ir_block *blk, ir_stmt **state);

/* The load s reads the value v: replace it. */
static void forward(m2r *st, ir_stmt *s, ir_stmt *v) {
  st->changed = true;
  if (v == ZERO) {
    /* becomes the constant in place: its users need no rewriting */
    s->op = IR_const;
    s->nops = 0;
    s->ops[0] = NULL;
    if (ir_type_is_float(s->type)) s->imm.fval = 0.0;
    else s->imm.ival = 0;
    return;
  }
  st->repl[s->id] = v;
  ir_remove(s);
}

/* ---- merging an if's branches with select ------------------------------------- */

/* At most this many pure statements move out of an `if`'s branches so that
** its stores can become a select: they then run whether or not the branch
** is taken. */
#define SPECULATE_MAX 8

/* How far after an `if` to look for loads that would read its select. */
#define SCAN_MAX 4096

typedef struct {
  ir_stmt *s[SPECULATE_MAX];
  int n;
} chain;

/* Marks in `set` the locals loaded by x or inside it (unless `stored` says a
** store came first), counting down *budget. */
static void loads_in(m2r *st, ir_stmt *x, bool *set, const bool *stored, int *budget) {
  if (--*budget < 0) return;
  int sl = x->op == IR_local_load ? slot_of(st, x->ops[0]) : -1;
  if (sl >= 0 && !stored[sl]) set[sl] = true;
  for (int k = 0; k < 2; k++)
    for (ir_stmt *y = x->blocks[k] ? x->blocks[k]->first : NULL; y && *budget > 0; y = y->next)
      loads_in(st, y, set, stored, budget);
}

/* The locals that statements after s may load before storing them again (a
** store inside a nested block does not count as one): in s's block and, when
** that block is a branch, after the enclosing `if`s (up to a loop, whose top
** forgets the values anyway). */
static bool *loaded_later(m2r *st, ir_stmt *s) {
  bool *set = take(st), *stored = take(st);
  int budget = SCAN_MAX;
  for (ir_stmt *from = s; from && budget > 0;) {
    for (ir_stmt *x = from->next; x && budget > 0; x = x->next) {
      loads_in(st, x, set, stored, &budget);
      int sl = x->op == IR_local_store ? slot_of(st, x->ops[0]) : -1;
      if (sl >= 0) stored[sl] = true;
    }
    ir_stmt *owner = from->parent ? from->parent->owner : NULL;
    from = owner && owner->op == IR_if ? owner : NULL;
  }
  give(st, stored);
  return set;
}

static bool in_chain(const chain *c, const ir_stmt *x) {
  for (int i = 0; i < c->n; i++)
    if (c->s[i] == x) return true;
  return false;
}

/* Can v be had right before the `if` s: visible there already, or computed
** in branch block blk by pure statements (added to c) from such values.
** Pure statements cannot fault, so computing them unconditionally is safe;
** a global_ptr is left alone (under a sparse level it looks cells up). */
static bool available(ir_stmt *v, const ir_stmt *s, ir_block *blk, chain *c) {
  if (v == ZERO || visible(v, s->parent) || in_chain(c, v)) return true;
  unsigned f = ir_op_flags(v->op);
  if (!blk || v->parent != blk || (f & (IR_PURE | IR_BLOCKS)) != IR_PURE || v->op == IR_global_ptr)
    return false;
  for (int i = 0; i < v->nops; i++)
    if (!v->ops[i] || !available(v->ops[i], s, blk, c)) return false;
  if (c->n == SPECULATE_MAX) return false;
  c->s[c->n++] = v;
  return true;
}

/* Moves blk's statements that are in c in front of the `if` s, in order. */
static void speculate(ir_stmt *s, ir_block *blk, const chain *c) {
  ir_stmt *next;
  for (ir_stmt *x = blk ? blk->first : NULL; x; x = next) {
    next = x->next;
    if (!in_chain(c, x)) continue;
    ir_remove(x);
    ir_insert_before(s, x);
  }
}

static ir_stmt *value_of(m2r *st, ir_stmt *v, ir_type t, ir_stmt **after) {
  if (v != ZERO) return v;
  ir_stmt *z = ir_new(st->k, IR_const, t, 0, NULL);
  z->loc = (*after)->loc;
  if (ir_type_is_float(t)) z->imm.fval = 0.0;
  else z->imm.ival = 0;
  ir_insert_after(*after, z);
  *after = z;
  return z;
}

/* Both branches of s fall through with values vt and ve of a local: when
** both can be had before the `if` (moving at most SPECULATE_MAX pure
** statements out of the branches), the local is `select cond vt ve` after
** it. Returns that select, or NULL. */
static ir_stmt *merge_select(m2r *st, ir_stmt *s, ir_stmt *vt, ir_stmt *ve, ir_stmt **after) {
  chain ct = {.n = 0}, ce = {.n = 0};
  if (!available(vt, s, s->blocks[0], &ct) || !available(ve, s, s->blocks[1], &ce)) return NULL;
  if (ct.n + ce.n > SPECULATE_MAX) return NULL;
  speculate(s, s->blocks[0], &ct);
  speculate(s, s->blocks[1], &ce);
  ir_type t = vt != ZERO ? vt->type : ve->type;
  ir_stmt *ops[3] = {s->ops[0], value_of(st, vt, t, after), value_of(st, ve, t, after)};
  ir_stmt *sel = ir_new(st->k, IR_select, t, 3, ops);
  sel->loc = s->loc;
  ir_insert_after(*after, sel);
  *after = sel;
  st->changed = true;
  return sel;
}

/* if: each branch from a copy of the state. After it, a local keeps the
** value the falling-through branches agree on if it is visible there; when
** both fall through with different values, a select of the two (if both can
** be had before the `if` and a later statement of its block loads the local:
** a value only the next iteration of a loop reads would be forgotten at the
** loop's top anyway); else nothing is known. */
static bool fwd_if(m2r *st, ir_stmt *s, ir_stmt **state) {
  size_t bytes = (size_t)st->m * sizeof *state;
  ir_stmt **t = take(st), **e = take(st);
  memcpy(t, state, bytes);
  memcpy(e, state, bytes);
  bool ft = fwd_block(st, s->blocks[0], t);
  bool fe = s->blocks[1] ? fwd_block(st, s->blocks[1], e) : true;
  ir_stmt *after = s; /* selects go right after the if, in slot order */
  bool *wanted = NULL;  /* locals loaded later in s's block: worth a select */
  for (int i = 0; i < st->m && (ft || fe); i++) {
    ir_stmt *v = !ft ? e[i] : !fe ? t[i] : t[i] == e[i] ? t[i] : NULL;
    if (ft && fe && t[i] && e[i] && t[i] != e[i]) {
      if (!wanted) wanted = loaded_later(st, s);
      if (wanted[i]) v = merge_select(st, s, t[i], e[i], &after);
    }
    state[i] = v && visible(v, s->parent) ? v : NULL;
  }
  if (wanted) give(st, wanted);
  give(st, t);
  give(st, e);
  return ft || fe;
}

/* A loop, or any other statement owning blocks: what its blocks store is
** unknown on entry (a later iteration) and after it. */
static void fwd_loop(m2r *st, ir_stmt *s, ir_stmt **state) {
  kill_stored(st, s->blocks[0], state);
  kill_stored(st, s->blocks[1], state);
  ir_stmt **b = take(st);
  for (int k = 0; k < 2; k++) {
    if (!s->blocks[k]) continue;
    memcpy(b, state, (size_t)st->m * sizeof *b);
    fwd_block(st, s->blocks[k], b);
  }
  give(st, b);
}

/* Walks blk with `state` (updated to the state at its end); returns whether
** control can reach the end of blk. */
static bool fwd_block(m2r *st, ir_block *blk, ir_stmt **state) {
  bool falls = true;
  ir_stmt *next;
  for (ir_stmt *s = blk ? blk->first : NULL; s; s = next) {
    next = s->next;
    ir_remap_operands(s, st->repl, st->n);
    int sl = s->nops > 0 ? slot_of(st, s->ops[0]) : -1;
    unsigned f = ir_op_flags(s->op);
    if (s->op == IR_alloca && slot_of(st, s) >= 0) {
      state[slot_of(st, s)] = ZERO;
    } else if (s->op == IR_local_store && sl >= 0) {
      ir_stmt *v = s->ops[1];
      state[sl] = v && v->type == s->ops[0]->type ? v : NULL;
    } else if (s->op == IR_local_load && sl >= 0) {
      if (state[sl] && s->id >= 0 && s->id < st->n) forward(st, s, state[sl]);
      else state[sl] = s;
    } else if (f & IR_TASK) {
      /* locals never cross tasks: each starts from nothing known */
      if (s->blocks[0]) {
        ir_stmt **b = take(st);
        fwd_block(st, s->blocks[0], b);
        give(st, b);
      }
    } else if (s->op == IR_if) {
      if (!fwd_if(st, s, state)) falls = false;
    } else if (f & IR_BLOCKS) {
      fwd_loop(st, s, state);
    } else if (f & IR_JUMP) {
      falls = false; /* what follows in blk is unreachable; still rewritten */
    }
  }
  return falls;
}

/* ---- 2. backward: dead stores -------------------------------------------------- */

typedef struct loop_ctx {
  bool *at_break, *at_continue;  /* live sets where a break / continue goes */
  struct loop_ctx *up;
} loop_ctx;

static void loaded_in(m2r *st, ir_block *blk, bool *set) {
  if (!blk) return;
  for (ir_stmt *s = blk->first; s; s = s->next) {
    int sl = s->op == IR_local_load ? slot_of(st, s->ops[0]) : -1;
    if (sl >= 0) set[sl] = true;
    loaded_in(st, s->blocks[0], set);
    loaded_in(st, s->blocks[1], set);
  }
}

static bool *new_set(m2r *st) { return take(st); }
static void copy_set(m2r *st, bool *to, const bool *from) { memcpy(to, from, (size_t)st->m); }

static void live_block(m2r *st, ir_block *blk, bool *live, loop_ctx *loop);

static void live_loop(m2r *st, ir_stmt *s, bool *live, loop_ctx *up) {
  bool *around = new_set(st); /* live after the loop, plus whatever it loads */
  copy_set(st, around, live);
  loaded_in(st, s->blocks[0], around);
  loaded_in(st, s->blocks[1], around);
  loop_ctx ctx = {around, around, up};
  /* an owner of blocks that is not a loop (none today) keeps the jumps' targets */
  loop_ctx *inner = s->op == IR_while || s->op == IR_range_for ? &ctx : up;
  bool *b = new_set(st);
  for (int k = 1; k >= 0; k--) {
    if (!s->blocks[k]) continue;
    copy_set(st, b, around);
    live_block(st, s->blocks[k], b, inner);
    for (int i = 0; i < st->m; i++) around[i] |= b[i];
  }
  copy_set(st, live, around);
  give(st, b);
  give(st, around);
}

static void live_block(m2r *st, ir_block *blk, bool *live, loop_ctx *loop) {
  ir_stmt *prev;
  for (ir_stmt *s = blk ? blk->last : NULL; s; s = prev) {
    prev = s->prev;
    int sl = s->nops > 0 ? slot_of(st, s->ops[0]) : -1;
    unsigned f = ir_op_flags(s->op);
    if (s->op == IR_local_load && sl >= 0) {
      live[sl] = true;
    } else if (s->op == IR_local_store && sl >= 0) {
      if (!live[sl]) {
        ir_remove(s);
        st->changed = true;
      } else {
        live[sl] = false;
      }
    } else if (s->op == IR_alloca && slot_of(st, s) >= 0) {
      live[slot_of(st, s)] = false;
    } else if (f & IR_TASK) {
      if (s->blocks[0]) {
        bool *none = new_set(st);
        live_block(st, s->blocks[0], none, NULL);
        give(st, none);
      }
    } else if (s->op == IR_if) {
      bool *t = new_set(st);
      copy_set(st, t, live);
      live_block(st, s->blocks[0], t, loop);
      if (s->blocks[1]) live_block(st, s->blocks[1], live, loop);
      for (int i = 0; i < st->m; i++) live[i] |= t[i];
      give(st, t);
    } else if (f & IR_BLOCKS) {
      live_loop(st, s, live, loop);
    } else if (s->op == IR_return) {
      memset(live, 0, (size_t)st->m);
    } else if (s->op == IR_break || s->op == IR_continue) {
      if (loop) copy_set(st, live, s->op == IR_break ? loop->at_break : loop->at_continue);
      else memset(live, 1, (size_t)st->m); /* not in a loop: invalid IR; keep everything */
    }
  }
}

/* ---- 3. unread locals ------------------------------------------------------------ */

typedef struct {
  m2r *st;
  int *loads;
} load_count;

static void count_load(ir_stmt *s, void *ud) {
  load_count *lc = ud;
  int sl = s->op == IR_local_load ? slot_of(lc->st, s->ops[0]) : -1;
  if (sl >= 0) lc->loads[sl]++;
}

static void drop_unread(m2r *st, ir_block *blk, const int *loads) {
  if (!blk) return;
  ir_stmt *next;
  for (ir_stmt *s = blk->first; s; s = next) {
    next = s->next;
    int sl = s->op == IR_alloca ? slot_of(st, s) : s->op == IR_local_store ? slot_of(st, s->ops[0]) : -1;
    if (sl >= 0 && loads[sl] == 0) {
      ir_remove(s);
      st->changed = true;
      continue;
    }
    drop_unread(st, s->blocks[0], loads);
    drop_unread(st, s->blocks[1], loads);
  }
}

bool ir_pass_mem2reg(ir_kernel *k) {
  ir_number(k);
  m2r st = {.k = k, .n = k->next_id};
  st.slot = xalloc(&st, (size_t)st.n, sizeof *st.slot);
  st.repl = xalloc(&st, (size_t)st.n, sizeof *st.repl);
  choose(&st);
  if (st.m == 0) return false;

  fwd_block(&st, k->body, take(&st));
  live_block(&st, k->body, new_set(&st), NULL);

  load_count lc = {&st, xalloc(&st, (size_t)st.m, sizeof(int))};
  ir_walk(k->body, count_load, &lc);
  drop_unread(&st, k->body, lc.loads);
  return st.changed;
}
