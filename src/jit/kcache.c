/*
** kcache.c -- the offline kernel cache's files (kcache.h).
**
** An entry, little-endian:
**   0   "LTKCACHE"         magic
**   8   u32                JIT_CACHE_FORMAT
**   12  u32                0 (reserved)
**   16  u64 K              key length
**   24  u64 P              payload length
**   32  K bytes            the key text
**   ..  P bytes            the payload
**   ..  u64                jit_hash of every byte before it
** The file's size must be exactly 40 + K + P.
*/
#include "kcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char MAGIC[8] = {'L', 'T', 'K', 'C', 'A', 'C', 'H', 'E'};
enum { HEAD = 32, TAIL = 8 };

uint64_t jit_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static bool enabled(const jit_cache *c) { return c && c->dir && *c->dir; }

void jit_cache_path(const jit_cache *c, const char *key, size_t keylen, char *buf, size_t len) {
  snprintf(buf, len, "%s/%016llx.ltk", c->dir, (unsigned long long)jit_hash(jit_hash_init, key, keylen));
}

/* Reads the whole file at path (at most `limit` bytes); NULL when it cannot. */
static unsigned char *read_file(const char *path, size_t *n, uint64_t limit) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= HEAD + TAIL && (uint64_t)st.st_size <= limit) {
    size_t size = (size_t)st.st_size, got = 0;
    buf = malloc(size);
    while (buf && got < size) {
      ssize_t r = read(fd, buf + got, size - got);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        break;
      }
      got += (size_t)r;
    }
    if (buf && got != size) {
      free(buf);
      buf = NULL;
    }
    *n = size;
  }
  close(fd);
  return buf;
}

bool jit_cache_get(const jit_cache *c, const char *key, size_t keylen, void **payload, size_t *n) {
  if (!enabled(c)) return false;
  char path[4096];
  jit_cache_path(c, key, keylen, path, sizeof path);
  size_t size = 0;
  uint64_t limit = c->max_bytes ? c->max_bytes : JIT_CACHE_DEFAULT_MAX;
  unsigned char *f = read_file(path, &size, limit + HEAD + TAIL + keylen);
  if (!f) return false;
  bool ok = memcmp(f, MAGIC, 8) == 0 && get64(f + 8) == JIT_CACHE_FORMAT;   /* format and reserved word */
  uint64_t k = ok ? get64(f + 16) : 0, p = ok ? get64(f + 24) : 0;
  ok = ok && k == keylen && p <= size && k <= size && HEAD + TAIL + k + p == size;
  ok = ok && memcmp(f + HEAD, key, keylen) == 0;
  ok = ok && get64(f + size - TAIL) == jit_hash(jit_hash_init, f, size - TAIL);
  void *out = ok ? malloc(p ? p : 1) : NULL;
  if (out) {
    memcpy(out, f + HEAD + k, p);
    *payload = out;
    *n = p;
    utimes(path, NULL);   /* used now: last in line for eviction */
  }
  free(f);
  return out != NULL;
}

static bool make_dirs(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  for (char *s = path + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return false;
    *s = '/';
  }
  return mkdir(path, 0755) == 0 || errno == EEXIST;
}

typedef struct {
  char name[64];
  uint64_t bytes;
  double mtime;
} file_info;

static int by_age(const void *a, const void *b) {
  double x = ((const file_info *)a)->mtime, y = ((const file_info *)b)->mtime;
  return x < y ? -1 : x > y;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Removes the least recently used entries while the cache holds more than
** max_bytes, and temporary files a writer left more than ten minutes ago. */
static void evict(const jit_cache *c, const char *keep) {
  uint64_t max = c->max_bytes ? c->max_bytes : JIT_CACHE_DEFAULT_MAX;
  DIR *d = opendir(c->dir);
  if (!d) return;
  file_info *files = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  char path[4096];
  double now = (double)time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    bool entry = has_suffix(e->d_name, ".ltk"), tmp = strncmp(e->d_name, ".tmp-", 5) == 0;
    if ((!entry && !tmp) || strlen(e->d_name) >= sizeof files->name) continue;
    snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    double mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
    if (tmp) {
      if (now - mtime > 600) unlink(path);
      continue;
    }
    if (n == cap) {
      size_t ncap = cap ? 2 * cap : 64;
      file_info *f = realloc(files, ncap * sizeof *f);
      if (!f) break;
      files = f;
      cap = ncap;
    }
    snprintf(files[n].name, sizeof files[n].name, "%s", e->d_name);
    files[n].bytes = (uint64_t)st.st_size;
    files[n].mtime = mtime;
    total += files[n].bytes;
    n++;
  }
  closedir(d);
  if (total > max) {
    qsort(files, n, sizeof *files, by_age);
    for (size_t i = 0; i < n && total > max; i++) {
      if (keep && strcmp(files[i].name, keep) == 0) continue;
      snprintf(path, sizeof path, "%s/%s", c->dir, files[i].name);
      if (unlink(path) == 0 || errno == ENOENT) total -= files[i].bytes;
    }
  }
  free(files);
}

bool jit_cache_put(const jit_cache *c, const char *key, size_t keylen, const void *payload, size_t n, char *err,
                   size_t errlen) {
  if (!enabled(c)) {
    snprintf(err, errlen, "the cache is off");
    return false;
  }
  uint64_t max = c->max_bytes ? c->max_bytes : JIT_CACHE_DEFAULT_MAX;
  size_t size = HEAD + keylen + n + TAIL;
  if (size > max) {
    snprintf(err, errlen, "an entry of %zu bytes is larger than the cache's limit of %llu bytes", size,
             (unsigned long long)max);
    return false;
  }
  if (!make_dirs(c->dir)) {
    snprintf(err, errlen, "cannot create the cache directory %s: %s", c->dir, strerror(errno));
    return false;
  }
  unsigned char *f = malloc(size);
  if (!f) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  memcpy(f, MAGIC, 8);
  put64(f + 8, JIT_CACHE_FORMAT);
  put64(f + 16, keylen);
  put64(f + 24, n);
  memcpy(f + HEAD, key, keylen);
  if (n) memcpy(f + HEAD + keylen, payload, n);
  put64(f + size - TAIL, jit_hash(jit_hash_init, f, size - TAIL));

  char path[4096], tmp[4200];
  jit_cache_path(c, key, keylen, path, sizeof path);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%ld%06ld", c->dir, (long)getpid(), (long)tv.tv_sec, (long)tv.tv_usec);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  size_t done = 0;
  while (ok && done < size) {
    ssize_t w = write(fd, f + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false;
    else done += (size_t)w;
  }
  int saved = errno;
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (ok && rename(tmp, path) != 0) {
    saved = errno;
    ok = false;
  }
  if (!ok) {
    snprintf(err, errlen, "cannot write the cache entry %s: %s", path, strerror(saved));
    if (fd >= 0) unlink(tmp);
  }
  free(f);
  if (ok) evict(c, strrchr(path, '/') + 1);
  return ok;
}
