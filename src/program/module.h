/*
** module.h -- AOT modules (docs/aot.md): tree types and compiled kernels in
** one versioned, checksummed file that a host runs with the runtime library
** alone.
**
** Three steps, each in its own file:
**   module_write.c   a module description (trees of a program, compiled
**                    kernels, their signatures) -> the file's bytes; the
**                    machine code comes from the compiler (jit_compiler's
**                    cpu_module), so saving needs liblattice
**   module_read.c    the file's bytes -> prog_module, every length, count,
**                    name and tree checked, the kernels' IR parsed and
**                    verified against the trees (prog_module_check); needs
**                    only src/ir, so the fuzz harness runs it alone
**   module.c         a checked module into a program: its trees at the tree
**                    slots and SNode ids its code was compiled for, its code
**                    loaded (a shared object, dlopen'ed from memory), its
**                    kernels ready for prog_launch
**
** The file (little-endian; format 2, read from 1; docs/aot.md says what
** each format number means):
**   header   "LTMODULE"  u32 format  u32 nsections  u64 file bytes  u64 0
**   section  u32 tag  u32 flags (bit 0: required)  u64 length  payload
**   trailer  u64 FNV-1a (jit_hash) of every byte before it
** Strings are u32 length + bytes. Sections, in order: one INFO, TREE per
** tree type, KERNEL per kernel, then the code: one CPU_CODE (a module for
** the CPU) and one CUDA per SM (for GPUs: every kernel's PTX). A reader skips a section it
** does not know unless the section is marked required; then it refuses the
** file naming the tag (how later formats add to this one, docs/aot.md).
*/
#ifndef LATTICE_PROGRAM_MODULE_H
#define LATTICE_PROGRAM_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "../ir/snode.h"

#define PROG_MODULE_MAGIC "LTMODULE"
/* 2 (2026-11-26): the code reads the slot shift from an SNode's meta
** (rt_meta_slot_cell), which runtimes before it leave 0; their file layout
** is format 1's, so format 1 files are still read. */
enum { PROG_MODULE_FORMAT = 2 };

enum {
  MOD_SEC_INFO = 1,
  MOD_SEC_TREE = 2,
  MOD_SEC_KERNEL = 3,
  MOD_SEC_CPU_CODE = 4,
  MOD_SEC_CUDA = 5,
  MOD_SEC_REQUIRED = 1      /* section flag */
};

/* A KERNEL section's maths flags (u32 after the IR): the ir_kernel options
** its code was compiled with. Fast math implies fma; a file with another
** bit set, or fast math without fma, is refused. Formats before fast math
** wrote 0 or MOD_KERNEL_FMA, which read as before. */
enum { MOD_KERNEL_FMA = 1, MOD_KERNEL_FAST_MATH = 2 };

/* Limits the reader enforces (beyond the IR's own). */
enum {
  MOD_MAX_NAME = 255,
  MOD_MAX_TREES = 64,
  MOD_MAX_KERNELS = 1024,
  MOD_MAX_FIELDS = 256,
  MOD_MAX_PARAMS = 16,
  MOD_MAX_SMS = 8
};
#define MOD_MAX_FILE ((uint64_t)1 << 30)

/* One SNode of a saved tree, pre-order; parent is an index into the tree's
** nodes (-1 for the root). The layout fields are what the saving program
** computed; the loader recomputes them and refuses the module when they
** differ. */
typedef struct {
  int id, parent;
  ir_snode_kind kind;
  ir_type dtype;                   /* places */
  int naxes;
  int axes[IR_MAX_INDICES];
  int64_t shape[IR_MAX_INDICES];
  int64_t chunk_cells;             /* dynamic */
  char name[MOD_MAX_NAME + 1];     /* places ("" when none) */
  int64_t offset, cell_bytes, container_bytes, meta_offset;
} mod_node;

/* A field of a tree type as the user declared it: a scalar is one place, a
** vector or matrix rows*cols places (row-major) named NAME.suffix. */
typedef enum { MOD_FIELD_SCALAR = 0, MOD_FIELD_VECTOR = 1, MOD_FIELD_MATRIX = 2 } mod_field_kind;
typedef struct {
  char name[MOD_MAX_NAME + 1];
  mod_field_kind kind;
  int rows, cols;
  int ncomp;
  int comp[IR_MAX_INDICES * IR_MAX_INDICES];   /* node index of each component's place */
} mod_field;

typedef struct {
  char name[MOD_MAX_NAME + 1];
  int slot;                        /* the tree slot its kernels' code names */
  int64_t bytes;                   /* the root container's bytes */
  int nnodes;
  mod_node *nodes;
  int nfields;
  mod_field *fields;
  ir_snode *root;                  /* once made in a program (prog_module_check, module.c) */
} mod_tree;

/* A kernel parameter as the user declared it, and the IR argument slots it
** takes from `slot` on: a scalar one, a vector or matrix rows*cols, an
** ndarray 1 + ndim (its address, then its extents), a tree instance none. */
typedef enum { MOD_PARAM_SCALAR = 0, MOD_PARAM_VECTOR = 1, MOD_PARAM_NDARRAY = 2, MOD_PARAM_TREE = 3 } mod_param_kind;
typedef struct {
  char name[MOD_MAX_NAME + 1];
  mod_param_kind kind;
  ir_type dtype;                   /* scalar, components, ndarray elements */
  int rows, cols;                  /* vector: n x 1; matrix: rows x cols */
  int ndim;                        /* ndarray */
  int tree;                        /* tree instance: index into the module's trees */
  int slot, nslots;                /* filled by the reader */
} mod_param;

typedef struct {
  char name[MOD_MAX_NAME + 1];
  char file[MOD_MAX_NAME + 1];     /* where it was defined (messages) */
  char *ir;                        /* the kernel after every pass, with source locations */
  bool fma, fast_math;             /* its maths flags (MOD_KERNEL_*) */
  int nparams;
  mod_param params[MOD_MAX_PARAMS];
  int nnoalias;
  ir_noalias noalias[IR_MAX_NOALIAS];
  int ntasks;
  ir_kernel *k;                    /* parsed (prog_module_check) */
} mod_kernel;

/* The PTX of every kernel for one SM. */
typedef struct {
  char sm[16];                     /* "sm_70" */
  char **ptx;                      /* nkernels texts */
} mod_cuda;

typedef struct prog_module prog_module;
struct prog_module {
  char file[512];                  /* for messages */
  uint32_t format;
  char lattice_version[64];
  char triple[64];
  char cpu[64];                    /* the oldest CPU it runs on ("x86-64-v3") */
  char features[512];              /* what that CPU has, comma-separated */
  int ntrees, trees_cap;
  mod_tree *trees;
  int nkernels, kernels_cap;
  mod_kernel *kernels;
  const unsigned char *code;       /* the CPU code: a shared object (points into `bytes`); NULL: none */
  size_t code_len;
  int ncuda;
  mod_cuda cuda[MOD_MAX_SMS];      /* PTX per SM, in the file's order */
  unsigned char *bytes;            /* the file */
  size_t nbytes;
  /* module.c: in a program */
  struct prog_program *prog;
  struct prog_kernel *loaded;      /* nkernels of them */
  void *dl;                        /* dlopen handle of the code */
  int code_fd;
};

/* ---- module_read.c ------------------------------------------------------------ */

/* Reads a module from the n bytes at data (copied); NULL with "FILE: section
** S: what is wrong" in err. file names it in messages. Checks the header,
** the checksum, every section's length and content and the limits above;
** the trees and kernels are not yet built (prog_module_check). */
prog_module *prog_module_read(const void *data, size_t n, const char *file, char *err, size_t errlen);
/* Builds m's trees in ir (at their slots and SNode ids; those must be free),
** lays them out and compares the layout with the saved one, then parses and
** verifies every kernel's IR against them and checks its parameters against
** its IR arguments. False with the message; what was built stays in ir
** (mod_tree.root) for prog_module_unbuild. */
bool prog_module_check(prog_module *m, ir_program *ir, char *err, size_t errlen);
/* Frees the parsed kernels and the trees prog_module_check built in ir. */
void prog_module_unbuild(prog_module *m, ir_program *ir);
/* Frees what prog_module_read made (after prog_module_unbuild). */
void prog_module_free_data(prog_module *m);

/* The CPU features of the host that m needs and the host lacks
** (comma-separated in missing, "" when none); module_read.c. */
void prog_module_missing_features(const prog_module *m, char *missing, size_t len);

/* ---- module_write.c --------------------------------------------------------------- */

struct prog_program;
struct prog_kernel;

/* What a module is saved from: tree types (roots of trees of p, each a
** complete tree) with their fields, and compiled kernels with their
** parameters (slot/nslots ignored). */
typedef struct {
  const char *name;
  const ir_snode *root;
  int nfields;
  const mod_field *fields;         /* comp[] holds place SNode ids here */
} mod_tree_spec;
typedef struct {
  const char *name;
  struct prog_kernel *compiled;
  int nparams;
  const mod_param *params;
} mod_kernel_spec;
typedef struct {
  bool has_cpu;                    /* machine code for x86-64 */
  const char *cpu;                 /* NULL: the portable default (PROG_MODULE_DEFAULT_CPU) */
  int nsms;                        /* PTX for each of these SMs ("sm_70") */
  const char *const *sms;
  int ntrees;
  const mod_tree_spec *trees;
  int nkernels;
  const mod_kernel_spec *kernels;
} mod_spec;
#define PROG_MODULE_DEFAULT_CPU "x86-64-v2"

/* Saves the module to path (written to a temporary name, then renamed);
** false with the message (a kernel that reads a tree no parameter passes,
** no linker for the machine code, ...). */
bool prog_module_save(struct prog_program *p, const mod_spec *spec, const char *path, char *err, size_t errlen);

/* Whether kernel `kernel` of spec reaches fields only through the tree
** instances its parameters pass (and spec's trees); false with a message
** naming the field. */
bool prog_module_kernel_check(struct prog_program *p, const mod_spec *spec, int kernel, char *err, size_t errlen);

/* The CPU names a module may target and the features each has; NULL for a
** name not known. */
const char *prog_module_cpu_features(const char *cpu);

/* ---- module.c ------------------------------------------------------------------------ */

/* Loads the module file at path into p: read, checked, trees made, code
** loaded. NULL with the message. */
prog_module *prog_module_load(struct prog_program *p, const char *path, char *err, size_t errlen);
/* The same from bytes in memory. */
prog_module *prog_module_load_bytes(struct prog_program *p, const void *data, size_t n, const char *file, char *err,
                                    size_t errlen);
/* Frees the module's kernels, code and trees; instances of its trees must
** be freed first (the C API does). */
void prog_module_free(prog_module *m);
int prog_module_find_tree(const prog_module *m, const char *name);     /* -1: none */
int prog_module_find_kernel(const prog_module *m, const char *name);   /* -1: none */

#endif
