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

/* name, one-line summary. ir_compile (passes.c) says in which order the
** pipeline runs them; mem2reg and the simplify trio run more than once. */
#define IR_PASSES(_)                                                              \
  _(typecheck, "check operand types; insert explicit casts (promotion rules)")    \
  _(constfold, "evaluate pure statements whose operands are constants")           \
  _(cse, "reuse an earlier identical pure statement visible from here")           \
  _(dce, "remove statements whose values are unused and that have no effect")     \
  _(offload, "split the top level into serial and range_for tasks")               \
  _(reduce, "make x = x + v updates of kernel locals in parallel tasks atomic")     \
  _(mem2reg, "forward stored values of locals to their loads; drop dead stores")  \
  _(demote_atomics, "plain load/op/store for atomics in serial tasks")            \
  _(simplify_index, "merge constant offsets; simplify index div/mod by ranges")    \
  _(licm, "move loop-invariant statements in front of serial loops")               \
  _(autodiff, "make a grad kernel its adjoint (reverse mode; docs/autodiff.md)")    \
  _(forward, "give a fwd kernel's float values tangents (forward mode; docs/autodiff.md)")

#define P(name, doc) bool ir_pass_##name(ir_kernel *k);
IR_PASSES(P)
#undef P

/* races.c: refuses (ir_fail) a parallel task whose iterations could read or
** overwrite field or ndarray elements another iteration writes. A check run
** after reduce; it changes nothing, so it is not among the passes above. */
void ir_check_races(ir_kernel *k);
/* races.c: whether global_ptr p in loop reaches one element per iteration */
bool ir_one_element_per_iteration(ir_kernel *k, ir_stmt *loop, ir_stmt *p);

typedef bool (*ir_pass_fn)(ir_kernel *k);
/* Looks a pass up by name; NULL if unknown. */
ir_pass_fn ir_pass_find(const char *name);

/* Called after each pass when set (print_ir, the REPL's :ir, tests). */
typedef void (*ir_dump_fn)(const char *after_pass, ir_kernel *k, void *ud);

/* Runs the whole pipeline (the flat list in ir_compile, docs/internals.md):
** typecheck, mem2reg and constfold/cse/dce to a fixed point, offload,
** reduce, demote_atomics, mem2reg, simplify_index, licm, and simplify again. With verify, runs ir_verify after each
** pass (an invalid kernel after a pass is an internal error reported in
** k->error). Returns false with k->error set on failure; never longjmps out. */
bool ir_compile(ir_kernel *k, bool verify, ir_dump_fn dump, void *ud);

/* Runs the comma-separated passes in `list` ("typecheck,cse"); for snapshot
** tests and the lattice-opt tool. false with k->error set on failure. */
bool ir_run_passes(ir_kernel *k, const char *list, bool verify, ir_dump_fn dump, void *ud);

#endif
