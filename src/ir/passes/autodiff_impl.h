/*
** autodiff_impl.h -- what the two files of the reverse-mode pass share:
** autodiff_check.c (which kernels may be differentiated, the
** global-data-access rule, which values are active) and autodiff.c (the
** adjoint code).
*/
#ifndef LT_IR_AUTODIFF_IMPL_H
#define LT_IR_AUTODIFF_IMPL_H

#include <stdbool.h>

#include "../ir.h"
#include "../snode.h"

/* The locals an `if` stores (allocas outside it) and their values just
** before it: its adjoint restores them before recomputing a branch. */
typedef struct {
  ir_stmt **var, **val;
  int n;
} saveset;

/* An inner loop's locals carried from one iteration to the next (stored in
** it, defined outside it, not sums): the values at the start of each full
** iteration go on an adstack each, which the adjoint's reverse loop pops; a
** while loop also counts its full iterations. */
typedef struct {
  ir_stmt **var, **stack, **push;
  int n;
  ir_stmt *count, *count_store;    /* a while loop: the counter (an i32 alloca) and its increment */
  ir_stmt *exit;                   /* a while loop: its `if c then break end` */
} carry;

/* What the pass knows of one statement, by id (statements it makes get
** ids past the numbered ones: the array grows). */
typedef struct {
  bool active;                     /* depends on a field with a gradient (or a float argument) */
  ir_stmt *adj;                    /* the adjoint's alloca, or NULL */
  const saveset *saves;            /* an if or inner loop: see saveset */
  const carry *carry;              /* an inner loop that carries locals, or a while loop */
  ir_stmt *copy;                   /* during one clone_into: the copy */
  int copy_gen;
} info;

typedef struct {
  ir_kernel *k;
  info *inf;
  int cap, gen;
  ir_builder b;                    /* where adjoint code goes */
  ir_stmt *seed;                   /* the argument with the result's adjoint (a kernel result), or NULL */
  ir_stmt *ndgrad[16];             /* by ndarray argument: its gradient array's address argument (NAME.grad) */
} ad;

/* Where a statement is: the kernel's top level, an `if` there (serial
** code), or a loop body (an `if` or inner loop in one included). */
enum { AD_TOP, AD_TOP_IF, AD_BODY };

info *ad_info(ad *a, const ir_stmt *s);          /* grows the array */
bool ad_active(ad *a, const ir_stmt *s);
bool ad_within(const ir_block *blk, const ir_stmt *s);
bool ad_in_loop(const ir_stmt *s);
const char *ad_field_name(const ir_kernel *k, const ir_stmt *ptr);
const ir_snode *ad_grad_of(const ir_kernel *k, const ir_stmt *ptr);
void ad_unsupported(ir_kernel *k, const ir_stmt *s, const char *what)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;
bool ad_contains(const ir_stmt *o, const ir_stmt *var);
bool ad_is_reduction(const ir_stmt *s);
bool ad_in_reduction(const ir_stmt *s);
ir_stmt *ad_while_exit(const ir_stmt *w);        /* a differentiable while loop's exit test, or NULL */

/* The global-data-access rule over the whole kernel (ir_fail when broken). */
void ad_check_rules(ir_kernel *k);
/* Checks blk's statements (in context ctx: AD_TOP ...) and marks the active ones. */
void ad_mark_block(ad *a, ir_block *blk, int ctx);

/* autodiff.c: the adjoints of v[0..n), last first, at a->b; the primal
** statements' field writes and prints taken out (the adjoint keeps fields) */
void ad_adjoint_list(ad *a, ir_stmt **v, int n);
void ad_drop_writes(ir_stmt **v, int n);
/* autodiff_flow.c: ifs and inner loops */
void ad_insert_saves(ad *a, ir_block *blk);      /* locals' values before each if / inner loop */
void ad_insert_carries(ad *a, ir_block *blk);    /* adjoint stacks of the locals loops carry */
void ad_adjoint_if(ad *a, ir_stmt *s);
void ad_adjoint_loop(ad *a, ir_stmt *s);

#endif
