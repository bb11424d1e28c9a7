/*
** print.c -- the IR text form (docs/ir.md). Its output is valid input for
** parse.c and prints back identically, so passes can be tested from text.
*/
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "snode.h"

typedef struct {
  char *buf;
  size_t len, cap;
  unsigned flags;
  ir_kernel *k;
  bool *used;  /* IR_PRINT_FIELDS: per tree, whether the kernel names it (else NULL) */
} out;

static void put(out *o, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < o->cap - o->len) {
      o->len += (size_t)n;
      return;
    }
    size_t cap = o->cap * 2 + (size_t)n;
    char *b = realloc(o->buf, cap);
    if (!b) {
      fprintf(stderr, "lattice: out of memory printing IR\n");
      abort();
    }
    o->buf = b;
    o->cap = cap;
  }
}

/* A plain identifier prints as is; anything else is quoted. */
static bool is_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.')) return false;
  return true;
}

static void put_name(out *o, const char *s) {
  if (is_ident(s)) {
    put(o, "%s", s);
    return;
  }
  put(o, "\"");
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\')
      put(o, "\\%c", *s);
    else if ((unsigned char)*s < 32)
      put(o, "\\x%02x", (unsigned char)*s);
    else
      put(o, "%c", *s);
  }
  put(o, "\"");
}

/* The shortest decimal text that reads back as exactly v (as an f32 when
** single, since the parser rounds f32 constants to f32). */
static void format_float(char *buf, size_t len, double v, bool single) {
  if (isnan(v)) {
    snprintf(buf, len, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, len, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, v);
    double back = strtod(buf, NULL);
    if (single ? (float)back == (float)v : back == v) break;
  }
  /* keep a float looking like one: 1 -> 1.0 */
  if (!strpbrk(buf, ".eEn")) {
    size_t n = strlen(buf);
    if (n + 2 < len) memcpy(buf + n, ".0", 3);
  }
}

static bool name_unique(const out *o, const ir_snode *s);

/* A field prints by its name when that name finds it unambiguously. */
static void put_field(out *o, int id) {
  const ir_snode *s = ir_program_snode(o->k->prog, id);
  char lab[64];
  if (!s)
    put(o, "S%d", id);
  else if (s->kind == IR_SN_place && name_unique(o, s))
    put(o, "%s", s->name);
  else
    put(o, "%s", ir_snode_label(s, lab, sizeof lab));
}

static void put_ref(out *o, const ir_stmt *s);

/* A level (sparse ops, struct loops, sparse tasks) prints by its label. */
static void put_level(out *o, int id) {
  ir_program *p = o->k->prog;
  char lab[64];
  if (!ir_program_snode(p, id))
    put(o, "S%d", id);
  else
    put(o, "%s", ir_snode_label(p->snodes[id], lab, sizeof lab));
}

static void put_refs(out *o, const ir_stmt *s, int n) {
  put(o, " [");
  for (int i = 0; i < n; i++) {
    if (i) put(o, ", ");
    put_ref(o, s->ops[i]);
  }
  put(o, "]");
}

static bool is_struct_loop(const ir_stmt *l) {
  return l && (l->op == IR_struct_for || l->op == IR_task_struct_for);
}

static void put_const(out *o, const ir_stmt *s) {
  if (ir_type_is_float(s->type)) {
    char b[64];
    format_float(b, sizeof b, s->imm.fval, s->type == IR_f32);
    put(o, " %s", b);
  } else if (s->type == IR_u64) {
    put(o, " %llu", (unsigned long long)s->imm.ival);
  } else {
    put(o, " %lld", (long long)s->imm.ival);
  }
}

static void put_bound(out *o, int64_t v, int gtmp) {
  if (gtmp >= 0)
    put(o, " gtmp[%d]", gtmp);
  else
    put(o, " %lld", (long long)v);
}

static void put_ref(out *o, const ir_stmt *s) {
  if (s)
    put(o, "$%d", s->id);
  else
    put(o, "$?"); /* only in broken IR; the parser rejects it */
}

static void print_block(out *o, const ir_block *blk, int depth);

/* "  @file:line" when asked for; the parser reads it back into loc. */
static void put_loc(out *o, const ir_stmt *s) {
  if (!(o->flags & IR_PRINT_LOC) || s->loc.line <= 0) return;
  put(o, "  @");
  if (s->loc.file) {
    put_name(o, s->loc.file);
    put(o, ":");
  }
  put(o, "%d", s->loc.line);
}

/* A string of the kernel's table, always quoted (print formats, assert messages). */
static void put_string(out *o, int i) {
  const char *str = ir_kernel_string(o->k, i);
  put(o, "\"");
  for (; str && *str; str++) {
    if (*str == '"' || *str == '\\')
      put(o, "\\%c", *str);
    else if ((unsigned char)*str < 32)
      put(o, "\\x%02x", (unsigned char)*str);
    else
      put(o, "%c", *str);
  }
  put(o, "\"");
}

/* check_bound $i $n arg A axis K | random $stream $draw site N |
** print "fmt" $a $b ... [values N] | print_more $r at K $a ... | assert $c "message" */
static void put_builtin(out *o, const ir_stmt *s) {
  if (s->op == IR_print) {
    put(o, " ");
    put_string(o, s->aux);
  }
  for (int i = 0; i < s->nops; i++) {
    put(o, " ");
    put_ref(o, s->ops[i]);
    if (s->op == IR_print_more && i == 0) put(o, " at %lld", (long long)s->imm.ival);
  }
  if (s->op == IR_print && s->imm.ival) put(o, " values %lld", (long long)s->imm.ival);
  if (s->op == IR_check_bound) put(o, " arg %d axis %lld", s->aux, (long long)s->imm.ival);
  if (s->op == IR_random) put(o, " site %lld", (long long)s->imm.ival);
  if (s->op == IR_assert) {
    put(o, " ");
    put_string(o, s->aux);
  }
}

/* After offload, a loop that runs serially at the kernel's outer level
** says why in a comment (the parser skips it): only a top-level loop becomes
** a parallel task. A loop nested in another loop says nothing (the outer one
** is parallel, or says why it is serial). */
static void put_serial_note(out *o, const ir_stmt *s) {
  if (!o->k->offloaded || (s->op != IR_while && s->op != IR_range_for)) return;
  bool in_if = false;
  for (const ir_stmt *p = s->parent ? s->parent->owner : NULL; p; p = p->parent ? p->parent->owner : NULL) {
    if (p->op == IR_task_serial) {
      put(o, in_if                 ? "  # serial: inside an if; only loops at the kernel's top level run in parallel"
             : s->op == IR_while ? "  # serial: a while or repeat loop, or lt.serial"
                                 : "  # serial: in a serial task");
      return;
    }
    if (ir_op_flags(p->op) & IR_TASK) return;           /* in a parallel task's iteration */
    if (p->op == IR_if) in_if = true;
    else return;                                         /* nested in a loop */
  }
}

static void print_stmt(out *o, const ir_stmt *s, int depth) {
  put(o, "%*s", 2 * depth, "");
  if (s->type != IR_void || s->op == IR_global_ptr || s->op == IR_global_tmp) {
    bool ptr = s->op == IR_global_ptr || s->op == IR_global_tmp || s->op == IR_ext_ptr;
    put(o, "<%s%s> ", ir_type_name(s->type), ptr ? "*" : "");
  }
  put(o, "$%d = %s", s->id, ir_op_name(s->op));
  switch (s->op) {
  case IR_const:
    put_const(o, s);
    break;
  case IR_arg:
    put(o, " %d", s->aux);
    break;
  case IR_global_ptr:
    put(o, " ");
    put_field(o, s->aux);
    put_refs(o, s, s->nops);
    if (s->imm.ival) put(o, " activate");
    break;
  case IR_snode_activate: case IR_snode_deactivate: case IR_snode_is_active:
  case IR_snode_reserve: case IR_snode_length:
    put(o, " ");
    put_level(o, s->aux);
    put_refs(o, s, s->nops);
    break;
  case IR_snode_append:
    put(o, " ");
    put_level(o, s->aux);
    put_refs(o, s, s->nops > 0 ? s->nops - 1 : 0);
    put(o, " ");
    put_ref(o, s->nops > 0 ? s->ops[s->nops - 1] : NULL);
    break;
  case IR_snode_deactivate_all: case IR_struct_for: case IR_task_clear_list: case IR_task_gc:
  case IR_task_deactivate_all:
    put(o, " ");
    put_level(o, s->aux);
    break;
  case IR_task_listgen: {
    ir_program *p = o->k->prog;
    const ir_snode *c = ir_program_snode(p, s->aux);
    put(o, " ");
    put_level(o, c && c->parent ? c->parent->id : -1);
    put(o, "->");
    put_level(o, s->aux);
    break;
  }
  case IR_task_struct_for:
    put(o, " ");
    put_level(o, s->aux);
    put(o, " block_dim=%d", s->range.block_dim);
    break;
  case IR_global_tmp:
    put(o, " %d", s->aux);
    break;
  case IR_adstack:
    put(o, " %lld", (long long)s->imm.ival);
    break;
  case IR_adstack_push:
    for (int i = 0; i < s->nops; i++) {
      put(o, " ");
      put_ref(o, s->ops[i]);
    }
    put(o, " ");
    put_string(o, s->aux);
    break;
  case IR_check_index:
    for (int i = 0; i < s->nops; i++) {
      put(o, " ");
      put_ref(o, s->ops[i]);
    }
    put(o, " ");
    put_field(o, s->aux);
    put(o, " axis %lld", (long long)s->imm.ival);
    break;
  case IR_check_bound: case IR_random: case IR_print: case IR_print_more: case IR_assert:
    put_builtin(o, s);
    break;
  case IR_loop_index:
    put(o, " ");
    put_ref(o, s->loop);
    if (is_struct_loop(s->loop)) put(o, " %lld", (long long)s->imm.ival);
    break;
  case IR_task_range_for:
    put_bound(o, s->range.begin, s->range.begin_gtmp);
    put_bound(o, s->range.end, s->range.end_gtmp);
    put(o, " block_dim=%d", s->range.block_dim);
    break;
  default:
    for (int i = 0; i < s->nops; i++) {
      put(o, " ");
      put_ref(o, s->ops[i]);
    }
    break;
  }
  if (ir_op_flags(s->op) & IR_BLOCKS) {
    put(o, " {");
    put_loc(o, s);
    put_serial_note(o, s);
    put(o, "\n");
    if (s->blocks[0]) print_block(o, s->blocks[0], depth + 1);
    if (s->blocks[1]) {
      put(o, "%*s} else {\n", 2 * depth, "");
      print_block(o, s->blocks[1], depth + 1);
    }
    put(o, "%*s}\n", 2 * depth, "");
    return;
  }
  put_loc(o, s);
  put(o, "\n");
}

static void print_block(out *o, const ir_block *blk, int depth) {
  for (const ir_stmt *s = blk->first; s; s = s->next) print_stmt(o, s, depth);
}

/* ---- field declarations (IR_PRINT_FIELDS) ----------------------------------
** The trees the kernel names are declared before it, so that the text parses
** on its own into a fresh program and every SNode gets back its id: `field`
** when the tree is a chain of levels whose ids are those a `field`
** declaration gets at that point of the text (the lowest ones not given
** yet), else `tree`, which states every id. Trees print in the program's order, which the parse keeps, and
** names are judged unique among these trees alone (the fresh program has no
** others), so print -> parse -> print gives the same text. */

static void mark_use(ir_stmt *s, void *ud) {
  out *o = ud;
  const ir_snode *n = ir_op_names_snode(s->op) ? ir_program_snode(o->k->prog, s->aux) : NULL;
  if (n) o->used[n->tree] = true;
}

/* A name the parser reads back as this place: a plain identifier, not
** label-like, held by no other place in scope. */
static bool name_unique(const out *o, const ir_snode *s) {
  if (!s->name || !is_ident(s->name) || (s->name[0] == 'S' && isdigit((unsigned char)s->name[1])))
    return false;
  const ir_program *p = o->k->prog;
  for (int i = 0; i < p->nsnodes; i++) {
    const ir_snode *q = p->snodes[i];
    if (q && q != s && q->kind == IR_SN_place && q->name && strcmp(q->name, s->name) == 0 &&
        (!o->used || o->used[q->tree]))
      return false;
  }
  return true;
}

static void put_axes(out *o, const ir_snode *lv) {
  put(o, " [");
  for (int a = 0; a < lv->naxes; a++)
    put(o, "%s%c:%lld", a ? ", " : "", "ijklmnop"[lv->axes[a]], (long long)lv->shape[a]);
  put(o, "]");
  if (lv->kind == IR_SN_dynamic && lv->chunk_cells != ir_snode_default_chunk(lv->num_cells))
    put(o, " chunk=%lld", (long long)lv->chunk_cells);
}

/* The id the parser's next new SNode gets: the lowest one the text has not
** given yet (snode.c's take_id, in a fresh program). */
static int lowest_free(const bool *taken) {
  int id = 0;
  while (id < IR_MAX_SNODES - 1 && taken[id]) id++;
  return id;
}

/* `field` form: root, a chain of levels, then the places under the last one,
** when their ids are those the parser gives them, in that order. */
static bool put_field_decl(out *o, const ir_tree *t, bool *taken) {
  const ir_snode *chain[IR_MAX_INDICES * 5], *n = t->root;
  int len = 0, nlev = 0;
  chain[len++] = n;
  while (n->nchildren == 1 && ir_snode_kind_is_level(n->children[0]->kind) && len < IR_MAX_INDICES * 4) {
    n = chain[len++] = n->children[0];
    nlev++;
  }
  if (n->nchildren == 0 || n->nchildren > IR_MAX_INDICES) return false;
  for (int c = 0; c < n->nchildren; c++) {
    const ir_snode *pl = n->children[c];
    if (pl->kind != IR_SN_place || !name_unique(o, pl)) return false;
    chain[len++] = pl;
  }
  int k = 0;
  for (; k < len && chain[k]->id == lowest_free(taken); k++) taken[chain[k]->id] = true;
  if (k < len) {
    while (k-- > 0) taken[chain[k]->id] = false;
    return false;
  }
  put(o, "field ");
  for (int c = 0; c < n->nchildren; c++)
    put(o, "%s%s <%s>", c ? ", " : "", n->children[c]->name, ir_type_name(n->children[c]->dtype));
  for (int l = 1; l <= nlev; l++) {
    put(o, " %s", ir_snode_kind_name(chain[l]->kind));
    put_axes(o, chain[l]);
  }
  put(o, "\n");
  return true;
}

/* `tree` form: every node on a line of its own, by its label */
static void put_node(out *o, const ir_snode *s, int depth, bool *taken) {
  char lab[64];
  put(o, "%*s%s", 2 * depth, "", ir_snode_label(s, lab, sizeof lab));
  taken[s->id] = true;
  if (s->kind == IR_SN_place) {
    if (s->name) {
      put(o, " ");
      put_name(o, s->name);
    }
    put(o, "\n");
    return;
  }
  if (s->kind != IR_SN_root) put_axes(o, s);
  put(o, " {\n");
  for (int c = 0; c < s->nchildren; c++) put_node(o, s->children[c], depth + 1, taken);
  put(o, "%*s}\n", 2 * depth, "");
}

static void put_fields(out *o) {
  ir_program *p = o->k->prog;
  bool taken[IR_MAX_SNODES] = {false};
  for (int t = 0; p && t < p->ntrees; t++) {
    const ir_tree *tr = &p->trees[t];
    if (!o->used[t] || !tr->root) continue;
    if (!put_field_decl(o, tr, taken)) {
      put(o, "tree ");
      put_node(o, tr->root, 0, taken);
    }
  }
  /* the gradients of the places declared (both declared: by their ids) */
  for (int i = 0; p && i < p->nsnodes; i++) {
    const ir_snode *s = p->snodes[i];
    if (s && s->kind == IR_SN_place && s->grad >= 0 && taken[s->id] && s->grad < IR_MAX_SNODES && taken[s->grad])
      put(o, "gradient S%d S%d\n", s->id, s->grad);
  }
  /* and their tangents (needs_dual), the same way */
  for (int i = 0; p && i < p->nsnodes; i++) {
    const ir_snode *s = p->snodes[i];
    if (s && s->kind == IR_SN_place && s->dual >= 0 && taken[s->id] && s->dual < IR_MAX_SNODES && taken[s->dual])
      put(o, "dual S%d S%d\n", s->id, s->dual);
  }
}

char *ir_print_ex(ir_kernel *k, unsigned flags) {
  bool used[IR_MAX_TREES] = {false};
  out o = {malloc(256), 0, 256, flags, k, NULL};
  if (!o.buf) abort();
  o.buf[0] = 0;
  if ((flags & IR_PRINT_FIELDS) && k->prog) {
    o.used = used;
    ir_walk(k->body, mark_use, &o);
    put_fields(&o);
  }
  if (flags & IR_PRINT_ONLY_FIELDS) return o.buf;
  put(&o, "kernel ");
  put_name(&o, k->name ? k->name : "kernel");
  put(&o, "(");
  for (int i = 0; i < k->nargs; i++) {
    if (i) put(&o, ", ");
    put(&o, "%s", ir_type_name(k->arg_types[i]));
    if (k->arg_names[i]) {
      put(&o, " ");
      put_name(&o, k->arg_names[i]);
    }
  }
  put(&o, ")");
  if (k->ret_type != IR_void) put(&o, " -> %s", ir_type_name(k->ret_type));
  if (k->offloaded) put(&o, " offloaded");
  if (k->debug) put(&o, " debug");
  if (k->grad) put(&o, " grad");
  if (k->fwd) {                    /* fwd(0 2): the arguments with tangents, when any */
    put(&o, " fwd");
    for (int i = 0, first = 1; i < 16; i++)
      if (k->fwd_args & (1u << i)) {
        put(&o, first ? "(%d" : " %d", i);
        first = 0;
      }
    if (k->fwd_args) put(&o, ")");
  }
  if (k->gtmp_size) put(&o, " gtmp=%d", k->gtmp_size);
  put(&o, " {\n");
  print_block(&o, k->body, 1);
  put(&o, "}\n");
  return o.buf;
}

char *ir_print(ir_kernel *k) { return ir_print_ex(k, 0); }
