/*
** typecheck.c -- check operand types; insert explicit casts (promotion rules).
**
** After this pass every conversion is a `cast` statement: binary operands
** have one type, stores and atomics write values of the target's type, if
** conditions and select conditions are i1, field indices are i32, and each
** statement's type is the result type of docs/arithmetic.md (recomputed here,
** so hand-written IR with a wrong result type is corrected). The rules are
** summarised in docs/internals.md ("Passes"). Type errors a user can cause
** (a float stored into an integer, arithmetic on a boolean, a number used as
** a condition) go through ir_fail with a message that says what to write.
*/
#include "passes.h"
#include "../snode.h"

typedef struct {
  ir_kernel *k;
  bool changed;
} tc_state;

/* The operator as the user wrote it, for messages. */
static const char *sym(ir_op op) {
  switch (op) {
  case IR_add: return "+";
  case IR_sub: return "-";
  case IR_mul: return "*";
  case IR_div: return "/";
  case IR_floordiv: return "//";
  case IR_mod: return "%";
  case IR_pow: return "^";
  case IR_neg: return "unary -";
  case IR_bit_and: return "&";
  case IR_bit_or: return "|";
  case IR_bit_xor: return "~ (xor)";
  case IR_bit_not: return "~";
  case IR_shl: return "<<";
  case IR_shr: return ">>";
  case IR_cmp_lt: return "<";
  case IR_cmp_le: return "<=";
  case IR_cmp_gt: return ">";
  case IR_cmp_ge: return ">=";
  case IR_cmp_eq: return "==";
  case IR_cmp_ne: return "~=";
  case IR_logic_not: return "not";
  case IR_min: return "lt.min";
  case IR_max: return "lt.max";
  case IR_abs: return "lt.abs";
  case IR_atan2: return "lt.atan2";
  default: return ir_op_name(op);
  }
}

static bool is_num(ir_type t) { return (ir_type_is_int(t) && t != IR_i1) || ir_type_is_float(t); }
static bool is_plain_int(ir_type t) { return ir_type_is_int(t) && t != IR_i1; }

/* Every operand must be a value; anything else is a malformed kernel. */
static void need_values(tc_state *st, ir_stmt *s) {
  for (int i = 0; i < s->nops; i++) {
    ir_stmt *o = s->ops[i];
    if (!o || o->type == IR_void)
      ir_fail(st->k, s->loc, "operand %d of `%s` ($%d) has no value", i, ir_op_name(s->op),
              s->id);
  }
}

/* Makes operand i of s have type t, inserting a cast before s. */
static void convert(tc_state *st, ir_stmt *s, int i, ir_type t) {
  ir_stmt *v = s->ops[i];
  if (v->type == t) return;
  ir_stmt *c = ir_new(st->k, IR_cast, t, 1, &v);
  c->loc = s->loc;
  ir_insert_before(s, c);
  s->ops[i] = c;
  st->changed = true;
}

static void set_type(tc_state *st, ir_stmt *s, ir_type t) {
  if (s->type != t) {
    s->type = t;
    st->changed = true;
  }
}

static void no_bool(tc_state *st, ir_stmt *s) {
  for (int i = 0; i < s->nops; i++)
    if (s->ops[i]->type == IR_i1)
      ir_fail(st->k, s->loc,
              "`%s` on a boolean value: booleans take no part in arithmetic; "
              "use lt.select(cond, 1, 0) to turn a condition into a number",
              sym(s->op));
}

static void no_float(tc_state *st, ir_stmt *s) {
  for (int i = 0; i < s->nops; i++)
    if (ir_type_is_float(s->ops[i]->type))
      ir_fail(st->k, s->loc,
              "`%s` needs integer operands, got a %s: convert it with lt.cast(x, lt.i32)",
              sym(s->op), ir_type_name(s->ops[i]->type));
}

/* A value assigned to a variable/field/result of type t (implicit conversion
** on assignment: int->int wraps, int->float, float->float; nothing else). */
static void assign(tc_state *st, ir_stmt *s, int i, ir_type t, const char *what) {
  ir_type vt = s->ops[i]->type;
  if (vt == t) return;
  if (t == IR_i1 || vt == IR_i1)
    ir_fail(st->k, s->loc,
            "cannot assign a %s value to a %s %s: booleans and numbers do not convert "
            "implicitly (use lt.select(cond, 1, 0) or x ~= 0)",
            ir_type_name(vt), ir_type_name(t), what);
  if (ir_type_is_float(vt) && ir_type_is_int(t))
    ir_fail(st->k, s->loc,
            "cannot assign a %s value to the %s %s: floats do not convert to integers "
            "implicitly; write lt.cast(x, lt.%s) (rounds toward zero)",
            ir_type_name(vt), ir_type_name(t), what, ir_type_name(t));
  convert(st, s, i, t);
}

/* The float type of /, ^, atan2 and the math builtins is ir_result_type's:
** f64 when an operand is 64 bits wide (i64, u64, f64) or an f64, else f32.
** (So i64 / f32 is f64: the 64-bit integer would lose most of its digits.) */
static ir_type float_type(ir_op op, ir_type a, ir_type b) { return ir_result_type(op, a, b); }

static void check_cond(tc_state *st, ir_stmt *s, ir_stmt *c, const char *what) {
  if (c->type != IR_i1)
    ir_fail(st->k, s->loc,
            "the condition of %s is a %s, not a boolean: compare it explicitly (x ~= 0)", what,
            ir_type_name(c->type));
}

/* A write through a global_ptr into a sparse field activates its cells:
** the flag keeps the pointer apart from a read-only one in CSE. */
static void mark_write(tc_state *st, ir_stmt *p) {
  int64_t before = p->op == IR_global_ptr ? p->imm.ival : 0;
  ir_mark_write(st->k, p);
  if (p->op == IR_global_ptr && p->imm.ival != before) st->changed = true;
}

/* Converts the n operands of s to t, which becomes s's type. */
static void unify(tc_state *st, ir_stmt *s, int n, ir_type t) {
  for (int i = 0; i < n; i++) convert(st, s, i, t);
  set_type(st, s, t);
}

/* An arithmetic op, by its typing rule (ops.def's rule column). */
static void check_arith(tc_state *st, ir_stmt *s, ir_rule rule) {
  ir_kernel *k = st->k;
  ir_op op = s->op;
  int n = ir_op_nops(op);   /* 1 or 2 */
  bool binary = n == 2;
  ir_type a = s->ops[0]->type, b = binary ? s->ops[1]->type : IR_void;
  switch (rule) {
  case IR_RULE_num:     /* neg, abs; add, sub, mul, floordiv, mod, min, max */
    no_bool(st, s);
    unify(st, s, n, binary ? ir_promote(a, b) : a);
    break;
  case IR_RULE_fp:      /* the math; div, pow, atan2 */
    no_bool(st, s);
    unify(st, s, n, float_type(op, a, b));
    break;
  case IR_RULE_bits:    /* bit_not; bit_and, bit_or, bit_xor */
    no_float(st, s);
    if (binary && (a == IR_i1) != (b == IR_i1))
      ir_fail(k, s->loc,
              "`%s` mixes a boolean and a number (%s, %s): compare the number (x ~= 0) "
              "or use lt.select(cond, 1, 0)",
              sym(op), ir_type_name(a), ir_type_name(b));
    unify(st, s, n, binary ? ir_promote(a, b) : a);
    break;
  case IR_RULE_shift:   /* the result has the left operand's type; the count is converted to it */
    no_float(st, s);
    no_bool(st, s);
    convert(st, s, 1, a);
    set_type(st, s, a);
    break;
  case IR_RULE_cmp:
    if (a == IR_i1 || b == IR_i1) {
      if (a != b || (op != IR_cmp_eq && op != IR_cmp_ne))
        ir_fail(k, s->loc,
                "`%s` between %s and %s: booleans can only be compared with == and ~= "
                "to other booleans",
                sym(op), ir_type_name(a), ir_type_name(b));
    } else {
      ir_type t = ir_promote(a, b);
      convert(st, s, 0, t);
      convert(st, s, 1, t);
    }
    set_type(st, s, IR_i1);
    break;
  case IR_RULE_logic:   /* logic_not */
    if (a != IR_i1)
      ir_fail(k, s->loc, "`not` needs a boolean, got a %s: compare it explicitly (x == 0)", ir_type_name(a));
    set_type(st, s, IR_i1);
    break;
  case IR_RULE_none:
    break;
  }
}

static void check(ir_stmt *s, void *ud) {
  tc_state *st = ud;
  ir_kernel *k = st->k;
  ir_op op = s->op;
  need_values(st, s);
  ir_rule rule = ir_op_rule(op);
  if (rule != IR_RULE_none) {
    check_arith(st, s, rule);
    return;
  }
  switch (op) {
  case IR_arg:
    if (s->aux >= 0 && s->aux < k->nargs) set_type(st, s, k->arg_types[s->aux]);
    break;

  case IR_select: {
    check_cond(st, s, s->ops[0], "lt.select");
    ir_type a = s->ops[1]->type, b = s->ops[2]->type;
    if ((a == IR_i1) != (b == IR_i1))
      ir_fail(k, s->loc, "lt.select between a %s and a %s: both must be numbers or both booleans",
              ir_type_name(a), ir_type_name(b));
    ir_type t = ir_promote(a, b);
    convert(st, s, 1, t);
    convert(st, s, 2, t);
    set_type(st, s, t);
    break;
  }

  case IR_local_load:
    if (s->ops[0]->op != IR_alloca)
      ir_fail(k, s->loc, "local_load of $%d, which is not an alloca", s->ops[0]->id);
    set_type(st, s, s->ops[0]->type);
    break;
  case IR_local_store:
    if (s->ops[0]->op != IR_alloca)
      ir_fail(k, s->loc, "local_store to $%d, which is not an alloca", s->ops[0]->id);
    assign(st, s, 1, s->ops[0]->type, "local variable");
    break;
  case IR_global_ptr:
    for (int i = 0; i < s->nops; i++) {
      if (!is_plain_int(s->ops[i]->type))
        ir_fail(k, s->loc,
                "field index %d is a %s: indices must be integers (use lt.cast(x, lt.i32))",
                i + 1, ir_type_name(s->ops[i]->type));
      convert(st, s, i, IR_i32);
    }
    break;
  case IR_global_load:
    set_type(st, s, s->ops[0]->type);
    break;
  case IR_global_store:
    mark_write(st, s->ops[0]);
    assign(st, s, 1, s->ops[0]->type, "field");
    break;
  case IR_atomic_add: case IR_atomic_sub: case IR_atomic_min: case IR_atomic_max: case IR_atomic_mul:
  case IR_atomic_and: case IR_atomic_or: case IR_atomic_xor: {
    bool local = s->ops[0]->op == IR_alloca;
    mark_write(st, s->ops[0]);
    if (!is_num(s->ops[0]->type))
      ir_fail(k, s->loc, "`%s` on a %s %s: atomics need a number", ir_op_name(op),
              ir_type_name(s->ops[0]->type), local ? "local" : "field");
    if ((op == IR_atomic_and || op == IR_atomic_or || op == IR_atomic_xor) && ir_type_is_float(s->ops[0]->type))
      ir_fail(k, s->loc, "`%s` on a %s %s: bitwise atomics need an integer", ir_op_name(op),
              ir_type_name(s->ops[0]->type), local ? "local" : "field");
    assign(st, s, 1, s->ops[0]->type, local ? "local variable" : "field");
    set_type(st, s, s->ops[0]->type);
    break;
  }
  case IR_check_index:
    if (!is_plain_int(s->ops[0]->type))
      ir_fail(k, s->loc, "index is a %s: indices must be integers", ir_type_name(s->ops[0]->type));
    convert(st, s, 0, IR_i32);
    break;

  case IR_ext_ptr:
    convert(st, s, 1, IR_i64);
    break;
  case IR_check_bound:
    if (!is_plain_int(s->ops[0]->type))
      ir_fail(k, s->loc, "index is a %s: indices must be integers", ir_type_name(s->ops[0]->type));
    convert(st, s, 0, IR_i64);
    convert(st, s, 1, IR_i64);
    break;
  case IR_random:
    convert(st, s, 0, IR_i32);
    convert(st, s, 1, IR_i32);
    break;
  case IR_assert:
    check_cond(st, s, s->ops[0], "lt.assert");
    break;
  case IR_if:
    check_cond(st, s, s->ops[0], "`if`");
    break;
  case IR_range_for: {
    ir_type a = s->ops[0]->type, b = s->ops[1]->type;
    if (!is_plain_int(a) || !is_plain_int(b))
      ir_fail(k, s->loc, "range bounds must be integers, got %s and %s: use lt.cast(x, lt.i32)",
              ir_type_name(a), ir_type_name(b));
    ir_type t = ir_promote(a, b);
    convert(st, s, 0, t);
    convert(st, s, 1, t);
    break;
  }
  case IR_loop_index:
    /* visited after its loop, whose bounds now have their final type */
    if (s->loop && s->loop->op == IR_range_for) set_type(st, s, s->loop->ops[0]->type);
    else if (s->loop) set_type(st, s, IR_i32); /* tasks and struct loops count in i32 */
    break;
  case IR_snode_activate: case IR_snode_deactivate: case IR_snode_is_active:
  case IR_snode_append: case IR_snode_reserve: case IR_snode_length: {
    int nidx = op == IR_snode_append ? s->nops - 1 : s->nops;
    for (int i = 0; i < nidx; i++) {
      if (!is_plain_int(s->ops[i]->type))
        ir_fail(k, s->loc,
                "SNode index %d is a %s: indices must be integers (use lt.cast(x, lt.i32))",
                i + 1, ir_type_name(s->ops[i]->type));
      convert(st, s, i, IR_i32);
    }
    if (op == IR_snode_append && nidx >= 0) {
      const ir_snode *n = k->prog && s->aux >= 0 && s->aux < k->prog->nsnodes ? k->prog->snodes[s->aux] : NULL;
      if (!n || n->kind != IR_SN_dynamic || n->nchildren != 1 || n->children[0]->kind != IR_SN_place)
        ir_fail(k, s->loc, "lt.append needs a dynamic SNode holding exactly one field");
      assign(st, s, nidx, n->children[0]->dtype, "dynamic list");
    }
    set_type(st, s, op == IR_snode_is_active ? IR_i1
                    : op == IR_snode_append || op == IR_snode_reserve || op == IR_snode_length ? IR_i32 : IR_void);
    break;
  }
  case IR_return:
    if (s->nops > 0 && k->ret_type != IR_void) assign(st, s, 0, k->ret_type, "kernel result");
    break;
  default:
    /* const, cast, bitcast, alloca, global_tmp, while, jumps, tasks: nothing
    ** to convert (cast and bitcast are explicit conversions themselves) */
    break;
  }
}

bool ir_pass_typecheck(ir_kernel *k) {
  tc_state st = {k, false};
  ir_walk(k->body, check, &st);
  return st.changed;
}
