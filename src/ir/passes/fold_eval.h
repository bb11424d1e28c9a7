/*
** fold_eval.h -- the scalar semantics of every pure arithmetic op
** (docs/arithmetic.md), on tagged scalars.
**
** This is the one executable statement of the arithmetic rules: constant
** folding uses it, and the code generator's tests compare compiled code
** against it, so the two agree bit for bit.
**
** Representation: an integer value is kept in `i` normalised to its type --
** sign-extended from the type's width for signed types, zero-extended for
** unsigned types and i1 (so u64 values above INT64_MAX are negative in `i`;
** read them as (uint64_t)i). A float is kept in `f`; an f32 value is always
** exactly representable as a float (results are rounded to float).
*/
#ifndef LATTICE_FOLD_EVAL_H
#define LATTICE_FOLD_EVAL_H

#include "../ir.h"

typedef struct {
  ir_type type;
  union {
    int64_t i;                     /* integer types (i1 included) */
    double f;                      /* f32 / f64 */
  };
} ir_scalar;

/* Constructors: normalise v to t (integers keep the low bits of v and are
** re-extended; f32 rounds to nearest float). */
ir_scalar ir_scalar_int(ir_type t, int64_t v);
ir_scalar ir_scalar_float(ir_type t, double v);

/* Each returns false when the op is not defined on the operand type(s)
** (e.g. bit_and on floats, sqrt on integers, operands of different types);
** *out is then untouched. Binary operands must have one type (typecheck
** guarantees it); the result type is i1 for comparisons, otherwise the
** operand type. For shl/shr the count is read with the operand type's
** signedness: a negative count shifts the other way. */
bool ir_eval_unary(ir_op op, ir_scalar a, ir_scalar *out);
bool ir_eval_binary(ir_op op, ir_scalar a, ir_scalar b, ir_scalar *out);
/* Value conversion (cast): float->int truncates toward zero and saturates,
** NaN -> 0; int->int keeps the low bits; int->float and f64->f32 round to
** nearest. To i1: integers keep bit 0; floats saturate to [0, 1]. */
bool ir_eval_cast(ir_type to, ir_scalar a, ir_scalar *out);
/* Reinterpretation of the bits (bitcast) between types of the same width. */
bool ir_eval_bitcast(ir_type to, ir_scalar a, ir_scalar *out);

/* Converts between ir_scalar and the imm of a `const` statement. */
ir_scalar ir_scalar_of_const(const ir_stmt *s);
void ir_scalar_to_const(ir_stmt *s, ir_scalar v);

#endif
