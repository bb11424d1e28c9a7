/*
** jit_sparse.c -- the host side of the sparse runtime (jit_sparse.h): the
** pool, SNode registration, tree instances, host element access, list reuse
** bookkeeping, counters and runtime failures as messages.
**
** The pool is device memory (jit.h): the host never dereferences it. It
** reads and writes single fields with be->mem_read / mem_write, and every
** operation that walks the trees or changes the runtime's state is a request
** (src/runtime/service.h) that be->serve runs where the pool is; the host
** computes the path (levels, cells, offsets) and the device only walks it.
** A failure of the backend itself (a CUDA context lost) is kept as a message
** that jit_sparse_take_error hands out.
*/
#include "jit_sparse.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/host/mempool.h"
#include "../runtime/service.h"
#include "jit.h"

typedef struct {
  char **v;
  int n, cap;
} root_vec;

/* Zeroed pool memory that dropped trees left, by address (adjacent blocks
** merged); root containers of new instances are cut from it first. */
typedef struct {
  char *addr;
  uint64_t bytes;
} free_block;

struct jit_sparse {
  jit_backend *be;
  char *pool;                        /* device address */
  uint64_t pool_bytes;
  rt_runtime *rt;                    /* device address (the start of the pool) */
  /* The state's header as rt_runtime_init left it, read once: its array
  ** addresses and sizes never change. Counters and the error fields are read
  ** afresh (read_header) when needed. */
  rt_runtime hdr;
  bool dev_failed;                   /* a backend call failed: dev_error says why */
  char dev_error[600];
  int32_t parent[IR_MAX_SNODES];     /* parent level of each registered SNode; -1 root */
  uint8_t registered[IR_MAX_SNODES];
  int8_t kind[IR_MAX_SNODES];        /* rt_node_kind of each registered SNode */
  root_vec free_roots[IR_MAX_TREES]; /* root containers of freed instances */
  /* list reuse: which instance each list was built for, and logical times of
  ** the last build of a list and of the last structural change of a level */
  char *list_root[IR_MAX_SNODES];
  uint64_t list_stamp[IR_MAX_SNODES];
  uint64_t change_stamp[IR_MAX_SNODES];
  uint64_t clock;
  int64_t lists_reused;
  uint64_t commit_limit;             /* jit_sparse_set_commit_limit; 0: none */
  char commit_found[64];
  free_block *blocks;                /* jit_sparse_drop_tree */
  bool borrowed_pool;                /* the pool is the host's memory (jit_sparse_create_in) */
  int nblocks, cap_blocks;
};

/* What the pool is called in messages, and what sets its size. */
static const char *pool_name(const jit_sparse *s) {
  return s->borrowed_pool ? "the host's memory pool (lt_runtime_config.pool_memory)" : "the memory pool";
}
static const char *pool_knob(const jit_sparse *s) {
  return s->borrowed_pool ? "a larger block (lt_runtime_config.device_memory)" : "lt.init{device_memory=...}";
}

/* ---- the device, through the backend ---------------------------------------------- */

/* Remembers why the backend failed (the first failure since the last
** jit_sparse_take_error). */
static void device_failed(jit_sparse *s) {
  if (!s->dev_failed)
    snprintf(s->dev_error, sizeof s->dev_error, "the %s backend failed: %s", s->be->name,
             s->be->error[0] ? s->be->error : "unknown error");
  s->dev_failed = true;
}

static bool dev_serve(jit_sparse *s, rt_request *req) {
  if (s->be->serve(s->be, s->rt, req)) return true;
  device_failed(s);
  return false;
}

static bool dev_read(jit_sparse *s, void *dst, const char *src, size_t n) {
  if (s->be->mem_read(s->be, dst, src, n)) return true;
  device_failed(s);
  return false;
}

static bool dev_write(jit_sparse *s, char *dst, const void *src, size_t n) {
  if (s->be->mem_write(s->be, dst, src, n)) return true;
  device_failed(s);
  return false;
}

/* Device addresses of the state's header fields and of its per-SNode arrays. */
#define RT_FIELD(s, f) ((char *)(s)->rt + offsetof(rt_runtime, f))
#define RT_ITEM(s, array, i) ((char *)((s)->hdr.array + (i)))

/* Re-reads the header (counters, bump pointer, error fields); false (and
** the header unchanged) when the backend fails. */
static bool read_header(jit_sparse *s) {
  rt_runtime h;
  if (!dev_read(s, &h, (const char *)s->rt, sizeof h)) return false;
  s->hdr = h;
  return true;
}

jit_sparse *jit_sparse_create(jit_backend *be, uint64_t pool_bytes, char *err, size_t errlen) {
  return jit_sparse_create_in(be, pool_bytes, NULL, err, errlen);
}

jit_sparse *jit_sparse_create_in(jit_backend *be, uint64_t pool_bytes, void *memory, char *err, size_t errlen) {
  if (memory && (!be->host_memory || pool_bytes == 0)) {
    snprintf(err, errlen, "a memory pool in the host's memory needs a backend in host memory (the CPU) and its "
             "size");
    return NULL;
  }
  if (pool_bytes == 0) pool_bytes = be->default_pool ? be->default_pool : JIT_SPARSE_DEFAULT_POOL;
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
  s->be = be;
  be->error[0] = 0;
  s->borrowed_pool = memory != NULL;
  if (memory) memset(memory, 0, pool_bytes);   /* the runtime expects a zeroed pool */
  s->pool = memory ? memory : be->mem_alloc(be, pool_bytes);
  if (!s->pool) {
    snprintf(err, errlen, "%s", be->error[0] ? be->error : "cannot allocate the memory pool");
    free(s);
    return NULL;
  }
  s->pool_bytes = pool_bytes;
  /* Cells stop this far short of the end, so that a program that filled
  ** its pool can still build the lists that deactivation needs. */
  uint64_t reserve = pool_bytes / 32;
  if (reserve < (1u << 20)) reserve = 1u << 20;
  if (reserve > (64u << 20)) reserve = 64u << 20;
  rt_request req = {.op = RT_REQ_INIT, .pool = s->pool, .bytes = pool_bytes,
                    .nsnodes = IR_MAX_SNODES, .ambient_bytes = JIT_SPARSE_AMBIENT_BYTES,
                    .reserve = reserve};
  if (!be->serve(be, NULL, &req)) {
    snprintf(err, errlen, "cannot set up the sparse runtime: %s", be->error);
  } else if (req.failed) {   /* cannot happen after the size check, but never crash */
    snprintf(err, errlen, "cannot place the sparse runtime in a pool of %llu bytes",
             (unsigned long long)pool_bytes);
  } else {
    s->rt = (rt_runtime *)req.addr;
    if (read_header(s)) {
      for (int i = 0; i < IR_MAX_SNODES; i++) s->parent[i] = -1;
      return s;
    }
    snprintf(err, errlen, "cannot read the sparse runtime's state: %s", be->error);
  }
  if (!s->borrowed_pool) be->mem_free(be, s->pool, pool_bytes);
  free(s);
  return NULL;
}

void jit_sparse_destroy(jit_sparse *s) {
  if (!s) return;
  for (int t = 0; t < IR_MAX_TREES; t++) free(s->free_roots[t].v);
  free(s->blocks);
  if (!s->borrowed_pool) s->be->mem_free(s->be, s->pool, s->pool_bytes);
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
    rt_request req = {.op = RT_REQ_ADD_SNODE};
    fill_meta(sn, &req.meta);
    if (!dev_serve(s, &req) || !req.value) {
      if (!jit_sparse_take_error(s, NULL, err, errlen))
        snprintf(err, errlen, "the sparse runtime refused SNode %s", what);
      return false;
    }
    s->registered[sn->id] = 1;
    s->kind[sn->id] = (int8_t)req.meta.kind;
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

void jit_sparse_set_commit_limit(jit_sparse *s, uint64_t bytes, const char *found) {
  s->commit_limit = bytes;
  snprintf(s->commit_found, sizeof s->commit_found, "%s", found ? found : "");
}

void jit_sparse_format_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
  else snprintf(buf, len, "%.2f %s", v, units[u]);
}

/* Whether `bytes` more of the pool fit in the host memory the pool may take;
** else writes why (the tree, the sizes, what to do) to err. */
static bool fits_commit_limit(jit_sparse *s, const ir_snode *root, uint64_t bytes, char *err, size_t errlen) {
  if (!s->commit_limit || !read_header(s)) return true;
  uint64_t used = s->hdr.pool_used;
  if (used <= s->commit_limit && bytes <= s->commit_limit - used) return true;
  char what[256], need[32], have[32], taken[32];
  describe_snode(root, what, sizeof what);
  jit_sparse_format_bytes(bytes, need, sizeof need);
  jit_sparse_format_bytes(s->commit_limit, have, sizeof have);
  jit_sparse_format_bytes(used, taken, sizeof taken);
  snprintf(err, errlen,
           "not enough memory: the tree %s takes %llu bytes (%s) as soon as it is used (its dense "
           "part), but this machine has %s (%s), of which the memory pool already takes %s; make "
           "the fields smaller, put their data under a pointer or dynamic level (memory only for "
           "active cells), or drop other fields and tree instances first",
           what, (unsigned long long)bytes, need, have, s->commit_found, taken);
  return false;
}

/* Bytes still free for cells and instances (the reserve is for lists), as
** of the last read_header. */
static uint64_t cells_left(const jit_sparse *s) {
  uint64_t end = s->hdr.pool_size - s->hdr.reserve, used = s->hdr.pool_used;
  return used < end ? end - used : 0;
}

/* Bytes of an instance's root container. */
static uint64_t instance_bytes(const ir_program *p, int tree) {
  return (uint64_t)(p->trees[tree].bytes > 0 ? p->trees[tree].bytes : 8);
}

/* Gives [addr, addr + bytes) (zeroed) to the free blocks, merged with its
** neighbours; memory that cannot be recorded stays unused. */
static void add_block(jit_sparse *s, char *addr, uint64_t bytes) {
  int i = 0;
  while (i < s->nblocks && s->blocks[i].addr < addr) i++;
  bool after_prev = i > 0 && s->blocks[i - 1].addr + s->blocks[i - 1].bytes == addr;
  bool before_next = i < s->nblocks && addr + bytes == s->blocks[i].addr;
  if (after_prev && before_next) {
    s->blocks[i - 1].bytes += bytes + s->blocks[i].bytes;
    memmove(&s->blocks[i], &s->blocks[i + 1], (size_t)(s->nblocks - i - 1) * sizeof *s->blocks);
    s->nblocks--;
    return;
  }
  if (after_prev) {
    s->blocks[i - 1].bytes += bytes;
    return;
  }
  if (before_next) {
    s->blocks[i].addr = addr;
    s->blocks[i].bytes += bytes;
    return;
  }
  if (s->nblocks == s->cap_blocks) {
    int ncap = s->cap_blocks ? s->cap_blocks * 2 : 16;
    free_block *b = realloc(s->blocks, (size_t)ncap * sizeof *b);
    if (!b) return;
    s->blocks = b;
    s->cap_blocks = ncap;
  }
  memmove(&s->blocks[i + 1], &s->blocks[i], (size_t)(s->nblocks - i) * sizeof *s->blocks);
  s->blocks[i] = (free_block){addr, bytes};
  s->nblocks++;
}

/* `bytes` zeroed bytes, 64-byte aligned, from the smallest free block that
** holds them (the rest stays free); NULL when none does. */
static char *take_block(jit_sparse *s, uint64_t bytes) {
  int best = -1;
  for (int i = 0; i < s->nblocks; i++)
    if (s->blocks[i].bytes >= bytes && (best < 0 || s->blocks[i].bytes < s->blocks[best].bytes)) best = i;
  if (best < 0) return NULL;
  free_block *b = &s->blocks[best];
  char *addr = b->addr;
  uint64_t used = (bytes + 63) & ~(uint64_t)63;   /* the rest starts aligned as the pool hands out */
  if (used < b->bytes) {
    b->addr += used;
    b->bytes -= used;
  } else {
    memmove(b, b + 1, (size_t)(s->nblocks - best - 1) * sizeof *b);
    s->nblocks--;
  }
  return addr;
}

char *jit_sparse_new_instance(jit_sparse *s, const ir_program *p, int tree, char *err, size_t errlen) {
  root_vec *fr = &s->free_roots[tree];
  if (fr->n > 0) return fr->v[--fr->n];   /* zeroed by jit_sparse_free_instance */
  const ir_snode *root = p->trees[tree].root;
  uint64_t bytes = instance_bytes(p, tree);
  char *reused = take_block(s, bytes);
  if (reused) return reused;
  if (!fits_commit_limit(s, root, bytes, err, errlen)) return NULL;
  rt_request req = {.op = RT_REQ_BUMP_DATA, .bytes = bytes, .align = 64, .snode = root->id};
  if (!dev_serve(s, &req)) {
    jit_sparse_take_error(s, p, err, errlen);
    return NULL;
  }
  if (req.failed) {
    char what[256];
    describe_snode(root, what, sizeof what);
    read_header(s);
    snprintf(err, errlen,
             "out of device memory: the tree %s needs %llu bytes, but %s of %llu "
             "bytes has only %llu left; raise it with %s",
             what, (unsigned long long)bytes, pool_name(s), (unsigned long long)s->pool_bytes,
             (unsigned long long)cells_left(s), pool_knob(s));
    /* reported here; the runtime's record would otherwise blame the next launch */
    int32_t ok = RT_RTERR_OK;
    dev_write(s, RT_FIELD(s, error), &ok, sizeof ok);
    return NULL;
  }
  return req.addr;
}

static void invalidate_lists(jit_sparse *s, int snode) { s->list_root[snode] = NULL; }

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

/* Puts the levels from the root down to target's parent into req->path:
** each level's id, the cell the walk takes at phys (NULL: none) and the
** offset of the next level's container (or target's value) in that cell.
** false when the tree is deeper than a request holds (snode.c stops that). */
static bool fill_path(rt_request *req, const ir_snode *target, const int64_t *phys) {
  const ir_snode *path[RT_REQ_MAX_DEPTH + 1];
  int n = 0;
  const ir_snode *q = target;
  for (; q && n <= RT_REQ_MAX_DEPTH; q = q->parent) path[n++] = q;
  if (q) return false;
  req->depth = n - 1;
  for (int l = n - 1, k = 0; l > 0; l--, k++) {
    req->path[k].snode = path[l]->id;
    req->path[k].cell = phys ? cell_of(path[l], phys) : 0;
    req->path[k].offset = path[l - 1]->offset;
  }
  return true;
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
    /* the lists from the root down to d are rebuilt on the device */
    for (const ir_snode *q = d; q; q = q->parent) invalidate_lists(s, q->id);
    rt_request req = {.op = RT_REQ_DEACTIVATE_ALL, .snode = d->id, .root = root};
    if (!fill_path(&req, d, NULL) || !dev_serve(s, &req)) return;
  }
}

void jit_sparse_release_instance(jit_sparse *s, const ir_program *p, int tree, char *root) {
  if (!root) return;
  jit_sparse_deactivate_all(s, p->trees[tree].root, root);
  for (int i = 0; i < IR_MAX_SNODES; i++)
    if (s->list_root[i] == root) s->list_root[i] = NULL;
}

void jit_sparse_free_instance(jit_sparse *s, const ir_program *p, int tree, char *root) {
  if (!root) return;
  const ir_snode *r = p->trees[tree].root;
  jit_sparse_deactivate_all(s, r, root);
  /* dense data under the root; a root that cannot be zeroed is not reused */
  if (!s->be->mem_zero(s->be, root, (size_t)p->trees[tree].bytes)) {
    device_failed(s);
    return;
  }
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

static void drop_levels(jit_sparse *s, const ir_snode *sn) {
  if (sn->kind == IR_SN_place || sn->id < 0 || sn->id >= IR_MAX_SNODES) return;
  for (int i = 0; i < sn->nchildren; i++) drop_levels(s, sn->children[i]);
  int id = sn->id;
  if (!s->registered[id]) return;
  rt_request req = {.op = RT_REQ_DROP_SNODE, .snode = id};
  dev_serve(s, &req);   /* a failed backend: the id is not reused wrongly, nothing worse */
  s->registered[id] = 0;
  s->kind[id] = 0;
  s->parent[id] = -1;
  s->list_root[id] = NULL;
  s->list_stamp[id] = s->change_stamp[id] = 0;
}

void jit_sparse_drop_tree(jit_sparse *s, const ir_program *p, int tree) {
  if (tree < 0 || tree >= p->ntrees || !p->trees[tree].root) return;
  if (p->trees[tree].materialized) drop_levels(s, p->trees[tree].root);
  root_vec *fr = &s->free_roots[tree];
  uint64_t bytes = instance_bytes(p, tree);
  for (int i = 0; i < fr->n; i++) add_block(s, fr->v[i], bytes);
  fr->n = 0;
}

/* ---- host access ------------------------------------------------------------------------ */

/* A walk request (ELEMENT .. APPEND). Only the fields before the meta are
** cleared: a walk never reads the meta nor the path beyond depth, and zeroing
** the whole ~750-byte request was a tenth of a Lua-scope access. */
static void walk_request(rt_request *req, int32_t op, int32_t snode, char *root, bool activate) {
  memset(req, 0, offsetof(rt_request, meta));
  req->op = op;
  req->snode = snode;
  req->root = root;
  req->activate = activate;
}

/* Physical indices from the virtual indices of `sn` (a place or a level). */
static void to_phys(const ir_snode *sn, const int64_t *idx, int64_t *phys) {
  for (int a = 0; a < IR_MAX_INDICES; a++) phys[a] = 0;
  for (int i = 0; i < sn->nidx; i++) phys[sn->physical_index_position[i]] = idx[i];
}

char *jit_sparse_element(jit_sparse *s, const ir_snode *place, char *root, const int64_t *idx,
                         bool activate) {
  int64_t phys[IR_MAX_INDICES];
  to_phys(place, idx, phys);
  rt_request req;
  walk_request(&req, RT_REQ_ELEMENT, 0, root, activate);
  if (!fill_path(&req, place, phys) || !dev_serve(s, &req)) return NULL;
  return req.addr;
}

/* A dynamic's whole-list operations take its parent's indices. */
static bool whole_list(const ir_snode *level, jit_sn_op op) {
  return level->kind == IR_SN_dynamic && (op == JIT_SN_DEACTIVATE || op == JIT_SN_LENGTH);
}

int64_t jit_sparse_snode_op(jit_sparse *s, const ir_snode *level, char *root, const int64_t *idx,
                            jit_sn_op op) {
  static const int32_t ops[] = {[JIT_SN_ACTIVATE] = RT_REQ_ACTIVATE, [JIT_SN_DEACTIVATE] = RT_REQ_DEACTIVATE,
                                [JIT_SN_IS_ACTIVE] = RT_REQ_IS_ACTIVE, [JIT_SN_LENGTH] = RT_REQ_LENGTH};
  if ((int)op < 0 || op > JIT_SN_LENGTH) return -1;
  int64_t phys[IR_MAX_INDICES];
  bool whole = whole_list(level, op);
  to_phys(whole ? level->parent : level, idx, phys);
  rt_request req;
  walk_request(&req, ops[op], level->id, root, op == JIT_SN_ACTIVATE);
  req.cell = whole ? 0 : cell_of(level, phys);
  if (!fill_path(&req, level, phys) || !dev_serve(s, &req)) return 0;
  return req.value;
}

char *jit_sparse_append(jit_sparse *s, const ir_snode *level, char *root, const int64_t *idx,
                        int32_t *index_out) {
  int64_t phys[IR_MAX_INDICES];
  *index_out = -1;
  if (level->kind != IR_SN_dynamic) return NULL;
  to_phys(level->parent, idx, phys);
  rt_request req;
  walk_request(&req, RT_REQ_APPEND, level->id, root, true);
  if (!fill_path(&req, level, phys)) return NULL;
  if (!dev_serve(s, &req)) {
    *index_out = 0;   /* not "full": jit_sparse_take_error has the backend's failure */
    return NULL;
  }
  *index_out = (int32_t)req.value;
  return req.addr;
}

void jit_sparse_gc_all(jit_sparse *s) {
  for (int i = 0; i < IR_MAX_SNODES; i++) {
    if (!s->registered[i] || (s->kind[i] != RT_KIND_POINTER && s->kind[i] != RT_KIND_DYNAMIC)) continue;
    int32_t recycled;
    const char *at = RT_ITEM(s, allocators, i) + offsetof(rt_allocator, recycled) + offsetof(rt_list, size);
    if (!dev_read(s, &recycled, at, sizeof recycled)) return;
    rt_request req = {.op = RT_REQ_GC, .snode = i};
    if (recycled > 0 && !dev_serve(s, &req)) return;
  }
}

/* ---- counters and errors ------------------------------------------------------------------- */

void jit_sparse_get_stats(jit_sparse *s, jit_sparse_stats *out) {
  read_header(s);   /* on failure: the last counters read */
  out->pool_bytes = s->pool_bytes;
  out->pool_used = s->hdr.pool_used;
  out->lists_built = s->hdr.lists_built;
  out->lists_reused = s->lists_reused;
  out->gc_runs = s->hdr.gc_runs;
}

bool jit_sparse_pool_cells(jit_sparse *s, int snode, jit_pool_cells *out) {
  memset(out, 0, sizeof *out);
  if (snode < 0 || snode >= IR_MAX_SNODES || !s->registered[snode] ||
      (s->kind[snode] != RT_KIND_POINTER && s->kind[snode] != RT_KIND_DYNAMIC))
    return false;
  rt_allocator a;
  if (!dev_read(s, &a, RT_ITEM(s, allocators, snode), sizeof a)) return false;
  /* free entries [free_used, free.size) are still to hand out (free_used
  ** runs past the end once the free list is used up) */
  int64_t unused = (int64_t)a.free.size - a.free_used;
  out->reserved = a.data.size;
  out->held = (int64_t)a.data.size - (unused > 0 ? unused : 0) - a.recycled.size;
  if (out->held < 0) out->held = 0;
  out->cell_bytes = a.elem_bytes;
  return true;
}

int64_t jit_sparse_active_cells(jit_sparse *s, int snode) {
  if (snode < 0 || snode >= IR_MAX_SNODES || !s->registered[snode]) return 0;
  /* the sum of the SNode's stripes (rt_count_active); the stride is a pure
  ** function of nsnodes, so it needs no read of the header */
  int64_t stride = rt_active_stride(s->hdr.nsnodes), total = 0;
  for (int k = 0; k < RT_ACTIVE_STRIPES; k++) {
    int64_t n = 0;
    dev_read(s, &n, RT_ITEM(s, active, k * stride + snode), sizeof n);
    total += n;
  }
  return total;
}

bool jit_sparse_take_error(jit_sparse *s, const ir_program *p, char *msg, size_t len) {
  int32_t code = RT_RTERR_OK;
  /* the error word alone first: this runs after every launch */
  if (!s->dev_failed) dev_read(s, &code, RT_FIELD(s, error), sizeof code);
  if (!s->dev_failed && code != RT_RTERR_OK) read_header(s);
  if (s->dev_failed) {
    snprintf(msg, len, "%s", s->dev_error);
    s->dev_failed = false;
    return true;
  }
  if (code == RT_RTERR_OK) return false;
  const rt_runtime *rt = &s->hdr;
  char what[256];
  int sid = rt->error_snode;
  if (p && sid >= 0 && sid < p->nsnodes && p->snodes[sid])
    describe_snode(p->snodes[sid], what, sizeof what);
  else
    snprintf(what, sizeof what, "S%d", sid);
  if (rt->error == RT_RTERR_POOL)
    snprintf(msg, len,
             "out of device memory: SNode %s requested %lld bytes, but %s of %llu "
             "bytes has only %llu left; raise it with %s or deactivate "
             "cells sooner (the write that failed was lost)",
             what, (long long)rt->error_bytes, pool_name(s), (unsigned long long)rt->pool_size,
             (unsigned long long)cells_left(s), pool_knob(s));
  else
    rt_runtime_describe_error(rt, what, msg, len);
  /* error, error_snode and error_bytes are adjacent: clear them in one write */
  static const char zero[offsetof(rt_runtime, error_bytes) + sizeof(int64_t) - offsetof(rt_runtime, error)];
  s->hdr.error = RT_RTERR_OK;
  dev_write(s, RT_FIELD(s, error), zero, sizeof zero);
  return true;
}

/* ---- list reuse --------------------------------------------------------------------------------
** A level's list depends only on which cells of the levels *above* it are
** active (its own cells are enumerated by whoever reads the list). The
** runtime sets rt->changed[L] when a cell of L switches; here that flag is
** turned into a logical time, so one flag serves every list under L. */

static void harvest(jit_sparse *s, int snode) {
  int32_t f = 1;   /* a flag that cannot be read counts as changed */
  char *at = RT_ITEM(s, changed, snode);
  dev_read(s, &f, at, sizeof f);
  if (f) {
    int32_t zero = 0;
    dev_write(s, at, &zero, sizeof zero);
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
  rt_request req = {.op = RT_REQ_LIST_ROOT, .snode = root_snode, .root = root};
  if (!dev_serve(s, &req) || req.failed) {
    s->list_root[root_snode] = NULL;
    return;
  }
  s->list_root[root_snode] = root;
  s->list_stamp[root_snode] = ++s->clock;
}
