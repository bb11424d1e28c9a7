/*
** affine.c -- field indices as "value + constant" (affine.h).
**
** Only additions and subtractions of integer constants are peeled off, and
** integer conversions looked through; everything else is a base, compared
** structurally. That is all the global-data-access rule needs for the usual
** state-per-step fields (x[s][i] read, x[s + 1][i] written): anything the
** analysis cannot see through stays "may overlap", which the callers refuse.
*/
#include "affine.h"

#include <stddef.h>

static bool is_int(ir_type t) { return t != IR_void && !ir_type_is_float(t) && t != IR_i1; }

/* The one value stored into global temporary `off` by a serial task, or NULL
** (none, several, or written otherwise). */
typedef struct {
  int off;
  const ir_stmt *value;
  int writes;
} tmp_scan;

static void scan_tmp(ir_stmt *s, void *ud) {
  tmp_scan *t = ud;
  unsigned f = ir_op_flags(s->op);
  if (!(f & IR_STORE) || !s->ops[0] || s->ops[0]->op != IR_global_tmp || s->ops[0]->aux != t->off) return;
  t->writes++;
  const ir_stmt *owner = s->parent ? s->parent->owner : NULL;
  t->value = s->op == IR_global_store && owner && owner->op == IR_task_serial ? s->ops[1] : NULL;
}

static const ir_stmt *tmp_value(const ir_kernel *k, const ir_stmt *load) {
  tmp_scan t = {load->ops[0]->aux, NULL, 0};
  ir_walk(k->body, scan_tmp, &t);
  return t.writes == 1 ? t.value : NULL;
}

/* s with integer conversions and resolvable global temporaries looked through */
static const ir_stmt *through(const ir_kernel *k, const ir_stmt *s) {
  for (int guard = 0; s && guard < 64; guard++) {
    if (s->op == IR_cast && is_int(s->type) && is_int(s->ops[0]->type)) {
      s = s->ops[0];
    } else if (s->op == IR_global_load && s->ops[0]->op == IR_global_tmp) {
      const ir_stmt *v = tmp_value(k, s);
      if (!v) return s;
      s = v;
    } else {
      return s;
    }
  }
  return s;
}

static bool is_const_int(const ir_stmt *s) { return s->op == IR_const && is_int(s->type); }

/* Whether s depends on arguments and constants only (depth-limited). */
static bool uniform(const ir_kernel *k, const ir_stmt *s, int depth) {
  s = through(k, s);
  if (depth > 32) return false;
  if (s->op == IR_const || s->op == IR_arg) return true;
  /* loop indices, loads, random draws ... vary; so does anything made from them */
  if (!(ir_op_flags(s->op) & IR_PURE) || s->nops == 0 || s->op == IR_global_ptr || s->op == IR_global_tmp)
    return false;
  for (int i = 0; i < s->nops; i++)
    if (!s->ops[i] || !uniform(k, s->ops[i], depth + 1)) return false;
  return true;
}

ir_affine ir_affine_of(const ir_kernel *k, const ir_stmt *s) {
  int64_t c = 0;
  for (int guard = 0; guard < 64; guard++) {
    s = through(k, s);
    if ((s->op == IR_add || s->op == IR_sub) && is_int(s->type)) {
      const ir_stmt *x = through(k, s->ops[0]), *y = through(k, s->ops[1]);
      if (is_const_int(y)) {
        c += s->op == IR_add ? y->imm.ival : -y->imm.ival;
        s = x;
        continue;
      }
      if (s->op == IR_add && is_const_int(x)) {
        c += x->imm.ival;
        s = y;
        continue;
      }
    }
    break;
  }
  if (is_const_int(s)) return (ir_affine){NULL, c + s->imm.ival, true};
  return (ir_affine){s, c, uniform(k, s, 0)};
}

static bool same(const ir_kernel *k, const ir_stmt *a, const ir_stmt *b, int depth) {
  a = through(k, a);
  b = through(k, b);
  if (a == b) return true;
  if (depth > 32 || a->op != b->op || a->type != b->type || a->nops != b->nops || a->aux != b->aux) return false;
  if (a->op == IR_const) return a->imm.ival == b->imm.ival;
  if (a->op == IR_arg) return true;
  if (!(ir_op_flags(a->op) & IR_PURE) || a->nops == 0 || a->op == IR_global_ptr || a->op == IR_global_tmp)
    return false;                  /* a loop index is only itself (a == b above) */
  for (int i = 0; i < a->nops; i++)
    if (!a->ops[i] || !b->ops[i] || !same(k, a->ops[i], b->ops[i], depth + 1)) return false;
  return true;
}

bool ir_same_value(const ir_kernel *k, const ir_stmt *a, const ir_stmt *b) { return same(k, a, b, 0); }

bool ir_accesses_disjoint(const ir_kernel *k, const ir_stmt *p, const ir_stmt *q) {
  if (!p || !q || p->op != IR_global_ptr || q->op != IR_global_ptr) return false;
  if (p->aux != q->aux) return true;
  if (p->nops != q->nops) return false;
  for (int i = 0; i < p->nops; i++) {
    ir_affine a = ir_affine_of(k, p->ops[i]), b = ir_affine_of(k, q->ops[i]);
    if (!a.uniform || !b.uniform || a.c == b.c) continue;
    if (a.base == NULL ? b.base == NULL : b.base && ir_same_value(k, a.base, b.base)) return true;
  }
  return false;
}
