/*
** snode.h -- the structural-node (SNode) trees that kernels read and write.
**
** Terms follow seeds/internal-designs.md: an SNode *container* holds
** num_cells *cells*; each cell holds one *component* per child SNode, and a
** component is a container of the child. place SNodes hold one value.
**
** Indices: a field has `nidx` virtual indices. Each virtual index i maps to
** physical axis physical_index_position[i]. A dense level splits along its
** axes: for a physical axis a, the level's cell coordinate is
**     (p[a] >> shift[a]) & (extent[a] - 1)        when extents are powers of 2,
**     (p[a] / below[a]) % extent[a]                in general,
** where below[a] is the product of the extents of axis a in the levels under
** this one. Cells of a level are laid out row-major in the order the level's
** axes were listed, so `dense(lt.ji, ...)` gives a column-major layout.
**
** Layout is computed by ir_snode_layout once a tree is complete
** ("materialised"); after that a tree never changes and its memory is one
** zero-filled block of tree->bytes bytes.
**
** Sparse levels (bitmasked, pointer, dynamic) split their axes exactly like
** dense ones (same cell coordinates, same row-major cell numbering), and a
** cell is laid out the same way (children's containers at their offsets,
** cell_bytes each). What differs is where cells live and the per-container
** metadata, at [meta_offset, meta_offset + meta_bytes) of each container.
** The contract with the runtime (src/runtime/runtime.h, rt_container_bytes
** and rt_alloc_bytes; the unit test test_snode_sparse.c compares them):
**
**   dense      [cell 0]...[cell n-1]                        no metadata
**   bitmasked  [cell 0]...[cell n-1][pad to 8][u32 mask word per 32 cells]
**              meta_offset = align8(n * cell_bytes), meta_bytes = 4 * ceil(n / 32);
**              container_bytes = align8(meta_offset + meta_bytes)
**   pointer    [u32 slot 0..n-1] (0 inactive, 1 busy, else the cell's offset
**              in the pool; src/runtime/node_pointer.h)
**              meta_offset = 0, meta_bytes = container_bytes = align8(4 * n);
**              each cell (cell_bytes, rounded up to 8) comes from the SNode's
**              allocator when activated
**   dynamic    [i32 lock][i32 length][u64 first chunk][u64 last chunk's
**              number << 32 | its pool slot][u64 0]
**              meta_offset = 0, meta_bytes = container_bytes = 32; the n cells
**              (n = the capacity) live in chunks of chunk_cells cells, each
**              chunk [u64 next chunk][i64 its number][cell 0]...[cell chunk_cells-1]
**
** Containers of sparse levels are 8-byte aligned. Cells of bitmasked levels
** stay inside the tree's memory, so their places still have a static address
** (ir_snode_offset); below a pointer or dynamic level they have none.
**
** Rules checked when a tree is built (the error names the SNode and the rule):
** extents > 0; each axis once per level; at most 8 axes (i..p) in a field; a
** dynamic level has exactly one axis, which no ancestor splits, and holds only
** places (it is the last level). That a field is placed only once is the
** front end's to check (it knows field objects; places here have names
** only, which may come late and repeat); `field` declarations check names.
*/
#ifndef LATTICE_SNODE_H
#define LATTICE_SNODE_H

#include "ir.h"

#define IR_MAX_SNODES 4096
#define IR_MAX_TREES 256

/* name, printed keyword */
#define IR_SNODE_KINDS(_) \
  _(root)                 \
  _(dense)                \
  _(place)                \
  _(bitmasked)            \
  _(pointer)              \
  _(dynamic)

typedef enum {
#define K(name) IR_SN_##name,
  IR_SNODE_KINDS(K)
#undef K
  IR_SN_NUM_KINDS
} ir_snode_kind;

typedef struct ir_snode ir_snode;
struct ir_snode {
  int id;                          /* index in ir_program.snodes; printed S<id> */
  ir_snode_kind kind;
  int tree;                        /* which tree (index in ir_program.trees) */
  ir_snode *parent;
  ir_snode **children;
  int nchildren;

  /* this level (dense, bitmasked, pointer, dynamic) */
  int naxes;                       /* physical axes split here, in listed order */
  int axes[IR_MAX_INDICES];
  int64_t shape[IR_MAX_INDICES];   /* extent along axes[k] */
  int64_t num_cells;               /* product of shape (1 for root and place);
                                      dynamic: its capacity */
  int64_t chunk_cells;             /* dynamic: cells per chunk; 0 for other kinds */

  /* place */
  ir_type dtype;
  const char *name;                /* the field's name for messages and the printer */
  int grad;                        /* place: the id of its gradient's place (needs_grad), or -1 */
  int dual;                        /* place: the id of its tangent's place (needs_dual), or -1 */
  int64_t index_offset[IR_MAX_INDICES]; /* place: the field's offset (lt.field's offset option): the user's
                                      index v is index_offset[v] + the 0-based index the IR, the
                                      runtime and the C API use; the front end (Lua-scope access,
                                      messages) only; zeros by default */

  /* the field as seen through indices (for places; also set on inner nodes) */
  int nidx;                        /* number of virtual indices */
  int physical_index_position[IR_MAX_INDICES];
  int64_t total_shape[IR_MAX_INDICES]; /* extent of each *virtual* index, for bounds checks */

  /* layout (ir_snode_layout) */
  int64_t below[IR_MAX_INDICES];   /* per physical axis: product of extents under this level */
  int64_t cell_bytes;              /* bytes of one cell (children's containers, aligned) */
  int64_t container_bytes;         /* bytes of one container inside the parent's cell
                                      (dense: num_cells * cell_bytes; place: size of
                                      dtype; sparse kinds: see the top of this file) */
  int64_t offset;                  /* byte offset of this container inside the parent's cell */
  int64_t meta_offset;             /* sparse kinds: where the per-container metadata */
  int64_t meta_bytes;              /*   starts inside a container, and its size (0: none) */
};

typedef struct {
  ir_snode *root;
  int64_t bytes;                   /* total bytes of the tree's memory */
  bool materialized;
} ir_tree;

/* SNode ids and tree slots are handed out in order; ir_tree_free empties a
** tree's slot and its SNodes' (NULL), and later trees and SNodes take the
** lowest empty ones first. nsnodes and ntrees bound the slots ever used
** (loops over them skip the empty ones); nfree_* count the empty ones below. */
struct ir_program {
  ir_snode *snodes[IR_MAX_SNODES];
  int nsnodes, nfree_snodes;
  int next_id;                     /* ir_program_set_next_id: id + 1 of the next SNode; 0: none */
  int next_tree;                   /* ir_program_set_next_tree: slot + 1 of the next tree; 0: none */
  ir_tree trees[IR_MAX_TREES];     /* root NULL: a free slot */
  int ntrees, nfree_trees;
};

ir_program *ir_program_new(void);
void ir_program_free(ir_program *p);
/* Frees tree `tree` and its SNodes; their slots and ids go to later trees. The
** caller makes sure nothing refers to them any more (kernels, instances). */
void ir_tree_free(ir_program *p, int tree);
/* The next SNode made in p gets id `id` instead of the lowest free one
** (the IR text's `tree` declarations state every id). false when that id is
** taken or out of range. */
bool ir_program_set_next_id(ir_program *p, int id);
/* The next tree started in p (ir_snode_root) takes slot `tree` instead of
** the lowest free one (AOT modules: their code names tree slots). false
** when that slot is taken or out of range. */
bool ir_program_set_next_tree(ir_program *p, int tree);
/* Whether a new tree can start (a tree slot and an SNode id are free). */
bool ir_program_has_room(const ir_program *p);
/* Ops whose aux names an SNode (a place or a level, ops.def's aux column):
** the trees a kernel uses. */
bool ir_op_names_snode(int op);
/* SNode `id` of p; NULL when p is NULL or has no SNode with that id. */
ir_snode *ir_program_snode(const ir_program *p, int64_t id);

/* Builders. Errors (bad shape, too many indices, ...) return NULL and write a
** message naming the SNode and the rule to err. */
ir_snode *ir_snode_root(ir_program *p);                     /* starts a new tree */
ir_snode *ir_snode_dense(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                         const int64_t *shape, char *err, size_t errlen);
ir_snode *ir_snode_place(ir_program *p, ir_snode *parent, ir_type t, const char *name,
                         char *err, size_t errlen);
/* Any level kind (dense, bitmasked, pointer, dynamic) along naxes axes;
** ir_snode_dense is this with IR_SN_dense. */
ir_snode *ir_snode_level(ir_program *p, ir_snode *parent, ir_snode_kind kind, int naxes,
                         const int *axes, const int64_t *shape, char *err, size_t errlen);
ir_snode *ir_snode_bitmasked(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                             const int64_t *shape, char *err, size_t errlen);
ir_snode *ir_snode_pointer(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                           const int64_t *shape, char *err, size_t errlen);
/* A dynamic level: a list of up to n cells along one axis, stored in chunks of
** chunk_cells cells (0: ir_snode_default_chunk(n)). */
ir_snode *ir_snode_dynamic(ir_program *p, ir_snode *parent, int axis, int64_t n,
                           int64_t chunk_cells, char *err, size_t errlen);
/* The smallest power of two >= sqrt(n), at most n: the default chunk size. */
int64_t ir_snode_default_chunk(int64_t n);
/* Computes layout of the tree rooted at root; marks it materialised. */
bool ir_snode_layout(ir_program *p, ir_snode *root, char *err, size_t errlen);

const char *ir_snode_kind_name(ir_snode_kind k);
int ir_snode_kind_from_name(const char *name);             /* -1 if unknown */
/* bitmasked, pointer and dynamic: cells can be inactive. */
bool ir_snode_kind_is_sparse(ir_snode_kind k);
/* A level: dense or a sparse kind (neither root nor place). */
bool ir_snode_kind_is_level(ir_snode_kind k);
/* Whether s or one of its ancestors is sparse (accesses need activation/lookup). */
bool ir_snode_under_sparse(const ir_snode *s);
/* "S3place<f32>" style label used by the printer (writes into buf). */
const char *ir_snode_label(const ir_snode *s, char *buf, size_t len);

/* Byte offset of the element at virtual indices idx inside its tree's memory
** (host-side twin of what codegen emits for global_ptr); -1 when a pointer
** or dynamic level is on the way (the element has no static address). */
int64_t ir_snode_offset(const ir_snode *place, const int64_t *idx);

#endif
