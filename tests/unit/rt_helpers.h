/*
** rt_helpers.h -- shared set-up for the sparse runtime's unit tests
** (test_rt_*.c): a pool with a runtime in it, SNode metas, a seeded RNG.
** The tests link lattice_rt_native (src/runtime compiled by the host compiler).
*/
#ifndef LATTICE_TEST_RT_HELPERS_H
#define LATTICE_TEST_RT_HELPERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host/mempool.h"
#include "runtime/runtime.h"

typedef struct {
  char *pool;
  uint64_t size;
  rt_runtime *rt;
} h_rt;

/* A runtime with nsnodes SNode slots in a fresh pool of `size` bytes. */
static inline h_rt h_rt_new(uint64_t size, int32_t nsnodes, int64_t ambient) {
  h_rt h = {0};
  char err[256];
  h.pool = rt_mempool_reserve(size, err, sizeof err);
  if (!h.pool) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  h.size = size;
  h.rt = rt_runtime_init(h.pool, size, nsnodes, ambient);
  if (!h.rt) {
    fprintf(stderr, "rt_runtime_init failed for a pool of %llu bytes\n", (unsigned long long)size);
    exit(1);
  }
  return h;
}

static inline void h_rt_free(h_rt *h) { rt_mempool_release(h->pool, h->size); }

/* A one-axis level (axis 0 unless told) of `cells` cells of `cell_bytes`. */
static inline rt_meta h_meta1(int32_t id, int32_t kind, int32_t cells, int64_t cell_bytes) {
  rt_meta m;
  memset(&m, 0, sizeof m);
  m.snode_id = id;
  m.kind = kind;
  m.num_cells = cells;
  m.cell_bytes = cell_bytes;
  m.naxes = 1;
  m.axis[0] = 0;
  m.extent[0] = cells;
  m.below[0] = 1;
  if (kind == RT_KIND_DYNAMIC) m.chunk_cells = 4;
  return m;
}

/* Registers m; exits if the runtime refuses it (a broken test set-up). */
static inline rt_meta *h_add(h_rt *h, rt_meta m) {
  if (!rt_runtime_add_snode(h->rt, &m)) {
    fprintf(stderr, "rt_runtime_add_snode refused SNode %d (error %d)\n", m.snode_id, h->rt->error);
    exit(1);
  }
  return rt_runtime_meta(h->rt, m.snode_id);
}

/* xorshift64*: the tests' own seeded generator (the same sequence everywhere). */
static inline uint64_t h_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}
static inline int32_t h_randn(uint64_t *s, int32_t n) { return (int32_t)(h_rand(s) % (uint64_t)n); }

static inline int h_all_zero(const char *p, int64_t n) {
  for (int64_t k = 0; k < n; k++)
    if (p[k]) return 0;
  return 1;
}

/* Fills n bytes with a pattern derived from tag; h_is_pattern checks it. */
static inline void h_fill(char *p, int64_t n, uint32_t tag) {
  for (int64_t k = 0; k < n; k++) p[k] = (char)(((tag * 2654435761u) >> (k % 24)) + k + 1) | 1;
}
static inline int h_is_pattern(const char *p, int64_t n, uint32_t tag) {
  for (int64_t k = 0; k < n; k++)
    if (p[k] != (char)((((tag * 2654435761u) >> (k % 24)) + k + 1) | 1)) return 0;
  return 1;
}

#endif
