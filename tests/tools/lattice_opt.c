/*
** lattice_opt.c -- `lattice-opt`: parse IR text, run passes, print the result;
** and `lattice-opt --test FILE.ir`, the runner of the IR snapshot tests
** (format in tests/README.md and docs/ir.md; LT_BLESS=1 rewrites them).
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/passes/passes.h"
#include "ir/snode.h"

#define P(name, doc) " " #name
static const char *usage =
    "usage: lattice-opt [--passes a,b,...] [--verify] [--types] [--loc] [--fields] [--renumber]\n"
    "                   [--print-after-all] [FILE|-]\n"
    "       lattice-opt --test FILE.ir     (LT_BLESS=1 rewrites the expectation)\n"
    "passes (comma-separated, run in the order given):" IR_PASSES(P) "\n";
#undef P

static char *read_file(const char *path) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0, n;
  char *buf = malloc(cap);
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2) {
      char *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  if (f != stdin) fclose(f);
  if (buf) buf[len] = 0;
  return buf;
}

typedef struct {
  bool verify, types, loc, fields, renumber, after_all;
  const char *passes;
} options;

static void dump_after(const char *pass, ir_kernel *k, void *ud) {
  const options *o = ud;
  char *t = ir_print_ex(k, o->loc ? IR_PRINT_LOC : 0);
  printf("# after %s\n%s", pass, t);
  free(t);
}

/* Parses text, verifies it, runs the passes. Returns the kernel, or NULL with
** the message in err. */
static ir_kernel *process(const char *text, ir_program *prog, const options *o, char *err,
                          size_t errlen) {
  ir_kernel *k = ir_parse(text, prog, err, errlen);
  if (!k) return NULL;
  if (o->verify && !ir_verify(k, err, errlen)) {
    ir_kernel_free(k);
    return NULL;
  }
  if (o->passes && *o->passes) {
    if (!ir_run_passes(k, o->passes, o->verify, o->after_all ? dump_after : NULL, (void *)o)) {
      snprintf(err, errlen, "%s", k->error);
      ir_kernel_free(k);
      return NULL;
    }
  }
  if (o->types && !ir_verify_ex(k, IR_VERIFY_TYPES, err, errlen)) {
    ir_kernel_free(k);
    return NULL;
  }
  if (o->renumber) ir_number(k);
  return k;
}

/* ---- a line diff (longest common subsequence) with 3 lines of context ---- */

typedef struct {
  const char **s;
  int *len;
  int n;
} lines;

static lines split_lines(const char *t) {
  lines l = {0};
  int cap = 0;
  while (*t) {
    const char *e = strchr(t, '\n');
    int n = e ? (int)(e - t) : (int)strlen(t);
    if (l.n == cap) {
      cap = cap ? 2 * cap : 64;
      l.s = realloc(l.s, sizeof *l.s * (size_t)cap);
      l.len = realloc(l.len, sizeof *l.len * (size_t)cap);
      if (!l.s || !l.len) abort();
    }
    l.s[l.n] = t;
    l.len[l.n++] = n;
    t += n + (e ? 1 : 0);
  }
  return l;
}

static bool line_eq(const lines *a, int i, const lines *b, int j) {
  return a->len[i] == b->len[j] && memcmp(a->s[i], b->s[j], (size_t)a->len[i]) == 0;
}

/* line0: the file line of the first expected line, so hunks point into the file */
static void print_diff(const char *expected, const char *actual, const char *path, int line0) {
  lines a = split_lines(expected), b = split_lines(actual);
  int n = a.n, m = b.n;
  /* lcs[i][j]: length of the LCS of a[i..] and b[j..] */
  int *lcs = calloc((size_t)(n + 1) * (size_t)(m + 1), sizeof(int));
  if (!lcs) abort();
#define L(i, j) lcs[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
  for (int i = n - 1; i >= 0; i--)
    for (int j = m - 1; j >= 0; j--)
      L(i, j) = line_eq(&a, i, &b, j) ? L(i + 1, j + 1) + 1
                                       : (L(i + 1, j) > L(i, j + 1) ? L(i + 1, j) : L(i, j + 1));
  /* edit script: ' ' keep, '-' expected only, '+' actual only */
  int total = n + m, ne = 0;
  char *op = malloc((size_t)total + 1);
  int *ia = malloc(sizeof(int) * ((size_t)total + 1)), *ib = malloc(sizeof(int) * ((size_t)total + 1));
  if (!op || !ia || !ib) abort();
  int i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && line_eq(&a, i, &b, j)) {
      op[ne] = ' ', ia[ne] = i++, ib[ne++] = j++;
    } else if (i < n && (j == m || L(i + 1, j) >= L(i, j + 1))) {
      op[ne] = '-', ia[ne] = i++, ib[ne++] = j;
    } else {
      op[ne] = '+', ia[ne] = i, ib[ne++] = j++;
    }
  }
#undef L
  printf("--- %s (expected)\n+++ %s (actual)\n", path, path);
  for (int e = 0; e < ne;) {
    if (op[e] == ' ') {
      e++;
      continue;
    }
    int start = e - 3 < 0 ? 0 : e - 3, end = e;
    /* extend the hunk while changes are within 6 lines of each other */
    for (int q = e; q < ne; q++) {
      if (op[q] != ' ') end = q;
      else if (q - end > 6) break;
    }
    end = end + 4 > ne ? ne : end + 4;
    int na = 0, nb = 0;
    for (int q = start; q < end; q++) na += op[q] != '+', nb += op[q] != '-';
    printf("@@ -%d,%d +%d,%d @@\n", ia[start] + line0, na, ib[start] + line0, nb);
    for (int q = start; q < end; q++) {
      const char *s = op[q] == '+' ? b.s[ib[q]] : a.s[ia[q]];
      int len = op[q] == '+' ? b.len[ib[q]] : a.len[ia[q]];
      printf("%c%.*s\n", op[q], len, s);
    }
    e = end;
  }
  free(lcs);
  free(op);
  free(ia);
  free(ib);
  free(a.s);
  free(a.len);
  free(b.s);
  free(b.len);
}

/* ---- snapshot tests --------------------------------------------------------- */

/* Finds a line starting with `# key:` in text[0..limit); returns the rest of
** that line (trimmed, malloc'd) or NULL. */
static char *directive(const char *text, const char *limit, const char *key, const char **line_at) {
  size_t klen = strlen(key);
  for (const char *p = text; p && p < limit; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, "# ", 2) == 0 && strncmp(p + 2, key, klen) == 0 && p[2 + klen] == ':') {
      const char *v = p + 3 + klen;
      while (*v == ' ' || *v == '\t') v++;
      const char *e = strchr(v, '\n');
      if (!e) e = v + strlen(v);
      while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
      char *out = malloc((size_t)(e - v) + 1);
      if (!out) abort();
      memcpy(out, v, (size_t)(e - v));
      out[e - v] = 0;
      if (line_at) *line_at = p;
      return out;
    }
  }
  return NULL;
}

static bool write_file(const char *path, const char *a, size_t alen, const char *b) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(a, 1, alen, f) == alen && fputs(b, f) >= 0;
  return fclose(f) == 0 && ok;
}

static int run_test(const char *path) {
  char *text = read_file(path);
  if (!text) {
    fprintf(stderr, "lattice-opt: cannot read %s\n", path);
    return 2;
  }
  bool bless = getenv("LT_BLESS") && strcmp(getenv("LT_BLESS"), "0") != 0;
  /* the input is everything before the "# expect:" line */
  const char *expect_line = NULL;
  char *dummy = directive(text, text + strlen(text), "expect", &expect_line);
  free(dummy);
  const char *input_end = expect_line ? expect_line : text + strlen(text);
  const char *expected = "";
  if (expect_line) {
    const char *nl = strchr(expect_line, '\n');
    expected = nl ? nl + 1 : expect_line + strlen(expect_line);
  }
  const char *error_line = NULL;
  char *passes = directive(text, input_end, "passes", NULL);
  char *want_error = directive(text, input_end, "error", &error_line);
  char *types = directive(text, input_end, "verify-types", NULL);

  size_t inlen = (size_t)(input_end - text);
  char *input = malloc(inlen + 1);
  if (!input) abort();
  memcpy(input, text, inlen);
  input[inlen] = 0;

  options o = {.verify = true, .types = types != NULL, .passes = passes};
  ir_program *prog = ir_program_new();
  char err[1024];
  ir_kernel *k = process(input, prog, &o, err, sizeof err);
  int rc = 0;
  if (want_error) {
    if (k) {
      printf("%s: FAIL: expected an error containing \"%s\", but the input was accepted\n", path, want_error);
      rc = 1;
    } else if (!strstr(err, want_error)) {
      if (bless) {
        /* replace the text of the "# error:" line */
        const char *eol = strchr(error_line, '\n');
        size_t head = (size_t)(error_line - text);
        char *rest = malloc(strlen(err) + strlen(eol ? eol : "") + 16);
        if (!rest) abort();
        sprintf(rest, "# error: %s%s", err, eol ? eol : "\n");
        if (!write_file(path, text, head, rest)) {
          fprintf(stderr, "lattice-opt: cannot write %s\n", path);
          rc = 2;
        } else {
          printf("%s: blessed (error)\n", path);
          rc = -1; /* success, reported */
        }
        free(rest);
      } else {
        printf("%s: FAIL: expected an error containing \"%s\"\n  got: %s\n", path, want_error, err);
        rc = 1;
      }
    }
  } else if (!k) {
    printf("%s: FAIL: %s\n", path, err);
    rc = 1;
  } else {
    char *out = ir_print(k);
    if (strcmp(out, expected) != 0) {
      if (bless) {
        size_t head = expect_line ? (size_t)(expect_line - text) : inlen;
        char *tail = malloc(strlen(out) + 16);
        if (!tail) abort();
        sprintf(tail, "# expect:\n%s", out);
        /* a file without "# expect:" gets one, on a line of its own */
        bool nl = head == 0 || text[head - 1] == '\n';
        char *body = malloc(head + 2);
        if (!body) abort();
        memcpy(body, text, head);
        if (!nl) body[head++] = '\n';
        if (!write_file(path, body, head, tail)) {
          fprintf(stderr, "lattice-opt: cannot write %s\n", path);
          rc = 2;
        } else {
          printf("%s: blessed\n", path);
          rc = -1; /* success, reported */
        }
        free(body);
        free(tail);
      } else {
        printf("%s: FAIL: output differs from the expectation (LT_BLESS=1 to accept it)\n", path);
        int line0 = 1;
        for (const char *q = text; q < expected; q++) line0 += *q == '\n';
        print_diff(expected, out, path, line0);
        rc = 1;
      }
    }
    free(out);
  }
  if (rc == 0) printf("%s: ok\n", path);
  if (rc < 0) rc = 0;
  ir_kernel_free(k);
  ir_program_free(prog);
  free(input);
  free(passes);
  free(want_error);
  free(types);
  free(text);
  return rc;
}

int main(int argc, char **argv) {
  options o = {0};
  const char *file = "-";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--test") == 0 && i + 1 < argc) {
      return run_test(argv[i + 1]);
    } else if (strcmp(a, "--passes") == 0 && i + 1 < argc) {
      o.passes = argv[++i];
    } else if (strncmp(a, "--passes=", 9) == 0) {
      o.passes = a + 9;
    } else if (strcmp(a, "--verify") == 0) {
      o.verify = true;
    } else if (strcmp(a, "--types") == 0) {
      o.types = true;
    } else if (strcmp(a, "--loc") == 0) {
      o.loc = true;
    } else if (strcmp(a, "--fields") == 0) {
      o.fields = true;
    } else if (strcmp(a, "--renumber") == 0) {
      o.renumber = true;
    } else if (strcmp(a, "--print-after-all") == 0) {
      o.after_all = true;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "lattice-opt: unknown option %s\n%s", a, usage);
      return 2;
    } else {
      file = a;
    }
  }
  char *text = read_file(file);
  if (!text) {
    fprintf(stderr, "lattice-opt: cannot read %s\n", file);
    return 2;
  }
  ir_program *prog = ir_program_new();
  char err[1024];
  ir_kernel *k = process(text, prog, &o, err, sizeof err);
  int rc = 0;
  if (!k) {
    fprintf(stderr, "%s: %s\n", strcmp(file, "-") ? file : "<stdin>", err);
    rc = 1;
  } else {
    char *out = ir_print_ex(k, (o.loc ? IR_PRINT_LOC : 0) | (o.fields ? IR_PRINT_FIELDS : 0));
    fputs(out, stdout);
    free(out);
  }
  ir_kernel_free(k);
  ir_program_free(prog);
  free(text);
  return rc;
}
