/*
** fuzz_ir.c -- libFuzzer harness of the IR text path (docs/fuzzing.md):
**
**   parse -> verify -> print/parse/print -> passes (verified after each) ->
**   print/parse/print
**
** The passes are those a `# passes: a,b` line of the input names, in that
** order, as in an IR snapshot test (tests/ir), on a clone of the kernel;
** then, always, the whole pipeline (ir_compile). Invalid text, IR the verifier refuses and user
** errors of the passes are expected outcomes. A finding -- abort() with a
** message, so libFuzzer keeps the input -- is any of:
**   - a parse error not of the form "line N: ...";
**   - IR that verified but does not print back identically through a fresh
**     program (ir_print_ex with IR_PRINT_FIELDS | IR_PRINT_LOC), or whose
**     reparse fails or does not verify, or whose clone prints differently;
**   - "internal error" from the passes (an invalid kernel after a pass);
** plus whatever AddressSanitizer or UndefinedBehaviorSanitizer report, a
** crash, a hang (-timeout) or running out of memory (-rss_limit_mb).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/passes/passes.h"
#include "ir/snode.h"

static void finding(const char *what, const char *detail, const char *text) {
  fprintf(stderr, "fuzz_ir: FINDING: %s\n%s\n--- text ---\n%s\n", what, detail ? detail : "", text ? text : "");
  abort();
}

/* The passes a `# passes: ...` line names, or NULL; malloc'd. */
static char *passes_of(const char *text) {
  for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, "# passes:", 9) != 0) continue;
    const char *v = p + 9, *e = strchr(v, '\n');
    size_t n = e ? (size_t)(e - v) : strlen(v);
    char *out = malloc(n + 1);
    if (!out) abort();
    memcpy(out, v, n);
    out[n] = 0;
    return out;
  }
  return NULL;
}

/* k verified: it prints, parses into a fresh program and prints back the same;
** the reparsed kernel verifies; a clone prints the same. */
static void roundtrip(ir_kernel *k, unsigned verify_flags, const char *stage) {
  char err[1024];
  char *t1 = ir_print_ex(k, IR_PRINT_FIELDS | IR_PRINT_LOC);
  ir_program *p2 = ir_program_new();
  ir_kernel *k2 = ir_parse(t1, p2, err, sizeof err);
  if (!k2) finding(stage, err, t1);
  if (!ir_verify_ex(k2, verify_flags, err, sizeof err)) finding(stage, err, t1);
  char *t2 = ir_print_ex(k2, IR_PRINT_FIELDS | IR_PRINT_LOC);
  if (strcmp(t1, t2) != 0) finding(stage, t2, t1);
  ir_kernel *c = ir_kernel_clone(k);
  char *t3 = ir_print_ex(c, IR_PRINT_FIELDS | IR_PRINT_LOC);
  if (strcmp(t1, t3) != 0) finding("a clone prints differently", t3, t1);
  free(t1);
  free(t2);
  free(t3);
  ir_kernel_free(c);
  ir_kernel_free(k2);
  ir_program_free(p2);
}

/* The passes named (NULL: the whole pipeline), verified after each; the
** result, when they succeed, must round-trip. */
static void run_passes(ir_kernel *k, const char *passes, const char *text) {
  bool ok = passes ? ir_run_passes(k, passes, true, NULL, NULL) : ir_compile(k, true, NULL, NULL);
  if (!ok && strstr(k->error, "internal error")) finding("a pass broke the IR", k->error, text);
  unsigned typed = !passes || strstr(passes, "typecheck") ? IR_VERIFY_TYPES : 0;
  if (ok) roundtrip(k, typed, "the IR after the passes does not print back identically");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  char err[1024];
  ir_program *p = ir_program_new();
  ir_kernel *k = ir_parse(text, p, err, sizeof err);
  if (!k) {
    if (strncmp(err, "line ", 5) != 0) finding("a parse error without its line", err, text);
  } else if (ir_verify(k, err, sizeof err)) {
    roundtrip(k, 0, "the input does not print back identically");
    char *passes = passes_of(text);
    if (passes) {
      ir_kernel *c = ir_kernel_clone(k);
      run_passes(c, passes, text);
      ir_kernel_free(c);
      free(passes);
    }
    run_passes(k, NULL, text);
  }
  ir_kernel_free(k);
  ir_program_free(p);
  free(text);
  return 0;
}
