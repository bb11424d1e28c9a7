/* sparse_blocks.h -- shared by the sparse C references of bench/run.sh: the
** grid (a 4096 x 4096 domain in 16 x 16 blocks), the seeded choice of active
** blocks and small helpers (timing: timing.h). bench/sparse.lua makes the same choice
** with the same generator, so both sides work on the same blocks; the
** checksums they print prove it. */
#ifndef SPARSE_BLOCKS_H
#define SPARSE_BLOCKS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timing.h"

#define N 4096                  /* cells along each axis */
#define B 16                    /* cells along each axis of a block */
#define NB (N / B)              /* blocks along each axis: the pointer table is NB x NB */
#define SEED 2463534242u

static int cmp_int(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y;
  return (a > b) - (a < b);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) { fprintf(stderr, "sparse bench: out of memory (%zu bytes)\n", n); exit(1); }
  return p;
}

static uint32_t xorshift32(uint32_t *s) {
  uint32_t x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

/* Blocks active at pct percent occupancy: pct * NB*NB / 100 distinct blocks
** drawn (partial Fisher-Yates) from the interior ones (block coordinates 1 to
** NB-2 on both axes, so no neighbour of an active cell leaves the domain).
** Block id = bx * NB + by. The ids come in the order drawn; sorted if asked.
** Returns the count; *out is malloc'd. */
static int choose_blocks(int pct, int sorted, int **out) {
  int n = (NB - 2) * (NB - 2), count = pct * NB * NB / 100;
  int *ids = xmalloc(sizeof(int) * (size_t)n);
  for (int m = 0; m < n; m++) ids[m] = (1 + m / (NB - 2)) * NB + 1 + m % (NB - 2);
  uint32_t s = SEED;
  for (int k = 0; k < count; k++) {
    int j = k + (int)(xorshift32(&s) % (uint32_t)(n - k));
    int t = ids[k]; ids[k] = ids[j]; ids[j] = t;
  }
  if (sorted) qsort(ids, (size_t)count, sizeof(int), cmp_int);
  *out = ids;
  return count;
}

#endif
