/*
** llvm_codegen.h -- the LLVM code generator shared by every LLVM target.
**
** cg_build turns an offloaded kernel into one LLVM module (cg_build_tasks:
** into one module of some of its tasks) holding, for each task N, a function
**     void PREFIX_taskN(rt_context *ctx, i32 thread_id, i64 begin, i64 end)
** (a range_for task loops over [begin, end) itself; a serial task runs its
** body once), with the device runtime bitcode of the target linked in.
** Targets differ only through cg_target (the hooks below): the CPU backend
** (src/jit/cpu) and the PTX emitter (cg_ptx.c) each supply one.
**
** Internal to src/jit: the cg_* functions split over cg_core.c (module,
** functions, dispatch), cg_split.c (very large tasks as several
** functions), cg_arith.c, cg_control.c, cg_memory.c, cg_runtime.c;
** cg_ptx.c holds the NVPTX hooks and jit_emit_ptx, src/jit/cpu the CPU ones.
*/
#ifndef LATTICE_LLVM_CODEGEN_H
#define LATTICE_LLVM_CODEGEN_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <setjmp.h>

#include "../jit.h"
#include "../../ir/snode.h"

typedef struct cg cg;

/* What differs between LLVM targets. */
typedef struct cg_target {
  const char *name;                       /* "x86_64", "nvptx64": for messages */
  const unsigned char *const *bc;         /* embedded runtime bitcode (cmake/embed.c) */
  const size_t *bc_size;
  /* Name of the function that computes a math op on type t (f32/f64): an LLVM
  ** intrinsic ("llvm.sin.f32") or an external library function ("tanf");
  ** NULL when the target has none. A lookup in ops.def (cg_math_name). */
  const char *(*math_fn)(ir_op op, ir_type t, char *buf, size_t len);
  /* Called once per task after its function is complete (may be NULL):
  ** NVPTX wraps it in a kernel entry. */
  void (*finish_task)(cg *c, LLVMValueRef fn, ir_stmt *task, int index);
  /* GC stage 2's lanes (allocator.h): the threads of a GPU block zero one
  ** cell together. NULL: one lane (lane 0 of 1). */
  void (*gc_lanes)(cg *c, LLVMValueRef *lane, LLVMValueRef *nlanes);
  /* NVPTX kernel entries built for the host (cg_ptx_emulation): the thread
  ** and block numbers are read from the external global lt_emu_sregs
  ** (i32[4]: tid.x, ntid.x, ctaid.x, nctaid.x) instead of PTX registers */
  bool emulated;
  /* The exact fmod to call for a float %, as "<fmod_fn>f" (f32) or "<fmod_fn>"
  ** (f64); NULL: LLVM's frem, which on x86-64 is libm's exact fmod. NVPTX
  ** lowers frem to a - trunc(a/b)*b, wrong by far for large quotients, so it
  ** calls libdevice's __nv_fmod. */
  const char *fmod_fn;
  /* In fast math (ir_kernel.fast_math): the f32 division by a non-constant
  ** and the f32 square root to call instead of fdiv and the math function,
  ** e.g. NVPTX's div.approx.f32 and sqrt.approx.f32 (2 ulp; NaN and the
  ** infinities as IEEE says); NULL: fdiv / the math function with fast-math
  ** flags (cg_arith.c). */
  const char *approx_div_f32, *approx_sqrt_f32;
  /* The address space of the device's global memory (NVPTX: 1), where every
  ** field and ndarray lives; 0: none. The tree roots and ndarray addresses a
  ** kernel reads are marked as pointing there (cg_global), so the loads and
  ** stores through them are global ones instead of generic. */
  unsigned global_as;
  /* Appends may be gathered per list in a table of the thread (cg_append.c):
  ** the CPU, whose runtime has the tables (rt_append_table). */
  bool buffer_appends;
} cg_target;

/* The name of math op on type t (f32/f64) lowered as `how` says (a column
** of ops.def, e.g. ir_op_cpu_math(op)): llvm.<op>.f32 for IR_MATH_llvm,
** <lib_prefix><op>f (f32) or <lib_prefix><op> (f64) for IR_MATH_lib; NULL
** for IR_MATH_none. Written into buf (cg_arith.c). */
const char *cg_math_name(ir_math how, const char *lib_prefix, ir_op op, ir_type t, char *buf, size_t len);

/* p (a generic pointer into the target's global memory) marked as such: a
** cast to global_as and back, from which NVPTX's address-space inference
** makes every access through p global (cg_memory.c). p itself when the
** target has no global_as. */
LLVMValueRef cg_global(cg *c, LLVMValueRef p);

/* The result of cg_build. */
typedef struct {
  LLVMModuleRef mod;
  int ntasks;
  char (*names)[160];                     /* symbol of each task (malloc'd) */
  bool needs_runtime;                     /* some task reads rt_context.runtime */
} cg_module;

/* Builds the module for k (offloaded) in ctx, with symbols PREFIX_taskN.
** false and a message in err on failure (nothing to free then). */
bool cg_build(const cg_target *t, LLVMContextRef ctx, ir_kernel *k, const char *prefix,
              cg_module *out, char *err, size_t errlen);
/* The same for the tasks i of k with only[i] set (NULL: every task): a
** module holding those tasks' functions (each still PREFIX_taskN with N its
** index in k) and the runtime bitcode when one of them uses it. out->ntasks
** and out->names cover every task of k; out->needs_runtime the ones built.
** Modules of disjoint task sets define no symbol twice (everything but the
** task functions is internal), so they may be compiled apart and linked
** together: the CPU backend compiles a kernel's tasks on several threads so
** (cpu_compile.c). */
bool cg_build_tasks(const cg_target *t, LLVMContextRef ctx, ir_kernel *k, const char *prefix,
                    const unsigned char *only, cg_module *out, char *err, size_t errlen);
/* Whether task (a top-level statement of k) calls into the runtime bitcode
** (flag R of ops.def), and for what: NONE, SOME (bounds checks, lt.random,
** print, lt.assert: a few small functions) or SPARSE (sparse SNodes: lists,
** node lookups, activation, the allocators, GC; what costs LLVM most). */
typedef enum { CG_RUNTIME_NONE, CG_RUNTIME_SOME, CG_RUNTIME_SPARSE } cg_runtime_use;
cg_runtime_use cg_task_runtime(const ir_kernel *k, ir_stmt *task);
void cg_module_free(cg_module *m);       /* frees names (the module is the caller's) */
/* A symbol prefix for kernel k: its name (e.g. "kernel@heat.lua:12") cut to
** 60 characters with everything but [A-Za-z0-9] made '_', as PTX wants
** identifiers; returns the length written. */
int cg_symbol_prefix(const ir_kernel *k, char *out, size_t len);

/* Drops unused (internal) runtime functions, then runs LLVM's default
** pipeline with loop and SLP vectorization for tm: O3 when `thorough`, else
** O2. Kernels that call into the runtime (sparse SNodes) need O3, which
** inlines and unrolls the node lookups (the sparse Laplacian is 3x slower at
** O2); for dense kernels O2 gives the same code measured here (triad, the
** stencils, mpm88) in less compile time (heat_init: 12 -> 7 ms). */
bool cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, bool thorough, char *err, size_t errlen);

/* Runtime bitcode (cg_runtime.c). cg_runtime_check reads the target's
** bitcode once, lazily (the symbol table, not the bodies), and checks every
** RT_FUNCTIONS entry is defined; what is not bitcode is refused with a
** message (LLVM's own handler for unreadable bitcode ends the process).
** cg_runtime_link links a fresh copy into mod with internal linkage. With
** `tasks` (the module's code runs only while the runtime is set up: kernels
** and their tasks), the runtime's loads of the fields fixed once it is set up
** are marked invariant; the request kernel (cg_ptx_service), which sets
** them up, passes false. */
bool cg_runtime_check(const cg_target *t, char *err, size_t errlen);
bool cg_runtime_link(const cg_target *t, LLVMModuleRef mod, bool tasks, char *err, size_t errlen);

/* PTX (cg_ptx.c). cg_ptx_kernel: k's PTX for sm (e.g. "sm_80"), malloc'd;
** info gets the task names, ntasks and needs_runtime (its mod is NULL; free
** with cg_module_free). link: link libdevice (a path, NULL when none was
** found) for the math functions NVPTX has no instruction for, and fail
** naming the function when it is needed but missing; without link those
** calls stay external (enough for ptxas). cg_ptx_service: the module of the
** kernel lt_serve(rt_runtime *, rt_request *), which runs rt_serve on one
** thread (the CUDA backend's jit_backend.serve). prefix: the entries'
** symbol prefix (PREFIX_taskN); NULL: the kernel's own (cg_symbol_prefix). */
char *cg_ptx_kernel(ir_kernel *k, const char *sm, bool link, const char *libdevice, const char *prefix,
                    cg_module *info, char *err, size_t errlen);
char *cg_ptx_service(const char *sm, char *err, size_t errlen);
/* The PTX kernel entries of cg_ptx.c on another target (the host's: its
** runtime bitcode and math functions), with the thread numbers read from
** lt_emu_sregs: how the mock driver runs kernels without a GPU
** (tests/cuda/cuda_emulate.c). */
const cg_target *cg_ptx_emulation(const cg_target *host);

/* ---- state shared by the cg_*.c files ------------------------------------ */

/* Very large tasks (cg_split.c): a task whose body takes more than
** CG_SPLIT_ACCESSES field addresses or holds more than CG_SPLIT_STMTS
** statements (counted recursively) is compiled as parts of at most
** CG_PART_ACCESSES addresses and CG_PART_STMTS statements, one function
** each, where its body allows cuts. (250 is the number of memory locations
** LLVM's alias set tracker follows one by one in a loop; past it, loop access
** analysis compares every pair of accesses.) cg_split_plan fills sp (nparts
** 0 when the task stays whole); false only when out of memory. first[m] is
** the first top-level statement of part m; carry[m] the earlier pure
** statements part m recomputes. */
enum { CG_SPLIT_STMTS = 4000, CG_PART_STMTS = 2000, CG_SPLIT_ACCESSES = 250, CG_PART_ACCESSES = 200 };
typedef struct {
  int nparts;
  ir_stmt **first;
  ir_stmt ***carry;
  int *ncarry;
} cg_split;
bool cg_split_plan(const cg *c, ir_stmt *task, cg_split *sp);
void cg_split_free(cg_split *sp);
/* Whether k's statement ids are unique and below next_id; false also when
** out of memory (then nothing is cut). */
bool cg_split_ids_ok(ir_kernel *k);
/* Emits the statements of blk from first up to end (exclusive; NULL: to
** the end) of a range_for or serial task, when they are too large, as
** pieces of at most CG_PART_ACCESSES addresses / CG_PART_STMTS statements,
** each a function called in place (cg_split.c); false when they are not
** too large or cannot be cut (then the caller emits them as usual). */
bool cg_outline(cg *c, ir_block *blk, ir_stmt *first, ir_stmt *end);

typedef struct {
  const ir_stmt *key;
  LLVMValueRef val;
} cg_slot;

typedef struct {
  LLVMBasicBlockRef brk, cont;
} cg_loop;

struct cg {
  const cg_target *target;
  ir_kernel *k;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef t_void, t_i1, t_i8, t_i32, t_i64, t_ptr, t_ctx;
  /* the task being generated */
  LLVMValueRef fn, ctxv;
  LLVMBasicBlockRef entry;               /* allocas go here */
  cg_loop loops[64];
  int nloops;
  /* the task_struct_for being generated (cg_struct_for.c): its level, the
  ** current container and cell, the container's first index along each
  ** physical axis (i64) and the cell's virtual indices (i32) */
  ir_stmt *sf_task;
  const ir_snode *sf_level;
  LLVMValueRef sf_node, sf_cell;
  LLVMValueRef sf_coord[IR_MAX_INDICES];
  LLVMValueRef sf_index[IR_MAX_INDICES];
  /* set while emitting the interior cells of a dense container, where every
  ** access at the loop indices plus constants stays inside the container:
  ** such an access is the current cell's address plus a constant */
  int sf_interior;                       /* 1: interior row; 2: middle of a border row */
  /* stencil struct-fors: the current cell's coordinates inside its container
  ** (i64 per physical axis) and a stack table of the 3^naxes containers
  ** around the current one (the ambient cell where inactive), or NULL */
  LLVMValueRef sf_cellc[IR_MAX_INDICES];
  LLVMValueRef sf_nbr;
  bool uses_runtime;                     /* a task read rt_context.runtime */
  ir_stmt *paired;                       /* an atomic emitted with the one before it (cg_memory.c) */
  /* the task function's count of its appends to each dynamic level it
  ** appends to (cg_sparse.c): i64 variables, added to the level's active
  ** count once, as the function returns (cg_task_exit) */
  int count_snode[4];
  LLVMValueRef count_var[4];
  int ncount;
  LLVMValueRef count_fn;
  /* the level whose appends the task function gathers in its thread's
  ** table (cg_append.c; -1: none), its one append, the table (NULL at run
  ** time: none), the list of the entries taken by this call (u16 numbers)
  ** and their number (an i32 variable) */
  int buf_snode;
  const ir_stmt *buf_site;
  LLVMValueRef buf_table, buf_taken, buf_ntaken;
  /* SNodes whose cells the task being generated activates or deactivates
  ** (cg_sparse.c, computed once per task): reads of the others need no
  ** atomics, no other thread changes them while the task runs */
  const ir_stmt *writes_task;
  unsigned char *writes;                 /* [IR_MAX_SNODES], freed by cg_build */
  LLVMValueRef *tbaa;                    /* [IR_MAX_SNODES] access tag per place (cg_memory.c),
                                            freed by cg_build */
  /* the parts of the task being generated (cg_split.c) and their
  ** functions, freed by cg_build; part_body is the task's body while a part
  ** is generated (else NULL): it emits only the statements from part_first
  ** up to part_end (exclusive; NULL: to the end), after the part's carry */
  cg_split split;
  LLVMValueRef *split_fns;
  const ir_block *part_body;
  ir_stmt *part_first, *part_end;
  ir_stmt **part_carry;
  int part_ncarry;
  bool ids_ok;                           /* statement ids unique and < next_id (cg_split_ids_ok):
                                            cg_split.c indexes by them */
  bool outline_ok;                       /* cg_outline may cut blocks of this task */
  int npieces;                           /* functions cg_outline made (for their names) */
  /* statement -> value (for loops and tasks: their current index) */
  cg_slot *slots;
  size_t nslots, cap;
  /* errors: cg_fail writes err and longjmps out of cg_build */
  jmp_buf fail;
  char *err;
  size_t errlen;
};

void cg_fail(cg *c, const ir_stmt *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 3, 4)))
#endif
    ;
LLVMTypeRef cg_type(cg *c, ir_type t);
LLVMValueRef cg_get(cg *c, const ir_stmt *s);        /* value of an operand */
void cg_stmt(cg *c, ir_stmt *s);                     /* emits one statement */
void cg_set(cg *c, const ir_stmt *s, LLVMValueRef v);
void cg_block(cg *c, ir_block *blk);                 /* emits every statement */
LLVMValueRef cg_call(cg *c, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *ptys,
                     LLVMValueRef *args);             /* declares name when absent */
/* Members of rt_context by position (context.h: the order is the ABI). */
enum { CG_CTX_ROOTS, CG_CTX_ARGS, CG_CTX_RET, CG_CTX_GTMP, CG_CTX_ERROR, CG_CTX_ERROR_INFO,
       CG_CTX_RUNTIME, CG_CTX_BUILTINS, CG_CTX_NFIELDS };
LLVMValueRef cg_ctx_field(cg *c, int index);         /* load of a CG_CTX_* member */
/* Marks a load as reading memory that does not change while a task runs. */
LLVMValueRef cg_invariant(cg *c, LLVMValueRef load);
/* Marks a load of a pointer as giving a non-null, 8-aligned address of at least
** `bytes` readable bytes, so that loads through it may be hoisted out of the
** branches of a loop (LICM moves a load out of a branch only when it cannot
** fault). Returns the load. */
LLVMValueRef cg_dereferenceable(LLVMContextRef ctx, LLVMValueRef load, unsigned long long bytes);
LLVMValueRef cg_int_convert(cg *c, LLVMValueRef v, bool is_signed, LLVMTypeRef to);
/* Leaves the block if it is already terminated (after a jump): later
** statements go to a fresh unreachable block. */
void cg_open(cg *c);
/* Branches to bb unless the current block is terminated. */
void cg_br(cg *c, LLVMBasicBlockRef bb);
LLVMBasicBlockRef cg_new_bb(cg *c, const char *name);
LLVMValueRef cg_entry_alloca(cg *c, LLVMTypeRef t, const char *name);
/* At the start of a task function: its append counts and, on a target that
** buffers appends, the table (cg_append.c). Before every return: hand over
** what the function keeps for the runtime (buffered appends, the counts). */
void cg_append_begin(cg *c, ir_stmt *task);
void cg_task_exit(cg *c);

/* Emitters by concern, one per value of ops.def's emit column (cg_stmt
** dispatches on it); each returns false when it cannot emit the statement. */
bool cg_arith(cg *c, ir_stmt *s);                    /* cg_arith.c */
bool cg_control(cg *c, ir_stmt *s);                  /* cg_control.c */
bool cg_memory(cg *c, ir_stmt *s);                   /* cg_memory.c */
bool cg_sparse(cg *c, ir_stmt *s);                   /* cg_sparse.c */
/* Branches to a new block when bad (expected false) holds, calls the
** runtime's raise function `fn` there and leaves the task (the launcher skips
** the remaining chunks after an error); the builder goes on where bad is
** false. Bounds checks, ndarray checks, lt.assert (cg_builtins.c). */
void cg_fail_if(cg *c, LLVMValueRef bad, const char *fn, int n, LLVMTypeRef *tys, LLVMValueRef *args);
bool cg_builtins(cg *c, ir_stmt *s);                 /* cg_builtins.c: ndarrays, random, print, assert */

/* Field addressing shared by cg_memory.c (dense) and cg_sparse.c. */
/* The tree's base address: ctx->roots[tree]. */
LLVMValueRef cg_root(cg *c, int tree);
/* Physical indices (i64, NULL where unused) from s's operands ops[0..sn->nidx),
** which are the virtual indices of SNode sn. */
void cg_phys_indices(cg *c, ir_stmt *s, const ir_snode *sn, LLVMValueRef *phys);
/* The cell number (i64) of level lvl for physical indices phys (snode.h). */
LLVMValueRef cg_cell_index(cg *c, ir_stmt *s, const ir_snode *lvl, LLVMValueRef *phys);
/* global_ptr of a place under a sparse level (cg_sparse.c). */
LLVMValueRef cg_sparse_global_ptr(cg *c, ir_stmt *s, const ir_snode *place);
/* The function body of a list/struct-for/gc task (jit_task_is_sparse). */
void cg_sparse_task_body(cg *c, ir_stmt *task, LLVMValueRef begin, LLVMValueRef end);
/* Body of a task function: the range loop or the single run (cg_control.c). */
void cg_task_body(cg *c, ir_stmt *task, LLVMValueRef begin, LLVMValueRef end);

#endif
