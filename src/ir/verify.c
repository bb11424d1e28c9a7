/*
** verify.c -- the IR checker run between passes: structure (links, block
** owners, tasks), operand counts, operand visibility in the hierarchical IR,
** loop and jump placement, and types (the always-true rules by default, the
** post-typecheck rules with IR_VERIFY_TYPES).
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "snode.h"

typedef struct {
  ir_kernel *k;
  unsigned flags;
  char *err;
  size_t errlen;
  bool failed;
  /* visibility: the statements defined so far along the current path, as a
  ** stack; pos maps a statement to its slot (valid while stack[pos] == s) */
  const ir_stmt **stack;
  int sp, cap;
  const ir_stmt **keys;
  int *pos;
  size_t hcap;
  int *ids;
  int nids, idcap;
} verifier;

/* Records the first error, naming the statement ("$5 = add: ..."). */
static void bad(verifier *v, const ir_stmt *s, const char *fmt, ...) {
  if (v->failed) return;
  v->failed = true;
  char msg[600], where[200] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (s && s->loc.line > 0 && s->loc.file)
    snprintf(where, sizeof where, " (%s:%d)", s->loc.file, s->loc.line);
  else if (s && s->loc.line > 0)
    snprintf(where, sizeof where, " (line %d)", s->loc.line);
  if (s)
    snprintf(v->err, v->errlen, "kernel %s: $%d = %s%s: %s", v->k->name, s->id, ir_op_name(s->op),
             where, msg);
  else
    snprintf(v->err, v->errlen, "kernel %s: %s", v->k->name, msg);
}

static void *grow(void *p, size_t n, size_t size) {
  void *q = realloc(p, n * size);
  if (!q) {
    fprintf(stderr, "lattice: out of memory in the verifier\n");
    abort();
  }
  return q;
}

static size_t hslot(const verifier *v, const ir_stmt *s) {
  uintptr_t x = (uintptr_t)s;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  size_t i = (size_t)(x >> 7) & (v->hcap - 1);
  while (v->keys[i] && v->keys[i] != s) i = (i + 1) & (v->hcap - 1);
  return i;
}

static void push_visible(verifier *v, const ir_stmt *s) {
  if (v->sp == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 64;
    v->stack = grow(v->stack, (size_t)v->cap, sizeof *v->stack);
  }
  size_t i = hslot(v, s);
  v->keys[i] = s;
  v->pos[i] = v->sp;
  v->stack[v->sp++] = s;
}

static bool visible(const verifier *v, const ir_stmt *s) {
  size_t i = hslot(v, s);
  if (v->keys[i] != s) return false;
  return v->pos[i] < v->sp && v->stack[v->pos[i]] == s;
}

/* The innermost statement of kind while/range_for enclosing s, stopping at tasks. */
static const ir_stmt *enclosing_loop(const ir_stmt *s) {
  for (const ir_block *b = s->parent; b && b->owner; b = b->owner->parent) {
    ir_op op = b->owner->op;
    if (op == IR_while || op == IR_range_for || op == IR_struct_for) return b->owner;
    if (ir_op_flags(op) & IR_TASK) return NULL;
  }
  return NULL;
}

static bool encloses(const ir_stmt *outer, const ir_stmt *s) {
  for (const ir_block *b = s->parent; b && b->owner; b = b->owner->parent)
    if (b->owner == outer) return true;
  return false;
}

/* The SNode s->aux names (reporting when there is none); NULL also when the
** kernel has no program to check against. */
static const ir_snode *snode_of(verifier *v, const ir_stmt *s) {
  if (!v->k->prog) return NULL;
  const ir_snode *n = ir_program_snode(v->k->prog, s->aux);
  if (!n) bad(v, s, "S%d is not an SNode of this program", s->aux);
  return n;
}

static const ir_snode *place_of(verifier *v, const ir_stmt *s) {
  const ir_snode *n = snode_of(v, s);
  if (!n) return NULL;
  if (n->kind != IR_SN_place) {
    char lab[64];
    bad(v, s, "%s is not a place (a field holding values)", ir_snode_label(n, lab, sizeof lab));
    return NULL;
  }
  return n;
}

/* The level (dense or sparse; not root, not place) that s->aux names. */
static const ir_snode *level_of(verifier *v, const ir_stmt *s) {
  const ir_snode *n = snode_of(v, s);
  if (!n) return NULL;
  if (!ir_snode_kind_is_level(n->kind)) {
    char lab[64];
    bad(v, s, "%s is not a level (dense, bitmasked, pointer or dynamic)%s",
        ir_snode_label(n, lab, sizeof lab),
        n->kind == IR_SN_place ? "; name the place's parent" : "");
    return NULL;
  }
  return n;
}

static bool is_struct_loop(const ir_stmt *l) {
  return l && (l->op == IR_struct_for || l->op == IR_task_struct_for);
}

/* Sparse ops: the SNode's kind, the number and types of the indices, the
** result type. */
static void check_snode_op(verifier *v, const ir_stmt *s) {
  ir_op op = s->op;
  int nidx = op == IR_snode_append ? s->nops - 1 : s->nops;
  for (int i = 0; i < nidx; i++)
    if (!ir_type_is_int(s->ops[i]->type) || s->ops[i]->type == IR_i1)
      bad(v, s, "index $%d is %s, not an integer", s->ops[i]->id, ir_type_name(s->ops[i]->type));
  ir_type want = op == IR_snode_is_active ? IR_i1
                 : op == IR_snode_append || op == IR_snode_reserve || op == IR_snode_length ? IR_i32 : IR_void;
  if (s->type != want) bad(v, s, "%s gives %s, not %s", ir_op_name(op), ir_type_name(want), ir_type_name(s->type));
  const ir_snode *n = level_of(v, s);
  if (!n) return;
  char lab[64];
  ir_snode_label(n, lab, sizeof lab);
  bool dyn = n->kind == IR_SN_dynamic;
  if ((op == IR_snode_append || op == IR_snode_reserve || op == IR_snode_length) && !dyn) {
    bad(v, s, "%s is a %s; %s works on dynamic levels", lab, ir_snode_kind_name(n->kind), ir_op_name(op));
    return;
  }
  if (op == IR_snode_deactivate && !ir_snode_kind_is_sparse(n->kind)) {
    bad(v, s, "%s is dense: its cells are always active and cannot be deactivated", lab);
    return;
  }
  /* a dynamic's list as a whole: the parent cell's indices */
  bool whole = dyn && (op == IR_snode_deactivate || op == IR_snode_append || op == IR_snode_reserve ||
                       op == IR_snode_length);
  int want_idx = whole ? n->parent->nidx : n->nidx;
  if (nidx != want_idx) {
    bad(v, s, "%s takes %d indices%s, %d given", lab, want_idx,
        whole ? " (those of the dynamic's parent cell)" : "", nidx);
    return;
  }
  if (op == IR_snode_append) {
    if (n->nchildren != 1 || n->children[0]->kind != IR_SN_place) {
      bad(v, s, "%s must hold exactly one place to append a value to (it has %d children)", lab, n->nchildren);
      return;
    }
    ir_type vt = s->ops[s->nops - 1]->type, pt = n->children[0]->dtype;
    if ((v->flags & IR_VERIFY_TYPES) && vt != pt)
      bad(v, s, "appends a %s to a list of %s", ir_type_name(vt), ir_type_name(pt));
  }
}

/* Sparse tasks and struct_for: the SNode's kind. */
static void check_level_stmt(verifier *v, const ir_stmt *s) {
  const ir_snode *n = level_of(v, s);
  if (!n) return;
  char lab[64];
  ir_snode_label(n, lab, sizeof lab);
  if (s->op == IR_task_gc && n->kind != IR_SN_pointer && n->kind != IR_SN_dynamic)
    bad(v, s, "%s is a %s; only pointer and dynamic levels have memory to collect", lab,
        ir_snode_kind_name(n->kind));
  /* (snode_deactivate_all may name a dense level: the sparse ones under it are meant) */
  if (s->op == IR_task_deactivate_all && !ir_snode_kind_is_sparse(n->kind))
    bad(v, s, "%s is dense: its cells cannot be deactivated", lab);
}

static void check_types(verifier *v, const ir_stmt *s) {
  ir_kernel *k = v->k;
  ir_op op = s->op;
  ir_type a = s->nops > 0 ? s->ops[0]->type : IR_void;
  ir_type b = s->nops > 1 ? s->ops[1]->type : IR_void;
  bool strict = v->flags & IR_VERIFY_TYPES;
  const char *tn = ir_type_name(s->type);

  ir_rule rule = ir_op_rule(op);   /* ops.def's typing rule */
  if (rule == IR_RULE_cmp) {
    if (s->type != IR_i1) bad(v, s, "a comparison gives i1, not %s", tn);
    if (strict && a != b) bad(v, s, "compares %s with %s; typecheck makes them one type", ir_type_name(a), ir_type_name(b));
    return;
  }
  if (rule != IR_RULE_none && ir_op_nops(op) == 2) {
    bool shift = rule == IR_RULE_shift;
    if (strict && !shift && a != b)
      bad(v, s, "operands are %s and %s; typecheck makes them one type", ir_type_name(a), ir_type_name(b));
    if (strict && s->type != ir_result_type(op, a, b))
      bad(v, s, "result type %s, but %s of %s gives %s", tn, ir_op_name(op), ir_type_name(a),
          ir_type_name(ir_result_type(op, a, b)));
    if (strict && rule == IR_RULE_fp && !ir_type_is_float(a))
      bad(v, s, "%s works on floats; typecheck casts its %s operands", ir_op_name(op), ir_type_name(a));
    return;
  }
  if (rule == IR_RULE_logic) {
    if (a != IR_i1 || s->type != IR_i1) bad(v, s, "logic_not takes and gives i1 (has %s -> %s)", ir_type_name(a), tn);
    return;
  }
  if (rule != IR_RULE_none) {   /* unary */
    if (strict && s->type != ir_result_type(op, a, b))
      bad(v, s, "result type %s, but %s of %s gives %s", tn, ir_op_name(op), ir_type_name(a),
          ir_type_name(ir_result_type(op, a, b)));
    if (strict && rule == IR_RULE_fp && !ir_type_is_float(a))
      bad(v, s, "%s works on floats; typecheck casts its %s operand", ir_op_name(op), ir_type_name(a));
    return;
  }
  switch (op) {
  case IR_const: case IR_alloca: case IR_cast: case IR_bitcast:
    if (s->type == IR_void) bad(v, s, "needs a value type");
    if (op == IR_bitcast && ir_type_bits(s->type) != ir_type_bits(a))
      bad(v, s, "bitcast needs equal widths (%s to %s)", ir_type_name(a), tn);
    break;
  case IR_arg:
    if (s->aux < 0 || s->aux >= k->nargs)
      bad(v, s, "argument %d does not exist (the kernel has %d)", s->aux, k->nargs);
    else if (s->type != k->arg_types[s->aux])
      bad(v, s, "argument %d is %s, not %s", s->aux, ir_type_name(k->arg_types[s->aux]), tn);
    break;
  case IR_select:
    if (a != IR_i1) bad(v, s, "the condition $%d is %s, not i1", s->ops[0]->id, ir_type_name(a));
    if (strict && (s->ops[1]->type != s->type || s->ops[2]->type != s->type))
      bad(v, s, "chooses between %s and %s for a %s", ir_type_name(s->ops[1]->type),
          ir_type_name(s->ops[2]->type), tn);
    break;
  case IR_if:
    if (a != IR_i1) bad(v, s, "the condition $%d is %s, not i1", s->ops[0]->id, ir_type_name(a));
    break;
  case IR_range_for:
    if (!ir_type_is_int(a) || !ir_type_is_int(b) || a == IR_i1 || b == IR_i1)
      bad(v, s, "loop bounds must be integers (have %s and %s)", ir_type_name(a), ir_type_name(b));
    else if (strict && a != b)
      bad(v, s, "loop bounds are %s and %s; typecheck makes them one type", ir_type_name(a), ir_type_name(b));
    break;
  case IR_local_load:
  case IR_local_store:
    if (s->ops[0]->op != IR_alloca) {
      bad(v, s, "$%d is a %s, not an alloca", s->ops[0]->id, ir_op_name(s->ops[0]->op));
    } else if (op == IR_local_load && s->type != a) {
      bad(v, s, "reads a %s local as %s", ir_type_name(a), tn);
    } else if (op == IR_local_store && strict && b != a) {
      bad(v, s, "stores a %s into a %s local", ir_type_name(b), ir_type_name(a));
    }
    break;
  case IR_global_load: case IR_global_store: case IR_atomic_add: case IR_atomic_sub:
  case IR_atomic_min: case IR_atomic_max: case IR_atomic_mul: case IR_atomic_and: case IR_atomic_or:
  case IR_atomic_xor:
    if (s->ops[0]->op != IR_global_ptr && s->ops[0]->op != IR_global_tmp && s->ops[0]->op != IR_ext_ptr &&
        !(ir_op_is_atomic(op) && s->ops[0]->op == IR_alloca)) {   /* an atomic may update a local */
      bad(v, s, "$%d is a %s, not a global_ptr, global_tmp or ext_ptr%s", s->ops[0]->id, ir_op_name(s->ops[0]->op),
          ir_op_is_atomic(op) ? " (or an alloca)" : "");
    } else if (op != IR_global_store && s->type != a) {
      bad(v, s, "reads a %s through a pointer to %s", tn, ir_type_name(a));
    } else if (op != IR_global_load && strict && b != a) {
      bad(v, s, "writes a %s through a pointer to %s", ir_type_name(b), ir_type_name(a));
    }
    break;
  case IR_global_ptr: {
    for (int i = 0; i < s->nops; i++)
      if (!ir_type_is_int(s->ops[i]->type) || s->ops[i]->type == IR_i1)
        bad(v, s, "index $%d is %s, not an integer", s->ops[i]->id, ir_type_name(s->ops[i]->type));
    if (s->imm.ival != 0 && s->imm.ival != 1)
      bad(v, s, "the activate flag is %lld (0 or 1)", (long long)s->imm.ival);
    const ir_snode *n = place_of(v, s);
    if (n && n->nidx != s->nops) {
      char lab[64];
      bad(v, s, "%s takes %d indices, %d given", ir_snode_label(n, lab, sizeof lab), n->nidx, s->nops);
    } else if (n && n->dtype != s->type) {
      char lab[64];
      bad(v, s, "%s holds %s, but the pointer is to %s", ir_snode_label(n, lab, sizeof lab),
          ir_type_name(n->dtype), tn);
    }
    break;
  }
  case IR_check_index: {
    const ir_snode *n = place_of(v, s);
    if (n && (s->imm.ival < 0 || s->imm.ival >= n->nidx))
      bad(v, s, "axis %lld, but the field has %d indices", (long long)s->imm.ival, n->nidx);
    break;
  }
  case IR_ext_ptr:
    if (a != IR_u64) bad(v, s, "the array address $%d is %s, not u64", s->ops[0]->id, ir_type_name(a));
    if (strict && b != IR_i64) bad(v, s, "the element number $%d is %s, not i64", s->ops[1]->id, ir_type_name(b));
    if (s->type == IR_void || s->type == IR_i1) bad(v, s, "an ndarray does not hold %s", tn);
    break;
  case IR_check_bound:
    if (s->aux < 0 || s->aux >= k->nargs) bad(v, s, "argument %d does not exist (the kernel has %d)", s->aux, k->nargs);
    if (s->imm.ival < 0 || s->imm.ival >= IR_MAX_INDICES) bad(v, s, "axis %lld out of range", (long long)s->imm.ival);
    if (!ir_type_is_int(a) || a == IR_i1 || !ir_type_is_int(b) || b == IR_i1)
      bad(v, s, "index and extent must be integers (have %s and %s)", ir_type_name(a), ir_type_name(b));
    break;
  case IR_random:
    if (s->type == IR_void || s->type == IR_i1) bad(v, s, "random gives a number, not %s", tn);
    if (!ir_type_is_int(a) || a == IR_i1 || !ir_type_is_int(b) || b == IR_i1 || (strict && (a != IR_i32 || b != IR_i32)))
      bad(v, s, "stream and draw are i32 (have %s and %s)", ir_type_name(a), ir_type_name(b));
    break;
  case IR_print:
    if (!ir_kernel_string(k, s->aux)) bad(v, s, "string %d does not exist", s->aux);
    if (s->type == IR_void && s->imm.ival != 0)
      bad(v, s, "a print of %lld values is a record print_more fills: its type is u64", (long long)s->imm.ival);
    else if (s->type == IR_u64 && (s->imm.ival < s->nops || s->imm.ival < 1 || s->imm.ival > IR_MAX_PRINT_VALUES))
      bad(v, s, "a record of %lld values cannot hold its own %d (at most %d)", (long long)s->imm.ival, s->nops,
          IR_MAX_PRINT_VALUES);
    else if (s->type != IR_void && s->type != IR_u64)
      bad(v, s, "a print is void, or u64 for a record that print_more fills, not %s", tn);
    break;
  case IR_print_more: {
    const ir_stmt *r = s->ops[0];
    if (r->op != IR_print || r->type != IR_u64)
      bad(v, s, "$%d is a %s, not a print record (a u64 print)", r->id, ir_op_name(r->op));
    else if (s->imm.ival < r->nops || s->imm.ival + s->nops - 1 > r->imm.ival)
      bad(v, s, "writes values %lld..%lld of $%d, which has %d of its own and room for %lld",
          (long long)s->imm.ival, (long long)s->imm.ival + s->nops - 2, r->id, r->nops, (long long)r->imm.ival);
    else if (s->type != IR_void)
      bad(v, s, "print_more gives no value (type %s)", tn);
    break;
  }
  case IR_assert:
    if (a != IR_i1) bad(v, s, "the condition $%d is %s, not i1", s->ops[0]->id, ir_type_name(a));
    if (!ir_kernel_string(k, s->aux)) bad(v, s, "string %d does not exist", s->aux);
    break;
  case IR_loop_index:
    if (!ir_type_is_int(s->type) || s->type == IR_i1) bad(v, s, "a loop index is an integer, not %s", tn);
    if (is_struct_loop(s->loop)) {
      const ir_snode *sn = ir_program_snode(k->prog, s->loop->aux);
      int nidx = sn ? sn->nidx : IR_MAX_INDICES;
      if (s->imm.ival < 0 || s->imm.ival >= nidx)
        bad(v, s, "reads index %lld of $%d (%s), which has %d indices", (long long)s->imm.ival,
            s->loop->id, ir_op_name(s->loop->op), nidx);
      else if (s->type != IR_i32)
        bad(v, s, "the index of a struct loop is an i32, not %s", tn);
    } else if (s->imm.ival != 0) {
      bad(v, s, "a range loop has one index (0), not %lld", (long long)s->imm.ival);
    }
    break;
  case IR_snode_activate: case IR_snode_deactivate: case IR_snode_is_active:
  case IR_snode_append: case IR_snode_reserve: case IR_snode_length:
    check_snode_op(v, s);
    break;
  case IR_snode_deactivate_all: case IR_struct_for: case IR_task_clear_list: case IR_task_listgen:
  case IR_task_struct_for: case IR_task_gc: case IR_task_deactivate_all:
    check_level_stmt(v, s);
    break;
  case IR_adstack:
    if (s->type == IR_void || s->type == IR_i1) bad(v, s, "an adstack holds numbers, not %s", tn);
    if (s->imm.ival < 1 || s->imm.ival > (1 << 24)) bad(v, s, "an adstack of %lld values", (long long)s->imm.ival);
    break;
  case IR_adstack_push: case IR_adstack_pop: case IR_adstack_top:
    if (s->ops[0]->op != IR_adstack) {
      bad(v, s, "$%d is a %s, not an adstack", s->ops[0]->id, ir_op_name(s->ops[0]->op));
    } else if (op == IR_adstack_top && s->type != a) {
      bad(v, s, "reads a %s adstack as %s", ir_type_name(a), tn);
    } else if (op == IR_adstack_push && b != a) {
      bad(v, s, "pushes a %s on a %s adstack", ir_type_name(b), ir_type_name(a));
    }
    if (op == IR_adstack_push && !ir_kernel_string(k, s->aux)) bad(v, s, "string %d does not exist", s->aux);
    break;
  case IR_return:
    if (s->nops == 1 && k->ret_type == IR_void)
      bad(v, s, "returns a value from a kernel without a result type");
    else if (s->nops == 1 && strict && a != k->ret_type)
      bad(v, s, "returns %s from a kernel returning %s", ir_type_name(a), ir_type_name(k->ret_type));
    break;
  default:
    break;
  }
}

static void check_block(verifier *v, const ir_block *blk, const ir_stmt *owner, int depth);

static void check_stmt(verifier *v, const ir_stmt *s, const ir_block *blk, const ir_stmt *prev, int depth) {
  ir_kernel *k = v->k;
  if ((unsigned)s->op >= IR_NUM_OPS) {
    bad(v, NULL, "a statement has the invalid op %d", (int)s->op);
    return;
  }
  if (v->nids == v->idcap) {
    v->idcap = v->idcap ? 2 * v->idcap : 256;
    v->ids = grow(v->ids, (size_t)v->idcap, sizeof *v->ids);
  }
  v->ids[v->nids++] = s->id;
  if (s->parent != blk) bad(v, s, "its parent link does not point at the block holding it");
  if (s->prev != prev) bad(v, s, "its prev link is wrong");
  unsigned flags = ir_op_flags(s->op);

  /* operand count */
  int want = ir_op_nops(s->op);
  if (s->op == IR_return) {
    if (s->nops != 1 && !(s->nops == 0 && k->ret_type == IR_void))
      bad(v, s, "has %d operands, expected 1 (0 only in a kernel without a result)", s->nops);
  } else if (want >= 0 && s->nops != want) {
    bad(v, s, "has %d operands, expected %d", s->nops, want);
  } else if (s->op == IR_print || s->op == IR_print_more) {
    int least = s->op == IR_print_more ? 2 : 0;  /* the record and a value */
    if (s->nops < least || s->nops > IR_MAX_OPS)
      bad(v, s, "has %d operands, expected %d to %d", s->nops, least, IR_MAX_OPS);
  } else if (s->nops < 0 || s->nops > IR_MAX_INDICES + (want >= 0 ? 2 : 0)) {
    bad(v, s, "has %d operands", s->nops);
  }
  if (v->failed) return;

  /* operands: present, values, and visible from here */
  for (int i = 0; i < s->nops; i++) {
    const ir_stmt *o = s->ops[i];
    if (!o) {
      bad(v, s, "operand %d is missing", i);
      return;
    }
    if (!visible(v, o)) {
      bad(v, s, "operand $%d (%s) is not visible here: it must be defined earlier in this "
                "block or in an enclosing one", o->id, ir_op_name(o->op));
      return;
    }
    if (o->type == IR_void) {
      bad(v, s, "operand $%d (%s) has no value", o->id, ir_op_name(o->op));
      return;
    }
  }

  /* placement */
  if (s->op == IR_loop_index) {
    if (!s->loop || (s->loop->op != IR_range_for && s->loop->op != IR_task_range_for &&
                     !is_struct_loop(s->loop)))
      bad(v, s, "does not refer to a range_for, struct_for or loop task");
    else if (!encloses(s->loop, s))
      bad(v, s, "reads the index of $%d (%s), which does not enclose it", s->loop->id,
          ir_op_name(s->loop->op));
  }
  if ((s->op == IR_break || s->op == IR_continue) && !enclosing_loop(s))
    bad(v, s, "is not inside a while or range_for (of its task)");
  if ((flags & IR_TASK) && depth != 0) bad(v, s, "a task must be at the top level of the kernel");
  if (depth == 0 && k->offloaded && !(flags & IR_TASK))
    bad(v, s, "the kernel is offloaded, so its top level holds only tasks");
  if (v->failed) return;

  check_types(v, s);
  /* a value or not, as ops.def says (print: void, or u64 for a record) */
  if ((flags & IR_VALUE) && s->type == IR_void)
    bad(v, s, "%s gives a value: write its type, as in <i32> $%d = ...", ir_op_name(s->op), s->id);
  else if (!(flags & IR_VALUE) && s->type != IR_void && s->op != IR_print)
    bad(v, s, "%s gives no value: it has no type (not %s)", ir_op_name(s->op), ir_type_name(s->type));
  if (v->failed) return;

  /* child blocks */
  if (flags & IR_BLOCKS) {
    if (!s->blocks[0]) {
      bad(v, s, "has no body block");
      return;
    }
    if (s->blocks[1] && s->op != IR_if) {
      bad(v, s, "only if has a second (else) block");
      return;
    }
  } else if (s->blocks[0] || s->blocks[1]) {
    bad(v, s, "owns a block, but %s takes none", ir_op_name(s->op));
    return;
  }
  /* a loop's index is visible in its body, so the statement is visible before
  ** its blocks; its body's values are not visible after it */
  push_visible(v, s);
  for (int i = 0; i < 2 && !v->failed; i++)
    if (s->blocks[i]) check_block(v, s->blocks[i], s, depth + 1);
}

static void check_block(verifier *v, const ir_block *blk, const ir_stmt *owner, int depth) {
  if (blk->owner != owner) {
    bad(v, owner, "a block's owner link does not point at the statement holding it");
    return;
  }
  int mark = v->sp;
  const ir_stmt *prev = NULL;
  for (const ir_stmt *s = blk->first; s && !v->failed; s = s->next) {
    check_stmt(v, s, blk, prev, depth);
    prev = s;
  }
  if (!v->failed && blk->last != prev) bad(v, prev, "its block's last link is wrong");
  v->sp = mark; /* what the block defined goes out of scope */
}

static size_t count(const ir_block *blk) {
  size_t n = 0;
  for (const ir_stmt *s = blk ? blk->first : NULL; s; s = s->next)
    n += 1 + count(s->blocks[0]) + count(s->blocks[1]);
  return n;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

bool ir_verify_ex(ir_kernel *k, unsigned flags, char *err, size_t errlen) {
  static char dummy[8];
  verifier v = {0};
  v.k = k;
  v.flags = flags;
  v.err = err && errlen ? err : dummy;
  v.errlen = err && errlen ? errlen : sizeof dummy;
  v.err[0] = 0;
  if (!k->body || k->body->owner) {
    bad(&v, NULL, "the kernel body is missing or has an owner");
    return false;
  }
  v.hcap = 64;
  size_t n = count(k->body);
  while (v.hcap < 2 * n + 2) v.hcap *= 2;
  v.keys = calloc(v.hcap, sizeof *v.keys);
  v.pos = calloc(v.hcap, sizeof *v.pos);
  if (!v.keys || !v.pos) abort();
  check_block(&v, k->body, NULL, 0);
  if (!v.failed && v.nids > 1) {
    qsort(v.ids, (size_t)v.nids, sizeof *v.ids, cmp_int);
    for (int i = 1; i < v.nids; i++)
      if (v.ids[i] == v.ids[i - 1]) {
        bad(&v, NULL, "two statements share the number $%d", v.ids[i]);
        break;
      }
  }
  free(v.keys);
  free(v.pos);
  free(v.stack);
  free(v.ids);
  return !v.failed;
}

bool ir_verify(ir_kernel *k, char *err, size_t errlen) { return ir_verify_ex(k, 0, err, errlen); }
