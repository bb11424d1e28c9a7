/*
** test_rt_threads.c -- the runtime under many threads (pthreads): the same
** cells activated by every thread at once, disjoint cells churned through
** activate / deactivate / parallel GC rounds, concurrent bitmask activation,
** concurrent dynamic appends and listgen split among workers. No cell may be
** lost, handed out twice or written by two owners.
**
** Also built with -fsanitize=thread as unit/test_rt_threads_tsan (tests.cmake);
** by hand:
**   gcc -std=c17 -D_GNU_SOURCE -O1 -g -fsanitize=thread -Isrc -Itests/unit
**       src/runtime/[a-z]*.c src/runtime/host/mempool.c tests/unit/test_rt_threads.c
**       -o /tmp/t -lpthread && /tmp/t
*/
#include <pthread.h>

#include "check.h"
#include "rt_helpers.h"

enum { T = 8 };

static pthread_barrier_t barrier;

static void run_threads(void *(*fn)(void *), void *args, size_t argsize) {
  pthread_t th[T];
  pthread_barrier_init(&barrier, NULL, T);
  for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, fn, (char *)args + t * argsize);
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  pthread_barrier_destroy(&barrier);
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static int all_distinct(char **v, int n) {
  char **s = malloc(sizeof *s * (size_t)(n ? n : 1));
  memcpy(s, v, sizeof *s * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_ptr);
  int ok = 1;
  for (int i = 1; i < n; i++) ok &= s[i] != s[i - 1];
  free(s);
  return ok;
}

/* ---- A: every thread activates every cell of one pointer container ---------------- */

enum { NA = 2048, ROUNDS_A = 30 };
typedef struct {
  int t;
  rt_runtime *rt;
  rt_meta *m;
  char *node;
  char **got;                   /* [NA] the cell each activation returned */
} arg_a;

static void *same_cells(void *p) {
  arg_a *a = p;
  uint64_t seed = 1000 + (uint64_t)a->t;
  int order[NA];
  for (int i = 0; i < NA; i++) order[i] = i;
  for (int i = NA - 1; i > 0; i--) {
    int j = h_randn(&seed, i + 1), x = order[i];
    order[i] = order[j];
    order[j] = x;
  }
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < NA; k++) {
    int i = order[k];
    char *cell = rt_pointer_activate(a->m, a->node, i);
    a->got[i] = cell;
    __atomic_fetch_add((int64_t *)cell, 1, __ATOMIC_RELAXED);
  }
  pthread_barrier_wait(&barrier);
  /* deactivate: thread t takes cells i % T == t */
  for (int i = a->t; i < NA; i += T) rt_pointer_deactivate(a->m, a->node, i);
  return NULL;
}

static void test_same_cells(void) {
  h_rt h = h_rt_new(256 << 20, 1, 64);
  rt_meta *m = h_add(&h, h_meta1(0, RT_KIND_POINTER, NA, 16));
  char *node = rt_runtime_bump(h.rt, rt_container_bytes(RT_KIND_POINTER, NA, 16), 64, -1);
  static char *got[T][NA];
  arg_a args[T];
  for (int round = 0; round < ROUNDS_A; round++) {
    for (int t = 0; t < T; t++) args[t] = (arg_a){t, h.rt, m, node, got[t]};
    /* Activation and the counts are checked between the two phases by the
    ** main thread after the join, from what each thread recorded. */
    run_threads(same_cells, args, sizeof args[0]);
    int same = 1;
    for (int i = 0; i < NA; i++)
      for (int t = 1; t < T; t++) same &= got[t][i] == got[0][i];
    CHECKF(same, "round %d: threads got different cells for one index", round);
    CHECKF(all_distinct(got[0], NA), "round %d: one cell handed out for two indices", round);
    /* Every increment landed in the one cell of its index: read them from
    ** the recycled cells before GC zero-fills them. */
    int sums = 1;
    for (int i = 0; i < NA; i++) sums &= *(int64_t *)got[0][i] == T;
    CHECKF(sums, "round %d: increments lost", round);
    CHECK(rt_runtime_active(h.rt, 0) == 0);
    CHECK(rt_list_size(&h.rt->allocators[0].recycled) == NA);
    /* The allocator never made more cells than one round needs. */
    CHECKF(rt_list_size(&h.rt->allocators[0].data) == NA, "round %d: %d cells made", round,
           rt_list_size(&h.rt->allocators[0].data));
    rt_gc(h.rt, 0);
  }
  CHECK(h.rt->error == RT_RTERR_OK);
  h_rt_free(&h);
}

/* ---- B: owners churn disjoint cells; GC stages split among the threads -------------- */

enum { NB_CONT = 4, NB = 256, ROUNDS_B = 60 };
typedef struct {
  int t;
  rt_runtime *rt;
  rt_meta *m;
  char **node;
  uint32_t tag[NB_CONT][NB];    /* model of this thread's own cells: 0 = zero */
  int active[NB_CONT][NB];
  int errors;
} arg_b;

static void *churn(void *p) {
  arg_b *a = p;
  uint64_t seed = 77 + (uint64_t)a->t * 1000003;
  for (int round = 0; round < ROUNDS_B; round++) {
    /* a task: random operations on this thread's own cells (i % T == t) */
    for (int op = 0; op < 2000; op++) {
      int c = h_randn(&seed, NB_CONT), i = h_randn(&seed, NB / T) * T + a->t;
      int r = h_randn(&seed, 10);
      if (r < 5) {
        char *cell = rt_pointer_activate(a->m, a->node[c], i);
        uint32_t *w = (uint32_t *)cell;
        int ok = a->tag[c][i] ? (w[0] == a->tag[c][i] && w[7] == ~a->tag[c][i])
                              : (w[0] == 0 && w[7] == 0);
        a->errors += !ok;
        a->active[c][i] = 1;
        a->tag[c][i] = (uint32_t)(a->t + 1) << 24 | (uint32_t)round << 12 | (uint32_t)op;
        w[0] = a->tag[c][i];
        w[7] = ~a->tag[c][i];
      } else if (r < 8) {
        rt_pointer_deactivate(a->m, a->node[c], i);
        a->active[c][i] = 0;
        a->tag[c][i] = 0;
      } else {
        char *cell = rt_pointer_lookup_element(a->m, a->node[c], i);
        a->errors += a->active[c][i] != rt_pointer_is_active(a->m, a->node[c], i);
        a->errors += a->tag[c][i] ? ((uint32_t *)cell)[0] != a->tag[c][i] : ((uint32_t *)cell)[0] != 0;
      }
    }
    /* end of task, then GC as the host runs it: stage 0 and 2 split among
    ** workers, stage 1 on one thread, a barrier between stages */
    pthread_barrier_wait(&barrier);
    rt_gc_stage0(a->rt, 0, a->t, T);
    pthread_barrier_wait(&barrier);
    if (a->t == 0) rt_gc_stage1(a->rt, 0);
    pthread_barrier_wait(&barrier);
    rt_gc_stage2(a->rt, 0, a->t, T, 0, 1);
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static void test_churn(void) {
  h_rt h = h_rt_new(256 << 20, 1, 64);
  rt_meta *m = h_add(&h, h_meta1(0, RT_KIND_POINTER, NB, 32));
  char *node[NB_CONT];
  for (int c = 0; c < NB_CONT; c++)
    node[c] = rt_runtime_bump(h.rt, rt_container_bytes(RT_KIND_POINTER, NB, 32), 64, -1);
  static arg_b args[T];
  memset(args, 0, sizeof args);
  for (int t = 0; t < T; t++) {
    args[t].t = t;
    args[t].rt = h.rt;
    args[t].m = m;
    args[t].node = node;
  }
  run_threads(churn, args, sizeof args[0]);
  int errors = 0;
  int64_t live = 0;
  for (int t = 0; t < T; t++) errors += args[t].errors;
  CHECKF(errors == 0, "%d cells read back wrong during the churn", errors);
  /* live cells: distinct, and exactly the ones the owners' models say */
  static char *cells[NB_CONT * NB];
  int n = 0, match = 1;
  for (int c = 0; c < NB_CONT; c++)
    for (int i = 0; i < NB; i++) {
      int act = args[i % T].active[c][i];
      match &= rt_pointer_is_active(m, node[c], i) == act;
      if (act) {
        cells[n++] = rt_pointer_lookup_element(m, node[c], i);
        match &= ((uint32_t *)cells[n - 1])[0] == args[i % T].tag[c][i];
      }
    }
  live = n;
  CHECK(match);
  CHECK(all_distinct(cells, n));
  CHECK(rt_runtime_active(h.rt, 0) == live);
  /* After GC every cell made is either live or free (none lost, none twice). */
  rt_allocator *al = &h.rt->allocators[0];
  int nfree = rt_list_size(&al->free) - al->free_used;
  CHECKF(nfree + live == rt_list_size(&al->data), "free %d + live %lld != made %d", nfree,
         (long long)live, rt_list_size(&al->data));
  static char *everything[NB_CONT * NB * 2];
  int k = 0;
  for (int i = 0; i < n; i++) everything[k++] = cells[i];
  for (int i = al->free_used; i < rt_list_size(&al->free) && k < NB_CONT * NB * 2; i++)
    everything[k++] = *(char **)rt_list_get(&al->free, i);
  CHECK(all_distinct(everything, k));
  CHECK(h.rt->gc_runs == ROUNDS_B);
  CHECK(h.rt->error == RT_RTERR_OK);
  h_rt_free(&h);
}

/* ---- C: bitmasked, every thread activates every cell --------------------------------- */

enum { NC_BM = 1000 };
typedef struct {
  int t;
  rt_meta *m;
  char *node;
} arg_c;

static void *bits(void *p) {
  arg_c *a = p;
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < NC_BM; k++) {
    int i = (k * 7 + a->t * 131) % NC_BM;
    char *cell = rt_bitmasked_activate(a->m, a->node, i);
    __atomic_fetch_add((int32_t *)cell, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void test_bitmasked(void) {
  h_rt h = h_rt_new(16 << 20, 1, 64);
  rt_meta *m = h_add(&h, h_meta1(0, RT_KIND_BITMASKED, NC_BM, 4));
  char *node = rt_runtime_bump(h.rt, rt_container_bytes(RT_KIND_BITMASKED, NC_BM, 4), 64, -1);
  arg_c args[T];
  for (int t = 0; t < T; t++) args[t] = (arg_c){t, m, node};
  run_threads(bits, args, sizeof args[0]);
  CHECK(rt_runtime_active(h.rt, 0) == NC_BM);
  int ok = 1;
  for (int i = 0; i < NC_BM; i++) ok &= rt_bitmasked_is_active(m, node, i) && *(int32_t *)(node + 4 * i) == T;
  CHECK(ok);
  h_rt_free(&h);
}

/* ---- D: concurrent appends to one dynamic list -------------------------------------- */

enum { KD = 300, EXTRA = 3, CAP = T * KD };
typedef struct {
  int t;
  rt_meta *m;
  char *node;
  int full;                     /* appends refused */
} arg_d;

static void *appends(void *p) {
  arg_d *a = p;
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < KD + EXTRA; k++) {
    int32_t i = rt_dynamic_append(a->m, a->node);
    if (i < 0) {
      a->full++;
      continue;
    }
    *(int32_t *)rt_dynamic_lookup_element(a->m, a->node, i) = a->t << 16 | k;
  }
  return NULL;
}

static void test_dynamic(void) {
  h_rt h = h_rt_new(64 << 20, 1, 64);
  rt_meta meta = h_meta1(0, RT_KIND_DYNAMIC, CAP, 4);
  meta.chunk_cells = 16;
  rt_meta *m = h_add(&h, meta);
  char *node = rt_runtime_bump(h.rt, rt_container_bytes(RT_KIND_DYNAMIC, CAP, 4), 64, -1);
  arg_d args[T];
  for (int t = 0; t < T; t++) args[t] = (arg_d){t, m, node, 0};
  run_threads(appends, args, sizeof args[0]);
  CHECK(rt_dynamic_length(m, node) == CAP);
  int full = 0;
  for (int t = 0; t < T; t++) full += args[t].full;
  CHECK(full == T * EXTRA);
  /* every (thread, k) value the threads stored is present exactly once */
  static unsigned char seen[T][KD + EXTRA];
  memset(seen, 0, sizeof seen);
  int ok = 1;
  for (int i = 0; i < CAP; i++) {
    int32_t v = *(int32_t *)rt_dynamic_lookup_element(m, node, i);
    int t = v >> 16, k = v & 0xffff;
    if (t < 0 || t >= T || k >= KD + EXTRA || seen[t][k]++) ok = 0;
  }
  CHECK(ok);
  CHECK(rt_list_size(&h.rt->allocators[0].data) == (CAP + 15) / 16);
  CHECK(rt_runtime_active(h.rt, 0) == CAP);
  h_rt_free(&h);
}

/* ---- E: listgen split among workers equals listgen on one thread ------------------------ */

enum { NP = 64, NBM = 32 };
typedef struct {
  int t;
  rt_runtime *rt;
  int32_t begin, end;
} arg_e;

static void *gen(void *p) {
  arg_e *a = p;
  pthread_barrier_wait(&barrier);
  rt_listgen(a->rt, 1, 2, 0, a->begin, a->end);
  return NULL;
}

static int cmp_elem(const void *a, const void *b) {
  const rt_elem *x = a, *y = b;
  return cmp_ptr(&x->container, &y->container);
}

static void test_listgen(void) {
  /* S0 root (dense, 1 cell) -> S1 pointer(i, NP) -> S2 bitmasked(i, NBM) -> i32 */
  h_rt h = h_rt_new(64 << 20, 3, 256);
  rt_runtime *rt = h.rt;
  rt_meta root = h_meta1(0, RT_KIND_DENSE, 1, rt_container_bytes(RT_KIND_POINTER, NP, 0));
  root.naxes = 0;
  h_add(&h, root);
  int64_t bm_bytes = rt_container_bytes(RT_KIND_BITMASKED, NBM, 4);
  rt_meta pm = h_meta1(1, RT_KIND_POINTER, NP, bm_bytes);
  pm.below[0] = NBM;
  rt_meta *p = h_add(&h, pm);
  rt_meta *b = h_add(&h, h_meta1(2, RT_KIND_BITMASKED, NBM, 4));
  char *rootc = rt_runtime_bump(rt, rt_container_bytes(RT_KIND_POINTER, NP, bm_bytes), 64, -1);
  uint64_t seed = 99;
  for (int k = 0; k < 500; k++) {
    int i = h_randn(&seed, NP * NBM);
    rt_bitmasked_activate(b, rt_pointer_activate(p, rootc, i / NBM), i % NBM);
  }
  /* the parent list: the root's one cell holds S1's container; then S1 -> S2 */
  rt_listgen_root(rt, 0, rootc);
  rt_list_clear(rt, 1);
  rt_listgen(rt, 0, 1, 0, 0, rt_listgen_size(rt, 0));
  /* serial reference of S1 -> S2, in the simplest form: one worker */
  rt_list_clear(rt, 2);
  rt_listgen(rt, 1, 2, 0, 0, rt_listgen_size(rt, 1));
  int n = rt_listgen_size(rt, 2);
  rt_elem *ref = malloc(sizeof *ref * (size_t)n);
  for (int i = 0; i < n; i++) ref[i] = *rt_listgen_element(rt, 2, i);
  /* the same, the S1 list's single element duplicated so the workers have a range each */
  for (int k = 1; k < T; k++) {
    int32_t j = rt_list_reserve(rt, &rt->lists[1]);
    *(rt_elem *)rt_list_get(&rt->lists[1], j) = *rt_listgen_element(rt, 1, 0);
  }
  rt_list_clear(rt, 2);
  arg_e args[T];
  for (int t = 0; t < T; t++) args[t] = (arg_e){t, rt, t, t + 1};
  run_threads(gen, args, sizeof args[0]);
  CHECK(rt_listgen_size(rt, 2) == n * T);
  rt_elem *got = malloc(sizeof *got * (size_t)n * T);
  for (int i = 0; i < n * T; i++) got[i] = *rt_listgen_element(rt, 2, i);
  qsort(ref, (size_t)n, sizeof *ref, cmp_elem);
  qsort(got, (size_t)n * T, sizeof *got, cmp_elem);
  int ok = 1;
  for (int i = 0; i < n * T; i++)
    ok &= got[i].container == ref[i / T].container && got[i].coord[0] == ref[i / T].coord[0];
  CHECK(ok);
  free(ref);
  free(got);
  h_rt_free(&h);
}

/* ---- F: racing activate / deactivate on the same few cells --------------------------
** A user race (the result is unspecified), but the allocator must stay sound:
** after GC no cell is live twice and every cell made is live or free. */

enum { NF = 16, OPS_F = 20000 };
typedef struct {
  int t;
  rt_meta *m;
  char *node;
} arg_f;

static void *race(void *p) {
  arg_f *a = p;
  uint64_t seed = 31 + (uint64_t)a->t;
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < OPS_F; k++) {
    int i = h_randn(&seed, NF);
    if (h_randn(&seed, 2))
      *(volatile char *)rt_pointer_activate(a->m, a->node, i);   /* touch it, no write */
    else
      rt_pointer_deactivate(a->m, a->node, i);
  }
  return NULL;
}

static void test_race(void) {
  h_rt h = h_rt_new(64 << 20, 1, 64);
  rt_meta *m = h_add(&h, h_meta1(0, RT_KIND_POINTER, NF, 64));
  char *node = rt_runtime_bump(h.rt, rt_container_bytes(RT_KIND_POINTER, NF, 64), 64, -1);
  arg_f args[T];
  for (int t = 0; t < T; t++) args[t] = (arg_f){t, m, node};
  for (int round = 0; round < 5; round++) {
    run_threads(race, args, sizeof args[0]);
    rt_gc(h.rt, 0);
    char *live[NF + 1];
    int n = 0;
    for (int i = 0; i < NF; i++)
      if (rt_pointer_is_active(m, node, i)) live[n++] = rt_pointer_lookup_element(m, node, i);
    CHECK(all_distinct(live, n));
    CHECK(rt_runtime_active(h.rt, 0) == n);
    rt_allocator *al = &h.rt->allocators[0];
    int nfree = rt_list_size(&al->free) - al->free_used;
    CHECKF(nfree + n == rt_list_size(&al->data), "round %d: free %d + live %d != made %d", round,
           nfree, n, rt_list_size(&al->data));
    char **all = malloc(sizeof *all * (size_t)(nfree + n + 1));
    for (int i = 0; i < n; i++) all[i] = live[i];
    for (int i = 0; i < nfree; i++) all[n + i] = *(char **)rt_list_get(&al->free, al->free_used + i);
    CHECK(all_distinct(all, n + nfree));
    free(all);
  }
  h_rt_free(&h);
}

int main(void) {
  test_same_cells();
  test_churn();
  test_bitmasked();
  test_dynamic();
  test_listgen();
  test_race();
  return check_finish("test_rt_threads");
}
