/*
** capi_impl.h -- the C API's runtimes (capi.c) as the Lua embedding
** (src/lang/embed.c) sees them: entering a runtime, its program, exports, and
** the hooks through which the embedding runs Lua. No Lua types here: the
** embedding keeps its lua_State behind `embed`.
*/
#ifndef LATTICE_CAPI_IMPL_H
#define LATTICE_CAPI_IMPL_H

#include "lattice.h"
#include "program.h"

typedef struct capi_runtime capi_runtime;

/* The objects of a runtime that handles name (capi.c's table). */
typedef enum { OBJ_FREE, OBJ_NDARRAY, OBJ_FIELD, OBJ_KERNEL, OBJ_MODULE, OBJ_TREE } obj_kind;

struct prog_module;
/* A tree instance made through the C API: root is NULL once destroyed. The
** block stays (on the runtime's list) while field handles may point at
** root, until the runtime goes. */
typedef struct capi_instance {
  char *root;
  int tree;                        /* its tree slot */
  uint64_t module;                 /* the module handle's id */
  bool host;                       /* root is the host's memory (lt_tree_create_in) */
  int nfields;                     /* field handles made of it (lt_tree_field) */
  struct capi_instance *next;
} capi_instance;

typedef struct {
  uint64_t serial;                 /* 0: free */
  obj_kind kind;
  prog_ndarray *nd;                /* OBJ_NDARRAY */
  char *name;                      /* exports */
  char *label;                     /* OBJ_FIELD of a tree instance: its name, for messages */
  int ref;                         /* exports: the embedding's reference */
  int snode;                       /* OBJ_FIELD */
  char *const *root_slot;
  struct prog_module *mod;         /* OBJ_MODULE; OBJ_KERNEL of a module (else NULL) */
  uint64_t module;                 /* OBJ_KERNEL/OBJ_TREE of a module: the module handle's id */
  int index;                       /* OBJ_KERNEL of a module: its kernel number */
  capi_instance *inst;             /* OBJ_TREE */
} capi_obj;

/* A new object's slot (serial set) and its handle's id, or NULL with the
** message set; the object and lookup of a handle of that kind (NULL with
** the message); the table and count (objects move when one is added). */
capi_obj *capi_new_obj(capi_runtime *rt, obj_kind kind, const char *fn, uint64_t *id);
capi_obj *capi_get_obj(capi_runtime *rt, uint64_t id, obj_kind kind, const char *fn);
capi_obj *capi_objects(capi_runtime *rt, uint32_t *n);
/* Frees what object o holds and empties its slot. */
void capi_drop_obj(capi_runtime *rt, capi_obj *o);
/* An instance block on the runtime's list (freed with the runtime); NULL
** when out of memory. */
capi_instance *capi_instance_new(capi_runtime *rt);

/* capi_module.c: what dropping a module or tree object frees (its
** instances and kernel handles go with a module), and the launch of a
** module's kernel. */
void capi_module_drop(capi_runtime *rt, capi_obj *o);
lt_status capi_module_launch(capi_runtime *rt, capi_obj *k, const lt_value *args, int nargs, lt_value *result);

/* What the Lua embedding supplies once it has made the runtime's state. */
typedef struct {
  /* Calls the Lua value held by ref (an exported kernel) with args; on
  ** failure returns the status with the message set (capi_fail). */
  lt_status (*call)(capi_runtime *rt, int ref, const lt_value *args, int nargs, lt_value *result);
  void (*unref)(capi_runtime *rt, int ref);   /* drops a reference the export held */
  void (*close)(capi_runtime *rt);            /* closes the state (lt_runtime_destroy) */
} capi_embed_ops;

/* Checks h and marks the runtime in use by this thread (see lattice.h,
** threads); NULL with the status in *st and the message set when h is
** invalid or the runtime is busy. Every capi_enter is paired with a
** capi_leave. fn names the API function for messages. */
capi_runtime *capi_enter(lt_runtime h, const char *fn, lt_status *st);
void capi_leave(capi_runtime *rt);
/* Sets the runtime's message ("fn: ...") and returns st. */
lt_status capi_fail(capi_runtime *rt, lt_status st, const char *fn, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

const lt_runtime_config *capi_config(const capi_runtime *rt);
/* The runtime's message (what capi_fail set last). */
const char *capi_message(const capi_runtime *rt);
/* The runtime's current program. */
prog_program *capi_program(capi_runtime *rt);
/* Whether the runtime's Lua state has taken its program yet; marks it taken. */
bool capi_adopt_program(capi_runtime *rt);
/* Makes p (retained) the runtime's program, after a script's lt.init reset
** the old one: the old exports' handles become invalid. */
void capi_set_program(capi_runtime *rt, prog_program *p);
/* The program config the runtime's config describes. */
prog_config capi_prog_config(const capi_runtime *rt);

void *capi_embed(const capi_runtime *rt);
void capi_set_embed(capi_runtime *rt, void *state, const capi_embed_ops *ops);

/* Exports under name, replacing an export of that name (its handles become
** invalid). ref: the embedding's reference to the Lua value (released with
** ops->unref when the export goes). A field: place SNode `snode` of p, in
** the instance whose root container *root_slot holds (NULL there: destroyed). */
lt_status capi_export_kernel(capi_runtime *rt, const char *name, int ref);
lt_status capi_export_field(capi_runtime *rt, const char *name, int snode, char *const *root_slot, int ref);

/* The ndarray of handle a, or NULL with the message set. */
prog_ndarray *capi_ndarray(capi_runtime *rt, lt_ndarray a, const char *fn);

#endif
