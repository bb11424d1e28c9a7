/*
** parse_impl.h -- what the three parts of the IR text parser share (not an
** interface of the IR module): the parser state, the lexer and its token
** helpers (parse_lex.c), the `field`/`tree` declarations and references to
** fields and levels (parse_decl.c); parse.c reads statements and kernels and
** is the entry point (ir_parse). Every error longjmps to ps->jb through
** irp_fail_at with "line N: message".
*/
#ifndef LATTICE_IR_PARSE_IMPL_H
#define LATTICE_IR_PARSE_IMPL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

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

void irp_fail_at(parser *ps, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 3, 4)))
#endif
    ;
#define fail(ps, ...) irp_fail_at(ps, (ps)->tok.line, __VA_ARGS__)

/* parse_lex.c: tokens */
const char *irp_describe(parser *ps, const token *t);     /* a token as messages show it */
void irp_next(parser *ps);                                 /* advance to the next token */
bool irp_is_punct(parser *ps, const char *s);
bool irp_is_word(parser *ps, const char *s);
void irp_expect(parser *ps, const char *s, const char *context);
int64_t irp_int(parser *ps, const char *what);
int irp_small_int(parser *ps, const char *what, int lo, int hi);
void irp_name(parser *ps, char *out, size_t len, const char *what);   /* identifier or quoted string */
ir_type irp_type_name(parser *ps);

/* parse_decl.c: declarations before a kernel, and references to them */
void irp_field(parser *ps);                 /* field NAME <T> dense [i:N] ... */
void irp_tree(parser *ps);                  /* tree S0root { ... } */
void irp_gradient(parser *ps);              /* gradient FIELD FIELD: the second is the first's */
void irp_dual(parser *ps);                  /* dual FIELD FIELD: the second is the first's tangent */
int irp_field_ref(parser *ps);              /* a placed field: its SNode id */
int irp_level_ref(parser *ps, const char *what);   /* an SNode level: its id */

#endif
