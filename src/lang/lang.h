/*
** lang.h -- the C half of the Lua front end (src/lang).
**
** The Lua bindings only marshal: the program itself (one lt.init's state:
** SNode trees, tree memory, backend, compiled kernels, ndarrays, launch) is
** the program layer's prog_program (src/program/program.h). The Lua half
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
#include "program/program.h"

#define LANG_PROGRAM "lattice.program"
#define LANG_BUILDER "lattice.builder"
#define LANG_COMPILED "lattice.compiled"
#define LANG_INSTANCE "lattice.instance"
#define LANG_TREE "lattice.tree"

/* program_api.c: the program (src/program) as a Lua userdata holding a
** prog_program reference. */
prog_program *lang_check_program(lua_State *L, int idx);  /* errors when reset */
prog_program *lang_to_program(lua_State *L, int idx);     /* also a reset one */
/* Pushes a new tree's handle, which holds the tree until collected. */
void lang_push_tree_handle(lua_State *L, int prog_idx, prog_program *p, int tree);
/* each adds its functions to the table on top */
void lang_open_program(lua_State *L);   /* program_api.c */
void lang_open_snode(lua_State *L);
void lang_open_field(lua_State *L);
void lang_open_ir(lua_State *L);
void lang_open_kernel(lua_State *L);    /* kernel_api.c */
void lang_open_tree(lua_State *L);      /* tree_api.c */
void lang_open_ndarray(lua_State *L);   /* ndarray_api.c */
void lang_open_cuda(lua_State *L);      /* cuda_api.c */
void lang_open_embed(lua_State *L);     /* embed.c: lt.export, core.host_config */
void lang_open_env(lua_State *L);       /* env_api.c */
void lang_open_profile(lua_State *L);   /* profile_api.c: lt.profiler's records */
void lang_open_aot(lua_State *L);       /* aot_api.c: lt.aot.module's saving */
#ifdef LT_HAVE_SDL2
void lang_open_gui(lua_State *L);       /* gui_sdl.c: core.gui, windows through SDL2 */
#endif

/* embed.c: the program lt.init takes in a state made by the C API
** (lattice_lua.h), with lt.init's fma and fast_math: *hosted false when the
** state belongs to no runtime. */
prog_program *lang_host_program(lua_State *L, bool fma, bool fast_math, char *err, size_t errlen, bool *hosted);

/* ndarray_api.c: an ndarray as the userdata lt.ndarray wraps (pushing takes
** a reference); NULL when the value at idx is not one. */
void lang_push_ndarray(lua_State *L, prog_ndarray *a);
prog_ndarray *lang_to_ndarray(lua_State *L, int idx);
/* The userdata at idx (if it is one) releases its array now; it is unusable
** from then on (embed.c: a launch's arguments). Allocates nothing. */
void lang_drop_ndarray(lua_State *L, int idx);

/* ir_api.c: the builder userdata that kernel.c compiles */
typedef struct {
  ir_kernel *k;                    /* NULL once handed to a compiled kernel */
  ir_builder b;
  prog_program *prog;
} lang_builder;

/* An instance of an lt.tree type: one root container in the pool. */
typedef struct {
  prog_program *prog;              /* kept alive through the userdata's user value */
  int tree;
  char *root;                      /* NULL once destroyed */
} lang_instance;

/* The root container for an access to SNode s: the instance at stack index
** idx when it holds one (not nil), else the tree's default instance. Raises
** a Lua error when there is none or the instance was destroyed. */
char *lang_root_for(lua_State *L, prog_program *p, const ir_snode *s, int idx);
/* Raises the runtime's recorded failure (pool exhausted, ...) if any. */
void lang_raise_sparse_error(lua_State *L, prog_program *p, const char *where);

/* devmem.c: Lua-scope access (through src/program/memory.c) to the memory kernels see. Fields, pool cells and
** ndarrays hold device addresses; only these functions touch them. be NULL
** means host memory. A failed copy returns false (NULL) with the message
** pushed: "what 'name': cannot read N bytes of device memory (be->error)"
** (name may be NULL; what NULL: no prefix); the caller returns nil + message
** or raises it with lang_raise. */
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
