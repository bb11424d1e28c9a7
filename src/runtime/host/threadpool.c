/*
** threadpool.c -- see threadpool.h.
**
** A job is published under a new generation number. The chunks are handed
** out by one 64-bit word, `ticket`: the job's generation in the high half,
** the next chunk in the low half. A thread takes a chunk with a CAS on it,
** so it takes one only while the generation it read the job under is still
** current; a worker that wakes late (the OS ran something else on its core)
** finds the generation moved on or the chunks gone and goes back to waiting.
** The job's parameters live in two slots, used by alternate generations: the
** slot of generation g is rewritten for g + 2 only, and g + 2 is published
** after every chunk of g has run, which a thread still reading slot g cannot
** have let happen once its CAS for g succeeded.
**
** The caller returns when every chunk has *run* (the `done` count), not when
** every worker has checked in. A worker that is not running when a job
** starts -- preempted by another process on a busy machine -- costs that job
** nothing: the running threads take its share. Only a chunk already taken by
** a thread that is then preempted is waited for, which is why chunks are
** small (about 8 per thread).
**
** Waiting: between jobs a worker spins for a short while watching the
** generation, then sleeps on a condition variable; the caller likewise spins,
** then sleeps, until the last chunk is done. Kernels are often launched back
** to back, and waking a sleeping thread costs tens of microseconds, more than
** a small task runs. The spins are short (tens of microseconds) and pause
** between reads, so a thread that is preempted while others spin gets its
** core back soon.
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

typedef struct {                  /* one job's parameters (see above) */
  rt_pool_fn fn;
  void *ud;
  int64_t begin, end, chunk;
  atomic_int_fast64_t nchunks;    /* read before the CAS, so possibly while the
                                     slot is rewritten: the CAS then fails */
} job;

struct rt_pool {
  int nthreads;                   /* workers + the calling thread */
  pthread_t *threads;
  worker *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done_cv;
  pthread_mutex_t call_mu;        /* one parallel_for at a time */
  atomic_uint_fast64_t ticket;    /* generation << 32 | next chunk */
  atomic_bool quit;
  atomic_int_fast64_t done;       /* chunks of the current job that have run */
  job slot[2];                    /* generation g uses slot[g & 1] */
  uint32_t generation;            /* the caller's copy (under call_mu) */
};

#define GEN(t) ((uint32_t)((t) >> 32))
#define NEXT(t) ((int64_t)((t) & 0xffffffffu))

/* Runs chunks of generation gen until none is left or the generation moves on. */
static void run_chunks(rt_pool *p, uint32_t gen, int id) {
  job *j = &p->slot[gen & 1];
  uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
  for (;;) {
    if (GEN(t) != gen) return;
    int64_t k = NEXT(t), nchunks = atomic_load_explicit(&j->nchunks, memory_order_relaxed);
    if (k >= nchunks) return;
    if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t + 1, memory_order_acq_rel, memory_order_acquire))
      continue;   /* t reloaded */
    /* chunk k of generation gen is ours: until it is counted done, the job
    ** cannot end and its slot stays as it is */
    int64_t b = j->begin + k * j->chunk;
    int64_t e = j->end - b > j->chunk ? b + j->chunk : j->end;
    j->fn(j->ud, id, b, e);
    if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 == nchunks) {
      /* the last chunk: under the mutex, so a caller about to sleep cannot miss it */
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
    t = atomic_load_explicit(&p->ticket, memory_order_acquire);
  }
}

/* About 20-50 microseconds of polling before a thread goes to sleep. */
#define SPIN_ROUNDS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg) {
  worker *w = arg;
  rt_pool *p = w->pool;
  uint32_t seen = 0;
  for (;;) {
    uint64_t t = 0;
    bool moved = false;
    for (int i = 0; i < SPIN_ROUNDS && !moved; i++) {
      t = atomic_load_explicit(&p->ticket, memory_order_acquire);
      moved = GEN(t) != seen || atomic_load_explicit(&p->quit, memory_order_relaxed);
      if (!moved) cpu_relax();
    }
    if (!moved) {
      pthread_mutex_lock(&p->mu);
      while (GEN(t = atomic_load(&p->ticket)) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->wake, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->quit)) break;
    seen = GEN(t);
    run_chunks(p, seen, w->id);
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
  pthread_cond_init(&p->done_cv, NULL);
  atomic_init(&p->ticket, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->quit, false);
  atomic_init(&p->slot[0].nchunks, 0);
  atomic_init(&p->slot[1].nchunks, 0);
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
  pthread_cond_destroy(&p->done_cv);
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
  if (nchunks > 0x7fffffff) {     /* the ticket counts chunks in 32 bits */
    chunk = n / 0x7fffffff + 1;
    nchunks = n / chunk + (n % chunk != 0);
  }
  if (p->nthreads == 1 || nchunks == 1) {   /* not worth waking anyone */
    for (int64_t b = begin; b < end; b += chunk) fn(ud, 0, b, end - b > chunk ? b + chunk : end);
    return;
  }
  pthread_mutex_lock(&p->call_mu);
  /* every chunk of the last job has run; its slot is the other one */
  uint32_t gen = ++p->generation;
  job *j = &p->slot[gen & 1];
  j->fn = fn;
  j->ud = ud;
  j->begin = begin;
  j->end = end;
  j->chunk = chunk;
  atomic_store_explicit(&j->nchunks, nchunks, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  pthread_mutex_lock(&p->mu);     /* sleepers check the generation under it */
  atomic_store_explicit(&p->ticket, (uint64_t)gen << 32, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  run_chunks(p, gen, 0);
  for (int i = 0; i < SPIN_ROUNDS && atomic_load_explicit(&p->done, memory_order_acquire) < nchunks; i++) cpu_relax();
  if (atomic_load_explicit(&p->done, memory_order_acquire) < nchunks) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->done, memory_order_acquire) < nchunks) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&p->call_mu);
}
