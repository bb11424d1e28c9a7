/*
** random.c -- lt.random: a counter-based generator (device runtime).
**
** Every draw is a hash of (seed, launch, site, stream, draw): the seed from
** lt.init, the launch number the host counts, the site (which parallel loop
** of the kernel; 0 for serial code), the stream (the loop iteration) and the
** draw number inside that iteration. Nothing is stored between draws, so the
** numbers do not depend on which thread runs an iteration or in which order
** (docs/runtime.md, "Random numbers").
**
** The hash chains the splitmix64 finaliser (Stafford's "mix13"), which is a
** bijection of 64-bit words with full avalanche; three rounds separate the
** key, the (site, stream) pair and the draw. It passes the chi-square and
** correlation tests of tests/lang/random.lua; it is not a cryptographic hash.
*/
#include "builtins.h"

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rt_random_hash(uint64_t seed, uint64_t launch, uint32_t site, uint32_t stream, uint32_t draw) {
  uint64_t key = mix(seed + 0x9E3779B97F4A7C15ull * (launch + 1));
  uint64_t s = mix(key ^ (((uint64_t)site << 32) | stream));
  return mix(s + 0x9E3779B97F4A7C15ull * ((uint64_t)draw + 1));
}

uint64_t rt_random_bits(rt_context *ctx, int32_t site, int32_t stream, int32_t draw) {
  const rt_builtins *b = ctx->builtins;
  uint64_t seed = b ? b->seed : 0, launch = b ? b->launch : 0;
  return rt_random_hash(seed, launch, (uint32_t)site, (uint32_t)stream, (uint32_t)draw);
}
