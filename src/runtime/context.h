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
  _(INDEX, "index out of range")                                  \
  _(RUNTIME, "the sparse runtime failed (jit_sparse_take_error has the message)") \
  _(APPEND, "append to a full dynamic list")                     \
  _(NDINDEX, "ndarray index out of range")                        \
  _(ASSERT, "lt.assert failed")                                   \
  _(DEVICE, "the device failed (jit_backend.error has the message)")

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
  struct rt_runtime *runtime;   /* [6] sparse runtime state in the memory pool
                                   (src/runtime/runtime.h); NULL without sparse SNodes */
  struct rt_builtins *builtins; /* [7] random seed and launch number, print buffer
                                   (src/runtime/builtins.h); never NULL */
} rt_context;

/* Device-side runtime functions that generated code calls. Each is defined in
** a .c file of src/runtime and checked to exist once when the bitcode is loaded.
**   name, return type, parameter types (for documentation) */
#define RT_FUNCTIONS(_)                                                                 \
  _(rt_raise_index_error, "void", "rt_context*, i32 snode, i32 axis, i64 index, i32 line") \
  _(rt_raise_append_error, "void", "rt_context*, i32 snode, i32 line")                    \
  _(rt_raise_ndarray_error, "void", "rt_context*, i32 arg, i32 axis, i64 index, i32 line") \
  _(rt_raise_assert, "void", "rt_context*, i32 message, i32 line")                         \
  _(rt_random_bits, "u64", "rt_context*, i32 site, i32 stream, i32 draw")                  \
  _(rt_print_reserve, "i8*", "rt_context*, i32 string, i32 nvalues")                       \
  RT_NODE_FUNCTIONS(_)

/* The sparse runtime (src/runtime/runtime.h): node operations per kind, meta
** is an rt_meta* in the pool, node a container, i a cell number. */
#define RT_NODE_FUNCTIONS(_)                                                            \
  RT_NODE_KIND_FUNCTIONS(_, dense) RT_NODE_KIND_FUNCTIONS(_, bitmasked)                \
  RT_NODE_KIND_FUNCTIONS(_, pointer) RT_NODE_KIND_FUNCTIONS(_, dynamic)                \
  _(rt_dynamic_append, "i32", "rt_meta*, i8* node")                                     \
  _(rt_dynamic_append_cell, "i8*", "rt_meta*, i8* node, i32 chunk_cells, i32 stripe, i32* index") \
  _(rt_dynamic_count, "void", "rt_meta*, i32 stripe, i64 n")                            \
  _(rt_dynamic_append_many, "i32", "rt_meta*, i8* node, i32 chunk_cells, i64 cell_bytes, i8* values, i32 k, i32 value_bytes, i64 offset") \
  _(rt_append_table, "i8*", "rt_runtime*, i32 thread")                                  \
  _(rt_dynamic_length, "i32", "rt_meta*, i8* node")                                     \
  _(rt_list_clear, "void", "rt_runtime*, i32 snode")                                    \
  _(rt_listgen_root, "void", "rt_runtime*, i32 root, i8* container")                    \
  _(rt_listgen, "void", "rt_runtime*, i32 parent, i32 child, i64 child_offset, i32 begin, i32 end") \
  _(rt_listgen_size, "i32", "rt_runtime*, i32 snode")                                   \
  _(rt_listgen_element, "rt_elem*", "rt_runtime*, i32 snode, i32 i")                    \
  _(rt_deactivate_all, "void", "rt_runtime*, i32 snode, i32 begin, i32 end")            \
  _(rt_gc_stage0, "void", "rt_runtime*, i32 snode, i32 worker, i32 nworkers")           \
  _(rt_gc_stage1, "void", "rt_runtime*, i32 snode")                                     \
  _(rt_gc_stage2, "void", "rt_runtime*, i32 snode, i32 worker, i32 nworkers, i32 lane, i32 nlanes") \
  _(rt_runtime_init, "rt_runtime*", "i8* pool, u64 size, i32 nsnodes, i64 ambient_bytes") \
  _(rt_runtime_add_snode, "i32", "rt_runtime*, rt_meta*")                               \
  _(rt_runtime_meta, "rt_meta*", "rt_runtime*, i32 snode")                               \
  _(rt_serve, "void", "rt_runtime*, rt_request* (service.h)")

#define RT_NODE_KIND_FUNCTIONS(_, kind)                                                 \
  _(rt_##kind##_get_num_elements, "i32", "rt_meta*, i8* node")                          \
  _(rt_##kind##_activate, "i8*", "rt_meta*, i8* node, i32 i")                           \
  _(rt_##kind##_is_active, "i32", "rt_meta*, i8* node, i32 i")                          \
  _(rt_##kind##_lookup_element, "i8*", "rt_meta*, i8* node, i32 i")                     \
  _(rt_##kind##_deactivate, "void", "rt_meta*, i8* node, i32 i")

#endif
