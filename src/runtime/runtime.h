/*
** runtime.h -- the sparse runtime: its state, the SNode meta structs and
** every device-side entry point (node operations, allocators, GC, listgen).
**
** Everything here is plain freestanding C: it is compiled to bitcode for
** x86-64 and nvptx64 and inlined into kernels, and natively (gcc) for the unit
** tests. No libc, atomics only through __atomic builtins on 32/64-bit words.
**
** The whole state lives inside one memory pool that the host reserves once
** (src/runtime/host/mempool.h). The pool must be zero when handed over: every
** byte the runtime takes from it is fresh (a bump pointer that never moves
** back), so new cells, chunks and lists start out zero without a memset;
** recycled cells are zero-filled by GC before reuse. docs/runtime.md explains
** the memory model.
*/
#ifndef LATTICE_RT_RUNTIME_H
#define LATTICE_RT_RUNTIME_H

#include <stdint.h>

#define RT_MAX_AXES 8          /* = IR_MAX_INDICES */
#define RT_CHUNK_HEADER 16     /* a dynamic chunk's next-chunk pointer and number (node_dynamic.h) */

/* SNode kinds the runtime knows; place SNodes have no runtime state (their
** containers are plain values inside a parent's cell). The root is a dense
** level with one cell. */
#define RT_NODE_KINDS(_) \
  _(DENSE, dense)        \
  _(BITMASKED, bitmasked) \
  _(POINTER, pointer)    \
  _(DYNAMIC, dynamic)

typedef enum {
#define K(up, low) RT_KIND_##up,
  RT_NODE_KINDS(K)
#undef K
  RT_NUM_KINDS
} rt_node_kind;

/* Failures recorded in the runtime (first one wins); the host turns them
** into a message with rt_runtime_describe_error (host/mempool.h). */
#define RT_RUNTIME_ERRORS(_)                                     \
  _(OK, "no error")                                              \
  _(POOL, "the memory pool is exhausted")                        \
  _(CAPACITY, "an allocator ran out of chunk slots")             \
  _(META, "an SNode was registered with an invalid description")

typedef enum {
#define E(name, text) RT_RTERR_##name,
  RT_RUNTIME_ERRORS(E)
#undef E
} rt_runtime_error;

typedef struct rt_runtime rt_runtime;

#include "allocator.h"

/* ---- the description of one SNode level, shared by all kinds ---------------
** Filled by the host from the SNode tree and copied into the pool by
** rt_runtime_add_snode. Cells of a container are numbered 0..num_cells-1,
** row-major over the listed axes (the last listed axis varies fastest). */
typedef struct rt_meta {
  int32_t snode_id;
  int32_t kind;                    /* rt_node_kind */
  int32_t num_cells;               /* cells per container; dynamic: its capacity */
  int32_t chunk_cells;             /* dynamic: cells per chunk; 0 elsewhere */
  int64_t cell_bytes;              /* bytes of one cell (children's containers) */
  int32_t naxes;                   /* physical axes split by this level, listed order */
  int32_t axis[RT_MAX_AXES];       /* physical axis of each listed axis */
  int32_t extent[RT_MAX_AXES];     /* cells along each listed axis */
  int32_t below[RT_MAX_AXES];      /* product of the extents of axis[k] in the levels
                                      under this one: a cell coordinate c along
                                      listed axis k adds c * below[k] to the index */
  int32_t slot_shift;              /* the runtime's (rt_slot_cell); set by
                                      rt_runtime_add_snode, like rt */
  int64_t containers;              /* containers of this level in one tree instance,
                                      the most its list holds; 0: unknown */
  rt_runtime *rt;                  /* set by rt_runtime_add_snode */
} rt_meta;

/* slot_shift took padding: modules compiled before it index the metas with
** the same size and offsets. */
_Static_assert(sizeof(rt_meta) == 144, "rt_meta's size is part of compiled kernels (ctx->runtime->metas[id])");

/* ---- an element of the list of active containers of one SNode (listgen.c) ---- */
typedef struct rt_elem {
  char *container;                 /* the container's memory */
  int32_t coord[RT_MAX_AXES];      /* physical index of its first cell along each axis */
} rt_elem;

/* ---- the runtime state, at the start of the pool ----------------------------- */
struct rt_runtime {
  char *pool;                      /* base of the pool (== this struct's address) */
  uint64_t pool_size;
  uint64_t pool_used;              /* bump pointer (atomic); never moves back */
  uint64_t reserve;                /* bytes that cells (rt_runtime_bump_data) leave to
                                      lists, so a full pool can still be listed and
                                      freed; 0 after rt_runtime_init, set by the host */
  int32_t nsnodes;                 /* SNode ids are 0..nsnodes-1 */
  int32_t slot_shift;              /* pointer slots count the pool in units of
                                      1 << slot_shift bytes (rt_slot_cell) */
  rt_meta *metas;                  /* [nsnodes]; kind == -1 for ids never added */
  rt_allocator *allocators;        /* [nsnodes]; set up for pointer and dynamic */
  rt_list *lists;                  /* [nsnodes]; active containers (rt_elem) */
  int64_t *active;                 /* [RT_ACTIVE_STRIPES][active_stride]; active cells
                                      (dynamic: elements) of each SNode, summed over
                                      the stripes (rt_count_active) */
  int32_t *changed;                /* [nsnodes]; set when a cell of a bitmasked or pointer
                                      SNode changed state (rt_mark_changed); the host
                                      clears it when it decides which lists to rebuild */
  char *ambient;                   /* zero cell read through for inactive cells */
  char *sink;                      /* scratch a write lands in when allocation failed */
  int64_t ambient_bytes;           /* size of ambient and of sink */
  /* counters (atomic) */
  int64_t lists_built;
  int64_t gc_runs;
  /* first failure (see RT_RUNTIME_ERRORS) */
  int32_t error;
  int32_t error_snode;
  int64_t error_bytes;             /* bytes requested, or cells for CAPACITY */
  int32_t active_stride;           /* rt_active_stride(nsnodes) */
  int32_t pad0;
  /* Buffered appends (rt_append_table): a table of RT_APPEND_TABLE_BYTES per
  ** CPU worker thread, append_threads of them, in the host's memory, set by
  ** the CPU backend before it runs a task; NULL elsewhere (a GPU, one
  ** thread), and then the appends are the plain ones. */
  char *append_tables;
  int32_t append_threads;
  int32_t pad1;
};

/* ---- buffered appends ----------------------------------------------------------
** A CPU task whose only use of a dynamic level is one append whose index it
** never reads gathers its appends per list in a table of its thread
** (cg_append.c generates it) and hands each list RT_APPEND_VALUE_BYTES of
** values at a time to rt_dynamic_append_many: one atomic add per batch
** instead of one per element, and the batch's cells written from one core.
** The table: RT_APPEND_ENTRIES entries of RT_APPEND_ENTRY_BYTES, direct
** mapped by the list's node address,
**   [u64 node, 0: free][i32 values held][i32 unused][RT_APPEND_VALUE_BYTES of values]
** then RT_APPEND_ENTRIES u16 numbers of the entries the running call took
** (it frees them as it returns, so every entry is free between calls). */
#define RT_APPEND_ENTRIES 1024
#define RT_APPEND_VALUE_BYTES 64
#define RT_APPEND_ENTRY_BYTES (16 + RT_APPEND_VALUE_BYTES)
#define RT_APPEND_TABLE_BYTES (RT_APPEND_ENTRIES * (RT_APPEND_ENTRY_BYTES + 2))

/* The table of CPU thread `thread`, or NULL when there is none (then the
** generated code appends one at a time). */
char *rt_append_table(rt_runtime *rt, int32_t thread);

/* The count of active cells of an SNode is kept in RT_ACTIVE_STRIPES
** counters at least a cache line apart, and a change goes to the stripe its
** caller picks: appends, which are many, pick by the thread running them (a
** CPU worker, a GPU thread), so threads appending at once never meet on one
** counter (with one, appending got slower with every thread added); the rare
** activations of bitmasked and pointer cells pick by address. Only the sum
** over the stripes means anything. */
#define RT_ACTIVE_STRIPES 8
static inline int32_t rt_active_stride(int32_t nsnodes) { return (nsnodes + 7) / 8 * 8; }

/* ---- small atomics shared by the runtime files ---------------------------------
** LLVM 19's NVPTX back end cannot select acquire loads, release stores or
** fences, and emits read-modify-write atomics without ordering. So on NVPTX an
** acquire is a relaxed (volatile) access followed by membar.gl and a release
** is membar.gl followed by a relaxed access; on the CPU they are the real
** thing. Use rt_ld_acq / rt_st_rel and rt_lock / rt_unlock, never
** __ATOMIC_ACQUIRE / __ATOMIC_RELEASE on plain loads and stores directly. */
#if defined(__NVPTX__)
#define RT_MO_ACQ __ATOMIC_RELAXED
#define RT_MO_REL __ATOMIC_RELAXED
static inline void rt_fence_after_acquire(void) { __nvvm_membar_gl(); }
static inline void rt_fence_before_release(void) { __nvvm_membar_gl(); }
#else
#define RT_MO_ACQ __ATOMIC_ACQUIRE
#define RT_MO_REL __ATOMIC_RELEASE
static inline void rt_fence_after_acquire(void) {}
static inline void rt_fence_before_release(void) {}
#endif

static inline char *rt_ld_ptr(char *const *p) {
  char *v = __atomic_load_n(p, RT_MO_ACQ);
  rt_fence_after_acquire();
  return v;
}
static inline int32_t rt_ld_i32(const int32_t *p) {
  int32_t v = __atomic_load_n(p, RT_MO_ACQ);
  rt_fence_after_acquire();
  return v;
}
static inline uint32_t rt_ld_u32(const uint32_t *p) {
  uint32_t v = __atomic_load_n(p, RT_MO_ACQ);
  rt_fence_after_acquire();
  return v;
}
static inline uint64_t rt_ld_u64(const uint64_t *p) {
  uint64_t v = __atomic_load_n(p, RT_MO_ACQ);
  rt_fence_after_acquire();
  return v;
}
static inline void rt_st_ptr(char **p, char *v) {
  rt_fence_before_release();
  __atomic_store_n(p, v, RT_MO_REL);
}
static inline void rt_st_i32(int32_t *p, int32_t v) {
  rt_fence_before_release();
  __atomic_store_n(p, v, RT_MO_REL);
}
static inline void rt_st_u32(uint32_t *p, uint32_t v) {
  rt_fence_before_release();
  __atomic_store_n(p, v, RT_MO_REL);
}
static inline void rt_st_u64(uint64_t *p, uint64_t v) {
  rt_fence_before_release();
  __atomic_store_n(p, v, RT_MO_REL);
}
#define rt_ld_acq(p)                                                           \
  _Generic((p), char **: rt_ld_ptr, char *const *: rt_ld_ptr, int32_t *: rt_ld_i32, \
           const int32_t *: rt_ld_i32, uint32_t *: rt_ld_u32, const uint32_t *: rt_ld_u32, \
           uint64_t *: rt_ld_u64, const uint64_t *: rt_ld_u64)(p)
#define rt_st_rel(p, v) \
  _Generic((p), char **: rt_st_ptr, int32_t *: rt_st_i32, uint32_t *: rt_st_u32, uint64_t *: rt_st_u64)((p), (v))

static inline void rt_lock(int32_t *l) {
  for (;;) {
    if (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0) {
      rt_fence_after_acquire();
      return;
    }
    while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
    }
  }
}
static inline void rt_unlock(int32_t *l) { rt_st_i32(l, 0); }

static inline int64_t rt_align(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* Adds delta to the active count of `snode` in stripe `stripe` (above). */
static inline void rt_count_active(rt_runtime *rt, int32_t snode, uint32_t stripe, int64_t delta) {
  int64_t *c = &rt->active[(int64_t)(stripe % RT_ACTIVE_STRIPES) * rt->active_stride + snode];
  __atomic_fetch_add(c, delta, __ATOMIC_RELAXED);
}

/* A stripe for a change at `where` (rt_count_active). */
static inline uint32_t rt_addr_stripe(const void *where) {
  return ((uint32_t)((uintptr_t)where >> 3) * 0x9e3779b1u) >> 29;
}

/* Records that the cells of `snode` changed state, so the lists of the levels
** under it are stale (list reuse, src/jit/jit_sparse.c). Called only on the
** slow paths of activation and deactivation, where a cell really switched;
** the load first keeps the flag's cache line shared while it is already set. */
static inline void rt_mark_changed(rt_runtime *rt, int32_t snode) {
  if (!__atomic_load_n(&rt->changed[snode], __ATOMIC_RELAXED))
    __atomic_store_n(&rt->changed[snode], 1, __ATOMIC_RELAXED);
}

/* Bytes of one container of a kind, given its cells; the struct compiler
** uses this for layout (host-safe: a pure function). Layouts:
**   dense      cells
**   bitmasked  cells, padded to 8, then one u32 mask word per 32 cells
**   pointer    one u32 slot per cell (node_pointer.h)
**   dynamic    i32 lock, i32 length, u64 first chunk, u64 last chunk (its
**              number and pool slot), u64 padding: 32 bytes, so a list's
**              node never straddles two cache lines */
static inline int64_t rt_container_bytes(int32_t kind, int64_t num_cells, int64_t cell_bytes) {
  switch (kind) {
  case RT_KIND_DENSE: return num_cells * cell_bytes;
  case RT_KIND_BITMASKED: return rt_align(rt_align(num_cells * cell_bytes, 8) + 4 * ((num_cells + 31) / 32), 8);
  case RT_KIND_POINTER: return rt_align(num_cells * 4, 8);
  case RT_KIND_DYNAMIC: return 32;   /* node_dynamic.h: lock, n, head, tail, pad */
  default: return -1;
  }
}

/* A pointer level's slot (node_pointer.h): 0 = inactive, RT_SLOT_BUSY = being
** activated or deactivated, else the cell's offset from the pool's base in
** units of 1 << slot_shift bytes. Cells are aligned to that unit and never
** start below it, so an active slot is above RT_SLOT_BUSY; a pool of up to
** 2^(32 + slot_shift) bytes fits (rt_runtime_init picks slot_shift). */
#define RT_SLOT_BUSY 1u
#define RT_SLOT_MIN_SHIFT 3
#define RT_SLOT_MAX_SHIFT 6        /* cells of the data lists are 64-byte aligned chunks */
#define RT_MAX_POOL ((uint64_t)1 << (32 + RT_SLOT_MAX_SHIFT))   /* 256 GiB */
static inline char *rt_slot_cell(const rt_runtime *rt, uint32_t slot) {
  return rt->pool + ((uint64_t)slot << rt->slot_shift);
}
/* The same from an SNode's meta: the pool starts with the runtime itself
** (rt_runtime_init), so the base is m->rt and the shift is m's copy. Fast
** paths use this one: their reads are of the meta alone, which generated
** code reads once, before its loop (cg_runtime.c marks them invariant),
** where rt->pool after m->rt would be read again after every atomic. */
static inline char *rt_meta_slot_cell(const rt_meta *m, uint32_t slot) {
  return (char *)m->rt + ((uint64_t)slot << m->slot_shift);
}
static inline uint32_t rt_cell_slot(const rt_runtime *rt, const char *cell) {
  return (uint32_t)((uint64_t)(cell - rt->pool) >> rt->slot_shift);
}

/* Bytes one allocation of an SNode's allocator takes: a pointer cell, or a
** dynamic chunk (next-chunk pointer, its number, chunk_cells cells); 0 for kinds without one. */
static inline int64_t rt_alloc_bytes(const rt_meta *m) {
  if (m->kind == RT_KIND_POINTER) return rt_align(m->cell_bytes, 8);
  if (m->kind == RT_KIND_DYNAMIC) return rt_align(RT_CHUNK_HEADER + (int64_t)m->chunk_cells * m->cell_bytes, 8);
  return 0;
}

/* ---- runtime.c ----------------------------------------------------------------- */
/* Places the state at the start of a zeroed pool; NULL if the pool cannot hold
** it (rt_runtime_min_pool tells the host how many bytes it needs). ambient_bytes:
** at least the largest cell of any sparse SNode. */
rt_runtime *rt_runtime_init(char *pool, uint64_t pool_size, int32_t nsnodes, int64_t ambient_bytes);
uint64_t rt_runtime_min_pool(int32_t nsnodes, int64_t ambient_bytes);
/* Copies m into the runtime and sets up its allocator and list; 0 on error
** (recorded: META for a bad description, POOL when the pool is too small).
** An id freed by rt_runtime_drop_snode may be added again: its list's chunks
** and its allocator's cells are kept when the new SNode's have the same size. */
int32_t rt_runtime_add_snode(rt_runtime *rt, const rt_meta *m);
/* Forgets SNode `snode` (its tree was freed) so that its id can be added again.
** Its cells should be deactivated and collected first: they stay in its
** allocator's free list for the next SNode of the same cell size. */
void rt_runtime_drop_snode(rt_runtime *rt, int32_t snode);
rt_meta *rt_runtime_meta(rt_runtime *rt, int32_t snode);
/* Takes `bytes` fresh (zero) bytes aligned to `align` (a power of two) from the
** pool; NULL and a recorded POOL error naming `snode` when it is exhausted. */
char *rt_runtime_bump(rt_runtime *rt, uint64_t bytes, uint64_t align, int32_t snode);
/* The same for cells and tree instances: fails while fewer than rt->reserve
** bytes would be left. */
char *rt_runtime_bump_data(rt_runtime *rt, uint64_t bytes, uint64_t align, int32_t snode);
/* Records a failure unless one is already recorded. */
void rt_runtime_fail(rt_runtime *rt, int32_t code, int32_t snode, int64_t bytes);
int64_t rt_runtime_active(rt_runtime *rt, int32_t snode);

/* ---- nodes.c: one file per kind, same operation names ---------------------------
** node: the container; i: the cell number in it (0 <= i < num_cells, the
** caller checks bounds). activate returns the cell (writes go there);
** lookup_element returns the cell, or the shared zero ambient cell when it
** is inactive (reads only: never write through it). */
#define RT_NODE_OPS(kind)                                                             \
  int32_t rt_##kind##_get_num_elements(const rt_meta *m, char *node);                 \
  char *rt_##kind##_activate(const rt_meta *m, char *node, int32_t i);                \
  int32_t rt_##kind##_is_active(const rt_meta *m, char *node, int32_t i);             \
  char *rt_##kind##_lookup_element(const rt_meta *m, char *node, int32_t i);          \
  void rt_##kind##_deactivate(const rt_meta *m, char *node, int32_t i);
RT_NODE_OPS(dense)
RT_NODE_OPS(bitmasked)
RT_NODE_OPS(pointer)
RT_NODE_OPS(dynamic)
#undef RT_NODE_OPS
/* dynamic only: append reserves the next element (returns its index, -1 when
** the list is at capacity); length is the number of elements. */
int32_t rt_dynamic_append(const rt_meta *m, char *node);
/* append and activate in one: the new element's cell, its index in *index;
** NULL and -1 when the list is full. chunk_cells must be m->chunk_cells;
** stripe: the caller's thread (rt_count_active), or -1 when the caller
** counts its appends itself, with rt_dynamic_count. */
char *rt_dynamic_append_cell(const rt_meta *m, char *node, int32_t chunk_cells, int32_t stripe, int32_t *index);
void rt_dynamic_count(const rt_meta *m, int32_t stripe, int64_t n);
/* Appends k values of value_bytes bytes each (1, 2, 4 or 8), stored one
** after another at `values`, to the list: each at byte `offset` of its cell
** (cell_bytes must be m->cell_bytes, chunk_cells m->chunk_cells).
** Returns how many it stored: fewer than k when the list filled up (the rest
** are dropped, as a full list drops an append). The caller counts them
** (rt_dynamic_count). */
int32_t rt_dynamic_append_many(const rt_meta *m, char *node, int32_t chunk_cells, int64_t cell_bytes,
                               const char *values, int32_t k, int32_t value_bytes, int64_t offset);
int32_t rt_dynamic_length(const rt_meta *m, char *node);

/* The same operations dispatched on m->kind (listgen, host tools, tests). */
int32_t rt_node_get_num_elements(const rt_meta *m, char *node);
char *rt_node_activate(const rt_meta *m, char *node, int32_t i);
int32_t rt_node_is_active(const rt_meta *m, char *node, int32_t i);
char *rt_node_lookup_element(const rt_meta *m, char *node, int32_t i);
void rt_node_deactivate(const rt_meta *m, char *node, int32_t i);

/* ---- listgen.c ------------------------------------------------------------------ */
/* Empties the list of active containers of `snode` (a clear_list task). */
void rt_list_clear(rt_runtime *rt, int32_t snode);
/* The root's list: its one container, at coordinates 0. */
void rt_listgen_root(rt_runtime *rt, int32_t root, char *root_container);
/* A listgen task parent->child, over elements [begin, end) of the parent's
** list (parallel workers take disjoint ranges): appends the child container
** of every active cell of each parent container. child_offset: byte offset
** of the child's container inside a parent cell. */
void rt_listgen(rt_runtime *rt, int32_t parent, int32_t child, int64_t child_offset,
                int32_t begin, int32_t end);
int32_t rt_listgen_size(rt_runtime *rt, int32_t snode);
rt_elem *rt_listgen_element(rt_runtime *rt, int32_t snode, int32_t i);
/* Deactivates every cell of the containers [begin, end) of snode's list
** (built beforehand); the front end runs it bottom-up for deactivate_all. */
void rt_deactivate_all(rt_runtime *rt, int32_t snode, int32_t begin, int32_t end);

#endif
