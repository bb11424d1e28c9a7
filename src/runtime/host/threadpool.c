/*
** threadpool.c -- see threadpool.h. A job is published with a new
** generation number, so a worker never runs a job twice or misses one.
** Between jobs a worker first spins for a short while watching the
** generation, then sleeps on a condition variable; the caller likewise spins
** before sleeping until the workers are done. Kernels are often launched
** back to back (a sparse struct-for is several tasks), and waking a sleeping
** thread costs tens of microseconds, more than a small task runs.
*/
#include "threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
  rt_pool *pool;
  int id;
} worker;

struct rt_pool {
  int nthreads;                   /* workers + the calling thread */
  pthread_t *threads;
  worker *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  pthread_mutex_t call_mu;        /* one parallel_for at a time */
  atomic_uint_fast64_t generation; /* bumped (release) after a job is set up */
  atomic_bool quit;
  atomic_int busy;                /* workers still inside the current job */
  /* the current job */
  rt_pool_fn fn;
  void *ud;
  int64_t begin, end, chunk, nchunks;
  atomic_int_fast64_t next;       /* next chunk to take */
};

static void run_chunks(rt_pool *p, int id) {
  for (;;) {
    int64_t k = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (k >= p->nchunks) return;
    int64_t b = p->begin + k * p->chunk;
    int64_t e = p->end - b > p->chunk ? b + p->chunk : p->end;
    p->fn(p->ud, id, b, e);
  }
}

/* About 20-50 microseconds of polling before a thread goes to sleep. */
#define SPIN_ROUNDS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Spins until the generation differs from seen or the pool quits; false
** when the spin ran out first. */
static bool spin_for_job(rt_pool *p, uint64_t seen) {
  for (int i = 0; i < SPIN_ROUNDS; i++) {
    if (atomic_load_explicit(&p->generation, memory_order_acquire) != seen ||
        atomic_load_explicit(&p->quit, memory_order_relaxed))
      return true;
    cpu_relax();
  }
  return false;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  rt_pool *p = w->pool;
  uint64_t seen = 0;
  for (;;) {
    if (!spin_for_job(p, seen)) {
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->wake, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->quit)) break;
    seen = atomic_load_explicit(&p->generation, memory_order_acquire);
    run_chunks(p, w->id);
    if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
      /* under the mutex, so a caller checking busy before it waits cannot miss this */
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

rt_pool *rt_pool_create(int threads) {
  if (threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  if (threads > 1024) threads = 1024;
  rt_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nthreads = threads;
  p->threads = calloc((size_t)threads, sizeof *p->threads);
  p->workers = calloc((size_t)threads, sizeof *p->workers);
  if (!p->threads || !p->workers) {
    free(p->threads);
    free(p->workers);
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->call_mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->next, 0);
  atomic_init(&p->generation, 0);
  atomic_init(&p->quit, false);
  atomic_init(&p->busy, 0);
  for (int i = 1; i < threads; i++) {
    p->workers[i].pool = p;
    p->workers[i].id = i;
    if (pthread_create(&p->threads[i], NULL, worker_main, &p->workers[i]) != 0) {
      p->nthreads = i;            /* destroy joins the ones that started */
      rt_pool_destroy(p);
      return NULL;
    }
  }
  return p;
}

void rt_pool_destroy(rt_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->quit, true);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->call_mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->threads);
  free(p->workers);
  free(p);
}

int rt_pool_threads(const rt_pool *p) { return p->nthreads; }

int64_t rt_pool_default_chunk(const rt_pool *p, int64_t n) {
  int64_t c = n / ((int64_t)p->nthreads * 8);
  if (c < 1) c = 1;
  if (c > (1 << 16)) c = 1 << 16;
  return c;
}

void rt_pool_parallel_for(rt_pool *p, int64_t begin, int64_t end, int64_t chunk, rt_pool_fn fn,
                          void *ud) {
  if (end <= begin) return;
  int64_t n = end - begin;
  if (chunk <= 0) chunk = rt_pool_default_chunk(p, n);
  int64_t nchunks = n / chunk + (n % chunk != 0);
  if (p->nthreads == 1 || nchunks == 1) {   /* not worth waking anyone */
    for (int64_t b = begin; b < end; b += chunk) fn(ud, 0, b, end - b > chunk ? b + chunk : end);
    return;
  }
  pthread_mutex_lock(&p->call_mu);
  /* every worker is between jobs here (the last call waited for busy == 0) */
  p->fn = fn;
  p->ud = ud;
  p->begin = begin;
  p->end = end;
  p->chunk = chunk;
  p->nchunks = nchunks;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->busy, p->nthreads - 1, memory_order_relaxed);
  pthread_mutex_lock(&p->mu);   /* sleepers check the generation under it */
  atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  run_chunks(p, 0);
  for (int i = 0; i < SPIN_ROUNDS && atomic_load_explicit(&p->busy, memory_order_acquire) > 0; i++) cpu_relax();
  if (atomic_load_explicit(&p->busy, memory_order_acquire) > 0) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->busy, memory_order_acquire) > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&p->call_mu);
}
