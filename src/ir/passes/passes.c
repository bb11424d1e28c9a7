/*
** passes.c -- the pass registry and the pipeline.
**
** The pipeline is one flat list of calls (ir_compile); every step goes
** through run_one, which verifies the kernel after the pass when asked and
** hands it to the dump callback. User errors raised with ir_fail inside a pass
** unwind to the setjmp here, so callers only ever see `false` and k->error.
*/
#include "passes.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  ir_pass_fn fn;
} pass_table[] = {
#define P(name, doc) {#name, ir_pass_##name},
    IR_PASSES(P)
#undef P
};

ir_pass_fn ir_pass_find(const char *name) {
  for (size_t i = 0; i < sizeof pass_table / sizeof pass_table[0]; i++)
    if (strcmp(pass_table[i].name, name) == 0) return pass_table[i].fn;
  return NULL;
}

typedef struct {
  ir_kernel *k;
  bool verify;
  ir_dump_fn dump;
  void *ud;
  bool typed;           /* typecheck has run: verify its rules too */
} pipeline;

/* Runs one pass; returns whether it changed the kernel. An invalid kernel
** after a pass is a bug in that pass: reported through ir_fail. */
static bool run_one(pipeline *p, const char *name, ir_pass_fn fn) {
  bool changed = fn(p->k);
  if (fn == ir_pass_typecheck) p->typed = true;
  ir_number(p->k); /* dumps and later passes see ids in print order */
  if (p->verify) {
    char err[512];
    if (!ir_verify_ex(p->k, p->typed ? IR_VERIFY_TYPES : 0, err, sizeof err))
      ir_fail(p->k, (ir_loc){0}, "internal error: invalid IR after pass %s: %s", name, err);
  }
  if (p->dump) p->dump(name, p->k, p->ud);
  return changed;
}

#define RUN(p, name) run_one(p, #name, ir_pass_##name)

/* constfold, cse, dce until none changes anything; the bound only guards
** against a pass pair that undo each other (a bug), it is never reached. */
static void simplify(pipeline *p) {
  for (int round = 0; round < 16; round++) {
    bool changed = RUN(p, constfold);
    changed |= RUN(p, cse);
    changed |= RUN(p, dce);
    if (!changed) return;
  }
}

/* The whole pipeline (ir_compile). */
static void full_pipeline(pipeline *p, const char *unused) {
  (void)unused;
  RUN(p, typecheck);
  RUN(p, mem2reg);        /* kernel-level locals read by parallel loops become values */
  simplify(p);
  if (p->k->grad) {       /* k:grad: the adjoint, from the simplified primal */
    RUN(p, autodiff);
    simplify(p);
  }
  if (p->k->fwd) {        /* k:fwd: the tangent version, from the simplified primal */
    RUN(p, forward);
    simplify(p);
  }
  RUN(p, offload);
  RUN(p, reduce);
  ir_check_races(p->k);   /* a check, not a pass: no dump */
  RUN(p, demote_atomics); /* serial tasks need no atomics */
  RUN(p, mem2reg);        /* locals are private to their task now */
  RUN(p, simplify_index); /* task bounds give index ranges */
  RUN(p, licm);
  simplify(p);
}

/* The passes named in a comma-separated list (ir_run_passes). */
static void listed_passes(pipeline *p, const char *list) {
  const char *s = list ? list : "";
  while (*s) {
    while (*s == ',' || *s == ' ') s++;
    size_t n = strcspn(s, ", ");
    if (n == 0) break;
    char name[64];
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, s, n);
    name[n] = 0;
    s += strcspn(s, ", ");
    ir_pass_fn fn = ir_pass_find(name);
    if (!fn) {
      char known[256] = "";
#define P(pname, doc) strcat(known, " " #pname);
      IR_PASSES(P)
#undef P
      ir_fail(p->k, (ir_loc){0}, "unknown pass '%s' (passes:%s)", name, known);
    }
    run_one(p, name, fn);
  }
}

/* Runs body with k's errors caught: false (message in k->error) when a pass
** or ir_fail gave up. */
static bool guarded(ir_kernel *k, bool verify, ir_dump_fn dump, void *ud,
                    void (*body)(pipeline *, const char *), const char *list) {
  pipeline p = {k, verify, dump, ud, false};
  jmp_buf jb, *saved = k->on_error;
  k->on_error = &jb;
  if (setjmp(jb)) {
    k->on_error = saved;
    return false;
  }
  k->error[0] = 0;
  body(&p, list);
  k->on_error = saved;
  return true;
}

bool ir_compile(ir_kernel *k, bool verify, ir_dump_fn dump, void *ud) {
  return guarded(k, verify, dump, ud, full_pipeline, NULL);
}

bool ir_run_passes(ir_kernel *k, const char *list, bool verify, ir_dump_fn dump, void *ud) {
  return guarded(k, verify, dump, ud, listed_passes, list);
}
