/* triad.c -- reference for bench/run.sh: a[i] = b[i] + s*c[i] over 2^24
** floats with OpenMP, the same loop a Lattice kernel runs.
**   gcc -O3 -march=native -ffp-contract=off -fopenmp triad.c -o triad && OMP_NUM_THREADS=2 ./triad [reps]
** Prints "triad_ms <median of reps>" and a check value. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timing.h"

#define N (1 << 24)

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 15;
  if (reps < 1 || reps > 1000) reps = 15;
  float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N), *c = malloc(sizeof(float) * N);
  double *t = malloc(sizeof(double) * (size_t)reps);
  if (!a || !b || !c || !t) { fprintf(stderr, "triad: out of memory\n"); return 1; }
  /* first touch in parallel, with the same schedule as the loop */
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; i++) { a[i] = 0; b[i] = (float)(i % 1000) * 0.5f; c[i] = 1.0f; }
  volatile float s = 3.0f;
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    float sv = s;
    double t0 = now_ms();
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) a[i] = b[i] + sv * c[i];
    double dt = now_ms() - t0;
    if (r >= 0) t[r] = dt;
  }
  printf("triad_ms %.4f\n", median(t, reps));
  printf("check %.1f\n", (double)a[N - 1]); /* (2^24-1) % 1000 = 215: 107.5 + 3 */
  free(a); free(b); free(c); free(t);
  return 0;
}
