/*
** fuzz_cache.c -- libFuzzer harness of the offline kernel cache's reader
** (src/jit/kcache.c, docs/cache.md): the input is a cache file.
**
** The key asked for is the one the input claims to hold (its bytes 32..32+K
** when they are in range), so well-formed seeds hit; half of the inputs get
** their checksum fixed up first, so the length checks behind it are reached
** too. A finding -- abort() with a message -- is a hit whose payload is not
** the input's bytes where the header says, a hit on a file whose size is not
** exactly 40 + K + P, plus whatever AddressSanitizer or UBSan report, a
** crash or a hang. Misses are the expected outcome of almost every input.
**
** Every payload of a hit, and the input itself, is also parsed as a CPU
** kernel's payload (src/jit/cpu/cpu_payload.c) for every task count its
** header could claim: a parse that succeeds must describe objects that lie
** inside the bytes, start with the ELF magic and add up to all of them.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/cpu/cpu_payload.h"
#include "jit/kcache.h"

static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static char dir[64];

/* Parses b as a CPU payload; aborts when a successful parse is inconsistent. */
static void check_payload(const unsigned char *b, size_t n) {
  int claimed = n >= 4 ? (int)(b[0] | b[1] << 8 | (b[2] & 0x7f) << 16) : 0;
  int counts[3] = {claimed, 1, 8};
  for (int t = 0; t < 3; t++) {
    cpu_payload pl;
    if (!cpu_payload_parse(b, n, counts[t], &pl)) continue;
    size_t total = CPU_PAYLOAD_HEADER;
    for (int i = 0; i < pl.nobjects; i++) {
      if (pl.object[i] < b || pl.size[i] > n || pl.object[i] + pl.size[i] > b + n || pl.size[i] < 4 ||
          memcmp(pl.object[i], "\177ELF", 4) != 0) {
        fprintf(stderr, "fuzz_cache: FINDING: payload object %d outside the bytes or not ELF\n", i);
        abort();
      }
      total += 8 + pl.size[i];
    }
    if (pl.nobjects < 1 || pl.nobjects > CPU_PAYLOAD_MAX_OBJECTS || total != n) {
      fprintf(stderr, "fuzz_cache: FINDING: a payload of %d objects whose parts add up to %zu of %zu bytes\n",
              pl.nobjects, total, n);
      abort();
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/lt-fuzz-cache-%ld", (long)getpid());
    mkdir(dir, 0755);
  }
  uint8_t *f = malloc(n ? n : 1);
  if (!f) return 0;
  if (n) memcpy(f, data, n);
  check_payload(f, n);
  static const char fixed[] = "fuzz key";
  const char *key = fixed;
  size_t keylen = sizeof fixed - 1;
  if (n >= 40) {
    uint64_t k = get64(f + 16);
    if (k <= n - 40) {
      key = (const char *)f + 32;
      keylen = (size_t)k;
    }
    if (f[n - 1] & 1) {   /* fix the checksum up */
      uint64_t h = jit_hash(jit_hash_init, f, n - 8);
      for (int i = 0; i < 8; i++) f[n - 8 + i] = (uint8_t)(h >> (8 * i));
    }
  }
  char *keycopy = malloc(keylen ? keylen : 1);
  if (keylen) memcpy(keycopy, key, keylen);
  jit_cache c = {dir, 1 << 20};
  char path[4096];
  jit_cache_path(&c, keycopy, keylen, path, sizeof path);
  FILE *out = fopen(path, "wb");
  if (out) {
    fwrite(f, 1, n, out);
    fclose(out);
    void *payload = NULL;
    size_t np = 0;
    if (jit_cache_get(&c, keycopy, keylen, &payload, &np)) {
      if (n < 40) abort();
      uint64_t k = get64(f + 16), p = get64(f + 24);
      if (40 + k + p != n || np != p) {
        fprintf(stderr, "fuzz_cache: FINDING: a hit on a file of %zu bytes with K %llu, P %llu, payload %zu\n", n,
                (unsigned long long)k, (unsigned long long)p, np);
        abort();
      }
      if (np && memcmp(payload, f + 32 + k, np) != 0) {
        fprintf(stderr, "fuzz_cache: FINDING: the payload is not the file's bytes\n");
        abort();
      }
      check_payload(payload, np);
      free(payload);
    }
    unlink(path);
  }
  free(keycopy);
  free(f);
  return 0;
}
