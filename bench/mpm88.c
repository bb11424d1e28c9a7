/* mpm88.c -- reference for bench/run.sh: the 2-D MLS-MPM step of
** examples/mpm88.lua (8192 particles, 128^2 grid, 50 substeps a frame),
** written by hand in C with OpenMP: the same four loops (clear the grid,
** particle to grid with atomic adds, grid update, grid to particle), the same
** constants and the same initial particles (bench/mpm88_init.h).
**   gcc -O3 -march=native -ffp-contract=off -fopenmp mpm88.c -o mpm88 && OMP_NUM_THREADS=2 ./mpm88 [frames]
** Prints "mpm88_c_ms <median ms per frame>" and the particles' mean position
** after the timed frames ("mpm88_c_mean_x/y", compared with Lattice's by run.sh
** within a tolerance: atomic float adds make the sums' order vary). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpm88_init.h"
#include "timing.h"

enum { NP = MPM_NP, NG = MPM_NG, SUBSTEPS = 50 };

static const float dx = 1.0f / NG, inv_dx = (float)NG, dt = 2e-4f;
static const float p_vol = (1.0f / NG * 0.5f) * (1.0f / NG * 0.5f), p_rho = 1.0f;
static const float gravity = 9.8f, E = 400.0f;
static const int bound = 3;

static float x[NP][2], v[NP][2], C[NP][4], J[NP];   /* C row-major: c00 c01 c10 c11 */
static float grid_v[NG][NG][2], grid_m[NG][NG];

/* The 3x3 cells around particle p: the lower corner, the fractional
** position and the quadratic B-spline weights along each axis. */
static void stencil(int p, int base[2], float fx[2], float w[2][3]) {
  for (int d = 0; d < 2; d++) {
    float X = x[p][d] * inv_dx;
    base[d] = (int)(X - 0.5f);
    fx[d] = X - (float)base[d];
    float f = fx[d];
    w[d][0] = 0.5f * (1.5f - f) * (1.5f - f);
    w[d][1] = 0.75f - (f - 1.0f) * (f - 1.0f);
    w[d][2] = 0.5f * (f - 0.5f) * (f - 0.5f);
  }
}

static void substep(void) {
  const float p_mass = p_vol * p_rho;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < NG; i++)
    for (int j = 0; j < NG; j++) grid_v[i][j][0] = grid_v[i][j][1] = grid_m[i][j] = 0;

#pragma omp parallel for schedule(static)
  for (int p = 0; p < NP; p++) {
    int base[2];
    float fx[2], w[2][3];
    stencil(p, base, fx, w);
    float stress = -dt * 4 * E * p_vol * (J[p] - 1) * inv_dx * inv_dx;
    float a00 = stress + p_mass * C[p][0], a01 = p_mass * C[p][1];
    float a10 = p_mass * C[p][2], a11 = stress + p_mass * C[p][3];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        float dp0 = ((float)i - fx[0]) * dx, dp1 = ((float)j - fx[1]) * dx;
        float weight = w[0][i] * w[1][j];
        float m0 = weight * (p_mass * v[p][0] + a00 * dp0 + a01 * dp1);
        float m1 = weight * (p_mass * v[p][1] + a10 * dp0 + a11 * dp1);
        float *g = grid_v[base[0] + i][base[1] + j];
#pragma omp atomic
        g[0] += m0;
#pragma omp atomic
        g[1] += m1;
#pragma omp atomic
        grid_m[base[0] + i][base[1] + j] += weight * p_mass;
      }
  }

#pragma omp parallel for schedule(static)
  for (int i = 0; i < NG; i++)
    for (int j = 0; j < NG; j++) {
      float *g = grid_v[i][j];
      if (grid_m[i][j] > 0) {
        g[0] /= grid_m[i][j];
        g[1] /= grid_m[i][j];
      }
      g[1] -= dt * gravity;
      if (i < bound && g[0] < 0) g[0] = 0;
      if (i > NG - bound && g[0] > 0) g[0] = 0;
      if (j < bound && g[1] < 0) g[1] = 0;
      if (j > NG - bound && g[1] > 0) g[1] = 0;
    }

#pragma omp parallel for schedule(static)
  for (int p = 0; p < NP; p++) {
    int base[2];
    float fx[2], w[2][3];
    stencil(p, base, fx, w);
    float nv0 = 0, nv1 = 0, c00 = 0, c01 = 0, c10 = 0, c11 = 0;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        float dp0 = ((float)i - fx[0]) * dx, dp1 = ((float)j - fx[1]) * dx;
        float weight = w[0][i] * w[1][j];
        const float *g = grid_v[base[0] + i][base[1] + j];
        nv0 += weight * g[0];
        nv1 += weight * g[1];
        float k = 4 * weight * inv_dx * inv_dx;
        c00 += k * g[0] * dp0;
        c01 += k * g[0] * dp1;
        c10 += k * g[1] * dp0;
        c11 += k * g[1] * dp1;
      }
    v[p][0] = nv0;
    v[p][1] = nv1;
    x[p][0] += dt * nv0;
    x[p][1] += dt * nv1;
    J[p] *= 1 + dt * (c00 + c11);
    C[p][0] = c00, C[p][1] = c01, C[p][2] = c10, C[p][3] = c11;
  }
}

int main(int argc, char **argv) {
  int frames = argc > 1 ? atoi(argv[1]) : 15;
  if (frames < 1 || frames > 1000) frames = 15;
  double *t = malloc(sizeof(double) * (size_t)frames);
  if (!t) return 1;
  uint32_t s = MPM_SEED;
  for (int p = 0; p < NP; p++) {
    x[p][0] = mpm_init_coord(&s);
    x[p][1] = mpm_init_coord(&s);
    v[p][0] = 0, v[p][1] = -1;
    J[p] = 1;
    memset(C[p], 0, sizeof C[p]);
  }
  for (int f = -1; f < frames; f++) {   /* f = -1: warm-up */
    double t0 = now_ms();
    for (int k = 0; k < SUBSTEPS; k++) substep();
    if (f >= 0) t[f] = now_ms() - t0;
  }
  double mx = 0, my = 0;
  for (int p = 0; p < NP; p++) mx += x[p][0], my += x[p][1];
  printf("mpm88_c_ms %.4f\n", median(t, frames));
  printf("mpm88_c_mean_x %.6f\nmpm88_c_mean_y %.6f\n", mx / NP, my / NP);
  free(t);
  return 0;
}
