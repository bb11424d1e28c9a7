/*
** test_rt_nodes.c -- every SNode kind against a plain C model under long
** seeded random sequences of activate / write / read / is_active / deactivate
** / append / length, with GC between "tasks", over several shapes.
**
** The model keeps, per container and cell, whether it is active and the tag
** of the last pattern written into it (0: the cell must read as zero). Tags
** are unique, so two cells sharing memory, a lost write or a stale cell
** handed out again all show up as a pattern mismatch.
*/
#include "check.h"
#include "rt_helpers.h"

enum { NC = 3, SN = 1 };

typedef struct {
  int kind, cells, chunk;
  int64_t cell_bytes;
} shape;

typedef struct {
  h_rt h;
  rt_meta *m;
  char *node[NC];
  int active[NC][1024];
  uint32_t tag[NC][1024];
  int len[NC];                  /* dynamic: model length */
  uint32_t next_tag;
  const char *what;
} world;

static const char *kind_name(int k) {
  static const char *const n[] = {"dense", "bitmasked", "pointer", "dynamic"};
  return n[k];
}

static int model_active(world *w, int c, int i) {
  if (w->m->kind == RT_KIND_DENSE) return 1;
  return w->m->kind == RT_KIND_DYNAMIC ? i < w->len[c] : w->active[c][i];
}

/* The cell's contents match the model (pattern or zero). */
static int content_ok(world *w, const char *p, int c, int i) {
  uint32_t t = w->tag[c][i];
  return t ? h_is_pattern(p, w->m->cell_bytes, t) : h_all_zero(p, w->m->cell_bytes);
}

static void write_cell(world *w, char *p, int c, int i) {
  w->tag[c][i] = ++w->next_tag;
  h_fill(p, w->m->cell_bytes, w->tag[c][i]);
}

static int64_t model_count(world *w) {
  int64_t n = 0;
  for (int c = 0; c < NC; c++) {
    if (w->m->kind == RT_KIND_DYNAMIC) {
      n += w->len[c];
      continue;
    }
    for (int i = 0; i < w->m->num_cells; i++) n += w->active[c][i];
  }
  return n;
}

/* Every cell of every container against the model. */
static void sweep(world *w, long step) {
  const rt_meta *m = w->m;
  rt_runtime *rt = w->h.rt;
  for (int c = 0; c < NC; c++) {
    if (m->kind == RT_KIND_DYNAMIC) CHECK(rt_dynamic_length(m, w->node[c]) == w->len[c]);
    for (int i = 0; i < m->num_cells; i++) {
      int act = model_active(w, c, i);
      CHECKF(rt_node_is_active(m, w->node[c], i) == act, "%s step %ld: is_active(%d,%d)", w->what,
             step, c, i);
      char *p = rt_node_lookup_element(m, w->node[c], i);
      if (!act && m->kind != RT_KIND_DENSE)
        CHECKF(p == rt->ambient, "%s step %ld: inactive (%d,%d) not ambient", w->what, step, c, i);
      CHECKF(content_ok(w, p, c, i), "%s step %ld: contents of (%d,%d)", w->what, step, c, i);
    }
  }
  CHECKF(h_all_zero(rt->ambient, rt->ambient_bytes), "%s step %ld: ambient written", w->what, step);
  if (m->kind != RT_KIND_DENSE)
    CHECKF(rt_runtime_active(rt, SN) == model_count(w), "%s step %ld: active %lld, model %lld",
           w->what, step, (long long)rt_runtime_active(rt, SN), (long long)model_count(w));
  CHECK(rt->error == RT_RTERR_OK);
}

static void run(shape s, uint64_t seed, long steps) {
  static world w;
  memset(&w, 0, sizeof w);
  char what[96];
  snprintf(what, sizeof what, "%s cells=%d bytes=%lld chunk=%d seed=%llu", kind_name(s.kind),
           s.cells, (long long)s.cell_bytes, s.chunk, (unsigned long long)seed);
  w.what = what;
  w.h = h_rt_new(512 << 20, 2, 1024);
  rt_meta meta = h_meta1(SN, s.kind, s.cells, s.cell_bytes);
  if (s.kind == RT_KIND_DYNAMIC) meta.chunk_cells = s.chunk;
  w.m = h_add(&w.h, meta);
  for (int c = 0; c < NC; c++)
    w.node[c] = rt_runtime_bump(w.h.rt, rt_container_bytes(s.kind, s.cells, s.cell_bytes), 64, -1);
  const rt_meta *m = w.m;
  int sparse_alloc = s.kind == RT_KIND_POINTER || s.kind == RT_KIND_DYNAMIC;
  for (long step = 0; step < steps; step++) {
    int c = h_randn(&seed, NC), i = h_randn(&seed, s.cells);
    char *node = w.node[c];
    int op = h_randn(&seed, 100);
    if (op < 30) {                                  /* activate, check, maybe write */
      char *p = rt_node_activate(m, node, i);
      if (s.kind == RT_KIND_DYNAMIC) {
        if (i >= w.len[c]) w.len[c] = i + 1;
      } else {
        w.active[c][i] = 1;
      }
      CHECKF(p != w.h.rt->ambient && p != w.h.rt->sink, "%s step %ld: activate gave a shared cell",
             what, step);
      CHECKF(p == rt_node_lookup_element(m, node, i), "%s step %ld: activate != lookup", what, step);
      CHECKF(content_ok(&w, p, c, i), "%s step %ld: activated (%d,%d) contents", what, step, c, i);
      if (h_randn(&seed, 3)) write_cell(&w, p, c, i);
    } else if (op < 55) {                           /* read */
      char *p = rt_node_lookup_element(m, node, i);
      CHECKF(content_ok(&w, p, c, i), "%s step %ld: read (%d,%d)", what, step, c, i);
      if (model_active(&w, c, i) && h_randn(&seed, 2)) write_cell(&w, p, c, i);
    } else if (op < 65) {                           /* is_active */
      CHECKF(rt_node_is_active(m, node, i) == model_active(&w, c, i), "%s step %ld: is_active", what,
             step);
    } else if (op < 75) {                           /* deactivate */
      /* dynamic lists are cleared less often so they get long */
      if (s.kind == RT_KIND_DYNAMIC && h_randn(&seed, 4)) continue;
      rt_node_deactivate(m, node, i);
      if (s.kind == RT_KIND_DYNAMIC) {
        for (int k = 0; k < w.len[c]; k++) w.tag[c][k] = 0;
        w.len[c] = 0;
      } else if (s.kind != RT_KIND_DENSE) {
        w.active[c][i] = 0;
        w.tag[c][i] = 0;
      }
    } else if (op < 90 && s.kind == RT_KIND_DYNAMIC) {   /* append */
      int32_t k = rt_dynamic_append(m, node);
      if (w.len[c] < s.cells) {
        CHECKF(k == w.len[c], "%s step %ld: append gave %d, model %d", what, step, k, w.len[c]);
        if (k < 0) continue;
        w.len[c]++;
        char *p = rt_dynamic_lookup_element(m, node, k);
        CHECKF(p != w.h.rt->ambient && content_ok(&w, p, c, k), "%s step %ld: appended cell", what, step);
        write_cell(&w, p, c, k);
      } else {
        CHECKF(k == -1, "%s step %ld: append past capacity gave %d", what, step, k);
      }
      CHECK(rt_dynamic_length(m, node) == w.len[c]);
    } else if (op < 93) {                           /* end of a task: GC */
      if (sparse_alloc) rt_gc(w.h.rt, SN);
    } else if (op < 94) {
      sweep(&w, step);
    }
  }
  sweep(&w, steps);
  /* Everything off, GC, and the allocator holds every cell it ever made. */
  for (int c = 0; c < NC; c++)
    for (int i = 0; i < s.cells; i++) rt_node_deactivate(m, w.node[c], i);
  if (sparse_alloc) {
    rt_gc(w.h.rt, SN);
    rt_allocator *a = &w.h.rt->allocators[SN];
    CHECKF(rt_list_size(&a->free) == rt_list_size(&a->data), "%s: %d free of %d cells", what,
           rt_list_size(&a->free), rt_list_size(&a->data));
  }
  if (s.kind != RT_KIND_DENSE) CHECK(rt_runtime_active(w.h.rt, SN) == 0);
  h_rt_free(&w.h);
}

/* Pointer slots are 32-bit offsets in units of 1 << slot_shift bytes: a pool
** over 32 GiB needs 16-byte units. A 40 GiB pool is only address space (the
** OS commits pages when touched), so the test moves the bump pointer past
** 32 GiB and checks that a cell allocated there is found again. Skipped
** where the address space cannot be reserved. */
static void test_far_slots(void) {
  uint64_t size = 40ULL << 30;
  char err[256];
  char *pool = rt_mempool_reserve(size, err, sizeof err);
  if (!pool) {
    printf("test_far_slots skipped: %s\n", err);
    return;
  }
  rt_runtime *rt = rt_runtime_init(pool, size, 2, 64);
  CHECK(rt != NULL && rt->slot_shift == 4);
  CHECK(rt_runtime_init(pool, (uint64_t)1 << 32, 2, 64)->slot_shift == 3);
  rt = rt_runtime_init(pool, size, 2, 64);
  rt_meta m;
  memset(&m, 0, sizeof m);
  m.snode_id = 1, m.kind = RT_KIND_POINTER, m.num_cells = 4, m.cell_bytes = 24, m.naxes = 1;
  m.extent[0] = 4, m.below[0] = 1;
  CHECK(rt_runtime_add_snode(rt, &m));
  const rt_meta *pm = rt_runtime_meta(rt, 1);
  char *node = rt_runtime_bump(rt, rt_container_bytes(RT_KIND_POINTER, 4, 24), 64, -1);
  rt->pool_used = (33ULL << 30) + 8;   /* the next cells lie beyond 32 GiB */
  char *a = rt_pointer_activate(pm, node, 2);
  CHECK(a != rt->sink && (uint64_t)(a - pool) > (32ULL << 30));
  CHECK(((uintptr_t)a & 15) == 0 && rt->allocators[1].elem_bytes == 32);
  CHECK(rt_pointer_lookup_element(pm, node, 2) == a && rt_pointer_is_active(pm, node, 2));
  CHECK(rt_pointer_lookup_element(pm, node, 1) == rt->ambient && !rt_pointer_is_active(pm, node, 1));
  memset(a, 0x5a, 24);
  CHECK(rt_pointer_activate(pm, node, 2) == a);
  rt_pointer_deactivate(pm, node, 2);
  CHECK(rt_pointer_lookup_element(pm, node, 2) == rt->ambient && rt_runtime_active(rt, 1) == 0);
  /* a pool larger than 32-bit slots can address is refused */
  CHECK(rt_runtime_init(pool, RT_MAX_POOL + 1, 2, 64) == NULL);
  rt_mempool_release(pool, size);
}

int main(void) {
  test_far_slots();
  static const shape shapes[] = {
      {RT_KIND_DENSE, 1, 0, 8},       {RT_KIND_DENSE, 5, 0, 12},     {RT_KIND_DENSE, 64, 0, 4},
      {RT_KIND_BITMASKED, 1, 0, 4},   {RT_KIND_BITMASKED, 33, 0, 12}, {RT_KIND_BITMASKED, 100, 0, 4},
      {RT_KIND_BITMASKED, 64, 0, 24}, {RT_KIND_POINTER, 1, 0, 8},     {RT_KIND_POINTER, 7, 0, 24},
      {RT_KIND_POINTER, 64, 0, 4},    {RT_KIND_POINTER, 16, 0, 1000}, {RT_KIND_DYNAMIC, 1, 1, 4},
      {RT_KIND_DYNAMIC, 10, 4, 8},    {RT_KIND_DYNAMIC, 100, 32, 24}, {RT_KIND_DYNAMIC, 37, 5, 12},
      {RT_KIND_DYNAMIC, 300, 1, 4},
  };
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    run(shapes[k], 0x9e3779b97f4a7c15ULL + k, 20000);
    run(shapes[k], 12345 + 77 * k, 20000);
  }
  return check_finish("test_rt_nodes");
}
