/*
** lattice.h -- the public C API of Lattice: runtimes, ndarrays (also over the
** host's own memory), fields and kernels, with errors as values.
**
** This header needs no Lua header: a host that only launches kernels (and,
** with the AOT modules of a later release, never sees Lua at all) includes
** it alone. Running Lua in a runtime (lt_run_string, lt_run_file) and
** reaching its lua_State are in lattice_lua.h. docs/embedding.md is the
** guide, from a first program to the threading rules; examples/host/ has
** complete hosts in C and C++.
**
** Installed with the shared library (docs/install.md): find it with
** `pkg-config --cflags --libs lattice` or CMake's `find_package(Lattice)`
** (target Lattice::lattice). Only the functions declared LT_API are
** exported; everything else inside the libraries is hidden.
**
** Conventions
** - Every function returns an lt_status; LT_OK (0) is success. On failure
**   lt_last_error(rt) has a message naming the function and what was wrong
**   ("lt_field_read: index 9 out of range for axis 0 of field 'x' with
**   shape (8)"). Nothing a host passes crashes the process or longjmps
**   through it.
** - Handles (lt_runtime, lt_ndarray, lt_field, lt_kernel) are values that
**   carry a generation number: a handle used after its runtime or object was
**   destroyed, or with another runtime than the one that made it, is
**   LT_ERROR_INVALID_HANDLE, never undefined behaviour. A zeroed handle is
**   never valid.
** - Threads: a runtime is used by one thread at a time. A call on a runtime
**   that another thread is inside of returns LT_ERROR_BUSY at once (it does
**   not wait). Different runtimes are independent and may be used from
**   different threads at the same time. Calls made from inside a runtime's
**   own Lua code (a C function the script calls) may use the same runtime.
*/
#ifndef LATTICE_H
#define LATTICE_H

#include <stddef.h>
#include <stdint.h>

#include "lattice_version.h"   /* LT_VERSION, LT_VERSION_MAJOR/MINOR/PATCH, LT_VERSION_NUM */

/* LT_API: what the libraries export (the public lt_* functions, luaopen_lattice). */
#if defined(__GNUC__) || defined(__clang__)
#define LT_API extern __attribute__((visibility("default")))
#else
#define LT_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lt_status {
  LT_OK = 0,
  LT_ERROR_INVALID_ARGUMENT = 1,  /* a NULL pointer, a bad config value, a wrong count */
  LT_ERROR_INVALID_HANDLE = 2,    /* destroyed, zeroed, or another runtime's */
  LT_ERROR_NOT_FOUND = 3,         /* no kernel or field exported under that name */
  LT_ERROR_TYPE = 4,              /* a dtype or an argument of the wrong type */
  LT_ERROR_SHAPE = 5,             /* a shape, size or index that does not fit */
  LT_ERROR_BUSY = 6,              /* the runtime is in use by another thread */
  LT_ERROR_OUT_OF_MEMORY = 7,     /* host memory, device memory, or the memory pool */
  LT_ERROR_BACKEND = 8,           /* the backend cannot start, or the device failed */
  LT_ERROR_RUNTIME = 9,           /* a kernel failed while it ran (index, lt.assert, ...) */
  LT_ERROR_SCRIPT = 10,           /* Lua code raised an error (lattice_lua.h) */
  LT_ERROR_UNSUPPORTED = 11,      /* not available in this build or for this object */
  LT_ERROR_MODULE = 12            /* a module file that is corrupt, of an unknown format, or for another CPU */
} lt_status;

/* "LT_ERROR_SHAPE" */
LT_API const char *lt_status_name(lt_status s);

/* Element types, as lt.i8 ... lt.f64 in Lua. */
typedef enum lt_dtype {
  LT_I8 = 2, LT_I16 = 3, LT_I32 = 4, LT_I64 = 5,
  LT_U8 = 6, LT_U16 = 7, LT_U32 = 8, LT_U64 = 9,
  LT_F32 = 10, LT_F64 = 11
} lt_dtype;

/* Bytes of one element (0 for a value that is not an lt_dtype). */
LT_API size_t lt_dtype_size(lt_dtype t);

typedef enum lt_arch { LT_ARCH_CPU = 0, LT_ARCH_CUDA = 1 } lt_arch;

#define LT_MAX_DIMS 8

/* ---- runtimes ---------------------------------------------------------------- */

typedef struct lt_runtime_config {
  lt_arch arch;
  int threads;               /* CPU worker threads; 0: one per core */
  uint64_t device_memory;    /* bytes of the memory pool for fields; 0: the default */
  int debug;                 /* nonzero: kernels check indices and lt.assert */
  void *pool_memory;         /* CPU only: the pool in the host's block of device_memory bytes (64-byte
                                aligned, zeroed by the runtime, the host's again after
                                lt_runtime_destroy); NULL: the runtime reserves its own */
} lt_runtime_config;

/* The defaults: the CPU, one thread per core, the default pool, no debug. */
LT_API void lt_runtime_config_default(lt_runtime_config *cfg);

typedef struct lt_runtime { uint64_t id; } lt_runtime;

/* A runtime: its own backend, memory pool, fields and kernels (and, once Lua
** code runs in it, its own Lua state). cfg NULL: the defaults. */
LT_API lt_status lt_runtime_create(const lt_runtime_config *cfg, lt_runtime *out);
/* Frees everything the runtime holds; its handles are invalid from now on
** (also ndarrays over host memory: their release callbacks run here). */
LT_API lt_status lt_runtime_destroy(lt_runtime rt);
/* The message of the last failed call on rt, "" when the last call
** succeeded. For an invalid rt: the message of the calling thread's last
** call that was given an invalid runtime; after LT_ERROR_BUSY, the calling
** thread's message until it next gets into rt. Valid until the next call. */
LT_API const char *lt_last_error(lt_runtime rt);

/* ---- ndarrays -------------------------------------------------------------------
** Row-major, contiguous arrays of one dtype, passed to kernels as arguments
** (a kernel parameter annotated lt.ndarray_type(dtype, ndim), or none). */

typedef struct lt_ndarray { uint64_t id; } lt_ndarray;

/* A zeroed array that the runtime allocates (device memory on CUDA). */
LT_API lt_status lt_ndarray_create(lt_runtime rt, lt_dtype dtype, int ndim, const int64_t *shape, lt_ndarray *out);
/* An array over the host's buffer `data` of `bytes` bytes (exactly the
** elements, row-major and contiguous, aligned to the element size): on the
** CPU kernels read and write that memory itself, no copy. The host keeps
** the buffer alive until the array is released; then `release(user, data)`
** runs (NULL: nothing to call). On CUDA the data is copied into device memory
** now and the buffer released at once; read results back with
** lt_ndarray_read. */
LT_API lt_status lt_ndarray_wrap(lt_runtime rt, lt_dtype dtype, int ndim, const int64_t *shape, void *data,
                                 size_t bytes, void (*release)(void *user, void *data), void *user,
                                 lt_ndarray *out);
/* Whole-array copies; bytes must be the array's size in bytes. */
LT_API lt_status lt_ndarray_read(lt_runtime rt, lt_ndarray a, void *dst, size_t bytes);
LT_API lt_status lt_ndarray_write(lt_runtime rt, lt_ndarray a, const void *src, size_t bytes);
/* dtype, ndim and shape (LT_MAX_DIMS entries; any pointer may be NULL). */
LT_API lt_status lt_ndarray_shape(lt_runtime rt, lt_ndarray a, lt_dtype *dtype, int *ndim, int64_t *shape);
/* The host's reference goes; the array lives on while Lua code holds it. */
LT_API lt_status lt_ndarray_release(lt_runtime rt, lt_ndarray a);

/* ---- fields ----------------------------------------------------------------------
** Fields that Lua code in the runtime exported by name (lt.export("x", x);
** lattice_lua.h). Reads of inactive sparse cells give zeros; writes
** activate them. dtype must be the field's own. */

typedef struct lt_field { uint64_t id; } lt_field;

LT_API lt_status lt_field_find(lt_runtime rt, const char *name, lt_field *out);
LT_API lt_status lt_field_shape(lt_runtime rt, lt_field f, lt_dtype *dtype, int *ndim, int64_t *shape);
/* One element at index[0..nindex-1]. */
LT_API lt_status lt_field_read(lt_runtime rt, lt_field f, const int64_t *index, int nindex, lt_dtype dtype,
                               void *value);
LT_API lt_status lt_field_write(lt_runtime rt, lt_field f, const int64_t *index, int nindex, lt_dtype dtype,
                                const void *value);
/* The box begin[k] <= i_k < begin[k] + extent[k] (every axis), row-major,
** to or from a host buffer of exactly its bytes. */
LT_API lt_status lt_field_read_box(lt_runtime rt, lt_field f, const int64_t *begin, const int64_t *extent, int n,
                                   lt_dtype dtype, void *dst, size_t bytes);
LT_API lt_status lt_field_write_box(lt_runtime rt, lt_field f, const int64_t *begin, const int64_t *extent,
                                    int n, lt_dtype dtype, const void *src, size_t bytes);

/* ---- kernels ----------------------------------------------------------------------
** Kernels that Lua code in the runtime exported by name (lt.export("step",
** step)), called with C values: each is converted as the kernel's Lua call
** would convert it (the parameter's annotation types it; a float for an
** integer parameter must be integral). */

typedef struct lt_kernel { uint64_t id; } lt_kernel;

/* An instance of a tree type of an AOT module (lt_tree_create, below). */
typedef struct lt_tree { uint64_t id; } lt_tree;

typedef enum lt_value_kind {
  LT_VALUE_NONE = 0,         /* no value (a kernel that returns nothing) */
  LT_VALUE_INT = 1,
  LT_VALUE_FLOAT = 2,
  LT_VALUE_NDARRAY = 3,
  LT_VALUE_TREE = 4,         /* a tree instance (module kernels) */
  LT_VALUE_VECTOR = 5        /* n numbers for a vector or matrix parameter, row-major (module kernels) */
} lt_value_kind;

typedef struct lt_value {
  lt_value_kind kind;
  union {
    int64_t i;
    double f;
    lt_ndarray nd;
    lt_tree tree;
    struct { const double *v; int n; } vec;
  } as;
} lt_value;

static inline lt_value lt_int(int64_t v) { lt_value x; x.kind = LT_VALUE_INT; x.as.i = v; return x; }
static inline lt_value lt_float(double v) { lt_value x; x.kind = LT_VALUE_FLOAT; x.as.f = v; return x; }
static inline lt_value lt_nd(lt_ndarray a) { lt_value x; x.kind = LT_VALUE_NDARRAY; x.as.nd = a; return x; }
static inline lt_value lt_tree_value(lt_tree t) { lt_value x; x.kind = LT_VALUE_TREE; x.as.tree = t; return x; }
static inline lt_value lt_vec(const double *v, int n) {
  lt_value x; x.kind = LT_VALUE_VECTOR; x.as.vec.v = v; x.as.vec.n = n; return x;
}

LT_API lt_status lt_kernel_find(lt_runtime rt, const char *name, lt_kernel *out);
/* Runs the kernel (compiling it on its first call with these argument
** types); result (may be NULL) gets its scalar result, kind LT_VALUE_NONE
** when it returns none. A kernel's runtime failure is LT_ERROR_RUNTIME and
** the runtime stays usable; a wrong argument count is
** LT_ERROR_INVALID_ARGUMENT, an argument of the wrong type LT_ERROR_TYPE, and
** an error while tracing or compiling the kernel LT_ERROR_SCRIPT (naming the
** script's line). */
LT_API lt_status lt_kernel_launch(lt_runtime rt, lt_kernel k, const lt_value *args, int nargs, lt_value *result);

/* ---- AOT modules ------------------------------------------------------------------
** A module file saved from Lua (lt.aot.module, docs/aot.md) holds tree types
** and compiled kernels; loading it needs no compiler (liblattice_rt). A
** module's kernels are launched with lt_kernel_launch, one lt_value per
** parameter in order: lt_int / lt_float for scalars, lt_vec for vectors and
** matrices, lt_nd for ndarrays (dtype and ndim as saved), lt_tree_value for
** tree instances (of the parameter's tree type); anything else is an error
** naming the parameter. A module's trees keep the tree slots and SNode ids
** its code was compiled for: a runtime holds the trees of one module (a
** second module with trees is refused unless they fit beside the first).
** The module file is checked (lengths, checksum, CPU features, layouts)
** before anything of it runs; a bad file is an error naming the file and
** the section. */

typedef struct lt_module { uint64_t id; } lt_module;

LT_API lt_status lt_module_load(lt_runtime rt, const char *path, lt_module *out);
/* The same from bytes in memory; name is used in messages (NULL: "(memory)"). */
LT_API lt_status lt_module_load_memory(lt_runtime rt, const void *data, size_t bytes, const char *name,
                                       lt_module *out);
/* Frees the module: its tree instances are destroyed and the handles of its
** kernels, trees and their fields become invalid. */
LT_API lt_status lt_module_free(lt_runtime rt, lt_module m);
/* Tree type `name` of the module: LT_ERROR_NOT_FOUND when it has none;
** bytes (may be NULL) gets the memory an instance takes when it is made
** (its root container; cells of pointer and dynamic levels come from the
** runtime's pool as they are activated). */
LT_API lt_status lt_module_tree_type(lt_runtime rt, lt_module m, const char *name, uint64_t *bytes);
/* A new instance of tree type `type`, every cell inactive and zero, in the
** runtime's memory pool. */
LT_API lt_status lt_tree_create(lt_runtime rt, lt_module m, const char *type, lt_tree *out);
/* The same with the instance's fixed part (dense levels, pointer tables,
** bitmasks: the `bytes` lt_module_tree_type reports) in the host's block
** `memory` of `size` >= bytes, 64-byte aligned (CPU runtimes only). The
** runtime zeroes it and uses it until lt_tree_destroy, after which it is the
** host's again; cells of pointer and dynamic levels still come from the
** runtime's pool (which lt_runtime_config.pool_memory may also place in
** the host's memory). */
LT_API lt_status lt_tree_create_in(lt_runtime rt, lt_module m, const char *type, void *memory, size_t size,
                                   lt_tree *out);
/* Its cells go back to the pool and its fixed part is kept for the next
** instance of its tree type (or is the host's again: lt_tree_create_in);
** its handle and its fields' become invalid. */
LT_API lt_status lt_tree_destroy(lt_runtime rt, lt_tree t);
/* Field `name` of the instance, for lt_field_read/write/read_box/write_box/
** shape: a scalar field by its name, a component of a vector or matrix field
** as NAME.x / NAME.y / NAME.z / NAME.w (vectors) or NAME.01 (matrices:
** row, column). */
LT_API lt_status lt_tree_field(lt_runtime rt, lt_tree t, const char *name, lt_field *out);
/* Kernel `name` of the module. */
LT_API lt_status lt_module_kernel(lt_runtime rt, lt_module m, const char *name, lt_kernel *out);

#ifdef __cplusplus
}
#endif

#endif
