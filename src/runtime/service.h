/*
** service.h -- host requests: the operations the host needs on the sparse
** runtime (set-up, registration, tree instances, Lua-scope element access,
** deactivate_all, GC), run where the pool is (service.c).
**
** On the CPU the pool is host memory and the backend calls rt_serve directly;
** on CUDA the pool is GPU memory the host cannot dereference, so the backend
** copies the request to the device, runs rt_serve(rt, req) on one GPU thread
** and copies the request back (jit.h, jit_backend.serve). Everything the op
** returns is therefore inside the request, and the struct holds only
** fixed-width integers and pointers (8 bytes on x86-64 and nvptx64) so that
** it is laid out the same for both; sizeof(rt_request) is what is copied.
**
** The host does the tree arithmetic (which cell of which level, at which
** offset) and puts the path into the request; the device only walks it.
*/
#ifndef LATTICE_RT_SERVICE_H
#define LATTICE_RT_SERVICE_H

#include <stdint.h>

#include "runtime.h"

#define RT_REQ_MAX_DEPTH 32    /* levels on a path (snode.c's MAX_DEPTH) */

/* The ops. "walk": from `root` down path[0..depth), activating each cell on
** the way when `activate` is set, else looking it up; a cell that is inactive
** ends the walk (addr 0, value 0), one that could not be activated sets
** `failed` (the runtime recorded why).
**   op              in                                  out
**   INIT            pool, bytes (pool size), nsnodes,    addr = the rt_runtime (rt may be NULL)
**                   ambient_bytes, reserve
**   ADD_SNODE       meta                                 value = rt_runtime_add_snode's result
**   BUMP_DATA       bytes, align, snode (blamed)         addr = fresh zero bytes (rt_runtime_bump_data)
**   ELEMENT         walk to a place                      addr = the place's value
**   ACTIVATE        walk to snode's container, cell      value = 1 activated, 0 inactive on the way
**   DEACTIVATE      walk, cell (dynamic: whole list)     -
**   IS_ACTIVE       walk, cell                           value = rt_node_is_active
**   LENGTH          walk to a dynamic's list             value = its length (-1: snode not dynamic)
**   APPEND          walk to a dynamic's list             value = the new element's index (-1: list
**                                                        full), addr = its cell
**   LIST_ROOT       snode (a root), root                 the root's list holds root
**   DEACTIVATE_ALL  snode, root, path (levels and        builds the lists root..snode, deactivates
**                   child offsets; cells unused)         every cell of snode's containers, GC
**   GC              snode (pointer or dynamic)           rt_gc(rt, snode)
**   DROP_SNODE      snode                                rt_runtime_drop_snode (its tree was freed)
** Every op also returns `error`, the runtime's recorded failure afterwards. */
#define RT_REQUEST_OPS(_) \
  _(INIT) _(ADD_SNODE) _(BUMP_DATA) _(ELEMENT) _(ACTIVATE) _(DEACTIVATE) _(IS_ACTIVE) \
  _(LENGTH) _(APPEND) _(LIST_ROOT) _(DEACTIVATE_ALL) _(GC) _(DROP_SNODE)

typedef enum {
#define O(name) RT_REQ_##name,
  RT_REQUEST_OPS(O)
#undef O
  RT_REQ_NUM_OPS
} rt_request_op;

/* One level of a path: the walk goes through cell `cell` of this level's
** container and continues at `offset` bytes into that cell (the next level's
** container, or the place's value). */
typedef struct rt_req_level {
  int32_t snode;
  int32_t cell;
  int64_t offset;
} rt_req_level;

typedef struct rt_request {
  /* ---- in */
  int32_t op;                    /* rt_request_op */
  int32_t snode;                 /* the SNode the op is about */
  int32_t cell;                  /* ACTIVATE, DEACTIVATE, IS_ACTIVE: cell of snode's container */
  int32_t depth;                 /* levels in path, root first */
  int32_t activate;              /* walks: activate the cells on the way */
  int32_t nsnodes;               /* INIT */
  char *pool;                    /* INIT */
  char *root;                    /* the tree instance (its root container) */
  uint64_t bytes;                /* INIT: pool size; BUMP_DATA: bytes wanted */
  uint64_t align;                /* BUMP_DATA (a power of two) */
  int64_t ambient_bytes;         /* INIT */
  uint64_t reserve;              /* INIT: rt_runtime.reserve */
  rt_meta meta;                  /* ADD_SNODE */
  rt_req_level path[RT_REQ_MAX_DEPTH];
  /* ---- out */
  char *addr;
  int64_t value;
  int32_t failed;                /* the op could not be done (see the table) */
  int32_t error;                 /* rt->error after the op (rt_runtime_error) */
} rt_request;

_Static_assert(sizeof(char *) == 8, "rt_request assumes 8-byte pointers on host and device");
_Static_assert(sizeof(rt_request) == 752, "rt_request changed: host and device must agree");

/* Runs one request (device side; the host calls it through jit_backend.serve). */
void rt_serve(rt_runtime *rt, rt_request *req);

#endif
