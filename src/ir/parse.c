/*
** parse.c -- reads the IR text form written by print.c (docs/ir.md): the
** statements and the kernel, after the `field`/`tree` declarations that
** create SNode trees (parse_decl.c), so a pass can be tested from text alone.
** The lexer is parse_lex.c. Errors are "line N: message"; nothing is left
** allocated.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_impl.h"
#include "snode.h"

/* ---- statements --------------------------------------------------------------- */

static ir_stmt *lookup(parser *ps, const char *digits, int line) {
  long id = strtol(digits, NULL, 10);
  if (id < 0 || id >= ps->nbyid || !ps->byid[id])
    irp_fail_at(ps, line, "$%s is used before it is defined", digits);
  return ps->byid[id];
}

static ir_stmt *parse_ref(parser *ps, const char *what) {
  if (ps->tok.kind != T_VAR) fail(ps, "expected %s (a $N value), found %s", what, irp_describe(ps, &ps->tok));
  ir_stmt *s = lookup(ps, ps->tok.text, ps->tok.line);
  irp_next(ps);
  return s;
}

static void define(parser *ps, ir_stmt *s, int line) {
  if (s->id >= ps->nbyid) {
    int n = ps->nbyid ? ps->nbyid : 64;
    while (n <= s->id) n *= 2;
    ir_stmt **b = realloc(ps->byid, sizeof(ir_stmt *) * (size_t)n);
    if (!b) irp_fail_at(ps, line, "out of memory");
    memset(b + ps->nbyid, 0, sizeof(ir_stmt *) * (size_t)(n - ps->nbyid));
    ps->byid = b;
    ps->nbyid = n;
  }
  if (ps->byid[s->id]) irp_fail_at(ps, line, "$%d is defined twice", s->id);
  ps->byid[s->id] = s;
  if (s->id > ps->max_id) ps->max_id = s->id;
}

static void parse_const(parser *ps, ir_stmt *s) {
  const char *t = ps->tok.text;
  if (ps->tok.kind != T_NUM && ps->tok.kind != T_IDENT)
    fail(ps, "expected a constant value, found %s", irp_describe(ps, &ps->tok));
  char *end;
  errno = 0;
  if (ir_type_is_float(s->type)) {
    s->imm.fval = strtod(t, &end);
    if (*end || end == t) fail(ps, "bad %s constant '%s'", ir_type_name(s->type), t);
    /* an f32 constant holds an f32 value: 0.1 means the float nearest 0.1 */
    if (s->type == IR_f32) s->imm.fval = (double)(float)s->imm.fval;
  } else if (ir_type_is_int(s->type)) {
    if (ps->tok.kind != T_NUM) fail(ps, "bad integer constant %s", irp_describe(ps, &ps->tok));
    if (s->type == IR_u64 && t[0] != '-')
      s->imm.ival = (int64_t)strtoull(t, &end, 10);
    else
      s->imm.ival = strtoll(t, &end, 10);
    if (*end || errno) fail(ps, "bad %s constant '%s'", ir_type_name(s->type), t);
  } else {
    fail(ps, "a const needs a value type, as in <i32> $0 = const 4");
  }
  irp_next(ps);
}

static void parse_bound(parser *ps, int64_t *v, int *gtmp) {
  if (irp_is_word(ps, "gtmp")) {
    irp_next(ps);
    irp_expect(ps, "[", "after gtmp");
    *gtmp = irp_small_int(ps, "a gtmp offset", 0, 1 << 30);
    irp_expect(ps, "]", "after the gtmp offset");
  } else {
    *v = irp_int(ps, "a task bound");
    *gtmp = -1;
  }
}

/* loc -> '@' [file ':'] line */
static void parse_loc(parser *ps, ir_stmt *s, int line) {
  if (!irp_is_punct(ps, "@") || ps->tok.line != line) return;
  irp_next(ps);
  if (ps->tok.kind == T_IDENT || ps->tok.kind == T_STR) {
    s->loc.file = ir_strdup(ps->k, ps->tok.text);
    irp_next(ps);
    irp_expect(ps, ":", "between file and line in a location");
  }
  s->loc.line = irp_small_int(ps, "a source line", 0, 1 << 30);
}

static void parse_block(parser *ps, ir_block *blk);

/* '[' {$N ','} ']' into s->ops */
static void parse_indices(parser *ps, ir_stmt *s) {
  irp_expect(ps, "[", "before the indices");
  while (!irp_is_punct(ps, "]")) {
    if (s->nops == IR_MAX_INDICES) fail(ps, "at most %d indices", IR_MAX_INDICES);
    s->ops[s->nops++] = parse_ref(ps, "an index");
    if (!irp_is_punct(ps, ",")) break;
    irp_next(ps);
  }
  irp_expect(ps, "]", "after the indices");
}

/* A quoted string added to the kernel's string table; its index. */
static int parse_string(parser *ps, const char *what) {
  if (ps->tok.kind != T_STR) fail(ps, "expected %s (a quoted string), found %s", what, irp_describe(ps, &ps->tok));
  int i = ir_kernel_add_string(ps->k, ps->tok.text);
  irp_next(ps);
  return i;
}

/* builtin -> 'check_bound' $i $n 'arg' A 'axis' K | 'random' $stream $draw 'site' N
**          | 'print' STRING {$v} ['values' N] | 'print_more' $record 'at' K {$v}
**          | 'assert' $c STRING */
static void parse_builtin(parser *ps, ir_stmt *s) {
  int line = ps->tok.line;
  switch (s->op) {
  case IR_check_bound:
    s->ops[s->nops++] = parse_ref(ps, "the index to check");
    s->ops[s->nops++] = parse_ref(ps, "the extent");
    irp_expect(ps, "arg", "in check_bound (as in: check_bound $3 $1 arg 0 axis 0)");
    s->aux = irp_small_int(ps, "an argument number", 0, 15);
    irp_expect(ps, "axis", "in check_bound (as in: check_bound $3 $1 arg 0 axis 0)");
    s->imm.ival = irp_small_int(ps, "an axis", 0, IR_MAX_INDICES - 1);
    break;
  case IR_random:
    s->ops[s->nops++] = parse_ref(ps, "the stream");
    s->ops[s->nops++] = parse_ref(ps, "the draw number");
    irp_expect(ps, "site", "in random (as in: random $3 $4 site 0)");
    s->imm.ival = irp_small_int(ps, "a site number", 0, 1 << 30);
    break;
  case IR_print: case IR_print_more:
    if (s->op == IR_print) {
      s->aux = parse_string(ps, "the format of print");
    } else {
      s->ops[s->nops++] = parse_ref(ps, "the print record");
      irp_expect(ps, "at", "in print_more (as in: print_more $4 at 10 $5 $6)");
      s->imm.ival = irp_small_int(ps, "a value number", 0, IR_MAX_PRINT_VALUES - 1);
    }
    while (ps->tok.kind == T_VAR && ps->tok.line == line) {
      if (s->nops == IR_MAX_OPS) fail(ps, "%s takes at most %d operands", ir_op_name(s->op), IR_MAX_OPS);
      s->ops[s->nops++] = parse_ref(ps, "a value");
    }
    if (s->op == IR_print && irp_is_word(ps, "values") && ps->tok.line == line) {
      irp_next(ps);
      s->imm.ival = irp_small_int(ps, "the number of values", 1, IR_MAX_PRINT_VALUES);
    }
    break;
  default:
    s->ops[s->nops++] = parse_ref(ps, "the condition");
    s->aux = parse_string(ps, "the message of assert");
    break;
  }
}

/* stmt -> ['<' type ['*'] '>'] '$'N '=' op operands [loc] ['{' block '}' ['else' '{' block '}']] */
static void parse_stmt(parser *ps, ir_block *blk) {
  int line = ps->tok.line;
  ir_type type = IR_void;
  bool ptr = false;
  if (irp_is_punct(ps, "<")) {
    irp_next(ps);
    type = irp_type_name(ps);
    if (irp_is_punct(ps, "*")) {
      ptr = true;
      irp_next(ps);
    }
    irp_expect(ps, ">", "after the statement type");
  }
  if (ps->tok.kind != T_VAR) fail(ps, "expected a statement ($N = ...), found %s", irp_describe(ps, &ps->tok));
  long id = strtol(ps->tok.text, NULL, 10);
  if (id >= MAX_ID) fail(ps, "statement number $%s is too large", ps->tok.text);
  irp_next(ps);
  irp_expect(ps, "=", "after the statement number");
  if (ps->tok.kind != T_IDENT) fail(ps, "expected an operation name, found %s", irp_describe(ps, &ps->tok));
  int op = ir_op_from_name(ps->tok.text);
  if (op < 0) fail(ps, "unknown operation '%s'", ps->tok.text);
  irp_next(ps);
  bool wants_ptr = op == IR_global_ptr || op == IR_global_tmp || op == IR_ext_ptr;
  if (ptr != wants_ptr)
    irp_fail_at(ps, line, wants_ptr ? "%s gives a pointer: write its type as <T*>"
                                  : "only global_ptr, global_tmp and ext_ptr have a pointer type <T*> (not %s)",
              ir_op_name(op));

  ir_stmt *s = ir_new(ps->k, op, type, 0, NULL);
  s->id = (int)id;
  s->loc.line = 0;
  unsigned flags = ir_op_flags(op);
  switch (op) {
  case IR_const:
    parse_const(ps, s);
    break;
  case IR_arg:
    s->aux = irp_small_int(ps, "an argument number", 0, 15);
    break;
  case IR_global_tmp:
    s->aux = irp_small_int(ps, "a gtmp offset", 0, 1 << 30);
    break;
  case IR_global_ptr:
    s->aux = irp_field_ref(ps);
    parse_indices(ps, s);
    if (irp_is_word(ps, "activate")) {
      s->imm.ival = 1;
      irp_next(ps);
    }
    break;
  case IR_snode_activate: case IR_snode_deactivate: case IR_snode_is_active:
  case IR_snode_reserve: case IR_snode_length:
    s->aux = irp_level_ref(ps, "the SNode");
    parse_indices(ps, s);
    break;
  case IR_snode_append:
    s->aux = irp_level_ref(ps, "the dynamic SNode");
    parse_indices(ps, s);
    if (s->nops == IR_MAX_INDICES) fail(ps, "snode_append takes at most %d indices", IR_MAX_INDICES - 1);
    s->ops[s->nops++] = parse_ref(ps, "the appended value");
    break;
  case IR_snode_deactivate_all: case IR_struct_for: case IR_task_clear_list: case IR_task_gc:
  case IR_task_deactivate_all:
    s->aux = irp_level_ref(ps, "the SNode");
    break;
  case IR_task_listgen: {
    int par = irp_level_ref(ps, "the parent SNode");
    irp_expect(ps, "->", "between the parent and the child in task_listgen");
    s->aux = irp_level_ref(ps, "the child SNode");
    ir_program *p = ps->prog;
    if (p && (!p->snodes[s->aux]->parent || p->snodes[s->aux]->parent->id != par))
      irp_fail_at(ps, line, "task_listgen S%d->S%d: S%d is not the parent of S%d", par, s->aux, par, s->aux);
    break;
  }
  case IR_task_struct_for:
    s->aux = irp_level_ref(ps, "the SNode");
    if (irp_is_word(ps, "block_dim")) {
      irp_next(ps);
      irp_expect(ps, "=", "after block_dim");
      s->range.block_dim = irp_small_int(ps, "block_dim", 0, 1 << 30);
    }
    break;
  case IR_check_index:
    s->ops[s->nops++] = parse_ref(ps, "the index to check");
    s->aux = irp_field_ref(ps);
    irp_expect(ps, "axis", "in check_index (as in: check_index $3 x axis 0)");
    s->imm.ival = irp_small_int(ps, "an axis", 0, IR_MAX_INDICES - 1);
    break;
  case IR_check_bound: case IR_random: case IR_print: case IR_print_more: case IR_assert:
    parse_builtin(ps, s);
    break;
  case IR_loop_index:
    s->loop = parse_ref(ps, "the loop");
    if (s->loop->op == IR_struct_for || s->loop->op == IR_task_struct_for) {
      s->imm.ival = irp_small_int(ps, "the index number of a struct loop's loop_index", 0,
                                    IR_MAX_INDICES - 1);
    } else if (s->loop->op != IR_range_for && s->loop->op != IR_task_range_for) {
      irp_fail_at(ps, line, "loop_index reads a range_for, struct_for or task, and $%d is a %s",
                s->loop->id, ir_op_name(s->loop->op));
    }
    break;
  case IR_task_range_for:
    parse_bound(ps, &s->range.begin, &s->range.begin_gtmp);
    parse_bound(ps, &s->range.end, &s->range.end_gtmp);
    if (irp_is_word(ps, "block_dim")) {
      irp_next(ps);
      irp_expect(ps, "=", "after block_dim");
      s->range.block_dim = irp_small_int(ps, "block_dim", 0, 1 << 30);
    }
    break;
  case IR_adstack:               /* adstack N */
    s->imm.ival = irp_small_int(ps, "the capacity of the adstack", 1, 1 << 24);
    break;
  case IR_adstack_push:          /* adstack_push $stack $value "message" */
    s->ops[s->nops++] = parse_ref(ps, "the adstack");
    s->ops[s->nops++] = parse_ref(ps, "the value");
    s->aux = parse_string(ps, "the message of adstack_push");
    break;
  case IR_return:
    /* the value is optional for a kernel without a result */
    if (ps->tok.kind == T_VAR && ps->tok.line == line) s->ops[s->nops++] = parse_ref(ps, "the value");
    break;
  default: {
    int n = ir_op_nops(op);
    for (int i = 0; i < n; i++) s->ops[s->nops++] = parse_ref(ps, "an operand");
    break;
  }
  }
  define(ps, s, line);
  ir_append(blk, s);
  parse_loc(ps, s, line);
  if (flags & IR_BLOCKS) {
    if (!irp_is_punct(ps, "{") || ps->tok.line != line)
      irp_fail_at(ps, line, "%s needs its body: '{' at the end of its line", ir_op_name(op));
    /* a task's body does not count: offload puts a kernel's body into tasks */
    int nest = flags & IR_TASK ? 0 : 1;
    if (ps->depth + nest > IR_MAX_DEPTH)
      irp_fail_at(ps, line, "blocks nested more than %d deep (IR_MAX_DEPTH); the IR allows at most %d "
                "levels: split the kernel or nest less", IR_MAX_DEPTH, IR_MAX_DEPTH);
    ps->depth += nest;
    irp_next(ps);
    parse_loc(ps, s, line);
    s->blocks[0] = ir_block_new(ps->k, s);
    parse_block(ps, s->blocks[0]);
    irp_expect(ps, "}", "to close the block");
    if (op == IR_if && irp_is_word(ps, "else")) {
      irp_next(ps);
      irp_expect(ps, "{", "after else");
      s->blocks[1] = ir_block_new(ps->k, s);
      parse_block(ps, s->blocks[1]);
      irp_expect(ps, "}", "to close the else block");
    }
    ps->depth -= nest;
  } else if (ps->tok.kind != T_EOF && ps->tok.line == line) {
    fail(ps, "unexpected %s after the %s statement", irp_describe(ps, &ps->tok), ir_op_name(op));
  }
}

static void parse_block(parser *ps, ir_block *blk) {
  while (!irp_is_punct(ps, "}")) {
    if (ps->tok.kind == T_EOF) fail(ps, "missing '}' at the end of the text");
    parse_stmt(ps, blk);
  }
}

/* kernel -> 'kernel' NAME '(' [type [NAME] {',' type [NAME]}] ')' ['->' type] {attr} '{' block '}' */
static void parse_kernel(parser *ps) {
  irp_expect(ps, "kernel", "to start the kernel");
  char name[256];
  irp_name(ps, name, sizeof name, "the kernel's name");
  ir_kernel *k = ps->k = ir_kernel_new(name, ps->prog);
  irp_expect(ps, "(", "before the arguments");
  while (!irp_is_punct(ps, ")")) {
    if (k->nargs == 16) fail(ps, "at most 16 arguments");
    k->arg_types[k->nargs] = irp_type_name(ps);
    if (ps->tok.kind == T_IDENT || ps->tok.kind == T_STR) {
      k->arg_names[k->nargs] = ir_strdup(k, ps->tok.text);
      irp_next(ps);
    }
    k->nargs++;
    if (!irp_is_punct(ps, ",")) break;
    irp_next(ps);
  }
  irp_expect(ps, ")", "after the arguments");
  if (irp_is_punct(ps, "->")) {
    irp_next(ps);
    k->ret_type = irp_type_name(ps);
  }
  for (;;) {
    if (irp_is_word(ps, "offloaded")) {
      k->offloaded = true;
      irp_next(ps);
    } else if (irp_is_word(ps, "debug")) {
      k->debug = true;
      irp_next(ps);
    } else if (irp_is_word(ps, "grad")) {
      k->grad = true;
      irp_next(ps);
    } else if (irp_is_word(ps, "fwd")) {     /* fwd [ '(' ARGNO... ')' ] */
      k->fwd = true;
      irp_next(ps);
      if (irp_is_punct(ps, "(")) {
        irp_next(ps);
        while (!irp_is_punct(ps, ")")) {
          int a = irp_small_int(ps, "argument number", 0, 15);
          if (a >= k->nargs) fail(ps, "fwd: argument %d does not exist (the kernel has %d)", a, k->nargs);
          k->fwd_args |= 1u << a;
        }
        irp_next(ps);
      }
    } else if (irp_is_word(ps, "gtmp")) {
      irp_next(ps);
      irp_expect(ps, "=", "after gtmp");
      k->gtmp_size = irp_small_int(ps, "gtmp size", 0, 1 << 30);
    } else {
      break;
    }
  }
  irp_expect(ps, "{", "to open the kernel body");
  parse_block(ps, k->body);
  irp_expect(ps, "}", "to close the kernel");
  if (ps->tok.kind != T_EOF)
    fail(ps, "unexpected %s after the kernel (one kernel per text)", irp_describe(ps, &ps->tok));
  k->next_id = ps->max_id + 1;
}

ir_kernel *ir_parse(const char *text, ir_program *prog, char *err, size_t errlen) {
  /* on the heap, so that what the parse changes survives the longjmp */
  parser *ps = calloc(1, sizeof(parser));
  if (!ps) {
    snprintf(err, errlen, "line 1: out of memory");
    return NULL;
  }
  ps->src = ps->p = text ? text : "";
  ps->line = 1;
  ps->prog = prog;
  ps->err = err;
  ps->errlen = errlen;
  ps->max_id = -1;
  if (setjmp(ps->jb)) {
    ir_kernel_free(ps->k);
    free(ps->byid);
    free(ps);
    return NULL;
  }
  irp_next(ps);
  for (;;) {
    if (irp_is_word(ps, "field"))
      irp_field(ps);
    else if (irp_is_word(ps, "tree"))
      irp_tree(ps);
    else if (irp_is_word(ps, "gradient"))
      irp_gradient(ps);
    else if (irp_is_word(ps, "dual"))
      irp_dual(ps);
    else
      break;
  }
  if (ps->tok.kind == T_EOF) fail(ps, "no kernel in the text");
  parse_kernel(ps);
  ir_kernel *k = ps->k;
  free(ps->byid);
  free(ps);
  return k;
}
