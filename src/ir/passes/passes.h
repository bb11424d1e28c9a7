/*
** passes.h -- the IR passes (one file each in this folder) and the pipeline.
**
** Every pass has the signature  bool ir_pass_NAME(ir_kernel *k)  and returns
** whether it changed the kernel. User errors (e.g. an assignment of
** incompatible types found by typecheck) go through ir_fail.
*/
#ifndef LATTICE_PASSES_H
#define LATTICE_PASSES_H

#include "../ir.h"

/* name, one-line summary. The order here is the pipeline order. */
#define IR_PASSES(_)                                                              \
  _(typecheck, "check operand types; insert explicit casts (promotion rules)")    \
  _(constfold, "evaluate pure statements whose operands are constants")           \
  _(cse, "reuse an earlier identical pure statement visible from here")           \
  _(dce, "remove statements whose values are unused and that have no effect")     \
  _(offload, "split the top level into serial and range_for tasks")               \
  _(reduce, "make x = x + v updates of kernel locals in parallel tasks atomic")

#define P(name, doc) bool ir_pass_##name(ir_kernel *k);
IR_PASSES(P)
#undef P

typedef bool (*ir_pass_fn)(ir_kernel *k);
/* Looks a pass up by name; NULL if unknown. */
ir_pass_fn ir_pass_find(const char *name);

/* Called after each pass when set (print_ir, the REPL's :ir, tests). */
typedef void (*ir_dump_fn)(const char *after_pass, ir_kernel *k, void *ud);

/* Runs the whole pipeline: typecheck, then constfold/cse/dce to a fixed point,
** offload, and a last simplify round. With verify, runs ir_verify after each
** pass (an invalid kernel after a pass is an internal error reported in
** k->error). Returns false with k->error set on failure; never longjmps out. */
bool ir_compile(ir_kernel *k, bool verify, ir_dump_fn dump, void *ud);

/* Runs the comma-separated passes in `list` ("typecheck,cse"); for snapshot
** tests and the lattice-opt tool. false with k->error set on failure. */
bool ir_run_passes(ir_kernel *k, const char *list, bool verify, ir_dump_fn dump, void *ud);

#endif
