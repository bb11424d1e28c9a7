/*
** kcache.h -- the offline kernel cache's store: compiled kernels kept on disk
** between runs, one file per kernel, keyed by everything that decides the
** code (docs/cache.md).
**
** The store knows nothing of LLVM or of what a backend keeps in an entry: a
** backend hands it a key (text that names every input of code generation,
** jit_kernel_key) and a payload (its own bytes), and gets the payload back
** in a later run only when the file is whole (lengths, checksum) and its key
** is the same text. Anything else -- a missing, truncated, corrupt or
** foreign file, a hash collision -- is a miss: the kernel is compiled again
** and the entry rewritten, never trusted.
**
** Files are written to a temporary name and renamed into place, so readers
** and several writers in other processes see either the old file or the new
** one. After a write the oldest entries (by modification time, which a hit
** refreshes) are removed while the directory holds more than max_bytes.
*/
#ifndef LATTICE_JIT_KCACHE_H
#define LATTICE_JIT_KCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *dir;            /* the cache directory; NULL or "": no cache */
  uint64_t max_bytes;         /* eviction threshold; 0: the default (256 MiB) */
} jit_cache;

enum { JIT_CACHE_FORMAT = 2 };   /* 2: a CPU entry holds one object per group of tasks */
#define JIT_CACHE_DEFAULT_MAX ((uint64_t)256 << 20)

/* 64-bit FNV-1a of n bytes, continuing from h (start with jit_hash_init). */
#define jit_hash_init 0xcbf29ce484222325ull
uint64_t jit_hash(uint64_t h, const void *p, size_t n);

/* The payload stored under key, malloc'd in *payload (*n bytes); false on a
** miss of any kind. A hit refreshes the entry's time for eviction. */
bool jit_cache_get(const jit_cache *c, const char *key, size_t keylen, void **payload, size_t *n);

/* Stores payload under key (best effort: a cache that cannot be written is
** no error, the kernel is just compiled again next time); then evicts. false
** with a reason in err when nothing was stored, for tests and messages. */
bool jit_cache_put(const jit_cache *c, const char *key, size_t keylen, const void *payload, size_t n, char *err,
                   size_t errlen);

/* The entry's file for key: DIR/<16 hex digits>.ltk (written into buf). */
void jit_cache_path(const jit_cache *c, const char *key, size_t keylen, char *buf, size_t len);

#endif
