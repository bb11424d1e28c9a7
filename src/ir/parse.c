/*
** parse.c -- reads the IR text form written by print.c (docs/ir.md), plus
** `field` declarations that create SNode trees, so a pass can be tested from
** text alone. Errors are "line N: message"; nothing is left allocated.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "snode.h"

#define MAX_ID (1 << 24)

typedef enum { T_EOF, T_IDENT, T_NUM, T_VAR, T_STR, T_PUNCT } tok_kind;

typedef struct {
  tok_kind kind;
  int line;
  char text[256]; /* identifier, number text, string contents, or the punctuation */
} token;

typedef struct {
  const char *src, *p;
  int line;
  token tok;          /* current token */
  int prev_line;      /* line of the previous token */
  ir_kernel *k;
  ir_program *prog;
  ir_stmt **byid;     /* id -> statement, for operands */
  int nbyid;
  int max_id;
  int depth;          /* blocks open around the current statement */
  char *err;
  size_t errlen;
  char desc[300];
  jmp_buf jb;
} parser;

static void perror_at(parser *ps, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 3, 4)))
#endif
    ;

static void perror_at(parser *ps, int line, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ps->err && ps->errlen) snprintf(ps->err, ps->errlen, "line %d: %s", line, msg);
  longjmp(ps->jb, 1);
}

#define fail(ps, ...) perror_at(ps, (ps)->tok.line, __VA_ARGS__)

/* ---- lexer ------------------------------------------------------------------ */

/* The current token as a message shows it (in the parser's buffer). */
static const char *describe_tok(parser *ps, const token *t) {
  char *buf = ps->desc;
  switch (t->kind) {
  case T_EOF: return "the end of the text";
  case T_STR: snprintf(buf, sizeof ps->desc, "\"%.200s\"", t->text); return buf;
  case T_VAR: snprintf(buf, sizeof ps->desc, "$%.200s", t->text); return buf;
  default: snprintf(buf, sizeof ps->desc, "'%.200s'", t->text); return buf;
  }
}

static void next(parser *ps) {
  ps->prev_line = ps->tok.line;
  const char *p = ps->p;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
      if (*p == '\n') ps->line++;
      p++;
    }
    if (*p == '#') { /* comment to the end of the line */
      while (*p && *p != '\n') p++;
      continue;
    }
    break;
  }
  token *t = &ps->tok;
  t->line = ps->line;
  t->text[0] = 0;
  size_t n = 0;
  if (!*p) {
    t->kind = T_EOF;
  } else if (isalpha((unsigned char)*p) || *p == '_') {
    t->kind = T_IDENT;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '.') {
      if (n + 1 >= sizeof t->text) fail(ps, "name too long");
      t->text[n++] = *p++;
    }
    t->text[n] = 0;
  } else if (isdigit((unsigned char)*p) ||
             ((*p == '-' || *p == '+') && (isdigit((unsigned char)p[1]) || p[1] == '.' ||
                                           p[1] == 'i' || p[1] == 'n'))) {
    /* numbers, including 1e-5, -inf and nan; validated where they are used */
    t->kind = T_NUM;
    t->text[n++] = *p++;
    while (isalnum((unsigned char)*p) || *p == '.' ||
           ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E'))) {
      if (n + 1 >= sizeof t->text) fail(ps, "number too long");
      t->text[n++] = *p++;
    }
    t->text[n] = 0;
  } else if (*p == '$') {
    t->kind = T_VAR;
    p++;
    while (isdigit((unsigned char)*p)) {
      if (n + 1 >= sizeof t->text) fail(ps, "statement number too long");
      t->text[n++] = *p++;
    }
    t->text[n] = 0;
    if (n == 0) fail(ps, "'$' must be followed by a statement number, as in $3");
  } else if (*p == '"') {
    t->kind = T_STR;
    p++;
    while (*p != '"') {
      if (!*p || *p == '\n') fail(ps, "unfinished string");
      char c = *p++;
      if (c == '\\') {
        if (*p == 'x' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
          char hex[3] = {p[1], p[2], 0};
          c = (char)strtol(hex, NULL, 16);
          p += 3;
        } else if (*p) {
          c = *p++;
        }
      }
      if (n + 1 >= sizeof t->text) fail(ps, "string too long");
      t->text[n++] = c;
    }
    p++;
    t->text[n] = 0;
  } else if (*p == '-' && p[1] == '>') {
    t->kind = T_PUNCT;
    strcpy(t->text, "->");
    p += 2;
  } else if (strchr("<>*={}[](),:@", *p)) {
    t->kind = T_PUNCT;
    t->text[0] = *p++;
    t->text[1] = 0;
  } else {
    fail(ps, "unexpected character '%c'", *p);
  }
  ps->p = p;
}

static bool is_punct(parser *ps, const char *s) {
  return ps->tok.kind == T_PUNCT && strcmp(ps->tok.text, s) == 0;
}

static bool is_word(parser *ps, const char *s) {
  return ps->tok.kind == T_IDENT && strcmp(ps->tok.text, s) == 0;
}

static void expect(parser *ps, const char *s, const char *context) {
  if (!is_punct(ps, s) && !is_word(ps, s))
    fail(ps, "expected '%s' %s, found %s", s, context, describe_tok(ps, &ps->tok));
  next(ps);
}

static int64_t parse_int(parser *ps, const char *what) {
  if (ps->tok.kind != T_NUM) fail(ps, "expected %s (an integer), found %s", what, describe_tok(ps, &ps->tok));
  char *end;
  errno = 0;
  long long v = strtoll(ps->tok.text, &end, 10);
  if (*end || errno) fail(ps, "bad integer '%s' for %s", ps->tok.text, what);
  next(ps);
  return v;
}

static int parse_small_int(parser *ps, const char *what, int lo, int hi) {
  int line = ps->tok.line;
  int64_t v = parse_int(ps, what);
  if (v < lo || v > hi) perror_at(ps, line, "%s %lld is out of range (%d..%d)", what, (long long)v, lo, hi);
  return (int)v;
}

/* a name: identifier or quoted string */
static void parse_name(parser *ps, char *out, size_t len, const char *what) {
  if (ps->tok.kind != T_IDENT && ps->tok.kind != T_STR)
    fail(ps, "expected %s, found %s", what, describe_tok(ps, &ps->tok));
  snprintf(out, len, "%s", ps->tok.text);
  next(ps);
}

static ir_type parse_type_name(parser *ps) {
  if (ps->tok.kind != T_IDENT) fail(ps, "expected a type (i32, f32, ...), found %s", describe_tok(ps, &ps->tok));
  int t = ir_type_from_name(ps->tok.text);
  if (t < 0) fail(ps, "unknown type '%s' (types: i1 i8 i16 i32 i64 u8 u16 u32 u64 f32 f64)", ps->tok.text);
  next(ps);
  return (ir_type)t;
}

/* ---- fields ---------------------------------------------------------------- */

static int axis_from_letter(const char *s) {
  static const char letters[] = "ijklmnop";
  if (strlen(s) != 1) return -1;
  const char *c = strchr(letters, s[0]);
  return c && *c ? (int)(c - letters) : -1;
}

/* field -> 'field' NAME '<' type '>' {',' NAME '<' type '>'} {KIND '[' axis ':' INT {',' ...} ']' ['chunk' '=' INT]}
** KIND: dense, bitmasked, pointer, dynamic (chunk= only after a dynamic) */
static void parse_field(parser *ps) {
  int line = ps->tok.line;
  next(ps);
  if (!ps->prog)
    perror_at(ps, line, "field declarations need a program, and none was given to the parser");
  char names[IR_MAX_INDICES][256];
  ir_type types[IR_MAX_INDICES];
  int nplaces = 0;
  for (;;) {
    if (nplaces == IR_MAX_INDICES) fail(ps, "at most %d fields in one declaration", IR_MAX_INDICES);
    parse_name(ps, names[nplaces], sizeof names[0], "a field name");
    for (int i = 0; i < ps->prog->nsnodes; i++) {
      ir_snode *s = ps->prog->snodes[i];
      if (s && s->kind == IR_SN_place && s->name && strcmp(s->name, names[nplaces]) == 0)
        perror_at(ps, line, "field '%s' is declared twice", names[nplaces]);
    }
    for (int i = 0; i < nplaces; i++)
      if (strcmp(names[i], names[nplaces]) == 0)
        perror_at(ps, line, "field '%s' is placed twice in one declaration; a field is placed once",
                  names[nplaces]);
    expect(ps, "<", "before the field's type");
    types[nplaces] = parse_type_name(ps);
    expect(ps, ">", "after the field's type");
    nplaces++;
    if (!is_punct(ps, ",")) break;
    next(ps);
  }
  char err[256];
  ir_snode *node = ir_snode_root(ps->prog);
  if (!node) perror_at(ps, line, "too many SNode trees");
  ir_snode *root = node;
  for (;;) {
    int kind = ps->tok.kind == T_IDENT ? ir_snode_kind_from_name(ps->tok.text) : -1;
    if (kind < 0 || !ir_snode_kind_is_level((ir_snode_kind)kind)) {
      if (ps->tok.kind == T_IDENT && !is_word(ps, "field") && !is_word(ps, "tree") && !is_word(ps, "kernel"))
        fail(ps, "unknown level kind '%s' (levels: dense, bitmasked, pointer, dynamic)", ps->tok.text);
      break;
    }
    const char *kn = ir_snode_kind_name((ir_snode_kind)kind);
    next(ps);
    expect(ps, "[", "after the level kind");
    int axes[IR_MAX_INDICES];
    int64_t shape[IR_MAX_INDICES];
    int n = 0;
    while (!is_punct(ps, "]")) {
      if (n == IR_MAX_INDICES) fail(ps, "a %s level has at most %d axes", kn, IR_MAX_INDICES);
      if (ps->tok.kind != T_IDENT || axis_from_letter(ps->tok.text) < 0)
        fail(ps, "expected an axis letter (i j k l m n o p), found %s", describe_tok(ps, &ps->tok));
      axes[n] = axis_from_letter(ps->tok.text);
      next(ps);
      expect(ps, ":", "between an axis and its extent");
      shape[n] = parse_int(ps, "an extent");
      n++;
      if (!is_punct(ps, ",")) break;
      next(ps);
    }
    expect(ps, "]", "to close the level's axes");
    if (kind == IR_SN_dynamic) {
      int64_t chunk = 0;
      if (is_word(ps, "chunk")) {
        next(ps);
        expect(ps, "=", "after chunk");
        chunk = parse_int(ps, "a chunk size");
        if (chunk <= 0) perror_at(ps, line, "chunk=%lld: a chunk holds at least one cell", (long long)chunk);
      }
      if (n != 1)
        perror_at(ps, line, "a dynamic level is a 1-D list along exactly one axis (%d given)", n);
      node = ir_snode_dynamic(ps->prog, node, axes[0], shape[0], chunk, err, sizeof err);
    } else {
      node = ir_snode_level(ps->prog, node, (ir_snode_kind)kind, n, axes, shape, err, sizeof err);
    }
    if (!node) perror_at(ps, line, "%s", err);
  }
  for (int i = 0; i < nplaces; i++)
    if (!ir_snode_place(ps->prog, node, types[i], names[i], err, sizeof err))
      perror_at(ps, line, "%s", err);
  if (!ir_snode_layout(ps->prog, root, err, sizeof err)) perror_at(ps, line, "%s", err);
}

/* A node label of a `tree` declaration, S<id><kind>: the id (unused so far in
** the program) and the kind. */
static int parse_node_label(parser *ps, ir_snode_kind *kind) {
  const char *t = ps->tok.text;
  if (ps->tok.kind != T_IDENT || t[0] != 'S' || !isdigit((unsigned char)t[1]))
    fail(ps, "expected an SNode such as S1dense or S2place<f32>, found %s", describe_tok(ps, &ps->tok));
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
  if (!ir_program_set_next_id(p, id)) perror_at(ps, line, "S%d is declared twice", id);
  ir_snode *s = make(ps, parent, ud, err, sizeof err);
  p->next_id = 0;   /* unused when the builder refused */
  if (!s) perror_at(ps, line, "%s", err[0] ? err : "too many SNode trees");
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
  next(ps);
  if (d.kind == IR_SN_place) {
    expect(ps, "<", "after a place's label");
    d.type = parse_type_name(ps);
    expect(ps, ">", "after a place's type");
    char name[256];
    if ((ps->tok.kind == T_IDENT || ps->tok.kind == T_STR) && ps->tok.line == line) {
      parse_name(ps, name, sizeof name, "the field's name");
      d.name = name;
    }
    make_node(ps, id, line, make_child, parent, &d);
    return;
  }
  if (!ir_snode_kind_is_level(d.kind))
    perror_at(ps, line, "S%d: a %s cannot be a child; levels are dense, bitmasked, pointer, dynamic",
              id, ir_snode_kind_name(d.kind));
  expect(ps, "[", "after the level's label");
  while (!is_punct(ps, "]")) {
    if (d.naxes == IR_MAX_INDICES) fail(ps, "a level has at most %d axes", IR_MAX_INDICES);
    if (ps->tok.kind != T_IDENT || axis_from_letter(ps->tok.text) < 0)
      fail(ps, "expected an axis letter (i j k l m n o p), found %s", describe_tok(ps, &ps->tok));
    d.axes[d.naxes] = axis_from_letter(ps->tok.text);
    next(ps);
    expect(ps, ":", "between an axis and its extent");
    d.shape[d.naxes++] = parse_int(ps, "an extent");
    if (!is_punct(ps, ",")) break;
    next(ps);
  }
  expect(ps, "]", "to close the level's axes");
  if (d.kind == IR_SN_dynamic && is_word(ps, "chunk")) {
    next(ps);
    expect(ps, "=", "after chunk");
    d.chunk = parse_int(ps, "a chunk size");
    if (d.chunk <= 0) perror_at(ps, line, "chunk=%lld: a chunk holds at least one cell", (long long)d.chunk);
  }
  ir_snode *s = make_node(ps, id, line, make_child, parent, &d);
  expect(ps, "{", "to open the level's children");
  /* (snode.c refuses trees deeper than 32 levels, so this recursion is bounded) */
  while (!is_punct(ps, "}")) {
    if (ps->tok.kind == T_EOF) fail(ps, "missing '}' at the end of the text");
    parse_node(ps, s);
  }
  next(ps);
}

/* tree -> 'tree' S<id>root '{' {node} '}': an SNode tree with every id given */
static void parse_tree(parser *ps) {
  int line = ps->tok.line;
  next(ps);
  if (!ps->prog)
    perror_at(ps, line, "tree declarations need a program, and none was given to the parser");
  ir_snode_kind kind;
  int id = parse_node_label(ps, &kind);
  if (kind != IR_SN_root) fail(ps, "a tree starts with its root, as in: tree S0root {");
  next(ps);
  ir_snode *root = make_node(ps, id, line, make_root, NULL, NULL);
  expect(ps, "{", "to open the tree");
  while (!is_punct(ps, "}")) {
    if (ps->tok.kind == T_EOF) fail(ps, "missing '}' at the end of the text");
    parse_node(ps, root);
  }
  char err[256];
  if (!ir_snode_layout(ps->prog, root, err, sizeof err)) perror_at(ps, line, "%s", err);
  next(ps);
}

/* A field reference: a name, or a label S<id> optionally followed by kind<type>. */
static int parse_field_ref(parser *ps) {
  if (ps->tok.kind != T_IDENT && ps->tok.kind != T_STR)
    fail(ps, "expected a field (a name or S<id>), found %s", describe_tok(ps, &ps->tok));
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
    next(ps);
    if (has_type) {
      expect(ps, "<", "in an SNode label");
      ir_type ty = parse_type_name(ps);
      expect(ps, ">", "in an SNode label");
      const ir_snode *sn = ir_program_snode(p, id);
      if (sn && sn->kind != IR_SN_place)
        perror_at(ps, line, "S%ld is a %s, not a place", id, ir_snode_kind_name(sn->kind));
      if (sn && sn->dtype != ty)
        perror_at(ps, line, "S%ld holds %s, not %s", id, ir_type_name(sn->dtype), ir_type_name(ty));
    }
    if (p && !ir_program_snode(p, id))
      perror_at(ps, line, "no SNode S%ld in this program", id);
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
  next(ps);
  return found;
}

/* A level reference: S<id> optionally followed by its kind (S2bitmasked). */
static int parse_level_ref(parser *ps, const char *what) {
  const char *t = ps->tok.text;
  if (ps->tok.kind != T_IDENT || t[0] != 'S' || !isdigit((unsigned char)t[1]))
    fail(ps, "expected %s (an SNode level such as S1 or S1dense), found %s", what, describe_tok(ps, &ps->tok));
  char *end;
  long id = strtol(t + 1, &end, 10);
  if (id < 0 || id >= IR_MAX_SNODES) fail(ps, "SNode id %ld is out of range", id);
  int kind = *end ? ir_snode_kind_from_name(end) : -1;
  if (*end && kind < 0) fail(ps, "bad SNode label '%s' (write S<id> or S<id><kind>, as in S2pointer)", t);
  ir_program *p = ps->prog;
  if (p && !ir_program_snode(p, id)) fail(ps, "no SNode S%ld in this program", id);
  if (p && kind >= 0 && p->snodes[id]->kind != (ir_snode_kind)kind)
    fail(ps, "S%ld is a %s, not a %s", id, ir_snode_kind_name(p->snodes[id]->kind), end);
  next(ps);
  return (int)id;
}

/* ---- statements --------------------------------------------------------------- */

static ir_stmt *lookup(parser *ps, const char *digits, int line) {
  long id = strtol(digits, NULL, 10);
  if (id < 0 || id >= ps->nbyid || !ps->byid[id])
    perror_at(ps, line, "$%s is used before it is defined", digits);
  return ps->byid[id];
}

static ir_stmt *parse_ref(parser *ps, const char *what) {
  if (ps->tok.kind != T_VAR) fail(ps, "expected %s (a $N value), found %s", what, describe_tok(ps, &ps->tok));
  ir_stmt *s = lookup(ps, ps->tok.text, ps->tok.line);
  next(ps);
  return s;
}

static void define(parser *ps, ir_stmt *s, int line) {
  if (s->id >= ps->nbyid) {
    int n = ps->nbyid ? ps->nbyid : 64;
    while (n <= s->id) n *= 2;
    ir_stmt **b = realloc(ps->byid, sizeof(ir_stmt *) * (size_t)n);
    if (!b) perror_at(ps, line, "out of memory");
    memset(b + ps->nbyid, 0, sizeof(ir_stmt *) * (size_t)(n - ps->nbyid));
    ps->byid = b;
    ps->nbyid = n;
  }
  if (ps->byid[s->id]) perror_at(ps, line, "$%d is defined twice", s->id);
  ps->byid[s->id] = s;
  if (s->id > ps->max_id) ps->max_id = s->id;
}

static void parse_const(parser *ps, ir_stmt *s) {
  const char *t = ps->tok.text;
  if (ps->tok.kind != T_NUM && ps->tok.kind != T_IDENT)
    fail(ps, "expected a constant value, found %s", describe_tok(ps, &ps->tok));
  char *end;
  errno = 0;
  if (ir_type_is_float(s->type)) {
    s->imm.fval = strtod(t, &end);
    if (*end || end == t) fail(ps, "bad %s constant '%s'", ir_type_name(s->type), t);
    /* an f32 constant holds an f32 value: 0.1 means the float nearest 0.1 */
    if (s->type == IR_f32) s->imm.fval = (double)(float)s->imm.fval;
  } else if (ir_type_is_int(s->type)) {
    if (ps->tok.kind != T_NUM) fail(ps, "bad integer constant %s", describe_tok(ps, &ps->tok));
    if (s->type == IR_u64 && t[0] != '-')
      s->imm.ival = (int64_t)strtoull(t, &end, 10);
    else
      s->imm.ival = strtoll(t, &end, 10);
    if (*end || errno) fail(ps, "bad %s constant '%s'", ir_type_name(s->type), t);
  } else {
    fail(ps, "a const needs a value type, as in <i32> $0 = const 4");
  }
  next(ps);
}

static void parse_bound(parser *ps, int64_t *v, int *gtmp) {
  if (is_word(ps, "gtmp")) {
    next(ps);
    expect(ps, "[", "after gtmp");
    *gtmp = parse_small_int(ps, "a gtmp offset", 0, 1 << 30);
    expect(ps, "]", "after the gtmp offset");
  } else {
    *v = parse_int(ps, "a task bound");
    *gtmp = -1;
  }
}

/* loc -> '@' [file ':'] line */
static void parse_loc(parser *ps, ir_stmt *s, int line) {
  if (!is_punct(ps, "@") || ps->tok.line != line) return;
  next(ps);
  if (ps->tok.kind == T_IDENT || ps->tok.kind == T_STR) {
    s->loc.file = ir_strdup(ps->k, ps->tok.text);
    next(ps);
    expect(ps, ":", "between file and line in a location");
  }
  s->loc.line = parse_small_int(ps, "a source line", 0, 1 << 30);
}

static void parse_block(parser *ps, ir_block *blk);

/* '[' {$N ','} ']' into s->ops */
static void parse_indices(parser *ps, ir_stmt *s) {
  expect(ps, "[", "before the indices");
  while (!is_punct(ps, "]")) {
    if (s->nops == IR_MAX_INDICES) fail(ps, "at most %d indices", IR_MAX_INDICES);
    s->ops[s->nops++] = parse_ref(ps, "an index");
    if (!is_punct(ps, ",")) break;
    next(ps);
  }
  expect(ps, "]", "after the indices");
}

/* A quoted string added to the kernel's string table; its index. */
static int parse_string(parser *ps, const char *what) {
  if (ps->tok.kind != T_STR) fail(ps, "expected %s (a quoted string), found %s", what, describe_tok(ps, &ps->tok));
  int i = ir_kernel_add_string(ps->k, ps->tok.text);
  next(ps);
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
    expect(ps, "arg", "in check_bound (as in: check_bound $3 $1 arg 0 axis 0)");
    s->aux = parse_small_int(ps, "an argument number", 0, 15);
    expect(ps, "axis", "in check_bound (as in: check_bound $3 $1 arg 0 axis 0)");
    s->imm.ival = parse_small_int(ps, "an axis", 0, IR_MAX_INDICES - 1);
    break;
  case IR_random:
    s->ops[s->nops++] = parse_ref(ps, "the stream");
    s->ops[s->nops++] = parse_ref(ps, "the draw number");
    expect(ps, "site", "in random (as in: random $3 $4 site 0)");
    s->imm.ival = parse_small_int(ps, "a site number", 0, 1 << 30);
    break;
  case IR_print: case IR_print_more:
    if (s->op == IR_print) {
      s->aux = parse_string(ps, "the format of print");
    } else {
      s->ops[s->nops++] = parse_ref(ps, "the print record");
      expect(ps, "at", "in print_more (as in: print_more $4 at 10 $5 $6)");
      s->imm.ival = parse_small_int(ps, "a value number", 0, IR_MAX_PRINT_VALUES - 1);
    }
    while (ps->tok.kind == T_VAR && ps->tok.line == line) {
      if (s->nops == IR_MAX_OPS) fail(ps, "%s takes at most %d operands", ir_op_name(s->op), IR_MAX_OPS);
      s->ops[s->nops++] = parse_ref(ps, "a value");
    }
    if (s->op == IR_print && is_word(ps, "values") && ps->tok.line == line) {
      next(ps);
      s->imm.ival = parse_small_int(ps, "the number of values", 1, IR_MAX_PRINT_VALUES);
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
  if (is_punct(ps, "<")) {
    next(ps);
    type = parse_type_name(ps);
    if (is_punct(ps, "*")) {
      ptr = true;
      next(ps);
    }
    expect(ps, ">", "after the statement type");
  }
  if (ps->tok.kind != T_VAR) fail(ps, "expected a statement ($N = ...), found %s", describe_tok(ps, &ps->tok));
  long id = strtol(ps->tok.text, NULL, 10);
  if (id >= MAX_ID) fail(ps, "statement number $%s is too large", ps->tok.text);
  next(ps);
  expect(ps, "=", "after the statement number");
  if (ps->tok.kind != T_IDENT) fail(ps, "expected an operation name, found %s", describe_tok(ps, &ps->tok));
  int op = ir_op_from_name(ps->tok.text);
  if (op < 0) fail(ps, "unknown operation '%s'", ps->tok.text);
  next(ps);
  bool wants_ptr = op == IR_global_ptr || op == IR_global_tmp || op == IR_ext_ptr;
  if (ptr != wants_ptr)
    perror_at(ps, line, wants_ptr ? "%s gives a pointer: write its type as <T*>"
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
    s->aux = parse_small_int(ps, "an argument number", 0, 15);
    break;
  case IR_global_tmp:
    s->aux = parse_small_int(ps, "a gtmp offset", 0, 1 << 30);
    break;
  case IR_global_ptr:
    s->aux = parse_field_ref(ps);
    parse_indices(ps, s);
    if (is_word(ps, "activate")) {
      s->imm.ival = 1;
      next(ps);
    }
    break;
  case IR_snode_activate: case IR_snode_deactivate: case IR_snode_is_active:
  case IR_snode_length:
    s->aux = parse_level_ref(ps, "the SNode");
    parse_indices(ps, s);
    break;
  case IR_snode_append:
    s->aux = parse_level_ref(ps, "the dynamic SNode");
    parse_indices(ps, s);
    if (s->nops == IR_MAX_INDICES) fail(ps, "snode_append takes at most %d indices", IR_MAX_INDICES - 1);
    s->ops[s->nops++] = parse_ref(ps, "the appended value");
    break;
  case IR_snode_deactivate_all: case IR_struct_for: case IR_task_clear_list: case IR_task_gc:
  case IR_task_deactivate_all:
    s->aux = parse_level_ref(ps, "the SNode");
    break;
  case IR_task_listgen: {
    int par = parse_level_ref(ps, "the parent SNode");
    expect(ps, "->", "between the parent and the child in task_listgen");
    s->aux = parse_level_ref(ps, "the child SNode");
    ir_program *p = ps->prog;
    if (p && (!p->snodes[s->aux]->parent || p->snodes[s->aux]->parent->id != par))
      perror_at(ps, line, "task_listgen S%d->S%d: S%d is not the parent of S%d", par, s->aux, par, s->aux);
    break;
  }
  case IR_task_struct_for:
    s->aux = parse_level_ref(ps, "the SNode");
    if (is_word(ps, "block_dim")) {
      next(ps);
      expect(ps, "=", "after block_dim");
      s->range.block_dim = parse_small_int(ps, "block_dim", 0, 1 << 30);
    }
    break;
  case IR_check_index:
    s->ops[s->nops++] = parse_ref(ps, "the index to check");
    s->aux = parse_field_ref(ps);
    expect(ps, "axis", "in check_index (as in: check_index $3 x axis 0)");
    s->imm.ival = parse_small_int(ps, "an axis", 0, IR_MAX_INDICES - 1);
    break;
  case IR_check_bound: case IR_random: case IR_print: case IR_print_more: case IR_assert:
    parse_builtin(ps, s);
    break;
  case IR_loop_index:
    s->loop = parse_ref(ps, "the loop");
    if (s->loop->op == IR_struct_for || s->loop->op == IR_task_struct_for) {
      s->imm.ival = parse_small_int(ps, "the index number of a struct loop's loop_index", 0,
                                    IR_MAX_INDICES - 1);
    } else if (s->loop->op != IR_range_for && s->loop->op != IR_task_range_for) {
      perror_at(ps, line, "loop_index reads a range_for, struct_for or task, and $%d is a %s",
                s->loop->id, ir_op_name(s->loop->op));
    }
    break;
  case IR_task_range_for:
    parse_bound(ps, &s->range.begin, &s->range.begin_gtmp);
    parse_bound(ps, &s->range.end, &s->range.end_gtmp);
    if (is_word(ps, "block_dim")) {
      next(ps);
      expect(ps, "=", "after block_dim");
      s->range.block_dim = parse_small_int(ps, "block_dim", 0, 1 << 30);
    }
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
    if (!is_punct(ps, "{") || ps->tok.line != line)
      perror_at(ps, line, "%s needs its body: '{' at the end of its line", ir_op_name(op));
    /* a task's body does not count: offload puts a kernel's body into tasks */
    int nest = flags & IR_TASK ? 0 : 1;
    if (ps->depth + nest > IR_MAX_DEPTH)
      perror_at(ps, line, "blocks nested more than %d deep (IR_MAX_DEPTH); the IR allows at most %d "
                "levels: split the kernel or nest less", IR_MAX_DEPTH, IR_MAX_DEPTH);
    ps->depth += nest;
    next(ps);
    parse_loc(ps, s, line);
    s->blocks[0] = ir_block_new(ps->k, s);
    parse_block(ps, s->blocks[0]);
    expect(ps, "}", "to close the block");
    if (op == IR_if && is_word(ps, "else")) {
      next(ps);
      expect(ps, "{", "after else");
      s->blocks[1] = ir_block_new(ps->k, s);
      parse_block(ps, s->blocks[1]);
      expect(ps, "}", "to close the else block");
    }
    ps->depth -= nest;
  } else if (ps->tok.kind != T_EOF && ps->tok.line == line) {
    fail(ps, "unexpected %s after the %s statement", describe_tok(ps, &ps->tok), ir_op_name(op));
  }
}

static void parse_block(parser *ps, ir_block *blk) {
  while (!is_punct(ps, "}")) {
    if (ps->tok.kind == T_EOF) fail(ps, "missing '}' at the end of the text");
    parse_stmt(ps, blk);
  }
}

/* kernel -> 'kernel' NAME '(' [type [NAME] {',' type [NAME]}] ')' ['->' type] {attr} '{' block '}' */
static void parse_kernel(parser *ps) {
  expect(ps, "kernel", "to start the kernel");
  char name[256];
  parse_name(ps, name, sizeof name, "the kernel's name");
  ir_kernel *k = ps->k = ir_kernel_new(name, ps->prog);
  expect(ps, "(", "before the arguments");
  while (!is_punct(ps, ")")) {
    if (k->nargs == 16) fail(ps, "at most 16 arguments");
    k->arg_types[k->nargs] = parse_type_name(ps);
    if (ps->tok.kind == T_IDENT || ps->tok.kind == T_STR) {
      k->arg_names[k->nargs] = ir_strdup(k, ps->tok.text);
      next(ps);
    }
    k->nargs++;
    if (!is_punct(ps, ",")) break;
    next(ps);
  }
  expect(ps, ")", "after the arguments");
  if (is_punct(ps, "->")) {
    next(ps);
    k->ret_type = parse_type_name(ps);
  }
  for (;;) {
    if (is_word(ps, "offloaded")) {
      k->offloaded = true;
      next(ps);
    } else if (is_word(ps, "debug")) {
      k->debug = true;
      next(ps);
    } else if (is_word(ps, "gtmp")) {
      next(ps);
      expect(ps, "=", "after gtmp");
      k->gtmp_size = parse_small_int(ps, "gtmp size", 0, 1 << 30);
    } else {
      break;
    }
  }
  expect(ps, "{", "to open the kernel body");
  parse_block(ps, k->body);
  expect(ps, "}", "to close the kernel");
  if (ps->tok.kind != T_EOF)
    fail(ps, "unexpected %s after the kernel (one kernel per text)", describe_tok(ps, &ps->tok));
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
  next(ps);
  for (;;) {
    if (is_word(ps, "field"))
      parse_field(ps);
    else if (is_word(ps, "tree"))
      parse_tree(ps);
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
