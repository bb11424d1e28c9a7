/*
** program_impl.h -- what the files of src/program share among themselves.
*/
#ifndef LATTICE_PROGRAM_IMPL_H
#define LATTICE_PROGRAM_IMPL_H

#include "program.h"

/* builtins.c, around a launch: begin counts the launch and empties the
** print buffer (NULL without builtins); flush appends the kernel's print
** records to out and a note of dropped ones to warn; error writes the
** message of an ndarray bounds or lt.assert failure (false: not one). */
struct rt_builtins *prog_builtins_begin(prog_program *p);
void prog_builtins_flush(const prog_kernel *c, prog_text *out, prog_text *warn);
bool prog_builtins_error(const prog_kernel *c, int32_t code, const int64_t *info, const uint64_t *args, char *err,
                         size_t errlen);

#endif
