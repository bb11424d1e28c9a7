/*
** context.h -- the block of state every offloaded task receives.
**
** Shared by the device runtime (compiled to bitcode, linked into kernels),
** the code generator (which reads these fields by index, so the order of the
** members is part of the ABI: change both together) and the host side.
** Plain C with fixed-width types only, so it is the same for x86-64 and nvptx64.
*/
#ifndef LATTICE_RT_CONTEXT_H
#define LATTICE_RT_CONTEXT_H

#include <stdint.h>

#define RT_MAX_ARGS 16

/* Error codes a task can raise; the first one wins (see rt_raise). */
#define RT_ERRORS(_)                                              \
  _(OK, "no error")                                               \
  _(INDEX, "index out of range")

typedef enum {
#define E(name, text) RT_ERR_##name,
  RT_ERRORS(E)
#undef E
} rt_error_code;

typedef struct rt_context {
  char **roots;                 /* [0] base address of each tree's memory */
  uint64_t *args;               /* [1] kernel arguments: integers sign/zero-extended to 64
                                   bits, f32 as its 32-bit pattern, f64 as its bits */
  uint64_t *ret;                /* [2] the kernel's return value, same encoding */
  char *gtmp;                   /* [3] global temporaries (offload) */
  int32_t *error;               /* [4] rt_error_code of the first failure, 0 if none */
  int64_t *error_info;          /* [5] details of that failure: [0] SNode id, [1] axis,
                                   [2] the index, [3] source line */
} rt_context;

/* Device-side runtime functions that generated code calls. Each is defined in
** a .c file of src/runtime and checked to exist once when the bitcode is loaded.
**   name, return type, parameter types (for documentation) */
#define RT_FUNCTIONS(_)                                                                 \
  _(rt_raise_index_error, "void", "rt_context*, i32 snode, i32 axis, i64 index, i32 line")

#endif
