/* mpm88_init.h -- the initial particles shared by bench/mpm88.c and the
** Lattice side (bench/mpm88.lua and examples/mpm88.lua compute the same
** numbers in Lua): xorshift32 from MPM_SEED, two draws per particle, each
** mapped to [0.2, 0.6). */
#ifndef LATTICE_BENCH_MPM88_INIT_H
#define LATTICE_BENCH_MPM88_INIT_H

#include <stdint.h>

#define MPM_NP 8192
#define MPM_NG 128
#define MPM_SEED 2463534242u

static inline float mpm_init_coord(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return 0.2f + 0.4f * (float)(*s >> 8) / 16777216.0f;   /* 24 random bits */
}

#endif
