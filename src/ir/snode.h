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
  _(place)

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

  /* this level (dense) */
  int naxes;                       /* physical axes split here, in listed order */
  int axes[IR_MAX_INDICES];
  int64_t shape[IR_MAX_INDICES];   /* extent along axes[k] */
  int64_t num_cells;               /* product of shape (1 for root and place) */

  /* place */
  ir_type dtype;
  const char *name;                /* the field's name for messages and the printer */

  /* the field as seen through indices (for places; also set on inner nodes) */
  int nidx;                        /* number of virtual indices */
  int physical_index_position[IR_MAX_INDICES];
  int64_t total_shape[IR_MAX_INDICES]; /* extent of each *virtual* index, for bounds checks */

  /* layout (ir_snode_layout) */
  int64_t below[IR_MAX_INDICES];   /* per physical axis: product of extents under this level */
  int64_t cell_bytes;              /* bytes of one cell (children's containers, aligned) */
  int64_t container_bytes;         /* num_cells * cell_bytes (place: size of dtype) */
  int64_t offset;                  /* byte offset of this container inside the parent's cell */
};

typedef struct {
  ir_snode *root;
  int64_t bytes;                   /* total bytes of the tree's memory */
  bool materialized;
} ir_tree;

struct ir_program {
  ir_snode *snodes[IR_MAX_SNODES];
  int nsnodes;
  ir_tree trees[IR_MAX_TREES];
  int ntrees;
};

ir_program *ir_program_new(void);
void ir_program_free(ir_program *p);

/* Builders. Errors (bad shape, too many indices, ...) return NULL and write a
** message naming the SNode and the rule to err. */
ir_snode *ir_snode_root(ir_program *p);                     /* starts a new tree */
ir_snode *ir_snode_dense(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                         const int64_t *shape, char *err, size_t errlen);
ir_snode *ir_snode_place(ir_program *p, ir_snode *parent, ir_type t, const char *name,
                         char *err, size_t errlen);
/* Computes layout of the tree rooted at root; marks it materialised. */
bool ir_snode_layout(ir_program *p, ir_snode *root, char *err, size_t errlen);

const char *ir_snode_kind_name(ir_snode_kind k);
/* "S3place<f32>" style label used by the printer (writes into buf). */
const char *ir_snode_label(const ir_snode *s, char *buf, size_t len);

/* Byte offset of the element at virtual indices idx inside its tree's memory
** (host-side twin of what codegen emits for global_ptr). */
int64_t ir_snode_offset(const ir_snode *place, const int64_t *idx);

#endif
