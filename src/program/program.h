/*
** program.h -- the program layer: one Lattice program in C, with no Lua and
** no LLVM (src/program). A program owns the IR program (its SNode trees), the
** backend, the memory pool with every tree's memory, the kernels compiled for
** it, the kernel builtins' state (random seed, print buffer) and its
** ndarrays' device memory. Errors are values: every function that can fail
** returns false (or NULL) with a message in a caller's buffer; nothing here
** raises or longjmps.
**
** The Lua bindings (src/lang) marshal Lua values to and from these calls;
** the public C API (include/lattice.h, capi.c) wraps them in checked handles.
** The compiler is reached only through interfaces: the jit_compiler of
** jit_default_compiler (the passes, backend creation, the PTX check; the one
** link-time dependency, which a runtime library without the compiler
** supplies as NULL) and the backend's compile function pointers
** (src/jit/jit.h); kernels run through jit_launch (src/jit/launch.c, no
** compiler in it).
*/
#ifndef LATTICE_PROGRAM_H
#define LATTICE_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "../ir/snode.h"
#include "../jit/jit.h"
#include "../jit/jit_sparse.h"
#include "../jit/profile.h"

typedef struct prog_program prog_program;
typedef struct prog_kernel prog_kernel;

/* What a program is made with (lt.init's options; lt_runtime_config). */
typedef struct {
  const char *arch;                /* "cpu" or "cuda" */
  int threads;                     /* <= 0: one per core */
  bool debug, fma;
  bool fast_math;                  /* implies fma (lt.init sets both) */
  int64_t pool_bytes;              /* > 0: the pool's size */
  void *pool_memory;               /* the host's block of pool_bytes for the pool (CPU), or NULL */
  double pool_fraction;            /* > 0: this share of the device's memory */
  int64_t memory_limit;            /* host memory to assume (LT_MEMORY_LIMIT); 0: RAM + swap */
  const char *cuda_driver;         /* NULL: libcuda.so.1 (tests name the mock) */
  const char *check_ptxas;         /* ptxas that checks every kernel's PTX (tests), or NULL */
  jit_options jit;                 /* the environment's other settings for the backend (dump
                                      switches, libdevice, the cache); its debug and
                                      cuda_driver are taken from above */
  char cache_dir[1024];            /* what jit.cache_dir points to (prog_config_from_env,
                                      lt.init{cache = ...}) */
} prog_config;

struct prog_program {
  int refs;                        /* prog_retain / prog_release */
  ir_program *ir;                  /* NULL once reset (prog_reset) */
  jit_backend *be;
  jit_sparse *sparse;              /* the memory pool and sparse runtime */
  char *mem[IR_MAX_TREES];         /* root container of each lt.root tree's one
                                      instance (in the pool); NULL for lt.tree
                                      types, whose instances the front end keeps */
  bool debug;
  bool fma, fast_math;
  const jit_compiler *compiler;    /* jit_default_compiler() */
  char *check_ptxas;
  prog_kernel *compiled;           /* every kernel compiled for this program */
  struct rt_builtins *builtins;    /* random seed, launch counter, print buffer */
  uint64_t host_draws;             /* lt.random calls in Lua scope */
  int64_t cache_hits, cache_misses; /* kernels whose code came from the offline cache, or not */
  double code_ms;                  /* the time all kernels' code took: LLVM, or the cache read, and linking */
  jit_profile *profile;            /* the profiler's records while it is on (a reference); NULL: off */
  /* What keeps each tree: the front end's handles of it, each live
  ** instance, each compiled kernel that uses it. A tree nothing holds is
  ** freed by prog_reclaim_trees (its slot, SNode ids and memory go to later
  ** trees). */
  int32_t tree_holds[IR_MAX_TREES];
};

/* ---- program.c ------------------------------------------------------------------ */

/* Fills what the environment sets in cfg (LT_CUDA_DRIVER, LT_CHECK_PTX,
** LT_MEMORY_LIMIT, and jit from the rest: lt_env_read, env.c; the strings
** stay the environment's). */
void prog_config_from_env(prog_config *cfg);
/* A new program with one reference; NULL with the message in err ("cannot
** start the CPU backend: ...", the pool's size and where it came from). */
prog_program *prog_create(const prog_config *cfg, char *err, size_t errlen);
void prog_retain(prog_program *p);
/* Drops a reference; the last one resets and frees the program. */
void prog_release(prog_program *p);
/* Frees everything the program holds (kernels, trees, pool, backend): what
** refers to it then sees p->ir == NULL. */
void prog_reset(prog_program *p);

/* Materialised tree memory of a place SNode's tree, or NULL. */
char *prog_tree_memory(prog_program *p, const ir_snode *s);
/* The runtime's recorded failure (pool exhausted, the backend failed), taken
** and cleared; false when none. */
bool prog_take_error(prog_program *p, char *msg, size_t len);
/* Frees the trees nothing holds any more; called where no SNode is in use,
** before a new tree starts. */
void prog_reclaim_trees(prog_program *p);
/* Profiles every later launch into pf (a reference is taken), or none when
** pf is NULL (src/jit/profile.h; lt.profiler). */
void prog_set_profile(prog_program *p, jit_profile *pf);

/* ---- tree.c: trees and their instances ---------------------------------------- */

/* Lays out the tree of `root` and registers it with the sparse runtime
** (once); make_instance: also its one default instance (prog->mem, the
** lt.root trees). False with the message (a layout error, pool exhausted). */
bool prog_tree_materialize(prog_program *p, const ir_snode *root, bool make_instance, char *err, size_t errlen);
/* A new zeroed instance of materialised tree `tree` (its root container's
** device address), which holds the tree until prog_instance_free; NULL with
** the message (pool exhausted). */
char *prog_instance_new(prog_program *p, int tree, char *err, size_t errlen);
void prog_instance_free(prog_program *p, int tree, char *root);
/* An instance of tree `tree` whose root container is the caller's memory
** (tree bytes, zeroed here; the CPU only): it holds its tree until
** prog_instance_release, which gives its cells back and leaves the memory
** to the caller. */
void prog_instance_adopt(prog_program *p, int tree, char *root);
void prog_instance_release(prog_program *p, int tree, char *root);
/* Appends one element to dynamic level s at the parent's cell idx: values[c]
** is the bytes of the element's value for s's c-th place (NULL: left zero);
** the element's index, or -1 with the message (the list is full, the pool is
** exhausted). what names s. */
int32_t prog_append(prog_program *p, const ir_snode *s, char *root, const int64_t *idx,
                    const void *const *values, const char *what, char *err, size_t errlen);

/* ---- builtins.c: the kernel builtins' host state ------------------------------------ */

/* Sets the random seed and the print buffer's size (0: 1 MiB); false with
** the message when it cannot be allocated. */
bool prog_builtins_setup(prog_program *p, uint64_t seed, int64_t print_bytes, char *err, size_t errlen);
void prog_builtins_free(prog_program *p);
/* lt.random(type) in host code: the value drawn as bits of type t
** (integers sign-extended to 64 bits; floats as a double in *f). */
void prog_random_host(prog_program *p, ir_type t, uint64_t *bits, double *f);

/* Text the program writes: kernels' print output and warnings. */
typedef struct {
  char *data;
  size_t len, cap;
} prog_text;
void prog_text_add(prog_text *t, const char *s, size_t n);
void prog_text_addf(prog_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void prog_text_free(prog_text *t);
/* A number as Lua's tostring writes it ("3", "0.5", "1e+20", "inf", "-nan"). */
void prog_text_number(prog_text *t, ir_type type, uint64_t bits);

/* ---- kernel.c: compiled kernels and their launch --------------------------------- */

struct prog_kernel {
  prog_program *prog;              /* NULL once released */
  ir_kernel *k;                    /* after the passes (arg/ret types, gtmp size) */
  jit_kernel *jk;                  /* NULL while `pending` */
  jit_pending *pending;            /* a compilation under way, or NULL */
  char *ir_text;                   /* the IR after every pass, headed by pass names */
  ir_kernel *traced;               /* the kernel as traced, kept to make ir_text */
  char *file;                      /* where the kernel was defined, for messages */
  uint64_t trees[IR_MAX_TREES / 64];  /* the trees it holds */
  bool foreign;                    /* jk's code belongs to an AOT module (prog_kernel_adopt) */
  prog_kernel *prev, *next;
};

/* Compiles traced kernel k (taken: c owns it from now on, also on failure)
** into c, caller's memory, zeroed: the passes, then the backend's code
** (background: on another thread where the backend can, finished by
** prog_kernel_ready). print_ir: NULL, or the part of the IR to write on
** stdout once the passes ran (or failed): a view as in prog_ir_select.
** False with the message ("file:line: ..." for the passes). */
bool prog_kernel_compile(prog_kernel *c, prog_program *p, ir_kernel *k, const char *file, const char *print_ir,
                         bool background, char *err, size_t errlen);
/* Makes c (caller's memory, zeroed) a kernel of p whose code was compiled
** elsewhere (an AOT module, module.c): k its final IR and jk its tasks
** (both taken). foreign: jk's code stays the module's (a shared object),
** else the backend releases jk as its own (PTX it loaded). */
void prog_kernel_adopt(prog_kernel *c, prog_program *p, ir_kernel *k, jit_kernel *jk, const char *file,
                       bool foreign);
/* Finishes c's compilation if it is under way; false with a message. */
bool prog_kernel_ready(prog_kernel *c, char *err, size_t errlen);
/* Frees what c holds and unlinks it from its program; c itself stays the
** caller's (safe to call twice). */
void prog_kernel_release(prog_kernel *c);
/* The IR after every pass (made on first use); never NULL. */
const char *prog_kernel_ir(prog_kernel *c);
/* A part of text, an IR text as prog_kernel_ir makes it ("# fields" and the
** declarations, then one "# after PASS" section per pass run): view "all"
** (or NULL) the whole, "final" the declarations and the last section, a pass
** name the declarations and every section after that pass. Malloc'd (caller
** frees); NULL with a message listing the passes run when none was `view`. */
char *prog_ir_select(const char *text, const char *view, char *err, size_t errlen);

/* Runs c with the given scalar argument slots (k->nargs of them, encoded as
** the kernel's argument types: prog_encode_arg) over the trees' instances
** `roots` (NULL: every tree's default instance; else IR_MAX_TREES entries).
** *ret gets the result's bits. What the kernel printed is appended to out
** (NULL: written to stdout), warnings to warn (NULL: stderr). False with the
** message ("kernel NAME (file:line): index 7 out of range ...") when the
** launch failed; the program stays usable. */
bool prog_launch(prog_kernel *c, char **roots, const uint64_t *args, int nargs, uint64_t *ret, prog_text *out,
                 prog_text *warn, char *err, size_t errlen);
/* A value's bits as argument slot / result of type t: integers wrapped to
** the width and sign-extended, f32 as its 32 bits. */
uint64_t prog_encode_int(ir_type t, int64_t v);
uint64_t prog_encode_float(ir_type t, double v);
int64_t prog_decode_int(ir_type t, uint64_t bits);
double prog_decode_float(ir_type t, uint64_t bits);

/* ---- memory.c: the memory kernels see ------------------------------------------ */

/* be NULL: host memory the front end allocated itself. */
bool prog_host_memory(const jit_backend *be);
/* Copies through the backend (a memcpy on the CPU). On failure the message
** "WHAT 'NAME': cannot read N bytes of device memory (why)" (what, name may
** be NULL). */
bool prog_mem_read(jit_backend *be, void *dst, const char *src, size_t n, const char *what, const char *name,
                   char *err, size_t errlen);
bool prog_mem_write(jit_backend *be, char *dst, const void *src, size_t n, const char *what, const char *name,
                    char *err, size_t errlen);

/* The device address of place s's element at idx in instance `root`: for a
** read NULL when a sparse cell on the way is inactive (reads as zero); for a
** write the cells are activated (NULL only when that failed:
** prog_take_error says why). Indices must be in range (prog_check_index). */
char *prog_element(prog_program *p, const ir_snode *s, char *root, const int64_t *idx, bool write);
/* "index 7 out of range for axis 0 of field 'x' with shape (4, 5)" unless
** every index is in range. */
bool prog_check_index(const ir_snode *s, const int64_t *idx, char *err, size_t errlen);
void prog_shape_text(const ir_snode *s, char *buf, size_t len);   /* "(4, 5)" */
/* How a field's indices run, for messages: "shape (4, 5)", or with an offset
** (ir_snode.index_offset) "box [-2, 2) x [0, 5)". */
void prog_box_text(const ir_snode *s, char *buf, size_t len);
/* One element of place s: read (inactive: zeros) or write (activates). */
bool prog_field_read(prog_program *p, const ir_snode *s, char *root, const int64_t *idx, void *value, char *err,
                     size_t errlen);
bool prog_field_write(prog_program *p, const ir_snode *s, char *root, const int64_t *idx, const void *value,
                      char *err, size_t errlen);

/* The elements of the box begin[k] <= i_k < begin[k] + extent[k] of place s,
** row-major, to dst or (dst NULL) from src; the box must lie inside the
** field. Sparse fields go element by element (inactive cells read as zero,
** writes activate); dense ones through one copy of the field's span on a
** device, directly in host memory. */
bool prog_field_box(prog_program *p, const ir_snode *s, char *root, const int64_t *begin, const int64_t *extent,
                    void *dst, const void *src, char *err, size_t errlen);

/* ---- ndarray.c: arrays passed to kernels ---------------------------------------- */

/* Row-major arrays of one scalar type. On host-memory backends the data is
** a host allocation of its own, or the host's buffer (prog_ndarray_wrap; the
** release callback runs when the last reference goes). On a device the data
** lives in a program's device memory (`prog`, retained); a host array moves
** there on its first launch on that device (prog_ndarray_address). */
typedef struct prog_ndarray prog_ndarray;
struct prog_ndarray {
  int refs;
  ir_type dtype;
  int ndim;
  int64_t shape[IR_MAX_INDICES];
  int64_t size;                    /* elements */
  size_t bytes;                    /* the allocation */
  char *data;                      /* NULL once freed */
  prog_program *prog;              /* device memory: the program whose backend holds it */
  bool borrowed;                   /* data is the host's buffer (prog_ndarray_wrap): never freed here */
  void (*release)(void *ud, void *data);   /* borrowed: its owner's callback, or NULL */
  void *release_ud;
};

/* A zeroed array in host memory, or in prog's device memory when prog's
** backend has its own (prog may be NULL). NULL with the message. */
prog_ndarray *prog_ndarray_new(prog_program *prog, ir_type t, int ndim, const int64_t *shape, char *err,
                               size_t errlen);
/* An array over the host's buffer `data` of `bytes` bytes, row-major and
** contiguous; NULL with the message (shape, size, alignment). On a device
** backend the data is copied into device memory now (the host's buffer is
** then released at once, after the copy). */
prog_ndarray *prog_ndarray_wrap(prog_program *prog, ir_type t, int ndim, const int64_t *shape, void *data,
                                size_t bytes, void (*release)(void *ud, void *data), void *ud, char *err,
                                size_t errlen);
/* A borrowed host array (prog_ndarray_wrap) moves to an allocation of its
** own and gives the host's buffer back (release callback): for a buffer whose
** owner is about to free it (keep: the new memory starts as a copy of it) or
** already has (!keep: zeroed, the old buffer is not read) while Lua may still
** hold the array. False when out of memory; the array then has no data
** (NULL). Arrays that are not borrowed are left as they are. */
bool prog_ndarray_detach(prog_ndarray *a, bool keep);
void prog_ndarray_retain(prog_ndarray *a);
void prog_ndarray_release(prog_ndarray *a);
/* The backend whose memory holds a's data; NULL: host memory. */
jit_backend *prog_ndarray_backend(const prog_ndarray *a);
size_t prog_ndarray_elem_bytes(const prog_ndarray *a);
/* False with the message when a's device memory belonged to a program
** that has been reset. */
bool prog_ndarray_usable(const prog_ndarray *a, char *err, size_t errlen);
/* The data's address for a launch on `prog` (moving host data to prog's
** device first when its memory is a device's); NULL with the message. */
char *prog_ndarray_address(prog_ndarray *a, prog_program *prog, char *err, size_t errlen);
/* Whole-array copies to and from a host buffer of exactly a's bytes. */
bool prog_ndarray_read(prog_ndarray *a, void *dst, size_t bytes, char *err, size_t errlen);
bool prog_ndarray_write(prog_ndarray *a, const void *src, size_t bytes, char *err, size_t errlen);

#endif
