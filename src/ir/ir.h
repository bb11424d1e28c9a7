/*
** ir.h -- Lattice's hierarchical SSA IR: types, statements, blocks, kernels,
** the builder, and the entry points of the printer, parser and verifier.
**
** A kernel is a tree: a block is a doubly linked list of statements; only
** control-flow statements (ops with flag B in ops.def) own child blocks.
** Every value is a statement; operands point at statements that must be
** visible from the user (defined earlier in the same block or in an
** enclosing block) -- the verifier checks it.
**
** Memory: everything of a kernel lives in its arena and is freed by
** ir_kernel_free in one call, so an error that unwinds leaks nothing.
*/
#ifndef LATTICE_IR_H
#define LATTICE_IR_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IR_MAX_INDICES 8          /* indices of a field access */
#define IR_MAX_OPS (IR_MAX_INDICES + 2)
/* Blocks nested in blocks, a task's body not counted (offload adds it): the
** parser refuses deeper text (docs/ir.md), so the printer, the verifier and
** the passes, which recurse once per level, stay within the stack on any text
** it accepts. */
#define IR_MAX_DEPTH 1000
/* Values of one print record (a u64 print and the print_mores filling it). */
#define IR_MAX_PRINT_VALUES 65536

/* ---- types ------------------------------------------------------------ */

/* name, bits, is_int, is_signed, is_float */
#define IR_TYPES(_)        \
  _(void, 0, 0, 0, 0)      \
  _(i1, 1, 1, 0, 0)        \
  _(i8, 8, 1, 1, 0)        \
  _(i16, 16, 1, 1, 0)      \
  _(i32, 32, 1, 1, 0)      \
  _(i64, 64, 1, 1, 0)      \
  _(u8, 8, 1, 0, 0)        \
  _(u16, 16, 1, 0, 0)      \
  _(u32, 32, 1, 0, 0)      \
  _(u64, 64, 1, 0, 0)      \
  _(f32, 32, 0, 1, 1)      \
  _(f64, 64, 0, 1, 1)

typedef enum {
#define T(name, bits, isint, issigned, isfloat) IR_##name,
  IR_TYPES(T)
#undef T
  IR_NUM_TYPES
} ir_type;

const char *ir_type_name(ir_type t);      /* "i32" */
int ir_type_from_name(const char *name);  /* -1 if unknown */
int ir_type_bits(ir_type t);
bool ir_type_is_int(ir_type t);           /* i1 included */
bool ir_type_is_signed(ir_type t);
bool ir_type_is_float(ir_type t);

/* ---- statements --------------------------------------------------------- */

typedef enum {
#define _(name, nops, flags, aux, rule, emit, cpu, ptx, doc) IR_##name,
#include "ops.def"
#undef _
  IR_NUM_OPS
} ir_op;

/* The flags column (letters in ops.def's legend). */
enum {
  IR_PURE = 1, IR_EFFECT = 2, IR_BLOCKS = 4, IR_TASK = 8, IR_JUMP = 16, IR_VALUE = 32,
  IR_RUNTIME = 64, IR_LOAD = 128, IR_STORE = 256
};

/* The aux, rule, emit, cpu and ptx columns (ops.def's legend says what each
** value means); ___ in the table is the _none value. */
typedef enum { IR_AUX_none, IR_AUX_arg, IR_AUX_place, IR_AUX_level, IR_AUX_gtmp, IR_AUX_str } ir_aux;
typedef enum {
  IR_RULE_none, IR_RULE_num, IR_RULE_fp, IR_RULE_bits, IR_RULE_shift, IR_RULE_cmp, IR_RULE_logic
} ir_rule;
typedef enum { IR_EMIT_arith, IR_EMIT_memory, IR_EMIT_control, IR_EMIT_sparse, IR_EMIT_builtins, IR_NUM_EMITS } ir_emit;
typedef enum { IR_MATH_none, IR_MATH_llvm, IR_MATH_lib } ir_math;

const char *ir_op_name(ir_op op);
int ir_op_from_name(const char *name);    /* -1 if unknown */
int ir_op_nops(ir_op op);                 /* -1 = variable */
unsigned ir_op_flags(ir_op op);
ir_aux ir_op_aux(ir_op op);
ir_rule ir_op_rule(ir_op op);
ir_emit ir_op_emit(ir_op op);             /* IR_EMIT_control for an op out of range */
ir_math ir_op_cpu_math(ir_op op);
ir_math ir_op_ptx_math(ir_op op);
/* atomic_add..atomic_xor (ORDER ATOMIC in ops.def) */
static inline bool ir_op_is_atomic(ir_op op) { return op >= IR_atomic_add && op <= IR_atomic_xor; }

typedef struct ir_block ir_block;
typedef struct ir_stmt ir_stmt;
typedef struct ir_kernel ir_kernel;
typedef struct ir_program ir_program;

/* Where a statement came from in the user's source. file is interned. */
typedef struct {
  const char *file;
  int line;
} ir_loc;

/* Extra data of task_range_for: bounds are constants or global temporaries. */
typedef struct {
  int64_t begin, end;              /* used when the *_gtmp is -1 */
  int begin_gtmp, end_gtmp;        /* byte offset of an i32 in the gtmp buffer, or -1 */
  int block_dim;                   /* iterations per chunk a worker takes (0 = backend's choice) */
} ir_task_range;

struct ir_stmt {
  ir_op op;
  ir_type type;                    /* result type; IR_void if none. For global_ptr and
                                      global_tmp: the element type pointed to. For
                                      alloca: the local's type. */
  int id;                          /* printed as $id; renumbered by ir_number */
  int nops;
  ir_stmt *ops[IR_MAX_OPS];
  union {
    int64_t ival;                  /* const of an integer type (i1: 0/1); check_index axis;
                                      print typed u64: values of the record; print_more:
                                      the record's value its first value goes to;
                                      loop_index: which index (0 for range loops, the
                                      virtual index number for struct loops); global_ptr:
                                      1 when writes through it activate sparse cells */
    double fval;                   /* const of a float type */
  } imm;                           /* alloca, and the global_tmp offload makes of one:
                                      1 + string index of the local's name, 0 if none
                                      (ir_name_local; messages only) */
  int aux;                         /* as ops.def's aux column says: arg: argument number;
                                      global_ptr/check_index: place SNode id; global_tmp:
                                      byte offset; snode_*, struct_for and the sparse
                                      tasks: the level's SNode id; print/assert: string */
  ir_stmt *loop;                   /* loop_index: the range_for / task_range_for /
                                      struct_for / task_struct_for it reads */
  ir_block *blocks[2];             /* B ops: if then/else; loops and tasks: body in [0] */
  ir_task_range range;             /* task_range_for; task_struct_for: block_dim only */
  ir_block *parent;
  ir_stmt *prev, *next;
  ir_loc loc;
};

struct ir_block {
  ir_stmt *first, *last;
  ir_stmt *owner;                  /* statement owning this block; NULL for the kernel body */
};

/* ---- kernels -------------------------------------------------------------- */

typedef struct ir_arena ir_arena;

/* Two ndarray arguments (IR argument numbers of their data) that must not
** be one array at a launch, and the line of the parallel loop's write
** (the race check, src/ir/passes/races.c). */
enum { IR_MAX_NOALIAS = 16 };
typedef struct {
  int a, b, line;
} ir_noalias;

struct ir_kernel {
  const char *name;
  ir_program *prog;                /* SNodes referenced by global_ptr (may be NULL) */
  int nargs;
  ir_type arg_types[16];
  const char *arg_names[16];
  ir_type ret_type;                /* IR_void if the kernel returns nothing */
  ir_block *body;
  int gtmp_size;                   /* bytes of global temporaries used (offload) */
  bool offloaded;                  /* the body holds only tasks */
  ir_noalias noalias[IR_MAX_NOALIAS];
  int nnoalias;
  bool debug;                      /* bounds checks are emitted */
  bool fma;                        /* float a * b + c may become one fused multiply-add
                                      (lt.init{fma = true}; codegen only) */
  bool fast_math;                  /* float ops may also be reassociated, divide by a
                                      reciprocal, use approximate math (lt.init{fast_math =
                                      true}, which sets fma too; codegen only:
                                      docs/arithmetic.md) */
  bool grad;                       /* made into its adjoint by the autodiff pass (k:grad) */
  int ad_stack;                    /* grad: the values an adjoint stack holds (0: 1024) */
  bool fwd;                        /* made into its tangent version by the forward pass (k:fwd) */
  unsigned fwd_args;               /* fwd: bit i set when IR argument i has a tangent (an input of
                                      the tangent kernel); the others are constants */
  ir_arena *arena;
  int next_id;
  /* error unwinding: ir_fail longjmps to *on_error when set */
  jmp_buf *on_error;
  char error[1024];
  /* strings of print and assert statements (their aux), arena-owned */
  const char **strings;
  int nstrings, strings_cap;
};

ir_kernel *ir_kernel_new(const char *name, ir_program *prog);
void ir_kernel_free(ir_kernel *k);
void *ir_alloc(ir_kernel *k, size_t size);          /* zeroed, arena-owned */
const char *ir_strdup(ir_kernel *k, const char *s);  /* arena-owned copy */
ir_kernel *ir_kernel_clone(const ir_kernel *k);      /* deep copy into a new arena */
/* Adds a copy of s to k's string table; returns its index (print/assert aux). */
int ir_kernel_add_string(ir_kernel *k, const char *s);
const char *ir_kernel_string(const ir_kernel *k, int i);   /* NULL when out of range */
/* The Lua name of the local a (an alloca) for error messages; it stays with
** the global_tmp that offload makes of a, and with that one's copies. */
void ir_name_local(ir_kernel *k, ir_stmt *a, const char *name);
const char *ir_local_name(const ir_kernel *k, const ir_stmt *s);   /* NULL when unnamed */

/* Record a user error at loc in k->error ("file:line: message") and longjmp to
** k->on_error (which must be set). */
void ir_fail(ir_kernel *k, ir_loc loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 3, 4)))
#endif
    ;

/* ---- builder ------------------------------------------------------------------
** The builder appends at an insertion point. ir_new makes a detached
** statement; ir_insert_* link it into a block. Structured helpers create
** child blocks. The builder infers result types (ir_result_type); the
** typecheck pass then inserts explicit casts where operand types differ.
*/
typedef struct {
  ir_kernel *k;
  ir_block *block;                 /* append to the end of this block */
  ir_loc loc;                      /* location given to new statements */
} ir_builder;

void ir_builder_init(ir_builder *b, ir_kernel *k);  /* at the end of k->body */
ir_block *ir_block_new(ir_kernel *k, ir_stmt *owner);

ir_stmt *ir_new(ir_kernel *k, ir_op op, ir_type type, int nops, ir_stmt *const *ops);
void ir_append(ir_block *blk, ir_stmt *s);
void ir_insert_before(ir_stmt *pos, ir_stmt *s);
void ir_insert_after(ir_stmt *pos, ir_stmt *s);
void ir_remove(ir_stmt *s);                          /* unlink; memory stays in the arena */
void ir_replace_uses(ir_block *scope, ir_stmt *from, ir_stmt *to);  /* in scope, recursively */
/* Each operand o of s with o->id in [0, n) and map[o->id] set becomes map[o->id]
** (passes that replace many statements at once keep such a map by id). */
void ir_remap_operands(ir_stmt *s, ir_stmt *const *map, int n);

/* Result type of op on operand types a, b (b ignored for unary ops), by the
** op's typing rule (ops.def's rule column) and the promotion rules of
** docs/arithmetic.md: i1 for comparisons, float for div/pow and the math,
** otherwise the promoted common type (a for ops without a rule). */
ir_type ir_result_type(ir_op op, ir_type a, ir_type b);
ir_type ir_promote(ir_type a, ir_type b);

ir_stmt *ir_b_op(ir_builder *b, ir_op op, ir_type type, int nops, ir_stmt *const *ops);
ir_stmt *ir_b_const_int(ir_builder *b, ir_type t, int64_t v);
ir_stmt *ir_b_const_float(ir_builder *b, ir_type t, double v);
ir_stmt *ir_b_arg(ir_builder *b, int index);
ir_stmt *ir_b_unary(ir_builder *b, ir_op op, ir_stmt *a);          /* type inferred */
ir_stmt *ir_b_binary(ir_builder *b, ir_op op, ir_stmt *a, ir_stmt *c); /* type inferred */
ir_stmt *ir_b_cast(ir_builder *b, ir_type t, ir_stmt *a);
ir_stmt *ir_b_select(ir_builder *b, ir_stmt *c, ir_stmt *x, ir_stmt *y);
ir_stmt *ir_b_alloca(ir_builder *b, ir_type t);
ir_stmt *ir_b_local_load(ir_builder *b, ir_stmt *var);
ir_stmt *ir_b_local_store(ir_builder *b, ir_stmt *var, ir_stmt *v);
ir_stmt *ir_b_global_ptr(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx);
ir_stmt *ir_b_global_load(ir_builder *b, ir_stmt *ptr);
ir_stmt *ir_b_global_store(ir_builder *b, ir_stmt *ptr, ir_stmt *v);
ir_stmt *ir_b_atomic(ir_builder *b, ir_op op, ir_stmt *ptr, ir_stmt *v);
/* Structured statements: the builder's block is left unchanged; callers
** move b->block into the returned statement's blocks to fill them. */
ir_stmt *ir_b_if(ir_builder *b, ir_stmt *cond, bool with_else);
ir_stmt *ir_b_while(ir_builder *b);
ir_stmt *ir_b_range_for(ir_builder *b, ir_stmt *begin, ir_stmt *end);
ir_stmt *ir_b_loop_index(ir_builder *b, ir_stmt *loop);
ir_stmt *ir_b_jump(ir_builder *b, ir_op op, ir_stmt *value);     /* break/continue/return */

/* Sparse SNodes (ops.def). snode_id names a level; idx are its virtual
** indices (for a dynamic level's deactivate/append/length: its parent's). */
ir_stmt *ir_b_snode_activate(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx);
ir_stmt *ir_b_snode_deactivate(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx);
ir_stmt *ir_b_snode_is_active(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx);  /* i1 */
/* reserve an element of dynamic snode_id's list at its parent's indices (stores through global_ptr fill it) */
ir_stmt *ir_b_snode_reserve(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx);
ir_stmt *ir_b_snode_append(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx,
                           ir_stmt *value);                                               /* i32 */
ir_stmt *ir_b_snode_length(ir_builder *b, int snode_id, int nidx, ir_stmt *const *idx);    /* i32 */
ir_stmt *ir_b_snode_deactivate_all(ir_builder *b, int snode_id);
/* A struct-for over the active cells of snode_id (a place stands for its
** parent level); fill blocks[0] like ir_b_range_for's. */
ir_stmt *ir_b_struct_for(ir_builder *b, int snode_id);
/* Virtual index k (0-based) of the current cell of a struct_for: an i32. */
ir_stmt *ir_b_struct_index(ir_builder *b, ir_stmt *loop, int k);
/* Sets global_ptr p's activate flag when its field lies under a sparse level
** (the builders of global_store and the atomics call it; so does typecheck). */
void ir_mark_write(ir_kernel *k, ir_stmt *p);

/* ---- walking -------------------------------------------------------------------- */

/* Calls fn on every statement of blk and of its nested blocks, pre-order. */
void ir_walk(ir_block *blk, void (*fn)(ir_stmt *s, void *ud), void *ud);
/* Gives every statement a fresh id in print order (0, 1, 2, ...). */
void ir_number(ir_kernel *k);

/* ---- printer, parser, verifier -------------------------------------------------- */

/* Text form (docs/ir.md). Returns a malloc'd string the caller frees. */
char *ir_print(ir_kernel *k);
/* The same with options: IR_PRINT_LOC appends each statement's source
** location ("  @file:line"), which the parser accepts and keeps;
** IR_PRINT_FIELDS first declares the SNode trees the kernel uses (`field x
** <f32> dense [i:4]`, or `tree S0root {...}`), so the text parses on its own
** into a fresh program, every SNode with its id; with IR_PRINT_ONLY_FIELDS
** too, only those declarations ("" when the kernel names no SNode). */
enum { IR_PRINT_LOC = 1, IR_PRINT_FIELDS = 2, IR_PRINT_ONLY_FIELDS = 4 };
char *ir_print_ex(ir_kernel *k, unsigned flags);
/* Parses one kernel; on error returns NULL and writes "line N: message" to err.
** prog supplies the fields that global_ptr names (may be NULL when none). */
ir_kernel *ir_parse(const char *text, ir_program *prog, char *err, size_t errlen);
/* Checks structure, operand visibility, operand counts and types. Returns
** true when valid; otherwise writes a message naming the statement to err. */
bool ir_verify(ir_kernel *k, char *err, size_t errlen);
/* The same with options: IR_VERIFY_TYPES also checks what holds only after
** the typecheck pass (operands of one type, stored values of the pointee's
** type, result types as ir_result_type says). */
enum { IR_VERIFY_TYPES = 1 };
bool ir_verify_ex(ir_kernel *k, unsigned flags, char *err, size_t errlen);

#endif
