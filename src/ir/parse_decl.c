/*
** parse_decl.c -- `field` and `tree` declarations in IR text, which create
** SNode trees so that a kernel's text parses on its own, and the references
** to fields and levels that statements make (parse_impl.h, docs/ir.md).
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

/* ---- fields ---------------------------------------------------------------- */

static int axis_from_letter(const char *s) {
  static const char letters[] = "ijklmnop";
  if (strlen(s) != 1) return -1;
  const char *c = strchr(letters, s[0]);
  return c && *c ? (int)(c - letters) : -1;
}

/* field -> 'field' NAME '<' type '>' {',' NAME '<' type '>'} {KIND '[' axis ':' INT {',' ...} ']' ['chunk' '=' INT]}
** KIND: dense, bitmasked, pointer, dynamic (chunk= only after a dynamic) */
void irp_field(parser *ps) {
  int line = ps->tok.line;
  irp_next(ps);
  if (!ps->prog)
    irp_fail_at(ps, line, "field declarations need a program, and none was given to the parser");
  char names[IR_MAX_INDICES][256];
  ir_type types[IR_MAX_INDICES];
  int nplaces = 0;
  for (;;) {
    if (nplaces == IR_MAX_INDICES) fail(ps, "at most %d fields in one declaration", IR_MAX_INDICES);
    irp_name(ps, names[nplaces], sizeof names[0], "a field name");
    for (int i = 0; i < ps->prog->nsnodes; i++) {
      ir_snode *s = ps->prog->snodes[i];
      if (s && s->kind == IR_SN_place && s->name && strcmp(s->name, names[nplaces]) == 0)
        irp_fail_at(ps, line, "field '%s' is declared twice", names[nplaces]);
    }
    for (int i = 0; i < nplaces; i++)
      if (strcmp(names[i], names[nplaces]) == 0)
        irp_fail_at(ps, line, "field '%s' is placed twice in one declaration; a field is placed once",
                  names[nplaces]);
    irp_expect(ps, "<", "before the field's type");
    types[nplaces] = irp_type_name(ps);
    irp_expect(ps, ">", "after the field's type");
    nplaces++;
    if (!irp_is_punct(ps, ",")) break;
    irp_next(ps);
  }
  char err[256];
  ir_snode *node = ir_snode_root(ps->prog);
  if (!node) irp_fail_at(ps, line, "too many SNode trees");
  ir_snode *root = node;
  for (;;) {
    int kind = ps->tok.kind == T_IDENT ? ir_snode_kind_from_name(ps->tok.text) : -1;
    if (kind < 0 || !ir_snode_kind_is_level((ir_snode_kind)kind)) {
      if (ps->tok.kind == T_IDENT && !irp_is_word(ps, "field") && !irp_is_word(ps, "tree") &&
          !irp_is_word(ps, "gradient") && !irp_is_word(ps, "dual") && !irp_is_word(ps, "kernel"))
        fail(ps, "unknown level kind '%s' (levels: dense, bitmasked, pointer, dynamic)", ps->tok.text);
      break;
    }
    const char *kn = ir_snode_kind_name((ir_snode_kind)kind);
    irp_next(ps);
    irp_expect(ps, "[", "after the level kind");
    int axes[IR_MAX_INDICES];
    int64_t shape[IR_MAX_INDICES];
    int n = 0;
    while (!irp_is_punct(ps, "]")) {
      if (n == IR_MAX_INDICES) fail(ps, "a %s level has at most %d axes", kn, IR_MAX_INDICES);
      if (ps->tok.kind != T_IDENT || axis_from_letter(ps->tok.text) < 0)
        fail(ps, "expected an axis letter (i j k l m n o p), found %s", irp_describe(ps, &ps->tok));
      axes[n] = axis_from_letter(ps->tok.text);
      irp_next(ps);
      irp_expect(ps, ":", "between an axis and its extent");
      shape[n] = irp_int(ps, "an extent");
      n++;
      if (!irp_is_punct(ps, ",")) break;
      irp_next(ps);
    }
    irp_expect(ps, "]", "to close the level's axes");
    if (kind == IR_SN_dynamic) {
      int64_t chunk = 0;
      if (irp_is_word(ps, "chunk")) {
        irp_next(ps);
        irp_expect(ps, "=", "after chunk");
        chunk = irp_int(ps, "a chunk size");
        if (chunk <= 0) irp_fail_at(ps, line, "chunk=%lld: a chunk holds at least one cell", (long long)chunk);
      }
      if (n != 1)
        irp_fail_at(ps, line, "a dynamic level is a 1-D list along exactly one axis (%d given)", n);
      node = ir_snode_dynamic(ps->prog, node, axes[0], shape[0], chunk, err, sizeof err);
    } else {
      node = ir_snode_level(ps->prog, node, (ir_snode_kind)kind, n, axes, shape, err, sizeof err);
    }
    if (!node) irp_fail_at(ps, line, "%s", err);
  }
  for (int i = 0; i < nplaces; i++)
    if (!ir_snode_place(ps->prog, node, types[i], names[i], err, sizeof err))
      irp_fail_at(ps, line, "%s", err);
  if (!ir_snode_layout(ps->prog, root, err, sizeof err)) irp_fail_at(ps, line, "%s", err);
}

/* A node label of a `tree` declaration, S<id><kind>: the id (unused so far in
** the program) and the kind. */
static int parse_node_label(parser *ps, ir_snode_kind *kind) {
  const char *t = ps->tok.text;
  if (ps->tok.kind != T_IDENT || t[0] != 'S' || !isdigit((unsigned char)t[1]))
    fail(ps, "expected an SNode such as S1dense or S2place<f32>, found %s", irp_describe(ps, &ps->tok));
  char *end;
  long id = strtol(t + 1, &end, 10);
  int k = ir_snode_kind_from_name(end);
  if (k < 0) fail(ps, "bad SNode label '%s' (write S<id><kind>, as in S2pointer)", t);
  if (id >= IR_MAX_SNODES) fail(ps, "SNode id %ld is out of range (at most %d SNodes)", id, IR_MAX_SNODES);
  if (ir_program_snode(ps->prog, id)) fail(ps, "S%ld is declared twice", id);
  *kind = (ir_snode_kind)k;
  return (int)id;
}

/* Runs the SNode builder `make` so that the SNode it makes gets id `id`. */
typedef ir_snode *(*node_maker)(parser *ps, ir_snode *parent, void *ud, char *err, size_t errlen);
static ir_snode *make_node(parser *ps, int id, int line, node_maker make, ir_snode *parent, void *ud) {
  ir_program *p = ps->prog;
  char err[256] = "";
  if (!ir_program_set_next_id(p, id)) irp_fail_at(ps, line, "S%d is declared twice", id);
  ir_snode *s = make(ps, parent, ud, err, sizeof err);
  p->next_id = 0;   /* unused when the builder refused */
  if (!s) irp_fail_at(ps, line, "%s", err[0] ? err : "too many SNode trees");
  return s;
}

typedef struct {
  ir_snode_kind kind;
  int naxes, axes[IR_MAX_INDICES];
  int64_t shape[IR_MAX_INDICES], chunk;
  ir_type type;
  const char *name;
} node_decl;

static ir_snode *make_root(parser *ps, ir_snode *parent, void *ud, char *err, size_t errlen) {
  return ir_snode_root(ps->prog);
}

static ir_snode *make_child(parser *ps, ir_snode *parent, void *ud, char *err, size_t errlen) {
  node_decl *d = ud;
  if (d->kind == IR_SN_place) return ir_snode_place(ps->prog, parent, d->type, d->name, err, errlen);
  if (d->kind == IR_SN_dynamic && d->naxes == 1)
    return ir_snode_dynamic(ps->prog, parent, d->axes[0], d->shape[0], d->chunk, err, errlen);
  return ir_snode_level(ps->prog, parent, d->kind, d->naxes, d->axes, d->shape, err, errlen);
}

/* node -> S<id>place '<' type '>' [NAME]
**       | S<id>KIND '[' axis ':' INT {',' ...} ']' ['chunk' '=' INT] '{' {node} '}' */
static void parse_node(parser *ps, ir_snode *parent) {
  int line = ps->tok.line;
  node_decl d = {0};
  int id = parse_node_label(ps, &d.kind);
  irp_next(ps);
  if (d.kind == IR_SN_place) {
    irp_expect(ps, "<", "after a place's label");
    d.type = irp_type_name(ps);
    irp_expect(ps, ">", "after a place's type");
    char name[256];
    if ((ps->tok.kind == T_IDENT || ps->tok.kind == T_STR) && ps->tok.line == line) {
      irp_name(ps, name, sizeof name, "the field's name");
      d.name = name;
    }
    make_node(ps, id, line, make_child, parent, &d);
    return;
  }
  if (!ir_snode_kind_is_level(d.kind))
    irp_fail_at(ps, line, "S%d: a %s cannot be a child; levels are dense, bitmasked, pointer, dynamic",
              id, ir_snode_kind_name(d.kind));
  irp_expect(ps, "[", "after the level's label");
  while (!irp_is_punct(ps, "]")) {
    if (d.naxes == IR_MAX_INDICES) fail(ps, "a level has at most %d axes", IR_MAX_INDICES);
    if (ps->tok.kind != T_IDENT || axis_from_letter(ps->tok.text) < 0)
      fail(ps, "expected an axis letter (i j k l m n o p), found %s", irp_describe(ps, &ps->tok));
    d.axes[d.naxes] = axis_from_letter(ps->tok.text);
    irp_next(ps);
    irp_expect(ps, ":", "between an axis and its extent");
    d.shape[d.naxes++] = irp_int(ps, "an extent");
    if (!irp_is_punct(ps, ",")) break;
    irp_next(ps);
  }
  irp_expect(ps, "]", "to close the level's axes");
  if (d.kind == IR_SN_dynamic && irp_is_word(ps, "chunk")) {
    irp_next(ps);
    irp_expect(ps, "=", "after chunk");
    d.chunk = irp_int(ps, "a chunk size");
    if (d.chunk <= 0) irp_fail_at(ps, line, "chunk=%lld: a chunk holds at least one cell", (long long)d.chunk);
  }
  ir_snode *s = make_node(ps, id, line, make_child, parent, &d);
  irp_expect(ps, "{", "to open the level's children");
  /* (snode.c refuses trees deeper than 32 levels, so this recursion is bounded) */
  while (!irp_is_punct(ps, "}")) {
    if (ps->tok.kind == T_EOF) fail(ps, "missing '}' at the end of the text");
    parse_node(ps, s);
  }
  irp_next(ps);
}

/* tree -> 'tree' S<id>root '{' {node} '}': an SNode tree with every id given */
void irp_tree(parser *ps) {
  int line = ps->tok.line;
  irp_next(ps);
  if (!ps->prog)
    irp_fail_at(ps, line, "tree declarations need a program, and none was given to the parser");
  ir_snode_kind kind;
  int id = parse_node_label(ps, &kind);
  if (kind != IR_SN_root) fail(ps, "a tree starts with its root, as in: tree S0root {");
  irp_next(ps);
  ir_snode *root = make_node(ps, id, line, make_root, NULL, NULL);
  irp_expect(ps, "{", "to open the tree");
  while (!irp_is_punct(ps, "}")) {
    if (ps->tok.kind == T_EOF) fail(ps, "missing '}' at the end of the text");
    parse_node(ps, root);
  }
  char err[256];
  if (!ir_snode_layout(ps->prog, root, err, sizeof err)) irp_fail_at(ps, line, "%s", err);
  irp_next(ps);
}

/* gradient -> 'gradient' FIELD FIELD: the second place holds the first's
** gradient (needs_grad; the autodiff pass reads it) */
void irp_gradient(parser *ps) {
  int line = ps->tok.line;
  irp_next(ps);
  int a = irp_field_ref(ps), b = irp_field_ref(ps);
  ir_snode *pa = ir_program_snode(ps->prog, a), *pb = ir_program_snode(ps->prog, b);
  if (!pa || !pb || pa->kind != IR_SN_place || pb->kind != IR_SN_place || a == b)
    irp_fail_at(ps, line, "gradient: two different places (fields) are needed");
  if (pa->dtype != pb->dtype || (pa->dtype != IR_f32 && pa->dtype != IR_f64))
    irp_fail_at(ps, line, "gradient: a field and its gradient hold the same float type (f32 or f64)");
  pa->grad = b;
}

/* dual -> 'dual' FIELD FIELD: the second place holds the first's tangent
** (needs_dual; the forward pass reads it) */
void irp_dual(parser *ps) {
  int line = ps->tok.line;
  irp_next(ps);
  int a = irp_field_ref(ps), b = irp_field_ref(ps);
  ir_snode *pa = ir_program_snode(ps->prog, a), *pb = ir_program_snode(ps->prog, b);
  if (!pa || !pb || pa->kind != IR_SN_place || pb->kind != IR_SN_place || a == b)
    irp_fail_at(ps, line, "dual: two different places (fields) are needed");
  if (pa->dtype != pb->dtype || (pa->dtype != IR_f32 && pa->dtype != IR_f64))
    irp_fail_at(ps, line, "dual: a field and its tangent hold the same float type (f32 or f64)");
  pa->dual = b;
}

/* A field reference: a name, or a label S<id> optionally followed by kind<type>. */
int irp_field_ref(parser *ps) {
  if (ps->tok.kind != T_IDENT && ps->tok.kind != T_STR)
    fail(ps, "expected a field (a name or S<id>), found %s", irp_describe(ps, &ps->tok));
  const char *t = ps->tok.text;
  ir_program *p = ps->prog;
  if (ps->tok.kind == T_IDENT && t[0] == 'S' && isdigit((unsigned char)t[1])) {
    char *end;
    long id = strtol(t + 1, &end, 10);
    if (id < 0 || id >= IR_MAX_SNODES) fail(ps, "SNode id %ld is out of range", id);
    int line = ps->tok.line;
    bool has_type = strcmp(end, "place") == 0;
    if (*end && !has_type && ir_snode_kind_from_name(end) < 0)
      fail(ps, "bad SNode label '%s' (write S<id> or S<id>place<type>)", t);
    irp_next(ps);
    if (has_type) {
      irp_expect(ps, "<", "in an SNode label");
      ir_type ty = irp_type_name(ps);
      irp_expect(ps, ">", "in an SNode label");
      const ir_snode *sn = ir_program_snode(p, id);
      if (sn && sn->kind != IR_SN_place)
        irp_fail_at(ps, line, "S%ld is a %s, not a place", id, ir_snode_kind_name(sn->kind));
      if (sn && sn->dtype != ty)
        irp_fail_at(ps, line, "S%ld holds %s, not %s", id, ir_type_name(sn->dtype), ir_type_name(ty));
    }
    if (p && !ir_program_snode(p, id))
      irp_fail_at(ps, line, "no SNode S%ld in this program", id);
    return (int)id;
  }
  int found = -1;
  for (int i = 0; p && i < p->nsnodes; i++) {
    ir_snode *s = p->snodes[i];
    if (s && s->kind == IR_SN_place && s->name && strcmp(s->name, t) == 0) {
      if (found >= 0) fail(ps, "field name '%s' is ambiguous (S%d and S%d); use the S<id> label", t, found, i);
      found = i;
    }
  }
  if (found < 0) fail(ps, "unknown field '%s' (declare it with `field %s <f32> dense [i:N]`)", t, t);
  irp_next(ps);
  return found;
}

/* A level reference: S<id> optionally followed by its kind (S2bitmasked). */
int irp_level_ref(parser *ps, const char *what) {
  const char *t = ps->tok.text;
  if (ps->tok.kind != T_IDENT || t[0] != 'S' || !isdigit((unsigned char)t[1]))
    fail(ps, "expected %s (an SNode level such as S1 or S1dense), found %s", what, irp_describe(ps, &ps->tok));
  char *end;
  long id = strtol(t + 1, &end, 10);
  if (id < 0 || id >= IR_MAX_SNODES) fail(ps, "SNode id %ld is out of range", id);
  int kind = *end ? ir_snode_kind_from_name(end) : -1;
  if (*end && kind < 0) fail(ps, "bad SNode label '%s' (write S<id> or S<id><kind>, as in S2pointer)", t);
  ir_program *p = ps->prog;
  if (p && !ir_program_snode(p, id)) fail(ps, "no SNode S%ld in this program", id);
  if (p && kind >= 0 && p->snodes[id]->kind != (ir_snode_kind)kind)
    fail(ps, "S%ld is a %s, not a %s", id, ir_snode_kind_name(p->snodes[id]->kind), end);
  irp_next(ps);
  return (int)id;
}
