/* dynamic_init.h -- the particle positions shared by bench/dynamic.c and
** bench/dynamic_layouts.c (bench/dynamic.lua and bench/taichi/dynamic.py
** compute the same numbers): particle p sits at
** x = (fmix32(2p + 1) >> 8) / 2^24, y = (fmix32(2p + 2) >> 8) / 2^24, exact
** in f32, so every side appends each id to the same cell. */
#ifndef LATTICE_BENCH_DYNAMIC_INIT_H
#define LATTICE_BENCH_DYNAMIC_INIT_H

#include <stdint.h>

/* MurmurHash3's finaliser */
static inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

static inline void dynamic_positions(float *px, float *py, int np) {
  for (int p = 0; p < np; p++) {
    px[p] = (float)(fmix32(2u * (uint32_t)p + 1) >> 8) / 16777216.0f;
    py[p] = (float)(fmix32(2u * (uint32_t)p + 2) >> 8) / 16777216.0f;
  }
}

#endif
