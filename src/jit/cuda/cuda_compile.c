/*
** cuda_compile.c -- a kernel for the CUDA backend: the shared code generator
** with the NVPTX hooks gives PTX (cg_ptx.c: one kernel entry per task, the
** runtime bitcode and libdevice linked in), and the driver's JIT loads it.
**
** As on the CPU (cpu_compile.c) the work is split in two: PTX generation
** touches nothing shared (its own LLVM context), so compile_start runs it on
** a thread of its own; loading the module calls the driver, on the Lua thread
** in compile_wait.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../llvm/llvm_codegen.h"
#include "cuda.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct jit_pending {
  jit_backend *be;
  ir_kernel *k;
  double ptx_ms;                /* make_ptx's own time, for compile_ms */
  char *ptx;                    /* NULL: failed, err says why */
  cg_module info;
  char err[1024];
  pthread_t thread;
  bool threaded;
  char *key;                    /* the offline cache's key (NULL: not cached) */
  size_t keylen;
  bool hit;
};

/* ---- the offline cache of PTX (docs/cache.md) -------------------------------------
** An entry's payload: u32 ntasks, u32 needs_runtime, ntasks entry names of
** 160 bytes each, then the PTX text. */

enum { NAME = sizeof(((cg_module *)0)->names[0]) };
_Static_assert(NAME == sizeof(cuda_entry_name), "cuda_entry_name is the code generator's symbol size");

static uint32_t get32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static int count_tasks(const ir_kernel *k) {
  int n = 0;
  for (const ir_stmt *s = k->body->first; s; s = s->next) n++;
  return n;
}

static bool from_cache(jit_pending *p) {
  cuda_impl *im = p->be->impl;
  void *payload = NULL;
  size_t n = 0;
  if (!jit_cache_get(&im->cache, p->key, p->keylen, &payload, &n)) return false;
  const unsigned char *b = payload;
  int ntasks = n >= 8 ? (int)get32(b) : -1;
  size_t head = 8 + (size_t)(ntasks > 0 ? ntasks : 0) * NAME;
  bool ok = ntasks == count_tasks(p->k) && get32(b + 4) <= 1 && n > head;
  for (int i = 0; ok && i < ntasks; i++) ok = memchr(b + 8 + (size_t)i * NAME, 0, NAME) != NULL;
  char (*names)[160] = ok ? calloc((size_t)(ntasks ? ntasks : 1), NAME) : NULL;
  char *ptx = names ? malloc(n - head + 1) : NULL;
  if (ptx) {
    memcpy(names, b + 8, (size_t)ntasks * NAME);
    memcpy(ptx, b + head, n - head);
    ptx[n - head] = 0;
    p->info = (cg_module){.mod = NULL, .ntasks = ntasks, .names = names, .needs_runtime = get32(b + 4) != 0};
    p->ptx = ptx;
    p->hit = true;
  } else {
    free(names);
  }
  free(payload);
  return p->hit;
}

static void to_cache(jit_pending *p) {
  cuda_impl *im = p->be->impl;
  size_t head = 8 + (size_t)p->info.ntasks * NAME, len = strlen(p->ptx);
  unsigned char *b = malloc(head + len);
  if (!b) return;
  put32(b, (uint32_t)p->info.ntasks);
  put32(b + 4, p->info.needs_runtime ? 1 : 0);
  memcpy(b + 8, p->info.names, (size_t)p->info.ntasks * NAME);
  memcpy(b + head, p->ptx, len);
  char why[256];
  jit_cache_put(&im->cache, p->key, p->keylen, b, head + len, why, sizeof why);   /* best effort */
  free(b);
}

static void make_ptx_timed(jit_pending *p);

/* compile_ms counts the work, not the wait for a thread or for the first call */
static void make_ptx(jit_pending *p) {
  double t = now_ms();
  make_ptx_timed(p);
  p->ptx_ms = now_ms() - t;
}

static void make_ptx_timed(jit_pending *p) {
  cuda_impl *im = p->be->impl;
  if (p->key && from_cache(p)) return;
  p->ptx = cg_ptx_kernel(p->k, im->sm, true, im->libdevice, NULL, &p->info, p->err, sizeof p->err);
  if (p->ptx && im->dump_ptx) fprintf(stderr, "%s\n", p->ptx);   /* debugging aid */
  if (p->ptx && p->key) to_cache(p);
}

static void *ptx_thread(void *arg) {
  make_ptx(arg);
  return NULL;
}

/* Loads p's PTX and finds each task's entry (cuda_module.c); frees p. */
static jit_kernel *load(jit_pending *p, char *err, size_t errlen) {
  double t0 = now_ms();
  jit_kernel *jk = NULL;
  free(p->key);
  if (!p->ptx) {
    snprintf(err, errlen, "%s", p->err);
  } else {
    jk = cuda_kernel_from_ptx(p->be, p->k, p->ptx, p->info.ntasks, (const cuda_entry_name *)p->info.names,
                              p->info.needs_runtime, err, errlen);
    if (jk) {
      jk->compile_ms = p->ptx_ms + (now_ms() - t0);
      jk->cached = p->hit;
    }
    free(p->ptx);
    cg_module_free(&p->info);
  }
  free(p);
  return jk;
}

static jit_pending *pending_new(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory compiling kernel '%s'", k->name);
    return NULL;
  }
  p->be = be;
  p->k = k;
  cuda_impl *im = be->impl;
  if (im->cache.dir) p->key = jit_kernel_key(k, im->backend_line, &p->keylen);   /* NULL: not cached */
  return p;
}

jit_kernel *cuda_compile(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = pending_new(be, k, err, errlen);
  if (!p) return NULL;
  make_ptx(p);
  return load(p, err, errlen);
}

jit_pending *cuda_compile_start(jit_backend *be, ir_kernel *k, char *err, size_t errlen) {
  jit_pending *p = pending_new(be, k, err, errlen);
  if (!p) return NULL;
  if (pthread_create(&p->thread, NULL, ptx_thread, p) == 0) p->threaded = true;
  else make_ptx(p);   /* no thread to be had: now */
  return p;
}

jit_kernel *cuda_compile_wait(jit_backend *be, jit_pending *p, char *err, size_t errlen) {
  (void)be;
  if (p->threaded) pthread_join(p->thread, NULL);
  return load(p, err, errlen);
}

