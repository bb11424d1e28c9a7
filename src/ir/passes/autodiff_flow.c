/*
** autodiff_flow.c -- the reverse-mode pass's control flow inside a kernel's
** loops (autodiff.c makes the rest of the adjoint): an `if`'s adjoint, an
** inner or while loop's adjoint, the copies of blocks they recompute, the
** locals' values saved before them, and the adjoint stack of the locals a
** loop carries.
*/
#include <stdio.h>
#include <string.h>

#include "autodiff_impl.h"
#include "passes.h"

/* ---- if and inner loops ---------------------------------------------------------
** The adjoint of `if c then A else B end` is `if c then A' else B' end`,
** where A' restores the locals the `if` uses to their values before it,
** recomputes A (a copy: the forward code's values inside A are out of
** reach after it) and then runs A's adjoint in reverse. An inner loop's
** adjoint is the same loop whose body restores, recomputes and runs the
** body's adjoint; its iterations are independent (a local carried from one
** to the next is refused, but for sums v = v + term, whose adjoint needs no
** value), so they may run in any order. */

typedef struct {
  ad *a;
  ir_stmt *at;                     /* the if */
  saveset *set;
  int cap;
} store_scan;


static void note_store(ir_stmt *t, void *ud) {
  store_scan *sc = ud;
  if (t->op != IR_local_store && t->op != IR_local_load) return;
  ir_stmt *var = t->ops[0];
  if (ad_within(var->parent, sc->at)) return;   /* its own local */
  /* a kernel-level local read by a loop keeps its value there (loops do not change it but by sums) */
  if (!var->parent->owner && ad_in_loop(sc->at)) return;
  /* a sum a loop adds to: its adjoint needs no value (and the loop reads it only to add) */
  if (t->op == IR_local_store ? ad_is_reduction(t) : ad_in_reduction(t)) return;
  saveset *set = sc->set;
  for (int i = 0; i < set->n; i++)
    if (set->var[i] == var) return;
  if (set->n == sc->cap) {
    int cap = sc->cap ? 2 * sc->cap : 4;
    ir_stmt **nv = ir_alloc(sc->a->k, sizeof *nv * (size_t)cap), **nl = ir_alloc(sc->a->k, sizeof *nl * (size_t)cap);
    for (int i = 0; i < set->n; i++) nv[i] = set->var[i];
    set->var = nv;
    set->val = nl;
    sc->cap = cap;
  }
  set->var[set->n++] = var;
}

/* Before every `if` and inner loop in blk (and in its blocks): a load of
** each local from outside it that it reads or stores, its value before it
** (ad_info()->saves): the adjoint recomputes the statement from there. */
void ad_insert_saves(ad *a, ir_block *blk) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) ad_insert_saves(a, s->blocks[b]);
    bool inner = (s->op == IR_range_for || s->op == IR_struct_for || s->op == IR_while) && blk->owner;
    if (s->op != IR_if && !inner) continue;
    saveset *set = ir_alloc(a->k, sizeof *set);
    store_scan sc = {a, s, set, 0};
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) ir_walk(s->blocks[b], note_store, &sc);
    for (int i = 0; i < set->n; i++) {
      ir_stmt *op[1] = {set->var[i]};
      set->val[i] = ir_new(a->k, IR_local_load, set->var[i]->type, 1, op);
      set->val[i]->loc = s->loc;
      ir_insert_before(s, set->val[i]);
    }
    ad_info(a, s)->saves = set;
  }
}

/* ---- carried locals: the adjoint stack ------------------------------------------ */

typedef struct {
  ad *a;
  ir_stmt *loop;
  carry *c;
  int cap;
} carry_scan;

static void note_carried(ir_stmt *t, void *ud) {
  carry_scan *sc = ud;
  if (t->op != IR_local_store || ad_is_reduction(t)) return;
  ir_stmt *var = t->ops[0];
  if (ad_within(var->parent, sc->loop) || !var->parent->owner) return;   /* its own; kernel-level: refused */
  carry *c = sc->c;
  for (int i = 0; i < c->n; i++)
    if (c->var[i] == var) return;
  if (c->n == sc->cap) {
    int cap = sc->cap ? 2 * sc->cap : 4;
    ir_stmt **v[3];
    for (int j = 0; j < 3; j++) v[j] = ir_alloc(sc->a->k, sizeof *v[j] * (size_t)cap);
    for (int i = 0; i < c->n; i++) v[0][i] = c->var[i], v[1][i] = c->stack[i], v[2][i] = c->push[i];
    c->var = v[0], c->stack = v[1], c->push = v[2];
    sc->cap = cap;
  }
  c->var[c->n++] = var;
}

static ir_stmt *mk(ir_kernel *k, ir_op op, ir_type t, int n, ir_stmt *a0, ir_stmt *a1, ir_loc loc) {
  ir_stmt *ops[2] = {a0, a1};
  ir_stmt *s = ir_new(k, op, t, n, ops);
  s->loc = loc;
  return s;
}

/* Before inner loop L: an adstack per local it carries; at the start of
** each full iteration (a while loop: after its test) a push of each one's
** value; a while loop also counts its full iterations. */
static void insert_carry(ad *a, ir_stmt *L) {
  ir_kernel *k = a->k;
  carry *c = ir_alloc(k, sizeof *c);
  carry_scan sc = {a, L, c, 0};
  ir_walk(L->blocks[0], note_carried, &sc);
  if (c->n == 0 && L->op != IR_while) return;
  if (c->n && !c->stack) c->stack = c->push = c->var;   /* (never: cap > 0 when n > 0) */
  ir_stmt *at = L->op == IR_while ? (c->exit = ad_while_exit(L))->next : L->blocks[0]->first;
  char msg[400];
  int cap = k->ad_stack > 0 ? k->ad_stack : 1024;
  snprintf(msg, sizeof msg, "\1kernel %s: the adjoint stack of the loop at line %d holds %d values of each local the "
           "loop carries, and the loop ran more iterations; raise lt.init{ad_stack_size = ...}", k->name,
           L->loc.line, cap);
  int str = ir_kernel_add_string(k, msg);
  for (int i = 0; i < c->n; i++) {
    ir_stmt *st = mk(k, IR_adstack, c->var[i]->type, 0, NULL, NULL, L->loc);
    st->imm.ival = cap;
    ir_insert_before(L, st);
    c->stack[i] = st;
    ir_stmt *ld = mk(k, IR_local_load, c->var[i]->type, 1, c->var[i], NULL, L->loc);
    ir_stmt *push = mk(k, IR_adstack_push, IR_void, 2, st, ld, L->loc);
    push->aux = str;
    if (at) {
      ir_insert_before(at, ld);
      ir_insert_before(at, push);
    } else {
      ir_append(L->blocks[0], ld);
      ir_append(L->blocks[0], push);
    }
    c->push[i] = push;
  }
  if (L->op == IR_while) {         /* count += 1 where the pushes are */
    c->count = mk(k, IR_alloca, IR_i32, 0, NULL, NULL, L->loc);
    ir_insert_before(L, c->count);
    ir_stmt *ld = mk(k, IR_local_load, IR_i32, 1, c->count, NULL, L->loc);
    ir_stmt *one = mk(k, IR_const, IR_i32, 0, NULL, NULL, L->loc);
    one->imm.ival = 1;
    ir_stmt *inc = mk(k, IR_add, IR_i32, 2, ld, one, L->loc);
    c->count_store = mk(k, IR_local_store, IR_void, 2, c->count, inc, L->loc);
    ir_stmt *seq[4] = {ld, one, inc, c->count_store};
    for (int i = 0; i < 4; i++) {
      if (at) ir_insert_before(at, seq[i]);
      else ir_append(L->blocks[0], seq[i]);
    }
  }
  ad_info(a, L)->carry = c;
}

/* insert_carry for every inner loop in blk (at any depth) */
void ad_insert_carries(ad *a, ir_block *blk) {
  for (ir_stmt *s = blk->first; s; s = s->next) {
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) ad_insert_carries(a, s->blocks[b]);
    if ((s->op == IR_range_for || s->op == IR_while) && blk->owner) insert_carry(a, s);
  }
}

static ir_stmt *copy_of(ad *a, ir_stmt *s) {
  if (!s) return NULL;
  info *i = ad_info(a, s);
  return i->copy_gen == a->gen && i->copy ? i->copy : s;
}

/* Copies of the statements of src appended to dst (blocks included); the
** copies keep the originals' activity. Returns them in order (*n). */
static void clone_block(ad *a, ir_block *src, ir_block *dst) {
  for (ir_stmt *s = src->first; s; s = s->next) {
    info *pre = ad_info(a, s);
    if (pre->copy_gen == a->gen && pre->copy) continue;   /* mapped before: a reversed loop index */
    ir_stmt *ops[IR_MAX_OPS];
    for (int i = 0; i < s->nops; i++) ops[i] = copy_of(a, s->ops[i]);
    ir_stmt *c = ir_new(a->k, s->op, s->type, s->nops, ops);
    c->imm = s->imm;
    c->aux = s->aux;
    c->range = s->range;
    c->loc = s->loc;
    c->loop = copy_of(a, s->loop);
    ir_append(dst, c);
    info *si = ad_info(a, s), *ci = ad_info(a, c);
    si = ad_info(a, s);                /* ad_info(c) may have moved the array */
    ci->active = si->active;
    si->copy = c;
    si->copy_gen = a->gen;
    for (int b = 0; b < 2; b++)
      if (s->blocks[b]) {
        c->blocks[b] = ir_block_new(a->k, c);
        clone_block(a, s->blocks[b], c->blocks[b]);
      }
    si = ad_info(a, s);
    if (si->saves) {               /* its save loads came before it: copied already */
      saveset *set = ir_alloc(a->k, sizeof *set);
      set->n = si->saves->n;
      set->var = ir_alloc(a->k, sizeof *set->var * (size_t)(set->n ? set->n : 1));
      set->val = ir_alloc(a->k, sizeof *set->val * (size_t)(set->n ? set->n : 1));
      for (int i = 0; i < set->n; i++) {
        set->var[i] = copy_of(a, si->saves->var[i]);
        set->val[i] = copy_of(a, si->saves->val[i]);
      }
      ad_info(a, c)->saves = set;
    }
    si = ad_info(a, s);
    if (si->carry) {               /* its stacks, pushes and counter came before or inside it: copied already */
      const carry *o = si->carry;
      carry *n = ir_alloc(a->k, sizeof *n);
      *n = *o;
      n->var = ir_alloc(a->k, sizeof *n->var * (size_t)(o->n ? o->n : 1));
      n->stack = ir_alloc(a->k, sizeof *n->stack * (size_t)(o->n ? o->n : 1));
      n->push = ir_alloc(a->k, sizeof *n->push * (size_t)(o->n ? o->n : 1));
      for (int i = 0; i < o->n; i++) {
        n->var[i] = copy_of(a, o->var[i]);
        n->stack[i] = copy_of(a, o->stack[i]);
        n->push[i] = copy_of(a, o->push[i]);
      }
      n->count = copy_of(a, o->count);
      n->count_store = copy_of(a, o->count_store);
      n->exit = copy_of(a, o->exit);
      ad_info(a, c)->carry = n;
    }
  }
}


void ad_adjoint_if(ad *a, ir_stmt *s) {
  ir_builder outer = a->b;
  const saveset *set = ad_info(a, s)->saves;
  a->b.loc = s->loc;
  ir_stmt *nif = ir_b_if(&a->b, s->ops[0], s->blocks[1] != NULL);
  for (int b = 0; b < 2; b++) {
    if (!s->blocks[b]) continue;
    ir_block *dst = nif->blocks[b];
    a->b = (ir_builder){a->k, dst, s->loc};
    for (int i = 0; set && i < set->n; i++) ir_b_local_store(&a->b, set->var[i], set->val[i]);
    ir_stmt *from = dst->last;     /* the copies follow the restores */
    a->gen++;
    clone_block(a, s->blocks[b], dst);
    int n = 0;
    for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) n++;
    ir_stmt **v = ir_alloc(a->k, sizeof *v * (size_t)(n ? n : 1));
    n = 0;
    for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) v[n++] = t;
    a->b = (ir_builder){a->k, dst, s->loc};
    ad_adjoint_list(a, v, n);
    ad_drop_writes(v, n);
  }
  a->b = outer;
}

typedef struct {
  ad *a;
  ir_stmt *loop, *ri;
} index_scan;

static void map_index(ir_stmt *t, void *ud) {
  index_scan *sc = ud;
  if (t->op != IR_loop_index || t->loop != sc->loop) return;
  info *i = ad_info(sc->a, t);
  i->copy = sc->ri;
  i->copy_gen = sc->a->gen;
}

void ad_adjoint_loop(ad *a, ir_stmt *s) {
  if (s->op == IR_struct_for) ad_unsupported(a->k, s, "a struct-for inside a loop");
  ir_kernel *k = a->k;
  ir_builder outer = a->b;
  const saveset *set = ad_info(a, s)->saves;
  const carry *cr = ad_info(a, s)->carry;
  ir_builder *b = &a->b;
  b->loc = s->loc;
  ir_stmt *begin, *end;
  if (s->op == IR_while) {         /* as many iterations as ran in full */
    begin = ir_b_const_int(b, IR_i32, 0);
    end = ir_b_local_load(b, cr->count);
  } else {
    begin = s->ops[0];
    end = s->ops[1];
  }
  ir_stmt *nl = ir_b_range_for(b, begin, end);
  nl->aux = s->aux;
  nl->imm = s->imm;
  ir_block *dst = nl->blocks[0];
  *b = (ir_builder){k, dst, s->loc};
  a->gen++;
  if (s->op == IR_range_for && cr) {   /* last iteration first: the stacks pop in that order */
    ir_stmt *li = ir_b_loop_index(b, nl);
    ir_stmt *last = ir_b_binary(b, IR_sub, ir_b_binary(b, IR_add, begin, end), ir_b_const_int(b, begin->type, 1));
    index_scan sc = {a, s, ir_b_binary(b, IR_sub, last, li)};
    ir_walk(s->blocks[0], map_index, &sc);
  } else {
    info *si = ad_info(a, s);
    si->copy = nl;                 /* the copies' loop indices read the new loop */
    si->copy_gen = a->gen;
  }
  for (int i = 0; set && i < set->n; i++) ir_b_local_store(b, set->var[i], set->val[i]);
  for (int i = 0; cr && i < cr->n; i++) {   /* the carried locals as this iteration began */
    ir_stmt *ops[1] = {cr->stack[i]};
    ir_b_local_store(b, cr->var[i], ir_b_op(b, IR_adstack_top, cr->var[i]->type, 1, ops));
    ir_b_op(b, IR_adstack_pop, IR_void, 1, ops);
  }
  ir_stmt *from = dst->last;
  clone_block(a, s->blocks[0], dst);
  /* the forward's own bookkeeping and a while loop's test are not part of an iteration's adjoint */
  for (int i = 0; cr && i < cr->n + 2; i++) {
    ir_stmt *o = i < cr->n ? cr->push[i] : i == cr->n ? cr->count_store : cr->exit;
    if (!o) continue;
    info *oi = ad_info(a, o);
    if (oi->copy_gen == a->gen && oi->copy && oi->copy->parent == dst) ir_remove(oi->copy);
  }
  int n = 0;
  for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) n++;
  ir_stmt **v = ir_alloc(k, sizeof *v * (size_t)(n ? n : 1));
  n = 0;
  for (ir_stmt *t = from ? from->next : dst->first; t; t = t->next) v[n++] = t;
  *b = (ir_builder){k, dst, s->loc};
  ad_adjoint_list(a, v, n);
  ad_drop_writes(v, n);
  a->b = outer;
}

