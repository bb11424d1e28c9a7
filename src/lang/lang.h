/*
** lang.h -- the C half of the Lua front end (src/lang).
**
** lang_program owns one lt.init's state: the IR program (SNode trees), the
** tree memory, the backend and every compiled kernel. The Lua half
** (stdlib/lattice/ *.lua) reaches these through the table "lattice.core",
** filled by the lang_open_* functions below; each file adds its functions.
*/
#ifndef LATTICE_LANG_H
#define LATTICE_LANG_H

#include <lua.h>
#include <lauxlib.h>

#include "ir/ir.h"
#include "ir/snode.h"
#include "jit/jit.h"
#include "jit/jit_sparse.h"

#define LANG_PROGRAM "lattice.program"
#define LANG_BUILDER "lattice.builder"
#define LANG_COMPILED "lattice.compiled"
#define LANG_INSTANCE "lattice.instance"
#define LANG_TREE "lattice.tree"

typedef struct lang_compiled lang_compiled;

typedef struct {
  ir_program *ir;                  /* NULL once freed (re-init) */
  jit_backend *be;
  jit_sparse *sparse;              /* the memory pool and sparse runtime */
  char *mem[IR_MAX_TREES];         /* root container of each lt.root tree's one
                                      instance (in the pool); NULL for lt.tree
                                      types, whose instances are lang_instance */
  bool debug;
  bool fma;                        /* lt.init{fma = true} */
  lang_compiled *compiled;         /* every kernel compiled for this program */
  struct rt_builtins *builtins;    /* random seed, launch counter, print buffer
                                      (builtins_host.c) */
  uint64_t host_draws;             /* lt.random calls in Lua scope */
  /* What keeps each tree: its handle (the userdata core.root_new returns, which
  ** the Lua objects of the tree hold), each live instance, each compiled
  ** kernel that uses it. A tree nothing holds is freed by lang_reclaim_trees
  ** (its slot, SNode ids and memory go to later trees). */
  int32_t tree_holds[IR_MAX_TREES];
} lang_program;

/* A compiled kernel for one argument signature. */
struct lang_compiled {
  lang_program *prog;              /* NULL once the program is freed */
  ir_kernel *k;                    /* after the passes (arg/ret types, gtmp size) */
  jit_kernel *jk;                  /* NULL while `pending` */
  jit_pending *pending;            /* a compilation under way (lt.compile), or NULL */
  char *ir_text;                   /* the IR after every pass, headed by pass names;
                                      made on the first k:ir() unless print_ir */
  ir_kernel *traced;               /* the kernel as traced, kept to make ir_text */
  char *file;                      /* where the kernel was defined, for messages */
  uint64_t trees[IR_MAX_TREES / 64];  /* the trees it holds (lang_hold_trees) */
  lang_compiled *prev, *next;
};

/* program.c */
lang_program *lang_check_program(lua_State *L, int idx);  /* errors when reset */
void lang_release_compiled(lang_compiled *c);
/* c holds every tree its kernel (traced and compiled) names, until released. */
void lang_hold_trees(lang_compiled *c);
/* Frees the trees nothing holds any more (lang_program.tree_holds); called
** where no SNode is in use, before a new tree starts. */
void lang_reclaim_trees(lang_program *p);
/* Pushes a new tree's handle, which holds the tree until collected. */
void lang_push_tree_handle(lua_State *L, int prog_idx, lang_program *p, int tree);
/* Finishes c's compilation if it is under way; false with a message in err
** when it failed (kernel.c). */
bool lang_compiled_ready(lang_compiled *c, char *err, size_t errlen);
void lang_open_program(lua_State *L);   /* each adds its functions to the table on top */
void lang_open_snode(lua_State *L);
void lang_open_field(lua_State *L);
void lang_open_ir(lua_State *L);
void lang_open_kernel(lua_State *L);
void lang_open_tree(lua_State *L);      /* tree_api.c */
void lang_open_ndarray(lua_State *L);   /* ndarray.c */
void lang_open_builtins(lua_State *L);  /* builtins_host.c */
void lang_open_cuda(lua_State *L);      /* cuda_api.c */

/* builtins_host.c: the program's rt_builtins around a launch. begin counts
** the launch and empties the print buffer (NULL before builtins_setup);
** flush writes the kernel's print records through io.write; error pushes
** the message of an ndarray bounds or lt.assert failure (false: not one). */
struct rt_builtins *lang_builtins_begin_launch(lang_program *p);
void lang_builtins_flush(lua_State *L, const lang_compiled *c);
bool lang_builtins_error(lua_State *L, const lang_compiled *c, int32_t code, const int64_t *info,
                         const uint64_t *args);
void lang_builtins_free(lang_program *p);

/* ir_api.c: the builder userdata that kernel.c compiles */
typedef struct {
  ir_kernel *k;                    /* NULL once handed to a compiled kernel */
  ir_builder b;
  lang_program *prog;
} lang_builder;

/* An instance of an lt.tree type: one root container in the pool. */
typedef struct {
  lang_program *prog;              /* kept alive through the userdata's user value */
  int tree;
  char *root;                      /* NULL once destroyed */
} lang_instance;

/* Materialised tree memory of a place SNode's tree, or NULL. */
char *lang_tree_memory(lang_program *p, const ir_snode *s);
/* The root container for an access to SNode s: the instance at stack index
** idx when it holds one (not nil), else the tree's default instance. Raises
** a Lua error when there is none or the instance was destroyed. */
char *lang_root_for(lua_State *L, lang_program *p, const ir_snode *s, int idx);
/* Raises the runtime's recorded failure (pool exhausted, ...) if any. */
void lang_raise_sparse_error(lua_State *L, lang_program *p, const char *where);

/* devmem.c: Lua-scope access to the memory kernels see. Fields, pool cells and
** ndarrays hold device addresses; only these functions touch them. be NULL
** means host memory. A failed copy returns false (NULL) with the message
** pushed: "what 'name': cannot read N bytes of device memory (be->error)"
** (name may be NULL; what NULL: no prefix); the caller returns nil + message
** or raises it with lang_raise. */
bool lang_host_memory(const jit_backend *be);
bool lang_mem_read(lua_State *L, jit_backend *be, void *dst, const char *src, size_t n, const char *what,
                   const char *name);
bool lang_mem_write(lua_State *L, jit_backend *be, char *dst, const void *src, size_t n, const char *what,
                    const char *name);
/* Bulk work on the n bytes at dev: returns a host view of them, dev itself
** when the memory is the host's (no copy), else a buffer, read from dev when
** load. Always pushes one value (the buffer's owner, or nil), then the message
** on failure; pass the owner's stack index to lang_mem_unstage, which writes
** the view back when store and frees it. */
char *lang_mem_stage(lua_State *L, jit_backend *be, char *dev, size_t n, bool load, const char *what,
                     const char *name);
bool lang_mem_unstage(lua_State *L, jit_backend *be, int box_idx, char *dev, size_t n, bool store,
                      const char *what, const char *name);
/* Raise the message on top of the stack, or fmt (lua_pushfstring's), at the
** user's line as state.raise does (the innermost frame outside lattice/). */
int lang_raise(lua_State *L);
int lang_error(lua_State *L, const char *fmt, ...);
/* Notes the number on top as what an element read gave at the user's line
** (core.read_here tells whether a number being indexed is that one). */
void lang_note_read(lua_State *L);
void lang_open_devmem(lua_State *L);    /* devmem.c: core.read_here */
/* One element of type t: push its bytes as a Lua number; encode the number at
** stack index idx (integers wrap to the width, floats round; raises for a
** non-integer into an integer type). bytes holds up to 8. */
void lang_push_number(lua_State *L, ir_type t, const char *bytes);
void lang_encode_number(lua_State *L, ir_type t, int idx, char *bytes);

/* datatable.c: the elements of nested tables of a given shape, row-major
** (x:from_table, a:from_table); the rules are the file's opening comment.
** visit is called with the element on top of the stack (it leaves the stack
** as it found it) and returns false with a message pushed; idx, base and flat
** say which element (flat: row-major number). Failures push only the
** message, "t[2][3] is missing (the OWNER has shape (4, 5))". */
typedef struct lang_walk lang_walk;
struct lang_walk {
  int ndim;
  const int64_t *shape;
  const char *owner;                /* "field", "ndarray": for messages */
  bool (*visit)(lua_State *L, lang_walk *w);
  void *ctx;                        /* the visitor's */
  int64_t idx[IR_MAX_INDICES];      /* the element's indices, 0-based */
  int base[IR_MAX_INDICES];         /* how each level on its path counts: 0 or 1 */
  int64_t flat;
};
bool lang_walk_table(lua_State *L, int t, lang_walk *w);
/* Pushes "PATH what (the OWNER has shape S)" for the first depth levels of
** w's position (depth w->ndim: the element) and returns false. */
bool lang_walk_fail(lua_State *L, const lang_walk *w, int depth, const char *what);
/* The element on top as a value of type t (a number; an integral one for an
** integer type), encoded into bytes unless NULL; false with the message. */
bool lang_walk_number(lua_State *L, const lang_walk *w, ir_type t, char *bytes);
/* Checks the nested table at t over shape and encodes its elements as
** values of type t, row-major, into a buffer it pushes (a userdata) and
** returns; NULL with the message pushed above it on a bad entry. */
char *lang_table_encode(lua_State *L, int t, int ndim, const int64_t *shape, ir_type type, const char *owner);
/* Pushes a short description of the value at idx for messages ("3.5", the
** string "ab", a table) without calling any of its metamethods. */
void lang_push_value_text(lua_State *L, int idx);
/* core.table_elements(t, shape, ...): a composite field's x:from_table
** (datatable.c says what it returns; field.c registers it) */
int lang_table_elements(lua_State *L);

#endif
