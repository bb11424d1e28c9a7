/* sparse_activate.c -- reference for bench/run.sh: activation throughput of
** a hand-written sparse grid in the layout of
** `lt.root:pointer(lt.ij, 256):dense(lt.ij, 16):place(v)` (v: f32): a 256 x 256
** table of block pointers, each with a lock, and a block allocator that hands
** out zeroed 16 x 16 blocks from a free list first, then from a bump pointer.
**   gcc -O3 -march=native -ffp-contract=off -fopenmp sparse_activate.c -o sparse_activate
**   OMP_NUM_THREADS=2 ./sparse_activate [reps]
** Each repetition starts from an empty grid and writes W cells into each of
** the blocks of the 50% set (sparse_blocks.h, in drawn order), W consecutive
** writes per block, in one parallel loop; only that loop is timed. Between
** repetitions every block is zeroed and returned to the free list (what
** deactivate_all + GC do in Lattice). Prints "activate_c_ms MS" (median after
** a warm-up), the writes, blocks and a checksum that bench/sparse.lua computes
** the same way. */
#include "sparse_blocks.h"
#include <string.h>

#define W 4                      /* writes per block */
#define PCT 50                   /* blocks activated: this percent of the table */

typedef struct { float c[B][B]; } block_t;

typedef struct {
  block_t *arena;                /* NB*NB blocks, handed out by bump */
  long bump;                     /* atomic */
  block_t **free;                /* zeroed blocks ready for reuse */
  long nfree, free_used;         /* free[0, free_used) taken since the last clear (atomic) */
} allocator;

static block_t *tab[NB * NB];    /* NULL = inactive */
static int lock[NB * NB];

static block_t *allocate(allocator *al) {
  long k = __atomic_fetch_add(&al->free_used, 1, __ATOMIC_RELAXED);
  if (k < al->nfree) return al->free[k];
  return &al->arena[__atomic_fetch_add(&al->bump, 1, __ATOMIC_RELAXED)];
}

/* double-checked locking on the block's lock, as a pointer SNode does */
static block_t *activate(allocator *al, int id) {
  block_t *b = __atomic_load_n(&tab[id], __ATOMIC_ACQUIRE);
  if (b) return b;
  while (__atomic_exchange_n(&lock[id], 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&lock[id], __ATOMIC_RELAXED)) {}
  b = __atomic_load_n(&tab[id], __ATOMIC_RELAXED);
  if (!b) {
    b = allocate(al);
    __atomic_store_n(&tab[id], b, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&lock[id], 0, __ATOMIC_RELEASE);
  return b;
}

/* write number k goes to block list[k / W], cell (k % W) * 85 + 7 of it */
static void write_cells(allocator *al, const int *list, int nblocks) {
#pragma omp parallel for schedule(static)
  for (int k = 0; k < nblocks * W; k++) {
    int id = list[k / W], c = ((k % W) * 85 + 7) % (B * B);
    block_t *b = activate(al, id);
    b->c[c / B][c % B] = (float)(k + 1);
  }
}

/* deactivate everything: keep the unused free entries, zero and return every
** active block (not timed) */
static void clear(allocator *al) {
  long keep = al->free_used < al->nfree ? al->nfree - al->free_used : 0;
  memmove(al->free, al->free + (al->nfree - keep), sizeof(block_t *) * (size_t)keep);
  al->nfree = keep;
  al->free_used = 0;
  for (int id = 0; id < NB * NB; id++) {
    if (!tab[id]) continue;
    memset(tab[id], 0, sizeof(block_t));
    al->free[al->nfree++] = tab[id];
    tab[id] = NULL;
  }
}

/* sum over the cells of active blocks of v weighted by position, and the
** number of active blocks */
static long long checksum(int *blocks) {
  long long s = 0;
  int n = 0;
  for (int id = 0; id < NB * NB; id++) {
    if (!tab[id]) continue;
    n++;
    for (int a = 0; a < B; a++)
      for (int c = 0; c < B; c++) {
        int i = id / NB * B + a, j = id % NB * B + c;
        s += (long long)tab[id]->c[a][c] * (i % 7 + 1) * (j % 5 + 1);
      }
  }
  *blocks = n;
  return s;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 15;
  if (reps < 1 || reps > 1000) reps = 15;
  double *times = xmalloc(sizeof(double) * (size_t)reps);
  int *list;
  int nblocks = choose_blocks(PCT, 0, &list);
  allocator al = { 0 };
  al.arena = calloc((size_t)NB * NB, sizeof(block_t));   /* zero, committed on first write */
  al.free = xmalloc(sizeof(block_t *) * NB * NB);
  if (!al.arena) { fprintf(stderr, "sparse_activate: out of memory\n"); return 1; }
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    clear(&al);
    double t0 = now_ms();
    write_cells(&al, list, nblocks);
    double dt = now_ms() - t0;
    if (r >= 0) times[r] = dt;
  }
  int active;
  long long sum = checksum(&active);
  printf("activate_c_ms %.4f\n", median(times, reps));
  printf("activate_c_writes %d\n", nblocks * W);
  printf("activate_c_blocks %d\n", active);
  printf("activate_c_sum %lld\n", sum);
  free(al.arena); free(al.free); free(list); free(times);
  return 0;
}
