/*
** test_rt_allocator.c -- chunked lists and the per-SNode allocator: fresh cells
** are distinct and zero, recycled cells are not reused before GC, GC gives
** them back zero-filled (all three stages, both stage-0 cases), and running
** out of pool or of chunk slots is a recorded, described error, not a crash.
** The reference is a plain C set of the pointers the test handed out.
*/
#include "check.h"
#include "rt_helpers.h"

enum { PTR = 0 };

static int contains(char **v, int n, char *p) {
  for (int i = 0; i < n; i++)
    if (v[i] == p) return 1;
  return 0;
}

static int distinct(char **v, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (v[i] == v[j]) return 0;
  return 1;
}

/* Lists: indices across chunk boundaries map to distinct, stable addresses. */
static void test_list(void) {
  h_rt h = h_rt_new(64 << 20, 2, 64);
  rt_list l;
  rt_list_init(&l, 24, 1, 0);
  CHECK(l.elem_bytes == 24);
  CHECK(l.chunks == NULL);   /* the table comes with the first element */
  int per_chunk = 1 << l.log2_chunk;
  CHECK(per_chunk * 24 <= RT_LIST_CHUNK_BYTES && per_chunk * 48 > RT_LIST_CHUNK_BYTES);
  int n = per_chunk * 3 + 5;
  for (int i = 0; i < n; i++) {
    int32_t k = rt_list_reserve(h.rt, &l);
    CHECK(k == i);
    int64_t *e = (int64_t *)rt_list_get(&l, k);
    CHECK(e[0] == 0 && e[1] == 0 && e[2] == 0);   /* fresh pool memory */
    e[0] = i;
    e[2] = -i;
  }
  CHECK(rt_list_size(&l) == n);
  for (int i = 0; i < n; i++) {
    int64_t *e = (int64_t *)rt_list_get(&l, i);
    CHECKF(e[0] == i && e[2] == -i, "element %d", i);
    if (i > 0 && (i % per_chunk) != 0) CHECK(rt_list_get(&l, i) == rt_list_get(&l, i - 1) + 24);
  }
  /* Enough chunks to make the table double twice: earlier elements stay put. */
  rt_list many;
  rt_list_init(&many, 8, 1, 0);
  int per8 = 1 << many.log2_chunk, nmany = per8 * 40;
  for (int i = 0; i < nmany; i++) {
    int32_t k = rt_list_reserve(h.rt, &many);
    CHECK(k == i);
    *(int64_t *)rt_list_get(&many, k) = 7 * i;
  }
  CHECK(((int64_t *)many.chunks)[-1] >= 40);
  for (int i = 0; i < nmany; i++) CHECKF(*(int64_t *)rt_list_get(&many, i) == 7 * i, "element %d", i);
  /* A list of at most 100 elements has chunks no larger than that needs and
  ** refuses the 101st. */
  rt_list small;
  rt_list_init(&small, 8, 1, 100);
  CHECK((1 << small.log2_chunk) == 128);
  int cap = 100, got = 0;
  for (int i = 0; i < cap + 3; i++) got += rt_list_reserve(h.rt, &small) >= 0;
  CHECK(got == cap);
  CHECK(rt_list_size(&small) == cap);   /* a full list does not count past its end */
  CHECK(h.rt->error == RT_RTERR_CAPACITY && h.rt->error_snode == 1);
  char msg[512];
  CHECK(rt_runtime_describe_error(h.rt, "S1pointer", msg, sizeof msg));
  CHECK_CONTAINS(msg, "S1pointer");
  CHECK_CONTAINS(msg, "cells");
  h_rt_free(&h);
}

/* allocate / recycle / GC / reuse on one pointer SNode. */
static void test_reuse(int64_t cell_bytes) {
  h_rt h = h_rt_new(256 << 20, 1, 4096);
  rt_meta m = h_meta1(PTR, RT_KIND_POINTER, 16, cell_bytes);
  h_add(&h, m);
  rt_runtime *rt = h.rt;
  int64_t elem = rt_align(cell_bytes, 8);
  enum { N = 3000 };
  static char *cells[N];
  for (int i = 0; i < N; i++) {
    cells[i] = rt_allocator_allocate(rt, PTR);
    CHECK(cells[i] != NULL);
    CHECK(((uintptr_t)cells[i] & 7) == 0);
    CHECK(cells[i] >= h.pool && cells[i] + elem <= h.pool + h.size);
    CHECK(h_all_zero(cells[i], elem));
    h_fill(cells[i], elem, (uint32_t)i);
  }
  CHECK(distinct(cells, N));
  /* Writing one cell never touched another. */
  int intact = 1;
  for (int i = 0; i < N; i++) intact &= h_is_pattern(cells[i], elem, (uint32_t)i);
  CHECK(intact);

  /* Recycle every third cell; until GC, new allocations are fresh memory. */
  static char *recycled[N];
  int nrec = 0;
  for (int i = 0; i < N; i += 3) {
    rt_allocator_recycle(rt, PTR, cells[i]);
    recycled[nrec++] = cells[i];
    cells[i] = NULL;
  }
  for (int k = 0; k < 50; k++) {
    char *p = rt_allocator_allocate(rt, PTR);
    CHECK(!contains(recycled, nrec, p));
    CHECK(!contains(cells, N, p));
    CHECK(h_all_zero(p, elem));
  }
  int64_t runs = rt->gc_runs;
  rt_gc(rt, PTR);
  CHECK(rt->gc_runs == runs + 1);
  uint64_t used_before_gc = rt_mempool_used(rt);   /* GC itself may grow the free list */
  /* After GC exactly the recycled cells come back, each zero-filled, and the
  ** pool does not grow while they last. */
  static char *again[N];
  for (int k = 0; k < nrec; k++) {
    again[k] = rt_allocator_allocate(rt, PTR);
    CHECKF(contains(recycled, nrec, again[k]), "allocation %d after GC is not a recycled cell", k);
    CHECK(h_all_zero(again[k], elem));
  }
  CHECK(distinct(again, nrec));
  CHECK(rt_mempool_used(rt) == used_before_gc);
  char *fresh = rt_allocator_allocate(rt, PTR);
  CHECK(!contains(recycled, nrec, fresh) && !contains(cells, N, fresh));
  /* Cells never recycled kept their contents through all this. */
  intact = 1;
  for (int i = 0; i < N; i++)
    if (cells[i]) intact &= h_is_pattern(cells[i], elem, (uint32_t)i);
  CHECK(intact);
  h_rt_free(&h);
}

/* GC when part of the free list was used since the last GC: stage 0 must keep
** the unused entries, in both the disjoint and the overlapping case, and
** with the work split among several workers. */
static void test_partial_free(int take, int nworkers) {
  h_rt h = h_rt_new(64 << 20, 1, 64);
  h_add(&h, h_meta1(PTR, RT_KIND_POINTER, 4, 32));
  rt_runtime *rt = h.rt;
  enum { R = 40 };
  char *first[R], *second[10];
  for (int i = 0; i < R; i++) first[i] = rt_allocator_allocate(rt, PTR);
  for (int i = 0; i < 10; i++) second[i] = rt_allocator_allocate(rt, PTR);
  for (int i = 0; i < R; i++) rt_allocator_recycle(rt, PTR, first[i]);
  rt_gc(rt, PTR);
  /* Take `take` of the 40 free cells, write into them, then recycle the 10 others. */
  char *taken[R];
  for (int i = 0; i < take; i++) {
    taken[i] = rt_allocator_allocate(rt, PTR);
    CHECK(contains(first, R, taken[i]));
    memset(taken[i], 0x5a, 32);
  }
  for (int i = 0; i < 10; i++) {
    memset(second[i], 0x77, 32);
    rt_allocator_recycle(rt, PTR, second[i]);
  }
  uint64_t used = rt_mempool_used(rt);
  /* GC, stages run as the host would, each worker in turn. */
  for (int w = 0; w < nworkers; w++) rt_gc_stage0(rt, PTR, w, nworkers);
  rt_gc_stage1(rt, PTR);
  for (int w = 0; w < nworkers; w++) rt_gc_stage2(rt, PTR, w, nworkers, 0, 1);
  /* Expected free cells: first[] minus taken[], plus second[]. */
  int expect = R - take + 10;
  char *got[R + 10];
  for (int i = 0; i < expect; i++) {
    got[i] = rt_allocator_allocate(rt, PTR);
    int ok = (contains(first, R, got[i]) && !contains(taken, take, got[i])) ||
             contains(second, 10, got[i]);
    CHECKF(ok, "take=%d workers=%d: allocation %d is not a free cell", take, nworkers, i);
    CHECK(h_all_zero(got[i], 32));
  }
  CHECK(distinct(got, expect));
  CHECK(rt_mempool_used(rt) == used);
  char *next = rt_allocator_allocate(rt, PTR);
  CHECK(!contains(got, expect, next) && !contains(taken, take, next));
  h_rt_free(&h);
}

/* GC stage 2 split among lanes (a GPU block) zero-fills every word. */
static void test_lanes(void) {
  h_rt h = h_rt_new(16 << 20, 1, 512);
  h_add(&h, h_meta1(PTR, RT_KIND_POINTER, 4, 200));
  rt_runtime *rt = h.rt;
  char *c[7];
  for (int i = 0; i < 7; i++) {
    c[i] = rt_allocator_allocate(rt, PTR);
    memset(c[i], 0xff, 200);
    rt_allocator_recycle(rt, PTR, c[i]);
  }
  rt_gc_stage0(rt, PTR, 0, 1);
  rt_gc_stage1(rt, PTR);
  for (int w = 0; w < 2; w++)
    for (int lane = 0; lane < 3; lane++) rt_gc_stage2(rt, PTR, w, 2, lane, 3);
  for (int i = 0; i < 7; i++) CHECK(h_all_zero(c[i], 200));
  /* lane 0 alone appended each cell to the free list once */
  CHECK(rt_list_size(&rt->allocators[PTR].free) == 7);
  h_rt_free(&h);
}

/* Exhaustion: allocation returns NULL, a pointer cell stays inactive and the
** caller writes into the sink; the error names the SNode, the bytes and the pool. */
static void test_exhaustion(void) {
  uint64_t size = rt_runtime_min_pool(3, 1024) + 3 * 4096 * sizeof(char *) * 4 + 300000;
  h_rt h = h_rt_new(size, 3, 1024);
  rt_runtime *rt = h.rt;
  rt_meta m = h_meta1(2, RT_KIND_POINTER, 8, 1000);
  h_add(&h, m);
  rt_meta *pm = rt_runtime_meta(rt, 2);
  char *node = rt_runtime_bump(rt, rt_container_bytes(RT_KIND_POINTER, 8, 1000), 64, -1);
  CHECK(node != NULL);
  int n = 0;
  while (rt_allocator_allocate(rt, 2)) {
    if (++n > 100000) break;
  }
  CHECK(n > 0 && n < 100000);
  CHECK(rt->error == RT_RTERR_POOL);
  CHECK(rt->error_snode == 2);
  CHECK(rt_mempool_used(rt) <= size);
  /* Activating a cell now: no crash, the cell stays inactive, writes go to the sink. */
  char *cell = rt_pointer_activate(pm, node, 3);
  CHECK(cell == rt->sink);
  memset(cell, 0x42, 1000);
  CHECK(!rt_pointer_is_active(pm, node, 3));
  CHECK(rt_pointer_lookup_element(pm, node, 3) == rt->ambient);
  CHECK(h_all_zero(rt->ambient, 1000));
  CHECK(rt_runtime_active(rt, 2) == 0);
  /* Deactivating the never-activated cell recycles nothing. */
  rt_pointer_deactivate(pm, node, 3);
  CHECK(rt_list_size(&rt->allocators[2].recycled) == 0);
  char msg[512], num[64];
  CHECK(rt_runtime_describe_error(rt, "S2pointer", msg, sizeof msg));
  CHECK_CONTAINS(msg, "S2pointer");
  snprintf(num, sizeof num, "%lld bytes", (long long)rt->error_bytes);
  CHECK_CONTAINS(msg, num);
  snprintf(num, sizeof num, "%llu", (unsigned long long)size);
  CHECK_CONTAINS(msg, num);
  /* Without a label the id is printed. */
  CHECK(rt_runtime_describe_error(rt, NULL, msg, sizeof msg));
  CHECK_CONTAINS(msg, "S2");
  h_rt_free(&h);
}

/* Set-up errors: a pool too small for the state, invalid metas. */
static void test_setup_errors(void) {
  char err[128];
  uint64_t need = rt_runtime_min_pool(10, 256);
  char *pool = rt_mempool_reserve(need, err, sizeof err);
  CHECK(rt_runtime_init(pool, need - 1, 10, 256) == NULL);
  rt_mempool_release(pool, need);
  CHECK(rt_mempool_reserve(0, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "size");

  h_rt h = h_rt_new(1 << 20, 4, 64);
  char msg[256];
  CHECK(!rt_runtime_describe_error(h.rt, NULL, msg, sizeof msg));
  rt_meta bad = h_meta1(7, RT_KIND_POINTER, 4, 8);      /* id out of range */
  CHECK(!rt_runtime_add_snode(h.rt, &bad));
  CHECK(h.rt->error == RT_RTERR_META);
  h.rt->error = 0;
  bad = h_meta1(1, RT_KIND_POINTER, 4, 128);            /* cell larger than ambient */
  CHECK(!rt_runtime_add_snode(h.rt, &bad));
  h.rt->error = 0;
  bad = h_meta1(1, RT_KIND_BITMASKED, 4, 8);
  bad.extent[0] = 3;                                    /* extents disagree with cells */
  CHECK(!rt_runtime_add_snode(h.rt, &bad));
  h.rt->error = 0;
  bad = h_meta1(1, RT_KIND_DYNAMIC, 4, 8);
  bad.chunk_cells = 0;
  CHECK(!rt_runtime_add_snode(h.rt, &bad));
  CHECK(rt_runtime_describe_error(h.rt, "S1dynamic", msg, sizeof msg));
  CHECK_CONTAINS(msg, "S1dynamic");
  CHECK(rt_runtime_meta(h.rt, 1) == NULL);
  h.rt->error = 0;
  rt_meta good = h_meta1(1, RT_KIND_DENSE, 4, 1000);    /* dense cells may exceed ambient */
  CHECK(rt_runtime_add_snode(h.rt, &good));
  CHECK(rt_runtime_meta(h.rt, 1) != NULL && rt_runtime_meta(h.rt, 1)->rt == h.rt);
  CHECK(!rt_runtime_add_snode(h.rt, &good));             /* registered twice */
  CHECK(h.rt->error == RT_RTERR_META);
  h_rt_free(&h);
}

/* Dynamic chunks go through the same allocator: deactivation recycles the
** whole chain, GC zero-fills it (next links included). */
static void test_dynamic_chunks(void) {
  h_rt h = h_rt_new(16 << 20, 1, 64);
  rt_meta m = h_meta1(0, RT_KIND_DYNAMIC, 50, 8);
  m.chunk_cells = 4;
  rt_meta *dm = h_add(&h, m);
  rt_runtime *rt = h.rt;
  _Alignas(8) char node[32] = {0};   /* a dynamic node: lock, length, first and last chunk */
  CHECK(rt_container_bytes(RT_KIND_DYNAMIC, 50, 8) <= (int64_t)sizeof node);
  for (int i = 0; i < 10; i++) {
    int32_t k = rt_dynamic_append(dm, node);
    CHECK(k == i);
    *(int64_t *)rt_dynamic_lookup_element(dm, node, k) = 100 + i;
  }
  /* 10 elements in chunks of 4: 3 chunks */
  CHECK(rt_list_size(&rt->allocators[0].data) == 3);
  rt_dynamic_deactivate(dm, node, 0);
  CHECK(rt_list_size(&rt->allocators[0].recycled) == 3);
  CHECK(rt_dynamic_length(dm, node) == 0);
  rt_gc(rt, 0);
  for (int i = 0; i < 3; i++) CHECK(h_all_zero(rt_list_get(&rt->allocators[0].data, i), 8 + 4 * 8));
  for (int i = 0; i < 6; i++) CHECK(rt_dynamic_append(dm, node) == i);
  for (int i = 0; i < 6; i++) CHECK(*(int64_t *)rt_dynamic_lookup_element(dm, node, i) == 0);
  CHECK(rt_list_size(&rt->allocators[0].data) == 3);   /* reused, not grown */
  h_rt_free(&h);
}

int main(void) {
  test_list();
  test_reuse(8);
  test_reuse(24);
  test_reuse(4);
  test_reuse(1000);
  test_partial_free(5, 1);    /* used 5 < unused 35: overlapping move */
  test_partial_free(5, 3);
  test_partial_free(30, 1);   /* used 30 >= unused 10: disjoint move */
  test_partial_free(30, 3);
  test_partial_free(0, 2);
  test_partial_free(40, 2);
  test_lanes();
  test_exhaustion();
  test_setup_errors();
  test_dynamic_chunks();
  return check_finish("test_rt_allocator");
}
