/*
** kernel_key.c -- the key of a compiled kernel in the offline cache: text
** that names every input of its code generation (jit.h, jit_kernel_key).
**
**   lattice kernel key <JIT_CACHE_FORMAT>
**   <the backend's line: target, CPU and features, LLVM, runtime bitcode and
**    build hashes>
**   debug <0|1> fma <0|1> fast_math <0|1>
**   layout S<id> <kind> tree <t> parent <p> axes ... shape ... (one line per
**          SNode of every tree the kernel touches, every field of ir_snode
**          that the code reads: offsets, cell and container sizes, metadata)
**   <the final IR, as printed>
**
** The printed IR alone leaves out where the fields live; two kernels with
** the same text over trees of other shapes compile to other code, so the
** layouts are part of the key. The key is compared whole when an entry is
** read (kcache.c), so a hash collision can never hand out another kernel.
*/
#include <elf.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/snode.h"
#include "jit.h"
#include "kcache.h"

typedef struct {
  char *s;
  size_t n, cap;
  bool oom;
} buf;

static void add(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(buf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = true;
      return;
    }
    if (b->s && b->n + (size_t)w < b->cap) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= b->n + (size_t)w) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

static void add_i64s(buf *b, const char *what, const int64_t *v, int n) {
  add(b, " %s", what);
  for (int i = 0; i < n; i++) add(b, " %lld", (long long)v[i]);
}

static void add_ints(buf *b, const char *what, const int *v, int n) {
  add(b, " %s", what);
  for (int i = 0; i < n; i++) add(b, " %d", v[i]);
}

static void layout(buf *b, const ir_snode *s) {
  add(b, "layout S%d %s tree %d parent %d dtype %s name %s", s->id, ir_snode_kind_name(s->kind), s->tree,
      s->parent ? s->parent->id : -1, ir_type_name(s->dtype), s->name ? s->name : "-");
  add_ints(b, "axes", s->axes, s->naxes);
  add_i64s(b, "shape", s->shape, s->naxes);
  add(b, " cells %lld chunk %lld nidx %d", (long long)s->num_cells, (long long)s->chunk_cells, s->nidx);
  add_ints(b, "pos", s->physical_index_position, s->nidx);
  add_i64s(b, "total", s->total_shape, s->nidx);
  add_i64s(b, "below", s->below, IR_MAX_INDICES);
  add(b, " cell %lld container %lld offset %lld meta %lld %lld children %d\n", (long long)s->cell_bytes,
      (long long)s->container_bytes, (long long)s->offset, (long long)s->meta_offset, (long long)s->meta_bytes,
      s->nchildren);
  for (int i = 0; i < s->nchildren; i++) layout(b, s->children[i]);
}

typedef struct {
  const ir_program *prog;
  bool trees[IR_MAX_TREES];
} trees_used;

static void mark_tree(ir_stmt *s, void *ud) {
  trees_used *t = ud;
  if (!ir_op_names_snode(s->op) || !t->prog) return;
  const ir_snode *sn = ir_program_snode(t->prog, s->aux);
  if (sn && sn->tree >= 0 && sn->tree < IR_MAX_TREES) t->trees[sn->tree] = true;
}

char *jit_kernel_key(ir_kernel *k, const char *backend, size_t *len) {
  buf b = {0};
  add(&b, "lattice kernel key %d\n%s\ndebug %d fma %d fast_math %d\n", JIT_CACHE_FORMAT, backend ? backend : "",
      k->debug ? 1 : 0, k->fma ? 1 : 0, k->fast_math ? 1 : 0);
  trees_used *t = calloc(1, sizeof *t);
  if (!t) b.oom = true;
  if (t && k->prog) {
    t->prog = k->prog;
    ir_walk(k->body, mark_tree, t);
    for (int i = 0; i < IR_MAX_TREES; i++)
      if (t->trees[i] && k->prog->trees[i].root) {
        add(&b, "tree %d bytes %lld\n", i, (long long)k->prog->trees[i].bytes);
        layout(&b, k->prog->trees[i].root);
      }
  }
  free(t);
  char *ir = ir_print_ex(k, IR_PRINT_LOC);   /* lines reach error messages */
  if (!ir) b.oom = true;
  else add(&b, "%s", ir);
  free(ir);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  *len = b.n;
  return b.s;
}

/* ---- the build's identity ---------------------------------------------------------- */

typedef struct {
  uintptr_t addr;                  /* an address inside the object we look for */
  uint64_t hash;
  bool found;
} build_search;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *ud) {
  (void)size;
  build_search *bs = ud;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && bs->addr >= lo && bs->addr < lo + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
      const unsigned char *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        bs->hash = jit_hash(jit_hash_init, desc, nh->n_descsz);
        bs->found = true;
        return 1;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return 1;   /* our object, without a build id */
}

/* The linker's build id of the binary or library holding the compiler (a
** rebuilt Lattice has another); 0 when it has none (the key then says so,
** and docs/cache.md says to clear the cache after building without one). */
uint64_t jit_build_hash(void) {
  build_search bs = {(uintptr_t)(void *)jit_build_hash, 0, false};
  dl_iterate_phdr(find_build_id, &bs);
  return bs.found ? bs.hash : 0;
}

bool jit_cache_open(jit_cache *c, char **line, const jit_options *o, const char *target, const void *bitcode,
                    size_t bitcode_size) {
  char buf[1200];
  snprintf(buf, sizeof buf, "%s runtime %016llx build %016llx", target,
           (unsigned long long)jit_hash(jit_hash_init, bitcode, bitcode_size), (unsigned long long)jit_build_hash());
  c->dir = strdup(o->cache_dir);
  c->max_bytes = o->cache_max_bytes;
  *line = strdup(buf);
  return c->dir && *line;
}
