/*
** constfold.c -- evaluate pure statements whose operands are constants.
**
** The arithmetic itself is fold_eval.c (shared with the code generator's
** tests). A folded statement becomes a `const` in place, so its users need no
** rewriting; a `select` with a constant condition is replaced by the chosen
** operand. Statements whose evaluation is undefined for their types (e.g. an
** un-typechecked `add` of an i32 and an f32) are left alone.
**
** One strength reduction lives here too, as it needs only a constant operand:
** x ^ 2 becomes x * x (both are the correctly rounded square) and x ^ 1 is x.
** Users write squares as `(1.5 - fx) ^ 2` (the MPM weights).
*/
#include "passes.h"
#include "fold_eval.h"

static bool all_const(const ir_stmt *s) {
  for (int i = 0; i < s->nops; i++)
    if (!s->ops[i] || s->ops[i]->op != IR_const) return false;
  return s->nops > 0;
}

static bool fold(ir_stmt *s, ir_scalar *out) {
  ir_scalar a = ir_scalar_of_const(s->ops[0]);
  if (s->op == IR_cast) return ir_eval_cast(s->type, a, out);
  if (s->op == IR_bitcast) return ir_eval_bitcast(s->type, a, out);
  if (s->nops == 1) return ir_eval_unary(s->op, a, out);
  if (s->nops == 2) return ir_eval_binary(s->op, a, ir_scalar_of_const(s->ops[1]), out);
  return false;
}

typedef struct {
  ir_kernel *k;
  bool changed;
} cf_state;

static bool reduce_pow(ir_stmt *s) {
  ir_stmt *e = s->ops[1];
  if (s->op != IR_pow || !ir_type_is_float(s->type) || e->op != IR_const || e->type != s->type ||
      s->ops[0]->type != s->type)
    return false;
  if (e->imm.fval == 2.0) {
    s->op = IR_mul;
    s->ops[1] = s->ops[0];
    return true;
  }
  if (e->imm.fval == 1.0) {
    ir_replace_uses(s->parent, s, s->ops[0]);
    ir_remove(s);
    return true;
  }
  return false;
}

static void visit(ir_stmt *s, void *ud) {
  cf_state *st = ud;
  if (!(ir_op_flags(s->op) & IR_PURE) || s->op == IR_const) return;
  if (s->op == IR_pow && !all_const(s) && reduce_pow(s)) {
    st->changed = true;
    return;
  }
  if (s->op == IR_select) {
    ir_stmt *c = s->ops[0];
    if (c && c->op == IR_const && s->ops[1]->type == s->type && s->ops[2]->type == s->type) {
      ir_replace_uses(s->parent, s, c->imm.ival ? s->ops[1] : s->ops[2]);
      ir_remove(s);
      st->changed = true;
    }
    return;
  }
  if (!all_const(s)) return;
  ir_scalar v;
  if (!fold(s, &v) || v.type != s->type) return;
  s->op = IR_const;
  for (int i = 0; i < s->nops; i++) s->ops[i] = NULL;
  s->nops = 0;
  ir_scalar_to_const(s, v);
  st->changed = true;
}

bool ir_pass_constfold(ir_kernel *k) {
  cf_state st = {k, false};
  ir_walk(k->body, visit, &st);
  return st.changed;
}
