/* dynamic_layouts.c -- the append of bench/dynamic.lua written by hand in C
** over Lattice's own layout, and over simpler ones, to tell what the layout
** costs from what the generated code costs (docs/performance_changes.md,
** "Dynamic appends"). Not run by bench/run.sh.
**
** The default is Lattice's layout: a table of 32-bit pointer slots (the
** pointer level) giving each cell's list node (32 bytes: lock, length, head,
** tail word = last chunk's number << 32 | its pool slot) in a pool, and
** chunks of CHUNK ids with a 16-byte header, taken from a free list that
** GC hands back in another order every call (here: a fresh permutation of
** the chunks the first call used). An append is the slot load, one atomic
** add on the length, the tail word's load and the store; a new chunk is
** made under the list's lock (out of line, as in the runtime).
**   -DCHUNK=0      no chunks: each list is an array of CAP ids, in the pool
**   -DCHUNK=0 -DSTATIC   the same arrays in static memory (bench/dynamic.c's)
**   -DNODE=64      a node per cache line
**   -DCHUNK=n      chunks of n ids
**   -DBUF          Lattice's layout, appends gathered per list in a table
**                  of the thread and appended 16 at a time (cg_append.c)
**   -DPIPE         Lattice's layout, the loop software-pipelined: the next
**                  particle's cell and node are worked out before this
**                  particle's atomic add, so their loads need not wait for it
**   gcc -O3 -march=native -fopenmp dynamic_layouts.c -o layouts
**   OMP_NUM_THREADS=2 ./layouts [reps]
** Prints the append's median over reps calls (after a warm-up) in ms and
** the number of ids stored (262144). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_init.h"
#include "timing.h"

#ifndef NODE
#define NODE 32
#endif
#ifndef CHUNK
#define CHUNK 64
#endif

enum { NP = 262144, G = 32, CAP = 1024, NL = G * G, HEADER = 16 };
#define CHUNK_BYTES (HEADER + CHUNK * 4)
#define POOL_BYTES ((size_t)64 << 20)
#define LISTS_AT ((size_t)32 << 20)   /* where CHUNK=0's arrays sit in the pool */

typedef struct {
  int32_t lock, n;
  uint64_t head, tail;
  char pad[NODE - 24];
} node_t;

static float px[NP], py[NP];
static char *pool;
static uint32_t slots[NL];             /* the pointer level: cell -> node, in units of 8 bytes */
static char **chunks;                  /* the free list */
static int nchunks, chunks_used;
#ifdef STATIC
static int lists[NL][CAP];
#endif

static char *at(char *base, uint64_t slot) { return base + (slot << 3); }

/* the cell particle p falls in */
static int cell_of(int p) { return (int)(px[p] * G) * G + (int)(py[p] * G); }

#if CHUNK > 0
/* the chunk numbered c of d, made (with any before it) under d's lock */
__attribute__((noinline, cold)) static char *walk(char *base, node_t *d, int c) {
  while (__atomic_exchange_n(&d->lock, 1, __ATOMIC_ACQUIRE)) {
  }
  uint64_t tail = __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
  int k = tail ? (int)(tail >> 32) : -1;
  char *chunk = tail ? at(base, (uint32_t)tail) : NULL;
  while (k < c) {
    chunk = chunks[__atomic_fetch_add(&chunks_used, 1, __ATOMIC_RELAXED)];
    k++;
    __atomic_store_n(&d->tail, (uint64_t)k << 32 | (uint64_t)(chunk - base) >> 3, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&d->lock, 0, __ATOMIC_RELEASE);
  return chunk;
}

/* one append of id p to node d */
static inline void append(char *base, node_t *d, int p) {
  int n = __atomic_fetch_add(&d->n, 1, __ATOMIC_ACQ_REL);
  if (n >= CAP) {
    __atomic_fetch_sub(&d->n, 1, __ATOMIC_RELAXED);
    return;
  }
  unsigned k = (unsigned)n / CHUNK;
  uint64_t tail = __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
  char *chunk = tail && (unsigned)(tail >> 32) == k ? at(base, (uint32_t)tail) : walk(base, d, (int)k);
  ((int *)(chunk + HEADER))[(unsigned)n % CHUNK] = p;
}

static node_t *node_of(char *base, int p) {
  return (node_t *)at(base, __atomic_load_n(&slots[cell_of(p)], __ATOMIC_ACQUIRE));
}
#endif

#if defined(BUF) && CHUNK > 0
/* buffered appends, as cg_append.c generates them: a table per thread of
** 1024 entries (node, count, 16 ids) direct mapped by the node's address,
** each full entry appended with one add (rt_dynamic_append_many) */
enum { K = 16, S = 1024 };
typedef struct { uint64_t tag; int32_t n, pad; int32_t v[K]; } entry_t;
static entry_t *tables[64];

static void append_many(char *base, node_t *d, const int *v, int k) {
  int n = __atomic_fetch_add(&d->n, k, __ATOMIC_ACQ_REL);
  int room = n < CAP ? CAP - n : 0, stored = k < room ? k : room;
  if (stored < k) __atomic_fetch_sub(&d->n, k - stored, __ATOMIC_RELAXED);
  for (int i = 0; i < stored;) {
    unsigned j = (unsigned)(n + i), c = j / CHUNK, first = j % CHUNK;
    int run = (int)(CHUNK - first);
    if (run > stored - i) run = stored - i;
    uint64_t tail = __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
    char *chunk = tail && (unsigned)(tail >> 32) == c ? at(base, (uint32_t)tail) : walk(base, d, (int)c);
    memcpy((int *)(chunk + HEADER) + first, v + i, (size_t)run * 4);
    i += run;
  }
}

static void fill_range(char *base, entry_t *t, int lo, int hi) {
  uint16_t taken[S];
  int nt = 0;
  for (int p = lo; p < hi; p++) {
    node_t *d = node_of(base, p);
    uint64_t a = (uint64_t)d, h = ((a >> 5) ^ (a >> 15)) & (S - 1);
    entry_t *e = &t[h];
    if (e->tag != a) {
      if (e->n) append_many(base, (node_t *)e->tag, e->v, e->n);
      else if (!e->tag) taken[nt++] = (uint16_t)h;
      e->tag = a;
      e->n = 0;
    }
    e->v[e->n++] = p;
    if (e->n == K) {
      append_many(base, d, e->v, K);
      e->n = 0;
    }
  }
  for (int i = 0; i < nt; i++) {
    entry_t *e = &t[taken[i]];
    if (e->n) append_many(base, (node_t *)e->tag, e->v, e->n);
    e->tag = 0;
    e->n = 0;
  }
}

static void fill(void) {
  char *const base = pool;
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), id = omp_get_thread_num();
    if (!tables[id]) tables[id] = calloc(S, sizeof(entry_t));
    int nch = nt == 1 ? 8 : nt * 8, per = NP / nch;
#pragma omp for schedule(dynamic, 1)
    for (int c = 0; c < nch; c++) fill_range(base, tables[id], c * per, (c + 1) * per);
  }
}
#elif defined(PIPE) && CHUNK > 0
static void fill(void) {
  char *const base = pool;
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int lo = (int)((long)NP * t / nt), hi = (int)((long)NP * (t + 1) / nt);
    node_t *next = lo < hi ? node_of(base, lo) : NULL;
    for (int p = lo; p < hi; p++) {
      node_t *d = next;
      if (p + 1 < hi) next = node_of(base, p + 1);
      append(base, d, p);
    }
  }
}
#else
static void fill(void) {
  char *const base = pool;   /* in a register, as in the generated loop */
#pragma omp parallel for schedule(static)
  for (int p = 0; p < NP; p++) {
#if CHUNK > 0
    append(base, node_of(base, p), p);
#else
    int c = cell_of(p);
    node_t *d = (node_t *)at(base, __atomic_load_n(&slots[c], __ATOMIC_ACQUIRE));
    int n = __atomic_fetch_add(&d->n, 1, __ATOMIC_ACQ_REL);
    if (n >= CAP) {
      __atomic_fetch_sub(&d->n, 1, __ATOMIC_RELAXED);
      continue;
    }
#if defined(STATIC)
    lists[c][n] = p;
#else
    ((int(*)[CAP])(base + LISTS_AT))[c][n] = p;
#endif
#endif
  }
}
#endif

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 15;
  if (reps < 1 || reps > 1000) reps = 15;
  double *t = malloc(sizeof(double) * (size_t)reps);
  pool = aligned_alloc(4096, POOL_BYTES);
  if (!t || !pool) return 1;
  memset(pool, 0, POOL_BYTES);
  dynamic_positions(px, py, NP);
  /* nodes in the order cells are first appended to, as pointer activation places them */
  char *bump = pool + 4096;
  static char seen[NL];
  for (int p = 0; p < NP; p++) {
    int c = cell_of(p);
    if (!seen[c]) {
      seen[c] = 1;
      slots[c] = (uint32_t)((bump - pool) >> 3);
      bump += NODE;
    }
  }
  nchunks = CHUNK > 0 ? NP / CHUNK + 2 * NL : 0;
  chunks = malloc(sizeof(char *) * (size_t)(nchunks + 1));
  if (!chunks) return 1;
  for (int i = 0; i < nchunks; i++, bump += (CHUNK_BYTES + 7) / 8 * 8) chunks[i] = bump;
  int used = 0;
  for (int r = -1; r < reps; r++) {
    for (int c = 0; c < NL; c++) {
      node_t *d = (node_t *)at(pool, slots[c]);
      d->n = 0;
      d->tail = 0;
    }
    for (int i = used - 1; i > 0; i--) {   /* recycled chunks come back in another order */
      int j = (int)(fmix32((uint32_t)(i + 7919 * r)) % (uint32_t)(i + 1));
      char *x = chunks[i];
      chunks[i] = chunks[j];
      chunks[j] = x;
    }
    chunks_used = 0;
    double t0 = now_ms();
    fill();
    if (r >= 0) t[r] = now_ms() - t0;
    if (r < 0) used = chunks_used;
  }
  long long stored = 0;
  for (int c = 0; c < NL; c++) stored += ((node_t *)at(pool, slots[c]))->n;
  printf("%.4f %lld\n", median(t, reps), stored);
  free(chunks);
  free(t);
  free(pool);
  return 0;
}
