/*
** snode.c -- SNode trees: building with validation, layout (cell sizes,
** component offsets, per-axis strides, sparse metadata) and the host-side
** address formula.
*/
#include "snode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest extent of one virtual index: indices are i32 in kernels. */
#define MAX_EXTENT ((int64_t)1 << 31)
#define MAX_DEPTH 32

static const char *axis_letters = "ijklmnop";

static const char *const kind_names[IR_SN_NUM_KINDS] = {
#define K(name) #name,
    IR_SNODE_KINDS(K)
#undef K
};

const char *ir_snode_kind_name(ir_snode_kind k) {
  return (unsigned)k < IR_SN_NUM_KINDS ? kind_names[k] : "?";
}

int ir_snode_kind_from_name(const char *name) {
  for (int k = 0; k < IR_SN_NUM_KINDS; k++)
    if (strcmp(kind_names[k], name) == 0) return k;
  return -1;
}

bool ir_snode_kind_is_sparse(ir_snode_kind k) {
  return k == IR_SN_bitmasked || k == IR_SN_pointer || k == IR_SN_dynamic;
}

bool ir_snode_kind_is_level(ir_snode_kind k) { return k == IR_SN_dense || ir_snode_kind_is_sparse(k); }

bool ir_snode_under_sparse(const ir_snode *s) {
  for (; s; s = s->parent)
    if (ir_snode_kind_is_sparse(s->kind)) return true;
  return false;
}

int64_t ir_snode_default_chunk(int64_t n) {
  int64_t c = 1;
  while (c * c < n) c *= 2;
  return c < n ? c : (n > 0 ? n : 1);
}

const char *ir_snode_label(const ir_snode *s, char *buf, size_t len) {
  if (!s)
    snprintf(buf, len, "S?");
  else if (s->kind == IR_SN_place)
    snprintf(buf, len, "S%dplace<%s>", s->id, ir_type_name(s->dtype));
  else
    snprintf(buf, len, "S%d%s", s->id, ir_snode_kind_name(s->kind));
  return buf;
}

ir_program *ir_program_new(void) {
  ir_program *p = calloc(1, sizeof(ir_program));
  if (!p) {
    fprintf(stderr, "lattice: out of memory\n");
    abort();
  }
  return p;
}

ir_snode *ir_program_snode(const ir_program *p, int64_t id) {
  return p && id >= 0 && id < p->nsnodes ? p->snodes[id] : NULL;
}

static void free_node(ir_snode *s) {
  free(s->children);
  free((char *)s->name);
  free(s);
}

void ir_program_free(ir_program *p) {
  if (!p) return;
  for (int i = 0; i < p->nsnodes; i++)
    if (p->snodes[i]) free_node(p->snodes[i]);
  free(p);
}

bool ir_op_names_snode(int op) {
  ir_aux aux = ir_op_aux((ir_op)op);   /* ops.def's aux column */
  return aux == IR_AUX_place || aux == IR_AUX_level;
}

static void free_subtree(ir_program *p, ir_snode *s) {
  for (int i = 0; i < s->nchildren; i++) free_subtree(p, s->children[i]);
  if (s->id >= 0 && s->id < p->nsnodes && p->snodes[s->id] == s) {
    p->snodes[s->id] = NULL;
    p->nfree_snodes++;
  }
  free_node(s);
}

void ir_tree_free(ir_program *p, int tree) {
  if (!p || tree < 0 || tree >= p->ntrees || !p->trees[tree].root) return;
  free_subtree(p, p->trees[tree].root);
  memset(&p->trees[tree], 0, sizeof p->trees[tree]);
  p->nfree_trees++;
}

bool ir_program_has_room(const ir_program *p) {
  return (p->ntrees < IR_MAX_TREES || p->nfree_trees > 0) &&
         (p->nsnodes < IR_MAX_SNODES || p->nfree_snodes > 0);
}

bool ir_program_set_next_id(ir_program *p, int id) {
  if (id < 0 || id >= IR_MAX_SNODES || (id < p->nsnodes && p->snodes[id])) return false;
  p->next_id = id + 1;
  return true;
}

bool ir_program_set_next_tree(ir_program *p, int tree) {
  if (tree < 0 || tree >= IR_MAX_TREES || (tree < p->ntrees && p->trees[tree].root)) return false;
  p->next_tree = tree + 1;
  return true;
}

/* The lowest free SNode id (or the one ir_program_set_next_id chose), -1
** when all IR_MAX_SNODES are taken. */
static int take_id(ir_program *p) {
  if (p->next_id) {
    int id = p->next_id - 1;
    p->next_id = 0;
    if (id < p->nsnodes) {
      p->nfree_snodes--;                     /* a free slot below the others */
    } else {
      p->nfree_snodes += id - p->nsnodes;    /* the ids skipped are free slots */
      p->nsnodes = id + 1;
    }
    return id;
  }
  if (p->nfree_snodes > 0)
    for (int i = 0; i < p->nsnodes; i++)
      if (!p->snodes[i]) {
        p->nfree_snodes--;
        return i;
      }
  return p->nsnodes < IR_MAX_SNODES ? p->nsnodes++ : -1;
}

/* Allocates a node and links it under parent (NULL for a root). */
static ir_snode *new_node(ir_program *p, ir_snode_kind kind, ir_snode *parent) {
  if (p->nsnodes >= IR_MAX_SNODES && p->nfree_snodes == 0) return NULL;
  ir_snode *s = calloc(1, sizeof(ir_snode));
  if (!s) return NULL;
  if (parent) {
    ir_snode **c = realloc(parent->children, sizeof(ir_snode *) * (size_t)(parent->nchildren + 1));
    if (!c) {
      free(s);
      return NULL;
    }
    parent->children = c;
    c[parent->nchildren++] = s;
    s->tree = parent->tree;
    /* the index view starts as the parent's */
    s->nidx = parent->nidx;
    memcpy(s->physical_index_position, parent->physical_index_position,
           sizeof s->physical_index_position);
    memcpy(s->total_shape, parent->total_shape, sizeof s->total_shape);
  }
  s->id = take_id(p);
  s->grad = -1;
  s->dual = -1;
  s->kind = kind;
  s->parent = parent;
  s->num_cells = 1;
  s->dtype = IR_void;
  p->snodes[s->id] = s;
  return s;
}

ir_snode *ir_snode_root(ir_program *p) {
  if (!ir_program_has_room(p)) return NULL;
  int tree = p->ntrees;
  if (p->next_tree) {
    tree = p->next_tree - 1;
  } else if (p->nfree_trees > 0) {
    for (int t = 0; t < p->ntrees; t++)
      if (!p->trees[t].root) {
        tree = t;
        break;
      }
  }
  ir_snode *s = new_node(p, IR_SN_root, NULL);
  if (!s) return NULL;
  p->next_tree = 0;
  if (tree < p->ntrees) {
    p->nfree_trees--;
  } else {
    p->nfree_trees += tree - p->ntrees;   /* the slots skipped are free */
    p->ntrees = tree + 1;
  }
  s->tree = tree;
  p->trees[s->tree].root = s;
  p->trees[s->tree].bytes = 0;
  p->trees[s->tree].materialized = false;
  return s;
}

/* Common checks for a new child of parent; false with err written if bad. */
static bool check_parent(ir_program *p, ir_snode *parent, const char *what, char *err,
                         size_t errlen) {
  char lab[64];
  if (!parent) {
    snprintf(err, errlen, "%s needs a parent SNode (got none)", what);
    return false;
  }
  ir_snode_label(parent, lab, sizeof lab);
  if (parent->kind == IR_SN_place) {
    snprintf(err, errlen, "%s: a place holds one value and can have no children; add the %s to its parent instead",
             lab, what);
    return false;
  }
  if (parent->kind == IR_SN_dynamic && strcmp(what, "place") != 0) {
    snprintf(err, errlen, "%s: a dynamic level must be the last level and holds only places; "
             "put the %s above the dynamic instead", lab, what);
    return false;
  }
  if (p->trees[parent->tree].materialized) {
    snprintf(err, errlen, "%s: its tree is already materialised (a kernel used it); build a new tree with a new root",
             lab);
    return false;
  }
  if (p->nsnodes >= IR_MAX_SNODES && p->nfree_snodes == 0) {
    snprintf(err, errlen, "%s: too many SNodes alive at once (at most %d in all trees); fields and trees "
             "no longer referenced are freed by the garbage collector (collectgarbage())", lab, IR_MAX_SNODES);
    return false;
  }
  int depth = 0;
  for (ir_snode *s = parent; s; s = s->parent) depth++;
  if (depth >= MAX_DEPTH) {
    snprintf(err, errlen, "%s: trees are at most %d levels deep", lab, MAX_DEPTH);
    return false;
  }
  return true;
}

ir_snode *ir_snode_level(ir_program *p, ir_snode *parent, ir_snode_kind kind, int naxes,
                         const int *axes, const int64_t *shape, char *err, size_t errlen) {
  if (!ir_snode_kind_is_level(kind)) {
    snprintf(err, errlen, "ir_snode_level: '%s' is not a level kind (dense, bitmasked, pointer, dynamic)",
             ir_snode_kind_name(kind));
    return NULL;
  }
  const char *kn = ir_snode_kind_name(kind);
  if (!check_parent(p, parent, kn, err, errlen)) return NULL;
  char lab[64];
  ir_snode_label(parent, lab, sizeof lab);
  if (naxes < 1 || naxes > IR_MAX_INDICES) {
    snprintf(err, errlen, "%s under %s: %d axes given; a level splits 1 to %d axes", kn, lab, naxes,
             IR_MAX_INDICES);
    return NULL;
  }
  if (kind == IR_SN_dynamic && naxes != 1) {
    snprintf(err, errlen, "dynamic under %s: %d axes given; a dynamic level is a 1-D list along exactly one axis",
             lab, naxes);
    return NULL;
  }
  int64_t total[IR_MAX_INDICES];
  bool used[IR_MAX_INDICES] = {false};
  for (int i = 0; i < IR_MAX_INDICES; i++) total[i] = 1;
  /* extents of the axes above, from the parent's index view */
  for (int v = 0; v < parent->nidx; v++) {
    used[parent->physical_index_position[v]] = true;
    total[parent->physical_index_position[v]] = parent->total_shape[v];
  }
  bool here[IR_MAX_INDICES] = {false};
  for (int k = 0; k < naxes; k++) {
    int a = axes[k];
    if (a < 0 || a >= IR_MAX_INDICES) {
      snprintf(err, errlen, "%s under %s: axis %d is out of range (a field has at most %d indices, axes i..p)",
               kn, lab, a, IR_MAX_INDICES);
      return NULL;
    }
    if (here[a]) {
      snprintf(err, errlen, "%s under %s: axis %c is listed twice in one level; list each axis once",
               kn, lab, axis_letters[a]);
      return NULL;
    }
    here[a] = true;
    if (kind == IR_SN_dynamic && used[a]) {
      /* the list's index must be its own: a cell above already fixes it */
      const ir_snode *q = parent;
      for (; q; q = q->parent) {
        bool splits = false;
        for (int m = 0; m < q->naxes; m++) splits |= q->axes[m] == a;
        if (splits) break;
      }
      char qlab[64];
      snprintf(err, errlen, "dynamic under %s: axis %c is already split by the ancestor %s; "
               "a dynamic level needs an axis no level above it uses",
               lab, axis_letters[a], ir_snode_label(q, qlab, sizeof qlab));
      return NULL;
    }
    if (shape[k] <= 0) {
      snprintf(err, errlen, "%s under %s: extent %lld along axis %c; extents must be > 0", kn, lab,
               (long long)shape[k], axis_letters[a]);
      return NULL;
    }
    if (shape[k] >= MAX_EXTENT || total[a] * shape[k] >= MAX_EXTENT) {
      snprintf(err, errlen,
               "%s under %s: the total extent along axis %c would be %lld x %lld; "
               "an index must stay below 2^31",
               kn, lab, axis_letters[a], (long long)total[a], (long long)shape[k]);
      return NULL;
    }
  }
  /* The cells of one container. The runtime numbers a sparse level's with
  ** an i32; a dense level's count is refused before it overflows (up to 8
  ** extents below 2^31 each; ir_snode_layout refuses the bytes later). */
  bool sparse = ir_snode_kind_is_sparse(kind);
  int64_t cells = 1;
  for (int k = 0; k < naxes; k++) {
    if (!sparse && shape[k] > INT64_MAX / 4 / cells) {
      snprintf(err, errlen, "%s under %s: more than 2^61 cells in one container do not fit in memory", kn, lab);
      return NULL;
    }
    cells *= shape[k];             /* sparse: below 2^31 before, so below 2^62 */
    if (sparse && cells >= MAX_EXTENT) {
      snprintf(err, errlen, "%s under %s: %lld cells or more in one container; a sparse level has fewer than 2^31",
               kn, lab, (long long)cells);
      return NULL;
    }
  }
  ir_snode *s = new_node(p, kind, parent);
  if (!s) {
    snprintf(err, errlen, "%s under %s: out of memory", kn, lab);
    return NULL;
  }
  s->naxes = naxes;
  s->num_cells = 1;
  for (int k = 0; k < naxes; k++) {
    s->axes[k] = axes[k];
    s->shape[k] = shape[k];
    s->num_cells *= shape[k];
    total[axes[k]] *= shape[k];
    used[axes[k]] = true;
  }
  /* virtual indices: the used physical axes in increasing order */
  s->nidx = 0;
  for (int a = 0; a < IR_MAX_INDICES; a++) {
    if (!used[a]) continue;
    s->physical_index_position[s->nidx] = a;
    s->total_shape[s->nidx] = total[a];
    s->nidx++;
  }
  return s;
}

ir_snode *ir_snode_dense(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                         const int64_t *shape, char *err, size_t errlen) {
  return ir_snode_level(p, parent, IR_SN_dense, naxes, axes, shape, err, errlen);
}

ir_snode *ir_snode_bitmasked(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                             const int64_t *shape, char *err, size_t errlen) {
  return ir_snode_level(p, parent, IR_SN_bitmasked, naxes, axes, shape, err, errlen);
}

ir_snode *ir_snode_pointer(ir_program *p, ir_snode *parent, int naxes, const int *axes,
                           const int64_t *shape, char *err, size_t errlen) {
  return ir_snode_level(p, parent, IR_SN_pointer, naxes, axes, shape, err, errlen);
}

ir_snode *ir_snode_dynamic(ir_program *p, ir_snode *parent, int axis, int64_t n,
                           int64_t chunk_cells, char *err, size_t errlen) {
  if (chunk_cells < 0 || (n > 0 && chunk_cells > n)) {
    char lab[64];
    snprintf(err, errlen, "dynamic under %s: chunk of %lld cells for a list of %lld; "
             "a chunk holds 1 to n cells (0 picks a default)",
             ir_snode_label(parent, lab, sizeof lab), (long long)chunk_cells, (long long)n);
    return NULL;
  }
  ir_snode *s = ir_snode_level(p, parent, IR_SN_dynamic, 1, &axis, &n, err, errlen);
  if (s) s->chunk_cells = chunk_cells ? chunk_cells : ir_snode_default_chunk(n);
  return s;
}

ir_snode *ir_snode_place(ir_program *p, ir_snode *parent, ir_type t, const char *name, char *err,
                         size_t errlen) {
  if (!check_parent(p, parent, "place", err, errlen)) return NULL;
  if (t == IR_void || (unsigned)t >= IR_NUM_TYPES) {
    char lab[64];
    snprintf(err, errlen, "place under %s: a field needs a value type (i8..u64, f32, f64, i1)",
             ir_snode_label(parent, lab, sizeof lab));
    return NULL;
  }
  char *copy = NULL;
  if (name) {
    copy = strdup(name);
    if (!copy) return NULL;
  }
  ir_snode *s = new_node(p, IR_SN_place, parent);
  if (!s) {
    free(copy);
    snprintf(err, errlen, "place: out of memory");
    return NULL;
  }
  s->dtype = t;
  s->name = copy;
  return s;
}

/* ---- layout -------------------------------------------------------------------- */

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static int64_t type_bytes(ir_type t) {
  int bits = ir_type_bits(t);
  return bits <= 8 ? 1 : bits / 8;
}

/* Lays out the subtree of s bottom-up: below, cell_bytes, container_bytes, the
** children's offsets. *align gets the container's alignment. */
static bool layout_node(ir_snode *s, int64_t *align, char *err, size_t errlen) {
  char lab[64];
  ir_snode_label(s, lab, sizeof lab);
  for (int a = 0; a < IR_MAX_INDICES; a++) s->below[a] = 1;
  if (s->kind == IR_SN_place) {
    s->cell_bytes = s->container_bytes = type_bytes(s->dtype);
    *align = s->cell_bytes;
    return true;
  }
  bool used[IR_MAX_INDICES] = {false};
  for (int v = 0; v < s->nidx; v++) used[s->physical_index_position[v]] = true;

  int64_t cur = 0, cell_align = 1;
  bool have[IR_MAX_INDICES] = {false};
  for (int c = 0; c < s->nchildren; c++) {
    ir_snode *ch = s->children[c];
    int64_t ca = 1;
    if (!layout_node(ch, &ca, err, errlen)) return false;
    /* what the child splits along each axis, itself included */
    for (int a = 0; a < IR_MAX_INDICES; a++) {
      int64_t sub = ch->below[a];
      for (int k = 0; k < ch->naxes; k++)
        if (ch->axes[k] == a) sub *= ch->shape[k];
      if (!have[a]) {
        s->below[a] = sub;
        have[a] = true;
      } else if (s->below[a] != sub && used[a]) {
        /* an index along a cannot be split one way for one child and another
        ** way for the next: the level's cell coordinate would be ambiguous */
        char clab[64];
        ir_snode_label(ch, clab, sizeof clab);
        snprintf(err, errlen,
                 "%s: its children split axis %c differently (%lld cells below one, %lld below %s); "
                 "every branch under a level must have the same extent along the axes above it",
                 lab, axis_letters[a], (long long)s->below[a], (long long)sub, clab);
        return false;
      }
    }
    cur = align_up(cur, ca);
    /* each child fits (below), the sum of many may not: stop before it overflows */
    if (ch->container_bytes > INT64_MAX / 4 - cur) {
      snprintf(err, errlen, "%s: the containers of its %d children take more than 2^61 bytes in one cell; that "
               "does not fit in memory", lab, s->nchildren);
      return false;
    }
    ch->offset = cur;
    cur += ch->container_bytes;
    if (ca > cell_align) cell_align = ca;
  }
  for (int a = 0; a < IR_MAX_INDICES; a++)
    if (!used[a]) s->below[a] = 1;
  s->cell_bytes = align_up(cur, cell_align);
  if (s->cell_bytes > 0 && s->num_cells > INT64_MAX / 4 / s->cell_bytes) {
    snprintf(err, errlen, "%s: %lld cells of %lld bytes do not fit in memory", lab,
             (long long)s->num_cells, (long long)s->cell_bytes);
    return false;
  }
  /* sizes as the runtime computes them (snode.h; rt_container_bytes) */
  int64_t n = s->num_cells;
  s->meta_offset = s->meta_bytes = 0;
  switch (s->kind) {
  case IR_SN_bitmasked:
    s->meta_offset = align_up(n * s->cell_bytes, 8);
    s->meta_bytes = 4 * ((n + 31) / 32);
    s->container_bytes = align_up(s->meta_offset + s->meta_bytes, 8);
    break;
  case IR_SN_pointer:
    s->meta_bytes = s->container_bytes = align_up(4 * n, 8);
    break;
  case IR_SN_dynamic:
    s->meta_bytes = s->container_bytes = 32;
    break;
  default:
    s->container_bytes = n * s->cell_bytes;
    break;
  }
  if (ir_snode_kind_is_sparse(s->kind) && cell_align < 8) cell_align = 8;
  *align = cell_align;
  return true;
}

bool ir_snode_layout(ir_program *p, ir_snode *root, char *err, size_t errlen) {
  if (!root || root->kind != IR_SN_root) {
    snprintf(err, errlen, "ir_snode_layout needs the root of a tree");
    return false;
  }
  int64_t align = 1;
  if (!layout_node(root, &align, err, errlen)) return false;
  root->offset = 0;
  p->trees[root->tree].bytes = root->container_bytes;
  p->trees[root->tree].materialized = true;
  return true;
}

int64_t ir_snode_offset(const ir_snode *place, const int64_t *idx) {
  int64_t phys[IR_MAX_INDICES] = {0};
  for (int v = 0; v < place->nidx; v++) phys[place->physical_index_position[v]] = idx[v];
  /* path from the root down to place */
  const ir_snode *path[MAX_DEPTH + 1];
  int n = 0;
  for (const ir_snode *s = place; s && n <= MAX_DEPTH; s = s->parent) path[n++] = s;
  int64_t off = 0;
  for (int i = n - 1; i >= 0; i--) {
    const ir_snode *s = path[i];
    off += s->offset;
    if (s->kind == IR_SN_pointer || s->kind == IR_SN_dynamic) return -1;
    if (s->kind != IR_SN_dense && s->kind != IR_SN_bitmasked) continue;
    int64_t cell = 0;
    for (int k = 0; k < s->naxes; k++) {
      int a = s->axes[k];
      cell = cell * s->shape[k] + (phys[a] / s->below[a]) % s->shape[k];
    }
    off += cell * s->cell_bytes;
  }
  return off;
}
