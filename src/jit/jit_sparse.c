/*
** jit_sparse.c -- the host side of the sparse runtime (jit_sparse.h): the
** pool, SNode registration, tree instances, host element access, list reuse
** bookkeeping, counters and runtime failures as messages.
**
** On the CPU the pool is host memory, so everything here calls the runtime
** (src/runtime, compiled natively into liblattice as well as to bitcode)
** directly and walks trees exactly like generated code does.
*/
#include "jit_sparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/host/mempool.h"

typedef struct {
  char **v;
  int n, cap;
} root_vec;

struct jit_sparse {
  char *pool;
  uint64_t pool_bytes;
  rt_runtime *rt;
  int32_t parent[IR_MAX_SNODES];     /* parent level of each registered SNode; -1 root */
  uint8_t registered[IR_MAX_SNODES];
  root_vec free_roots[IR_MAX_TREES]; /* root containers of freed instances */
  /* list reuse: which instance each list was built for, and logical times of
  ** the last build of a list and of the last structural change of a level */
  char *list_root[IR_MAX_SNODES];
  uint64_t list_stamp[IR_MAX_SNODES];
  uint64_t change_stamp[IR_MAX_SNODES];
  uint64_t clock;
  int64_t lists_reused;
};

jit_sparse *jit_sparse_create(uint64_t pool_bytes, char *err, size_t errlen) {
  if (pool_bytes == 0) pool_bytes = JIT_SPARSE_DEFAULT_POOL;
  if (pool_bytes > RT_MAX_POOL) {
    snprintf(err, errlen,
             "a memory pool of %llu bytes is more than the runtime can address (%llu bytes); "
             "set lt.init{device_memory=...} lower",
             (unsigned long long)pool_bytes, (unsigned long long)RT_MAX_POOL);
    return NULL;
  }
  uint64_t need = rt_runtime_min_pool(IR_MAX_SNODES, JIT_SPARSE_AMBIENT_BYTES);
  if (pool_bytes < need + (1u << 20)) {
    snprintf(err, errlen,
             "a memory pool of %llu bytes is too small: the runtime needs %llu bytes for its own "
             "state plus room for fields; set lt.init{device_memory=...} to at least %llu",
             (unsigned long long)pool_bytes, (unsigned long long)need,
             (unsigned long long)(need + (4u << 20)));
    return NULL;
  }
  jit_sparse *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory creating the sparse runtime");
    return NULL;
  }
  s->pool = rt_mempool_reserve(pool_bytes, err, errlen);
  if (!s->pool) {
    free(s);
    return NULL;
  }
  s->pool_bytes = pool_bytes;
  s->rt = rt_runtime_init(s->pool, pool_bytes, IR_MAX_SNODES, JIT_SPARSE_AMBIENT_BYTES);
  if (!s->rt) {   /* cannot happen after the size check, but never crash */
    snprintf(err, errlen, "cannot place the sparse runtime in a pool of %llu bytes",
             (unsigned long long)pool_bytes);
    rt_mempool_release(s->pool, pool_bytes);
    free(s);
    return NULL;
  }
  /* Cells stop this far short of the end, so that a program that filled
  ** its pool can still build the lists that deactivation needs. */
  uint64_t reserve = pool_bytes / 32;
  if (reserve < (1u << 20)) reserve = 1u << 20;
  if (reserve > (64u << 20)) reserve = 64u << 20;
  s->rt->reserve = reserve;
  for (int i = 0; i < IR_MAX_SNODES; i++) s->parent[i] = -1;
  return s;
}

void jit_sparse_destroy(jit_sparse *s) {
  if (!s) return;
  for (int t = 0; t < IR_MAX_TREES; t++) free(s->free_roots[t].v);
  rt_mempool_release(s->pool, s->pool_bytes);
  free(s);
}

rt_runtime *jit_sparse_runtime(jit_sparse *s) { return s ? s->rt : NULL; }

/* ---- registration ---------------------------------------------------------------- */

static int32_t rt_kind_of(ir_snode_kind k) {
  switch (k) {
  case IR_SN_root: case IR_SN_dense: return RT_KIND_DENSE;
  case IR_SN_bitmasked: return RT_KIND_BITMASKED;
  case IR_SN_pointer: return RT_KIND_POINTER;
  case IR_SN_dynamic: return RT_KIND_DYNAMIC;
  default: return -1;
  }
}

/* "S3pointer (fields x, y)": the label and the places under it. */
static void describe_snode(const ir_snode *sn, char *buf, size_t len) {
  char label[64];
  ir_snode_label(sn, label, sizeof label);
  size_t n = (size_t)snprintf(buf, len, "%s", label);
  const ir_snode *stack[64];
  int top = 0, nnames = 0;
  stack[top++] = sn;
  while (top > 0 && n < len) {
    const ir_snode *q = stack[--top];
    if (q->kind == IR_SN_place && q->name) {
      n += (size_t)snprintf(buf + n, len - n, "%s%s", nnames ? ", " : " (fields ", q->name);
      nnames++;
    }
    for (int i = q->nchildren - 1; i >= 0 && top < 64; i--) stack[top++] = q->children[i];
  }
  if (nnames && n < len) snprintf(buf + n, len - n, ")");
}

static void fill_meta(const ir_snode *sn, rt_meta *m) {
  memset(m, 0, sizeof *m);
  m->snode_id = sn->id;
  m->kind = rt_kind_of(sn->kind);
  m->num_cells = sn->kind == IR_SN_root ? 1 : (int32_t)sn->num_cells;
  m->chunk_cells = (int32_t)sn->chunk_cells;
  m->cell_bytes = sn->cell_bytes;
  m->naxes = sn->kind == IR_SN_root ? 0 : sn->naxes;
  /* one container per cell of the level above, in every instance */
  m->containers = 1;
  for (const ir_snode *q = sn->parent; q; q = q->parent)
    if (q->kind != IR_SN_root && m->containers <= INT32_MAX) m->containers *= q->num_cells;
  for (int k = 0; k < m->naxes; k++) {
    m->axis[k] = sn->axes[k];
    m->extent[k] = (int32_t)sn->shape[k];
    m->below[k] = (int32_t)sn->below[sn->axes[k]];
  }
}

static bool add_level(jit_sparse *s, const ir_snode *sn, char *err, size_t errlen) {
  char what[256];
  if (sn->kind == IR_SN_place) return true;
  if (sn->id < 0 || sn->id >= IR_MAX_SNODES) {
    snprintf(err, errlen, "SNode id %d is out of range", sn->id);
    return false;
  }
  if (!s->registered[sn->id]) {
    describe_snode(sn, what, sizeof what);
    if (ir_snode_kind_is_sparse(sn->kind) && sn->cell_bytes > JIT_SPARSE_AMBIENT_BYTES) {
      snprintf(err, errlen,
               "SNode %s has cells of %lld bytes; a cell of a sparse SNode may hold at most %d "
               "bytes: put a sparse level lower in the tree or make the levels under it smaller",
               what, (long long)sn->cell_bytes, JIT_SPARSE_AMBIENT_BYTES);
      return false;
    }
    if (sn->num_cells > INT32_MAX || sn->cell_bytes < 0) {
      snprintf(err, errlen, "SNode %s has %lld cells per container, more than the runtime "
               "supports (2^31 - 1)", what, (long long)sn->num_cells);
      return false;
    }
    rt_meta m;
    fill_meta(sn, &m);
    if (!rt_runtime_add_snode(s->rt, &m)) {
      if (!jit_sparse_take_error(s, NULL, err, errlen))
        snprintf(err, errlen, "the sparse runtime refused SNode %s", what);
      return false;
    }
    s->registered[sn->id] = 1;
    s->parent[sn->id] = sn->parent ? sn->parent->id : -1;
  }
  for (int i = 0; i < sn->nchildren; i++)
    if (!add_level(s, sn->children[i], err, errlen)) return false;
  return true;
}

bool jit_sparse_add_tree(jit_sparse *s, const ir_program *p, int tree, char *err, size_t errlen) {
  if (tree < 0 || tree >= p->ntrees || !p->trees[tree].materialized || !p->trees[tree].root) {
    snprintf(err, errlen, "tree %d is not materialised", tree);
    return false;
  }
  return add_level(s, p->trees[tree].root, err, errlen);
}

/* ---- instances ----------------------------------------------------------------------- */

/* Bytes still free for cells and instances (the reserve is for lists). */
static uint64_t cells_left(const rt_runtime *rt) {
  uint64_t end = rt->pool_size - rt->reserve, used = rt_mempool_used(rt);
  return used < end ? end - used : 0;
}

char *jit_sparse_new_instance(jit_sparse *s, const ir_program *p, int tree, char *err, size_t errlen) {
  root_vec *fr = &s->free_roots[tree];
  if (fr->n > 0) return fr->v[--fr->n];   /* zeroed by jit_sparse_free_instance */
  const ir_snode *root = p->trees[tree].root;
  uint64_t bytes = (uint64_t)(p->trees[tree].bytes > 0 ? p->trees[tree].bytes : 8);
  char *mem = rt_runtime_bump_data(s->rt, bytes, 64, root->id);
  if (!mem) {
    char what[256];
    describe_snode(root, what, sizeof what);
    snprintf(err, errlen,
             "out of device memory: the tree %s needs %llu bytes, but the memory pool of %llu "
             "bytes has only %llu left; raise it with lt.init{device_memory=...}",
             what, (unsigned long long)bytes, (unsigned long long)s->pool_bytes,
             (unsigned long long)cells_left(s->rt));
    /* reported here; the runtime's record would otherwise blame the next launch */
    s->rt->error = RT_RTERR_OK;
    return NULL;
  }
  return mem;
}

static void invalidate_lists(jit_sparse *s, int snode) { s->list_root[snode] = NULL; }

/* Builds the lists of every level from the root down to `level` (the root's
** list holds `root`). Host-side, so it invalidates the launcher's records. */
static void build_lists(jit_sparse *s, const ir_snode *level, char *root) {
  const ir_snode *path[64];
  int n = 0;
  for (const ir_snode *q = level; q && n < 64; q = q->parent) path[n++] = q;
  rt_listgen_root(s->rt, path[n - 1]->id, root);
  invalidate_lists(s, path[n - 1]->id);
  for (int l = n - 2; l >= 0; l--) {
    const ir_snode *lvl = path[l];
    rt_list_clear(s->rt, lvl->id);
    rt_listgen(s->rt, lvl->parent->id, lvl->id, lvl->offset, 0, rt_listgen_size(s->rt, lvl->parent->id));
    invalidate_lists(s, lvl->id);
  }
}

static int depth_of(const ir_snode *q) {
  int d = 0;
  for (; q->parent; q = q->parent) d++;
  return d;
}

static void collect_sparse(const ir_snode *q, const ir_snode **out, int *n) {
  if (ir_snode_kind_is_sparse(q->kind) && *n < IR_MAX_SNODES) out[(*n)++] = q;
  for (int i = 0; i < q->nchildren; i++) collect_sparse(q->children[i], out, n);
}

void jit_sparse_deactivate_all(jit_sparse *s, const ir_snode *level, char *root) {
  static const ir_snode *levels[IR_MAX_SNODES];   /* host, one thread: no need for the stack */
  int n = 0;
  collect_sparse(level, levels, &n);
  /* deepest first, so no cell is freed while sparse cells under it are active */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && depth_of(levels[j]) > depth_of(levels[j - 1]); j--) {
      const ir_snode *t = levels[j];
      levels[j] = levels[j - 1];
      levels[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    const ir_snode *d = levels[i];
    build_lists(s, d, root);
    rt_deactivate_all(s->rt, d->id, 0, rt_listgen_size(s->rt, d->id));
    if (d->kind == IR_SN_pointer || d->kind == IR_SN_dynamic) rt_gc(s->rt, d->id);
  }
}

void jit_sparse_free_instance(jit_sparse *s, const ir_program *p, int tree, char *root) {
  if (!root) return;
  const ir_snode *r = p->trees[tree].root;
  jit_sparse_deactivate_all(s, r, root);
  memset(root, 0, (size_t)p->trees[tree].bytes);   /* dense data under the root */
  for (int i = 0; i < IR_MAX_SNODES; i++)
    if (s->list_root[i] == root) s->list_root[i] = NULL;
  root_vec *fr = &s->free_roots[tree];
  if (fr->n == fr->cap) {
    int ncap = fr->cap ? fr->cap * 2 : 4;
    char **v = realloc(fr->v, (size_t)ncap * sizeof *v);
    if (!v) return;   /* the container stays in the pool, unused */
    fr->v = v;
    fr->cap = ncap;
  }
  fr->v[fr->n++] = root;
}

/* ---- host access ------------------------------------------------------------------------ */

/* Cell number of `lvl` for physical indices phys (snode.h). */
static int32_t cell_of(const ir_snode *lvl, const int64_t *phys) {
  if (lvl->kind == IR_SN_root) return 0;
  int64_t cell = 0;
  for (int k = 0; k < lvl->naxes; k++) {
    int a = lvl->axes[k];
    int64_t c = (phys[a] / lvl->below[a]) % lvl->shape[k];
    cell = cell * lvl->shape[k] + c;
  }
  return (int32_t)cell;
}

/* Physical indices from the virtual indices of `sn` (a place or a level). */
static void to_phys(const ir_snode *sn, const int64_t *idx, int64_t *phys) {
  for (int a = 0; a < IR_MAX_INDICES; a++) phys[a] = 0;
  for (int i = 0; i < sn->nidx; i++) phys[sn->physical_index_position[i]] = idx[i];
}

/* The container of `target` in instance root, walking like generated code:
** activate (act) or look up every cell above it. NULL when a cell on the way
** is inactive, or (with *failed set) when activation ran out of memory. */
static char *walk(jit_sparse *s, const ir_snode *target, char *root, const int64_t *phys, bool act,
                  bool *failed) {
  const ir_snode *path[64];
  int n = 0;
  for (const ir_snode *q = target; q && n < 64; q = q->parent) path[n++] = q;
  char *node = root;
  *failed = false;
  for (int l = n - 1; l > 0; l--) {
    const ir_snode *lvl = path[l], *child = path[l - 1];
    const rt_meta *m = &s->rt->metas[lvl->id];
    int32_t i = cell_of(lvl, phys);
    char *cell = act ? rt_node_activate(m, node, i) : rt_node_lookup_element(m, node, i);
    if (cell == s->rt->sink) {
      *failed = true;
      return NULL;
    }
    if (cell == s->rt->ambient) return NULL;
    node = cell + child->offset;
  }
  return node;
}

char *jit_sparse_element(jit_sparse *s, const ir_snode *place, char *root, const int64_t *idx,
                         bool activate) {
  int64_t phys[IR_MAX_INDICES];
  bool failed;
  to_phys(place, idx, phys);
  return walk(s, place, root, phys, activate, &failed);
}

/* A dynamic's whole-list operations take its parent's indices. */
static bool whole_list(const ir_snode *level, jit_sn_op op) {
  return level->kind == IR_SN_dynamic && (op == JIT_SN_DEACTIVATE || op == JIT_SN_LENGTH);
}

int64_t jit_sparse_snode_op(jit_sparse *s, const ir_snode *level, char *root, const int64_t *idx,
                            jit_sn_op op) {
  int64_t phys[IR_MAX_INDICES];
  bool failed;
  to_phys(whole_list(level, op) ? level->parent : level, idx, phys);
  char *node = walk(s, level, root, phys, op == JIT_SN_ACTIVATE, &failed);
  if (!node) return 0;
  const rt_meta *m = &s->rt->metas[level->id];
  if (level->kind == IR_SN_dynamic && op == JIT_SN_LENGTH) return rt_dynamic_length(m, node);
  if (op == JIT_SN_LENGTH) return -1;
  if (whole_list(level, op)) {
    rt_dynamic_deactivate(m, node, 0);
    return 0;
  }
  int32_t i = cell_of(level, phys);
  switch (op) {
  case JIT_SN_ACTIVATE: return rt_node_activate(m, node, i) != s->rt->sink;
  case JIT_SN_IS_ACTIVE: return rt_node_is_active(m, node, i);
  case JIT_SN_DEACTIVATE: rt_node_deactivate(m, node, i); return 0;
  default: return -1;
  }
}

char *jit_sparse_append(jit_sparse *s, const ir_snode *level, char *root, const int64_t *idx,
                        int32_t *index_out) {
  int64_t phys[IR_MAX_INDICES];
  bool failed;
  *index_out = -1;
  if (level->kind != IR_SN_dynamic) return NULL;
  to_phys(level->parent, idx, phys);
  char *node = walk(s, level, root, phys, true, &failed);
  if (!node) return NULL;
  const rt_meta *m = &s->rt->metas[level->id];
  int32_t i = rt_dynamic_append(m, node);
  if (i < 0) return NULL;
  char *cell = rt_dynamic_activate(m, node, i);
  *index_out = i;
  return cell == s->rt->sink ? NULL : cell;
}

void jit_sparse_gc_all(jit_sparse *s) {
  for (int i = 0; i < IR_MAX_SNODES; i++) {
    if (!s->registered[i]) continue;
    int32_t kind = s->rt->metas[i].kind;
    if ((kind == RT_KIND_POINTER || kind == RT_KIND_DYNAMIC) && s->rt->allocators[i].recycled.size > 0)
      rt_gc(s->rt, i);
  }
}

/* ---- counters and errors ------------------------------------------------------------------- */

void jit_sparse_get_stats(jit_sparse *s, jit_sparse_stats *out) {
  out->pool_bytes = s->pool_bytes;
  out->pool_used = rt_mempool_used(s->rt);
  out->lists_built = __atomic_load_n(&s->rt->lists_built, __ATOMIC_RELAXED);
  out->lists_reused = s->lists_reused;
  out->gc_runs = __atomic_load_n(&s->rt->gc_runs, __ATOMIC_RELAXED);
}

int64_t jit_sparse_active_cells(jit_sparse *s, int snode) {
  if (snode < 0 || snode >= IR_MAX_SNODES || !s->registered[snode]) return 0;
  return rt_runtime_active(s->rt, snode);
}

bool jit_sparse_take_error(jit_sparse *s, const ir_program *p, char *msg, size_t len) {
  rt_runtime *rt = s->rt;
  if (rt->error == RT_RTERR_OK) return false;
  char what[256];
  int sid = rt->error_snode;
  if (p && sid >= 0 && sid < p->nsnodes && p->snodes[sid])
    describe_snode(p->snodes[sid], what, sizeof what);
  else
    snprintf(what, sizeof what, "S%d", sid);
  if (rt->error == RT_RTERR_POOL)
    snprintf(msg, len,
             "out of device memory: SNode %s requested %lld bytes, but the memory pool of %llu "
             "bytes has only %llu left; raise it with lt.init{device_memory=...} or deactivate "
             "cells sooner (the write that failed was lost)",
             what, (long long)rt->error_bytes, (unsigned long long)rt->pool_size,
             (unsigned long long)cells_left(rt));
  else
    rt_runtime_describe_error(rt, what, msg, len);
  rt->error = RT_RTERR_OK;
  rt->error_snode = 0;
  rt->error_bytes = 0;
  return true;
}

/* ---- list reuse --------------------------------------------------------------------------------
** A level's list depends only on which cells of the levels *above* it are
** active (its own cells are enumerated by whoever reads the list). The
** runtime sets rt->changed[L] when a cell of L switches; here that flag is
** turned into a logical time, so one flag serves every list under L. */

static void harvest(jit_sparse *s, int snode) {
  int32_t *f = &s->rt->changed[snode];
  if (__atomic_load_n(f, __ATOMIC_RELAXED)) {
    __atomic_store_n(f, 0, __ATOMIC_RELAXED);
    s->change_stamp[snode] = ++s->clock;
  }
}

bool jit_sparse_list_stale(jit_sparse *s, const ir_program *p, int snode, char *root) {
  (void)p;
  if (snode < 0 || snode >= IR_MAX_SNODES || !s->registered[snode]) return true;
  bool stale = s->list_root[snode] != root || !root;
  for (int a = s->parent[snode]; a >= 0; a = s->parent[a]) {
    harvest(s, a);
    if (s->change_stamp[a] > s->list_stamp[snode]) stale = true;
  }
  if (!stale) s->lists_reused++;
  return stale;
}

void jit_sparse_list_built(jit_sparse *s, const ir_program *p, int snode, char *root) {
  (void)p;
  if (snode < 0 || snode >= IR_MAX_SNODES) return;
  for (int a = s->parent[snode]; a >= 0; a = s->parent[a]) harvest(s, a);
  s->list_root[snode] = root;
  s->list_stamp[snode] = ++s->clock;
}

void jit_sparse_root_list(jit_sparse *s, int root_snode, char *root) {
  if (s->list_root[root_snode] == root && root) return;
  rt_listgen_root(s->rt, root_snode, root);
  s->list_root[root_snode] = root;
  s->list_stamp[root_snode] = ++s->clock;
}
