/*
** test_rt_listgen.c -- lists of active containers, level by level, against a
** plain C model of which cells are active, for two trees:
**   A: root -> S1 pointer(ij, 8x4) -> S2 bitmasked(ij, 4x4) -> i32
**   B: root -> S4 dense(ji, 3x5) -> S5 pointer(i, 2) -> S6 dynamic(k, 10, chunks of 3) -> i32
** (B's dense level lists j first: a column-major layout). The leaves are
** enumerated from the last list the way a struct-for would, and their
** indices and values compared with the model. Then 1000 cycles of fill,
** listgen, deactivate_all (bottom-up) and GC must leave the pool's
** high-water mark where the first cycle put it.
*/
#include "check.h"
#include "rt_helpers.h"

enum { A0, A1, A2, B0, B4, B5, B6, NSN };
enum { AI = 32, AJ = 16 };                 /* tree A's index space */
enum { BI = 10, BJ = 3, BK = 10 };         /* tree B's */

typedef struct {
  h_rt h;
  rt_runtime *rt;
  rt_meta *a1, *a2, *b4, *b5, *b6;
  char *aroot, *broot;
  /* model */
  int a_on[AI][AJ];
  int32_t a_val[AI][AJ];
  int b_ptr[BI][BJ];                       /* S5 cell (i, j) active */
  int b_len[BI][BJ];
  int32_t b_val[BI][BJ][BK];
  int64_t gcs_expected;                    /* rt_gc calls that had cells to collect */
} world;

static rt_meta meta2(int id, int kind, int a0, int e0, int b0, int a1, int e1, int b1, int64_t cell) {
  rt_meta m = h_meta1(id, kind, e0 * e1, cell);
  m.naxes = 2;
  m.axis[0] = a0, m.extent[0] = e0, m.below[0] = b0;
  m.axis[1] = a1, m.extent[1] = e1, m.below[1] = b1;
  return m;
}

static void setup(world *w) {
  memset(w, 0, sizeof *w);
  w->h = h_rt_new(256 << 20, NSN, 256);
  w->rt = w->h.rt;
  int64_t a2_bytes = rt_container_bytes(RT_KIND_BITMASKED, 16, 4);
  int64_t a1_bytes = rt_container_bytes(RT_KIND_POINTER, 32, a2_bytes);
  rt_meta r = h_meta1(A0, RT_KIND_DENSE, 1, a1_bytes);
  r.naxes = 0;
  h_add(&w->h, r);
  w->a1 = h_add(&w->h, meta2(A1, RT_KIND_POINTER, 0, 8, 4, 1, 4, 4, a2_bytes));
  w->a2 = h_add(&w->h, meta2(A2, RT_KIND_BITMASKED, 0, 4, 1, 1, 4, 1, 4));
  int64_t b6_bytes = rt_container_bytes(RT_KIND_DYNAMIC, BK, 4);
  int64_t b5_bytes = rt_container_bytes(RT_KIND_POINTER, 2, b6_bytes);
  int64_t b4_bytes = rt_container_bytes(RT_KIND_DENSE, 15, b5_bytes);
  r = h_meta1(B0, RT_KIND_DENSE, 1, b4_bytes);
  r.naxes = 0;
  h_add(&w->h, r);
  /* listed axes j then i: cell c = jc * 5 + ic; i's extent under it is 2 */
  w->b4 = h_add(&w->h, meta2(B4, RT_KIND_DENSE, 1, 3, 1, 0, 5, 2, b5_bytes));
  w->b5 = h_add(&w->h, h_meta1(B5, RT_KIND_POINTER, 2, b6_bytes));
  rt_meta d = h_meta1(B6, RT_KIND_DYNAMIC, BK, 4);
  d.axis[0] = 2;
  d.chunk_cells = 3;
  w->b6 = h_add(&w->h, d);
  w->aroot = rt_runtime_bump(w->rt, (uint64_t)a1_bytes, 64, -1);
  w->broot = rt_runtime_bump(w->rt, (uint64_t)b4_bytes, 64, -1);
}

/* ---- writes through the tree, as generated code will do them ---- */

static void a_write(world *w, int i, int j, int32_t v) {
  char *c1 = rt_pointer_activate(w->a1, w->aroot, (i / 4) * 4 + j / 4);
  *(int32_t *)rt_bitmasked_activate(w->a2, c1, (i % 4) * 4 + j % 4) = v;
  w->a_on[i][j] = 1;
  w->a_val[i][j] = v;
}

static void a_deactivate(world *w, int i, int j) {
  char *c1 = rt_pointer_lookup_element(w->a1, w->aroot, (i / 4) * 4 + j / 4);
  if (c1 != w->rt->ambient) rt_bitmasked_deactivate(w->a2, c1, (i % 4) * 4 + j % 4);
  w->a_on[i][j] = 0;
}

/* Switches off a whole S1 cell: its bitmasked cells first (bottom-up). */
static void a_deactivate_block(world *w, int bi, int bj) {
  char *c1 = rt_pointer_lookup_element(w->a1, w->aroot, bi * 4 + bj);
  if (c1 != w->rt->ambient)
    for (int c = 0; c < 16; c++) rt_bitmasked_deactivate(w->a2, c1, c);
  rt_pointer_deactivate(w->a1, w->aroot, bi * 4 + bj);
  for (int i = bi * 4; i < bi * 4 + 4; i++)
    for (int j = bj * 4; j < bj * 4 + 4; j++) w->a_on[i][j] = 0;
}

static char *b_list(world *w, int i, int j) {
  char *c4 = rt_dense_activate(w->b4, w->broot, j * 5 + i / 2);
  return rt_pointer_activate(w->b5, c4, i % 2);
}

static void b_append(world *w, int i, int j, int32_t v) {
  char *dyn = b_list(w, i, j);
  w->b_ptr[i][j] = 1;
  int32_t k = rt_dynamic_append(w->b6, dyn);
  if (w->b_len[i][j] == BK) {
    CHECK(k == -1);
    return;
  }
  CHECK(k == w->b_len[i][j]);
  *(int32_t *)rt_dynamic_lookup_element(w->b6, dyn, k) = v;
  w->b_val[i][j][w->b_len[i][j]++] = v;
}

static void b_clear(world *w, int i, int j, int drop_pointer) {
  char *c4 = rt_dense_lookup_element(w->b4, w->broot, j * 5 + i / 2);
  char *dyn = rt_pointer_lookup_element(w->b5, c4, i % 2);
  if (dyn != w->rt->ambient) rt_dynamic_deactivate(w->b6, dyn, 0);
  w->b_len[i][j] = 0;
  if (drop_pointer) {
    rt_pointer_deactivate(w->b5, c4, i % 2);
    w->b_ptr[i][j] = 0;
  }
}

/* ---- listgen and the comparison with the model ---- */

static void gen_all(world *w) {
  rt_runtime *rt = w->rt;
  rt_listgen_root(rt, A0, w->aroot);
  rt_list_clear(rt, A1);
  rt_listgen(rt, A0, A1, 0, 0, rt_listgen_size(rt, A0));
  rt_list_clear(rt, A2);
  /* two ranges, as two workers would split it */
  int n1 = rt_listgen_size(rt, A1);
  rt_listgen(rt, A1, A2, 0, 0, n1 / 2);
  rt_listgen(rt, A1, A2, 0, n1 / 2, n1);
  rt_listgen_root(rt, B0, w->broot);
  rt_list_clear(rt, B4);
  rt_listgen(rt, B0, B4, 0, 0, rt_listgen_size(rt, B0));
  rt_list_clear(rt, B5);
  rt_listgen(rt, B4, B5, 0, 0, rt_listgen_size(rt, B4));
  rt_list_clear(rt, B6);
  int n5 = rt_listgen_size(rt, B5);
  for (int k = 0; k < n5; k++) rt_listgen(rt, B5, B6, 0, k, k + 1);
}

static void compare(world *w, int round) {
  rt_runtime *rt = w->rt;
  /* A1: one container, the root's */
  CHECK(rt_listgen_size(rt, A1) == 1 && rt_listgen_element(rt, A1, 0)->container == w->aroot);
  /* A2: one container per active S1 cell, at the block's corner */
  int blocks[8][4] = {{0}}, nblocks = 0;
  for (int bi = 0; bi < 8; bi++)
    for (int bj = 0; bj < 4; bj++) {
      blocks[bi][bj] = rt_pointer_is_active(w->a1, w->aroot, bi * 4 + bj);
      nblocks += blocks[bi][bj];
    }
  CHECKF(rt_listgen_size(rt, A2) == nblocks, "round %d: %d A2 containers, %d active S1 cells", round,
         rt_listgen_size(rt, A2), nblocks);
  /* struct-for over the leaves from the A2 list */
  static int seen[AI][AJ];
  memset(seen, 0, sizeof seen);
  int ok = 1;
  for (int e = 0; e < rt_listgen_size(rt, A2); e++) {
    rt_elem *el = rt_listgen_element(rt, A2, e);
    int bi = el->coord[0] / 4, bj = el->coord[1] / 4;
    ok &= el->coord[0] % 4 == 0 && el->coord[1] % 4 == 0 && bi < 8 && bj < 4 && blocks[bi][bj] == 1;
    if (!ok) break;
    blocks[bi][bj] = 2;                    /* each block listed once */
    ok &= el->container == rt_pointer_lookup_element(w->a1, w->aroot, bi * 4 + bj);
    for (int c = 0; c < 16; c++) {
      if (!rt_bitmasked_is_active(w->a2, el->container, c)) continue;
      int i = el->coord[0] + c / 4, j = el->coord[1] + c % 4;
      seen[i][j] = 1;
      ok &= *(int32_t *)rt_bitmasked_lookup_element(w->a2, el->container, c) == w->a_val[i][j];
    }
  }
  for (int i = 0; i < AI; i++)
    for (int j = 0; j < AJ; j++) ok &= seen[i][j] == w->a_on[i][j];
  CHECKF(ok, "round %d: tree A's leaves differ from the model", round);

  /* B4: one container; B5: 15 containers (dense cells always active) */
  CHECK(rt_listgen_size(rt, B4) == 1);
  CHECKF(rt_listgen_size(rt, B5) == 15, "round %d: %d B5 containers", round, rt_listgen_size(rt, B5));
  int b5seen[5][3] = {{0}};
  ok = 1;
  for (int e = 0; e < rt_listgen_size(rt, B5); e++) {
    rt_elem *el = rt_listgen_element(rt, B5, e);
    int i = el->coord[0], j = el->coord[1];
    ok &= i % 2 == 0 && i < BI && j < BJ && el->coord[2] == 0;
    if (!ok) break;
    ok &= !b5seen[i / 2][j]++;
    ok &= el->container == rt_dense_lookup_element(w->b4, w->broot, j * 5 + i / 2);
  }
  CHECKF(ok, "round %d: B5 containers or their coordinates are wrong", round);
  /* B6: one list per active S5 cell, enumerated with its length */
  int want = 0;
  for (int i = 0; i < BI; i++)
    for (int j = 0; j < BJ; j++) want += w->b_ptr[i][j];
  CHECKF(rt_listgen_size(rt, B6) == want, "round %d: %d B6 containers, model %d", round,
         rt_listgen_size(rt, B6), want);
  int bseen[BI][BJ] = {{0}};
  ok = 1;
  for (int e = 0; e < rt_listgen_size(rt, B6); e++) {
    rt_elem *el = rt_listgen_element(rt, B6, e);
    int i = el->coord[0], j = el->coord[1];
    ok &= i < BI && j < BJ && el->coord[2] == 0 && w->b_ptr[i][j] && !bseen[i][j]++;
    if (!ok) break;
    int n = rt_dynamic_length(w->b6, el->container);
    ok &= n == w->b_len[i][j];
    for (int k = 0; k < n && ok; k++)
      ok &= *(int32_t *)rt_dynamic_lookup_element(w->b6, el->container, k) == w->b_val[i][j][k];
  }
  CHECKF(ok, "round %d: tree B's lists differ from the model", round);
  CHECK(h_all_zero(rt->ambient, rt->ambient_bytes));
}

static void test_random(uint64_t seed) {
  static world w;
  setup(&w);
  int32_t v = 1;
  for (int round = 0; round < 300; round++) {
    for (int op = 0; op < 40; op++) {
      int r = h_randn(&seed, 20);
      int i = h_randn(&seed, AI), j = h_randn(&seed, AJ);
      if (r < 8) a_write(&w, i, j, v++);
      else if (r < 11) a_deactivate(&w, i, j);
      else if (r < 12) a_deactivate_block(&w, i / 4, j / 4);
      else if (r < 17) b_append(&w, i % BI, j % BJ, v++);
      else if (r < 19) b_clear(&w, i % BI, j % BJ, 0);
      else b_clear(&w, i % BI, j % BJ, 1);
    }
    gen_all(&w);
    compare(&w, round);
    /* end of the task: GC the SNodes that allocate */
    rt_gc(w.rt, A1);
    rt_gc(w.rt, B5);
    rt_gc(w.rt, B6);
  }
  CHECK(w.rt->error == RT_RTERR_OK);
  h_rt_free(&w.h);
}

/* deactivate_all, bottom-up, from freshly generated lists */
static void deactivate_everything(world *w) {
  rt_runtime *rt = w->rt;
  gen_all(w);
  rt_deactivate_all(rt, A2, 0, rt_listgen_size(rt, A2));
  rt_deactivate_all(rt, A1, 0, rt_listgen_size(rt, A1));
  rt_deactivate_all(rt, B6, 0, rt_listgen_size(rt, B6));
  int n5 = rt_listgen_size(rt, B5);
  rt_deactivate_all(rt, B5, 0, n5 / 2);
  rt_deactivate_all(rt, B5, n5 / 2, n5);
  /* a GC counts (gc_runs) only when it has recycled cells to collect */
  const int32_t levels[3] = {A1, B5, B6};
  for (int i = 0; i < 3; i++) {
    w->gcs_expected += rt->allocators[levels[i]].recycled.size > 0;
    rt_gc(rt, levels[i]);
  }
  memset(w->a_on, 0, sizeof w->a_on);
  memset(w->b_ptr, 0, sizeof w->b_ptr);
  memset(w->b_len, 0, sizeof w->b_len);
}

static void test_high_water(void) {
  static world w;
  setup(&w);
  rt_runtime *rt = w.rt;
  uint64_t seed = 4242, mark = 0;
  int32_t v = 1;
  int64_t built0 = rt->lists_built;
  enum { CYCLES = 1000 };
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    if (cycle == 0) {                      /* the largest fill first */
      for (int i = 0; i < AI; i++)
        for (int j = 0; j < AJ; j++) a_write(&w, i, j, v++);
      for (int i = 0; i < BI; i++)
        for (int j = 0; j < BJ; j++)
          for (int k = 0; k < BK; k++) b_append(&w, i, j, v++);
    } else {
      int n = h_randn(&seed, 300);
      for (int k = 0; k < n; k++) a_write(&w, h_randn(&seed, AI), h_randn(&seed, AJ), v++);
      n = h_randn(&seed, 200);
      for (int k = 0; k < n; k++) b_append(&w, h_randn(&seed, BI), h_randn(&seed, BJ), v++);
    }
    if (cycle % 100 == 0) {
      gen_all(&w);
      compare(&w, cycle);
    }
    deactivate_everything(&w);
    int64_t active = rt_runtime_active(rt, A1) + rt_runtime_active(rt, A2) +
                     rt_runtime_active(rt, B5) + rt_runtime_active(rt, B6);
    CHECKF(active == 0, "cycle %d: %lld cells still active", cycle, (long long)active);
    if (cycle == 0) mark = rt_mempool_used(rt);
    CHECKF(rt_mempool_used(rt) == mark, "cycle %d: pool high-water mark %llu, first cycle %llu",
           cycle, (unsigned long long)rt_mempool_used(rt), (unsigned long long)mark);
  }
  /* After the last deactivation every list generated from the root is empty
  ** below the first levels. */
  gen_all(&w);
  CHECK(rt_listgen_size(rt, A2) == 0 && rt_listgen_size(rt, B6) == 0);
  CHECK(rt_listgen_size(rt, B5) == 15);
  /* gen_all clears (and so builds) 7 lists; it ran once per cycle, plus the
  ** compare cycles and the call above */
  CHECKF(rt->lists_built - built0 == 7 * (CYCLES + CYCLES / 100 + 1), "%lld lists built",
         (long long)(rt->lists_built - built0));
  CHECKF(rt->gc_runs == w.gcs_expected && w.gcs_expected > CYCLES, "%lld GCs counted, %lld expected",
         (long long)rt->gc_runs, (long long)w.gcs_expected);
  CHECK(rt->error == RT_RTERR_OK);
  h_rt_free(&w.h);
}

int main(void) {
  test_random(7);
  test_random(0xdeadbeef);
  test_high_water();
  return check_finish("test_rt_listgen");
}
