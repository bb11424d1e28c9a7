/* dynamic.c -- reference for bench/run.sh's dynamic-list row: the particle-in-
** cell bucket fill of bench/dynamic.lua by hand, with OpenMP. Each of the
** 32 x 32 cells has a list of fixed capacity (1024 ids, allocated once) and a
** count, each count on a cache line of its own (4-byte counts side by side
** made 2 threads slower than 1: the threads' increments of neighbouring
** counts fought over one line); an append is one atomic increment of the
** count and a store. So this is the floor for the row: no chunks allocated
** on demand, no pointer level to activate, as a programmer who knows the
** bound would write it.
**   gcc -O3 -march=native -ffp-contract=off -fopenmp dynamic.c -o dynamic
**   OMP_NUM_THREADS=2 ./dynamic [reps]
** Prints dynamic_c_append_ms (median of reps after a warm-up; the counts are
** zeroed between calls, not timed), dynamic_c_sum_ms (a parallel loop over the
** cells summing each list's ids: what the struct-for computes), and the same
** count, longest list and checksum as dynamic.lua. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_init.h"
#include "timing.h"

enum { NP = 262144, G = 32, CAP = 1024 };

static float px[NP], py[NP];
static int list[G * G][CAP];
static struct {
  _Alignas(64) int n;
} count[G * G];
static int64_t sums[G * G];

static void fill(void) {
#pragma omp parallel for schedule(static)
  for (int p = 0; p < NP; p++) {
    int c = (int)(px[p] * G) * G + (int)(py[p] * G);
    int n = __atomic_fetch_add(&count[c].n, 1, __ATOMIC_RELAXED);
    if (n < CAP) list[c][n] = p;
  }
}

static void total(void) {
#pragma omp parallel for schedule(static)
  for (int c = 0; c < G * G; c++) {
    int64_t s = 0;
    for (int k = 0; k < count[c].n; k++) s += list[c][k];
    sums[c] = s;
  }
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 15;
  if (reps < 1 || reps > 1000) reps = 15;
  double *t = malloc(sizeof(double) * (size_t)reps);
  if (!t) return 1;
  dynamic_positions(px, py, NP);
  for (int r = -1; r < reps; r++) {   /* r = -1: warm-up (first touch of the lists) */
    memset(count, 0, sizeof count);
    double t0 = now_ms();
    fill();
    if (r >= 0) t[r] = now_ms() - t0;
  }
  printf("dynamic_c_append_ms %.4f\n", median(t, reps));
  for (int r = -1; r < reps; r++) {
    double t0 = now_ms();
    total();
    if (r >= 0) t[r] = now_ms() - t0;
  }
  printf("dynamic_c_sum_ms %.4f\n", median(t, reps));
  long long n = 0, longest = 0, sum = 0;
  for (int c = 0; c < G * G; c++) {
    n += count[c].n;
    if (count[c].n > longest) longest = count[c].n;
    sum += sums[c] * ((c / G) % 7 + 1) * ((c % G) % 5 + 1);
  }
  printf("dynamic_c_count %lld\ndynamic_c_max %lld\ndynamic_c_sum %lld\n", n, longest, sum);
  free(t);
  return 0;
}
