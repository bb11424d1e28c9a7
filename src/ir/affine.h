/*
** affine.h -- field indices as "value + constant" (affine.c): enough to prove
** that two accesses of one field never touch the same element, e.g. x[s][i]
** read and x[s + 1][i] written, where s is an argument. The autodiff pass
** (its global-data-access rule) and lt.tape's check across calls use it.
*/
#ifndef LT_IR_AFFINE_H
#define LT_IR_AFFINE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* An index as base + c. base is NULL for a constant. uniform: base depends on
** arguments and constants only, so it is the same value in every iteration
** and every task of one launch. */
typedef struct {
  const ir_stmt *base;
  int64_t c;
  bool uniform;
} ir_affine;

/* The affine form of integer value s in kernel k. A global temporary that
** offload made of a top-level value is followed to the value stored into it
** (when exactly one serial statement stores it). */
ir_affine ir_affine_of(const ir_kernel *k, const ir_stmt *s);

/* Whether a and b compute the same value (the same statement, or the same
** pure operation on the same values, arguments and constants). */
bool ir_same_value(const ir_kernel *k, const ir_stmt *a, const ir_stmt *b);

/* Whether the field accesses through global_ptr p and q can never reach one
** element within one launch: both name one place and, on some axis, their
** indices are one uniform base plus different constants. */
bool ir_accesses_disjoint(const ir_kernel *k, const ir_stmt *p, const ir_stmt *q);

#endif
