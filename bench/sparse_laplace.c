/* sparse_laplace.c -- reference for bench/run.sh: a 5-point Laplacian over
** the active cells of a sparse 4096 x 4096 grid, written by hand in the
** layout Lattice gives `lt.root:pointer(lt.ij, 256):dense(lt.ij, 16):place(u, lap)`:
** a 256 x 256 table of block pointers (NULL = inactive) and 16 x 16 blocks of
** {u, lap} cells. Neighbours across a block border are found through the
** table; an inactive neighbour reads 0 (a shared zero block).
**   gcc -O3 -march=native -ffp-contract=off -fopenmp sparse_laplace.c -o sparse_laplace
**   OMP_NUM_THREADS=2 ./sparse_laplace [reps]
** For 1%, 10% and 50% of the blocks active (sparse_blocks.h chooses them) it
** prints "laplace_c_ms PCT MS" (median of reps after a warm-up) and
** "laplace_c_sum PCT S", a weighted checksum of lap that bench/sparse.lua
** computes the same way. */
#include "sparse_blocks.h"

typedef struct { float u, lap; } cell_t;          /* place(u, lap): u first */
typedef struct { cell_t c[B][B]; } block_t;       /* dense(lt.ij, 16): row-major, i outer */

static block_t zero_block;

/* the value every active cell of u starts with (also in bench/sparse.lua) */
static float u_init(int i, int j) { return (float)((i * 7 + j * 13) % 17) * 0.25f; }

static const block_t *nb_or_zero(block_t *const *tab, int id) {
  return tab[id] ? tab[id] : &zero_block;
}

/* One parallel pass over the active blocks: the four neighbouring blocks are
** looked up in the table once per block, cells inside the block directly. */
static void laplace(block_t *const *tab, const int *act, int nact) {
#pragma omp parallel for schedule(static)
  for (int k = 0; k < nact; k++) {
    int id = act[k];
    block_t *b = tab[id];
    const block_t *xm = nb_or_zero(tab, id - NB), *xp = nb_or_zero(tab, id + NB);
    const block_t *ym = nb_or_zero(tab, id - 1), *yp = nb_or_zero(tab, id + 1);
    for (int a = 0; a < B; a++) {
      for (int c = 0; c < B; c++) {
        float up = a + 1 < B ? b->c[a + 1][c].u : xp->c[0][c].u;
        float dn = a > 0 ? b->c[a - 1][c].u : xm->c[B - 1][c].u;
        float rt = c + 1 < B ? b->c[a][c + 1].u : yp->c[a][0].u;
        float lf = c > 0 ? b->c[a][c - 1].u : ym->c[a][B - 1].u;
        b->c[a][c].lap = up + dn + rt + lf - 4 * b->c[a][c].u;
      }
    }
  }
}

/* sum over active cells of lap*4 (an integer: u is a multiple of 1/4)
** weighted by the cell's position, so a misplaced value changes it */
static long long checksum(block_t *const *tab, const int *act, int nact) {
  long long s = 0;
  for (int k = 0; k < nact; k++) {
    int id = act[k], bx = id / NB, by = id % NB;
    for (int a = 0; a < B; a++)
      for (int c = 0; c < B; c++) {
        int i = bx * B + a, j = by * B + c;
        s += (long long)(tab[id]->c[a][c].lap * 4) * (i % 7 + 1) * (j % 5 + 1);
      }
  }
  return s;
}

static void run(int pct, int reps, double *times) {
  int *act;
  int nact = choose_blocks(pct, 1, &act);
  block_t **tab = xmalloc(sizeof(block_t *) * NB * NB);
  for (int id = 0; id < NB * NB; id++) tab[id] = NULL;
  block_t *arena = aligned_alloc(64, sizeof(block_t) * (size_t)nact);
  if (!arena) { fprintf(stderr, "sparse_laplace: out of memory\n"); exit(1); }
  /* first touch with the schedule of the loop */
#pragma omp parallel for schedule(static)
  for (int k = 0; k < nact; k++) {
    int id = act[k], bx = id / NB, by = id % NB;
    for (int a = 0; a < B; a++)
      for (int c = 0; c < B; c++) arena[k].c[a][c] = (cell_t){ u_init(bx * B + a, by * B + c), 0 };
  }
  for (int k = 0; k < nact; k++) tab[act[k]] = &arena[k];
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    double t0 = now_ms();
    laplace(tab, act, nact);
    double dt = now_ms() - t0;
    if (r >= 0) times[r] = dt;
  }
  printf("laplace_c_ms %d %.4f\n", pct, median(times, reps));
  printf("laplace_c_sum %d %lld\n", pct, checksum(tab, act, nact));
  printf("laplace_c_blocks %d %d\n", pct, nact);
  free(arena); free(tab); free(act);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 15;
  if (reps < 1 || reps > 1000) reps = 15;
  double *times = xmalloc(sizeof(double) * (size_t)reps);
  static const int pcts[] = { 1, 10, 50 };
  for (int p = 0; p < 3; p++) run(pcts[p], reps, times);
  free(times);
  return 0;
}
