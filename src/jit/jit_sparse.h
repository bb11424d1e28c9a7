/*
** jit_sparse.h -- the host side of the sparse runtime for a program: the
** memory pool and runtime state, registration of materialised SNode trees,
** tree instances (root containers), host (Lua-scope) access to cells, list
** bookkeeping for reuse, counters, and runtime failures as messages.
**
** One jit_sparse per program (lt.init). Every tree of the program, dense or
** sparse, is registered here once it is materialised; each *instance* of a
** tree (the implicit lt.root trees have exactly one, lt.tree types may have
** many) is a root container of tree->bytes bytes taken from the pool. A
** kernel is compiled against a tree (its SNode ids); which instance it runs
** on is only the root pointer in rt_context.roots[tree] at launch.
**
** The pool is the backend's device memory (jit.h): the functions below reach
** it only through the jit_backend given to jit_sparse_create (mem_read and
** mem_write for single fields, serve for everything that walks trees or
** changes the runtime: src/runtime/service.h). Addresses they return (tree
** instances, elements, appended cells) are DEVICE addresses: dereference
** them only when be->host_memory, else copy with be->mem_read / mem_write.
**
** When the backend itself fails (e.g. the CUDA context is lost) nothing
** crashes: the function at hand gives its "nothing" answer (NULL, 0, a stale
** list, unchanged counters) and jit_sparse_take_error then returns true with
** "the <backend> backend failed: <be->error>" (and clears it, like a runtime
** failure). jit_sparse_create reports such a failure in err directly.
*/
#ifndef LATTICE_JIT_SPARSE_H
#define LATTICE_JIT_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/snode.h"
#include "../runtime/runtime.h"

#define JIT_SPARSE_DEFAULT_POOL (4ull << 30)   /* address space reserved by default */
#define JIT_SPARSE_AMBIENT_BYTES (1 << 20)     /* largest cell of a sparse SNode */

typedef struct jit_sparse jit_sparse;

typedef struct jit_backend jit_backend;

/* Takes a pool of pool_bytes (0: be->default_pool) from be->mem_alloc and
** places the runtime state in it (be->serve); NULL with a message in err on
** failure. be must outlive the jit_sparse: destroy this first. */
jit_sparse *jit_sparse_create(jit_backend *be, uint64_t pool_bytes, char *err, size_t errlen);
/* The same with the pool in the host's memory (pool_bytes at memory, which
** is zeroed here and never freed; only for a backend in host memory). */
jit_sparse *jit_sparse_create_in(jit_backend *be, uint64_t pool_bytes, void *memory, char *err, size_t errlen);
void jit_sparse_destroy(jit_sparse *s);
/* The runtime state's device address (rt_context.runtime). */
rt_runtime *jit_sparse_runtime(jit_sparse *s);

/* The memory the pool's pages may take on the host (the CPU backend: RAM +
** swap), and how it was found, for messages (e.g. "RAM + swap"); 0: no check.
** jit_sparse_new_instance then refuses a root container that would take the
** pool's used bytes past it, before anything touches that memory. */
void jit_sparse_set_commit_limit(jit_sparse *s, uint64_t bytes, const char *found);
/* "1.50 GiB" */
void jit_sparse_format_bytes(uint64_t bytes, char *buf, size_t len);

/* Registers every level SNode of materialised tree `tree` of p (the root as a
** one-cell dense level). false with a message naming the SNode on failure
** (e.g. a sparse cell larger than JIT_SPARSE_AMBIENT_BYTES). */
bool jit_sparse_add_tree(jit_sparse *s, const ir_program *p, int tree, char *err, size_t errlen);

/* Forgets every SNode of `tree` (in p, still whole) and takes the root
** containers of its freed instances back for instances of any tree; the
** caller frees its instances first (jit_sparse_free_instance) and the tree
** in p after. The SNodes' ids may then be registered again (their cells stay
** in the runtime's allocators for SNodes of the same cell size). */
void jit_sparse_drop_tree(jit_sparse *s, const ir_program *p, int tree);

/* A zeroed root container (device address) for a new instance of `tree` (reusing one freed by
** jit_sparse_free_instance, or one a dropped tree left, when possible); NULL with a message (pool
** exhausted: names the tree, the bytes, the pool size and lt.init's
** device_memory setting). */
char *jit_sparse_new_instance(jit_sparse *s, const ir_program *p, int tree, char *err, size_t errlen);
/* Deactivates every cell of the instance, collects garbage (its cells go back
** to the allocators of the tree's SNodes) and keeps the root container for
** the next jit_sparse_new_instance of the same tree. */
void jit_sparse_free_instance(jit_sparse *s, const ir_program *p, int tree, char *root);
/* The same for a root container the runtime did not allocate (the host's
** memory, lt_tree_create_in): its cells go back, the container stays the
** caller's. */
void jit_sparse_release_instance(jit_sparse *s, const ir_program *p, int tree, char *root);

/* Host access to the element of `place` at virtual indices idx in the
** instance `root`: the device address of its value. activate: activates the sparse cells on the way and never
** returns NULL unless the pool is exhausted (jit_sparse_take_error then has
** the message); otherwise returns NULL when a cell on the way is inactive
** (the value reads as zero). Indices must be in range (the caller checks). */
char *jit_sparse_element(jit_sparse *s, const ir_snode *place, char *root, const int64_t *idx,
                         bool activate);

/* Host versions of the kernel operations on a level SNode `level` at the
** indices of one of its cells (for snode_deactivate/append/length of a
** dynamic: the indices of its parent's cell, as in the IR). */
typedef enum { JIT_SN_ACTIVATE, JIT_SN_DEACTIVATE, JIT_SN_IS_ACTIVE, JIT_SN_LENGTH } jit_sn_op;
int64_t jit_sparse_snode_op(jit_sparse *s, const ir_snode *level, char *root, const int64_t *idx,
                            jit_sn_op op);
/* Appends one element to dynamic `level`; returns the element's cell (the
** place's value is at the place's offset in it; its index in *index_out), or
** NULL when the list is full (*index_out = -1) or the pool is exhausted
** (*index_out >= 0; the element then reads as zero). */
char *jit_sparse_append(jit_sparse *s, const ir_snode *level, char *root, const int64_t *idx,
                        int32_t *index_out);
/* deactivate_all of `level` (and the sparse levels under it) in one instance,
** followed by GC. */
void jit_sparse_deactivate_all(jit_sparse *s, const ir_snode *level, char *root);
/* Garbage-collects every pointer/dynamic SNode with recycled cells (host, one thread). */
void jit_sparse_gc_all(jit_sparse *s);

/* Counters for lt.print_stats. */
typedef struct {
  uint64_t pool_bytes, pool_used;  /* pool_used is also the high-water mark */
  int64_t lists_built, lists_reused, gc_runs;
} jit_sparse_stats;
void jit_sparse_get_stats(jit_sparse *s, jit_sparse_stats *out);
int64_t jit_sparse_active_cells(jit_sparse *s, int snode);
/* The pool cells of a pointer or dynamic SNode (a dynamic's cells are its
** chunks), read from its allocator's lists, so no append or activation pays
** for them: held = taken from the pool now (not on the free list nor released
** since the last GC), reserved = taken from the pool ever (the free ones are
** kept for reuse), cell_bytes = one cell's size. False (and zeros) for other
** SNodes. */
typedef struct {
  int64_t held, reserved, cell_bytes;
} jit_pool_cells;
bool jit_sparse_pool_cells(jit_sparse *s, int snode, jit_pool_cells *out);

/* Takes (and clears) the runtime's recorded failure as a message naming the
** SNode (label from p), the bytes requested, the pool size and the setting
** that changes it; false when none is recorded. After a failure the program
** stays usable: data written before it is intact, the failed write is lost.
** A failure of the backend itself comes first, as "the <name> backend
** failed: <be->error>" (see the top of this file). */
bool jit_sparse_take_error(jit_sparse *s, const ir_program *p, char *msg, size_t len);

/* List reuse: whether the list of `snode`'s containers must be rebuilt before
** a struct-for over instance `root` (some activation or deactivation at or
** above snode since it was built, or it was built for another instance).
** The launcher calls jit_sparse_list_built after building it. Every false
** answer counts one reused list (jit_sparse_stats.lists_reused). p may be
** NULL: the parents are known from jit_sparse_add_tree. */
bool jit_sparse_list_stale(jit_sparse *s, const ir_program *p, int snode, char *root);
void jit_sparse_list_built(jit_sparse *s, const ir_program *p, int snode, char *root);
/* Makes the root's list (its one container) hold instance `root`, unless
** it already does; launchers call it before a listgen from the root. */
void jit_sparse_root_list(jit_sparse *s, int root_snode, char *root);

#endif
