/*
** cse.c -- reuse an earlier identical pure statement visible from here.
**
** Two statements are identical when op, type, aux, imm, loop and operands
** match (constants compare by the bits of their value, so 0.0 and -0.0 stay
** apart). A statement is visible from a later one when it is earlier in the
** same block or earlier in an enclosing block, so the walk keeps a scoped hash
** table: entering a block remembers the table's size, leaving it pops back,
** and a sibling block never sees the other's statements.
**
** Only ops flagged P in ops.def take part: local_load and global_load read
** memory that stores may change, so they are not merged here.
*/
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  ir_kernel *k;
  ir_stmt **repl;       /* by statement id: the statement that replaced it */
  int nstmts;
  ir_stmt **ent;        /* visible pure statements, a stack */
  int *chain;           /* next entry in the same bucket, or -1 */
  int nent;
  int *bucket;          /* head entry per bucket, or -1 */
  size_t nbuckets;      /* power of 2 */
  bool changed;
} cse_state;

static size_t hash(const ir_stmt *s) {
  uint64_t h = (uint64_t)s->op * 0x9E3779B97F4A7C15u ^ (uint64_t)s->type << 7 ^
               (uint64_t)(uint32_t)s->aux << 17;
  uint64_t bits;
  memcpy(&bits, &s->imm, sizeof bits);
  h = (h ^ bits) * 0xff51afd7ed558ccdu;
  for (int i = 0; i < s->nops; i++) h = (h ^ (uint64_t)(uintptr_t)s->ops[i]) * 0xc4ceb9fe1a85ec53u;
  h ^= (uint64_t)(uintptr_t)s->loop;
  return (size_t)(h ^ (h >> 29));
}

static bool same(const ir_stmt *a, const ir_stmt *b) {
  if (a->op != b->op || a->type != b->type || a->aux != b->aux || a->nops != b->nops ||
      a->loop != b->loop || memcmp(&a->imm, &b->imm, sizeof a->imm) != 0)
    return false;
  for (int i = 0; i < a->nops; i++)
    if (a->ops[i] != b->ops[i]) return false;
  return true;
}

static void cse_block(cse_state *st, ir_block *blk) {
  if (!blk) return;
  int mark = st->nent;
  ir_stmt *next;
  for (ir_stmt *s = blk->first; s; s = next) {
    next = s->next;
    for (int i = 0; i < s->nops; i++) {
      ir_stmt *o = s->ops[i];
      if (o && o->id >= 0 && o->id < st->nstmts && st->repl[o->id]) s->ops[i] = st->repl[o->id];
    }
    if ((ir_op_flags(s->op) & (IR_PURE | IR_BLOCKS)) == IR_PURE) {
      size_t b = hash(s) & (st->nbuckets - 1);
      ir_stmt *found = NULL;
      for (int e = st->bucket[b]; e >= 0; e = st->chain[e])
        if (same(st->ent[e], s)) {
          found = st->ent[e];
          break;
        }
      if (found) {
        st->repl[s->id] = found;
        ir_remove(s);
        st->changed = true;
        continue;
      }
      st->ent[st->nent] = s;
      st->chain[st->nent] = st->bucket[b];
      st->bucket[b] = st->nent++;
    }
    cse_block(st, s->blocks[0]);
    cse_block(st, s->blocks[1]);
  }
  /* leave the block: pop its entries (each is the head of its bucket) */
  while (st->nent > mark) {
    int e = --st->nent;
    size_t b = hash(st->ent[e]) & (st->nbuckets - 1);
    st->bucket[b] = st->chain[e];
  }
}

bool ir_pass_cse(ir_kernel *k) {
  ir_number(k); /* ids 0..n-1 index the replacement table */
  cse_state st = {.k = k, .nstmts = k->next_id};
  int n = st.nstmts > 0 ? st.nstmts : 1;
  st.nbuckets = 16;
  while (st.nbuckets < (size_t)n * 2) st.nbuckets <<= 1;
  st.repl = calloc((size_t)n, sizeof *st.repl);
  st.ent = malloc((size_t)n * sizeof *st.ent);
  st.chain = malloc((size_t)n * sizeof *st.chain);
  st.bucket = malloc(st.nbuckets * sizeof *st.bucket);
  if (!st.repl || !st.ent || !st.chain || !st.bucket) {
    free(st.repl), free(st.ent), free(st.chain), free(st.bucket);
    ir_fail(k, (ir_loc){0}, "cse: out of memory");
  }
  memset(st.bucket, -1, st.nbuckets * sizeof *st.bucket);
  cse_block(&st, k->body);
  free(st.repl), free(st.ent), free(st.chain), free(st.bucket);
  return st.changed;
}
