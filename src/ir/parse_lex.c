/*
** parse_lex.c -- the IR text parser's lexer and token helpers (parse_impl.h).
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

void irp_fail_at(parser *ps, int line, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ps->err && ps->errlen) snprintf(ps->err, ps->errlen, "line %d: %s", line, msg);
  longjmp(ps->jb, 1);
}


/* ---- lexer ------------------------------------------------------------------ */

/* The current token as a message shows it (in the parser's buffer). */
const char *irp_describe(parser *ps, const token *t) {
  char *buf = ps->desc;
  switch (t->kind) {
  case T_EOF: return "the end of the text";
  case T_STR: snprintf(buf, sizeof ps->desc, "\"%.200s\"", t->text); return buf;
  case T_VAR: snprintf(buf, sizeof ps->desc, "$%.200s", t->text); return buf;
  default: snprintf(buf, sizeof ps->desc, "'%.200s'", t->text); return buf;
  }
}

void irp_next(parser *ps) {
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

bool irp_is_punct(parser *ps, const char *s) {
  return ps->tok.kind == T_PUNCT && strcmp(ps->tok.text, s) == 0;
}

bool irp_is_word(parser *ps, const char *s) {
  return ps->tok.kind == T_IDENT && strcmp(ps->tok.text, s) == 0;
}

void irp_expect(parser *ps, const char *s, const char *context) {
  if (!irp_is_punct(ps, s) && !irp_is_word(ps, s))
    fail(ps, "expected '%s' %s, found %s", s, context, irp_describe(ps, &ps->tok));
  irp_next(ps);
}

int64_t irp_int(parser *ps, const char *what) {
  if (ps->tok.kind != T_NUM) fail(ps, "expected %s (an integer), found %s", what, irp_describe(ps, &ps->tok));
  char *end;
  errno = 0;
  long long v = strtoll(ps->tok.text, &end, 10);
  if (*end || errno) fail(ps, "bad integer '%s' for %s", ps->tok.text, what);
  irp_next(ps);
  return v;
}

int irp_small_int(parser *ps, const char *what, int lo, int hi) {
  int line = ps->tok.line;
  int64_t v = irp_int(ps, what);
  if (v < lo || v > hi) irp_fail_at(ps, line, "%s %lld is out of range (%d..%d)", what, (long long)v, lo, hi);
  return (int)v;
}

/* a name: identifier or quoted string */
void irp_name(parser *ps, char *out, size_t len, const char *what) {
  if (ps->tok.kind != T_IDENT && ps->tok.kind != T_STR)
    fail(ps, "expected %s, found %s", what, irp_describe(ps, &ps->tok));
  snprintf(out, len, "%s", ps->tok.text);
  irp_next(ps);
}

ir_type irp_type_name(parser *ps) {
  if (ps->tok.kind != T_IDENT) fail(ps, "expected a type (i32, f32, ...), found %s", irp_describe(ps, &ps->tok));
  int t = ir_type_from_name(ps->tok.text);
  if (t < 0) fail(ps, "unknown type '%s' (types: i1 i8 i16 i32 i64 u8 u16 u32 u64 f32 f64)", ps->tok.text);
  irp_next(ps);
  return (ir_type)t;
}
