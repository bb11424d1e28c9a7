/*
** test_threadpool.c -- rt_pool_parallel_for: every iteration runs exactly
** once, thread ids stay in range, the workers take part, chunk sizes are
** honoured, empty and one-chunk ranges, two callers at once, and a clean
** shutdown (the pool is created and destroyed repeatedly). Thousands of tiny
** jobs back to back, each with other parameters, catch a worker that wakes
** late and runs a chunk of a finished job, or with the next job's
** parameters. Also built with ThreadSanitizer (unit/test_threadpool_tsan).
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "runtime/host/threadpool.h"

typedef struct {
  atomic_int *hits;               /* per iteration */
  atomic_int per_thread[64];      /* iterations run by each thread id */
  atomic_int bad_tid, bad_chunk, calls;
  int64_t begin, chunk;
  int nthreads;
  bool slow;
} job;

static void body(void *ud, int tid, int64_t b, int64_t e) {
  job *j = ud;
  atomic_fetch_add(&j->calls, 1);
  if (tid < 0 || tid >= j->nthreads) atomic_fetch_add(&j->bad_tid, 1);
  /* every chunk starts on a chunk boundary and is at most chunk long */
  if (j->chunk > 0 && ((b - j->begin) % j->chunk != 0 || e - b > j->chunk)) atomic_fetch_add(&j->bad_chunk, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&j->hits[i - j->begin], 1);
  if (tid >= 0 && tid < 64) atomic_fetch_add(&j->per_thread[tid], (int)(e - b));
  if (j->slow) {   /* long enough that every worker gets a chunk */
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
}

static void run(rt_pool *p, int64_t begin, int64_t end, int64_t chunk, bool slow) {
  int64_t n = end > begin ? end - begin : 0;
  job *j = calloc(1, sizeof *j);
  j->hits = calloc((size_t)(n ? n : 1), sizeof *j->hits);
  j->begin = begin;
  j->chunk = chunk > 0 ? chunk : rt_pool_default_chunk(p, n);
  j->nthreads = rt_pool_threads(p);
  j->slow = slow;
  rt_pool_parallel_for(p, begin, end, chunk, body, j);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += atomic_load(&j->hits[i]) != 1;
  CHECKF(wrong == 0, "[%lld, %lld) chunk %lld: %lld iterations not run exactly once", (long long)begin,
         (long long)end, (long long)chunk, (long long)wrong);
  CHECK(atomic_load(&j->bad_tid) == 0);
  CHECK(atomic_load(&j->bad_chunk) == 0);
  if (slow && j->nthreads > 1 && n >= 64) {
    int used = 0;
    for (int t = 0; t < j->nthreads && t < 64; t++) used += atomic_load(&j->per_thread[t]) > 0;
    CHECKF(used == j->nthreads, "only %d of %d threads ran chunks", used, j->nthreads);
  }
  if (n == 0) CHECK(atomic_load(&j->calls) == 0);
  free(j->hits);
  free(j);
}

typedef struct {
  rt_pool *p;
  int seed;
} caller_arg;

static void *caller(void *arg) {
  caller_arg *a = arg;
  for (int r = 0; r < 50; r++) run(a->p, a->seed, a->seed + 1000 + r * 37, r % 5 * 3, false);
  return NULL;
}

int main(void) {
  rt_pool *p = rt_pool_create(4);
  CHECK(p != NULL && rt_pool_threads(p) == 4);
  if (!p) return check_finish("test_threadpool");
  run(p, 0, 100000, 0, false);
  run(p, -50, 50, 7, false);              /* negative begin, ragged last chunk */
  run(p, 10, 10, 0, false);                /* empty */
  run(p, 10, 5, 0, false);                 /* reversed = empty */
  run(p, 0, 3, 100, false);                /* one chunk: runs inline */
  run(p, 0, 64, 1, true);                  /* every thread takes part */
  CHECK(rt_pool_default_chunk(p, 0) == 1);
  CHECK(rt_pool_default_chunk(p, 3200) == 100);
  CHECK(rt_pool_default_chunk(p, (int64_t)1 << 40) == (1 << 16));
  /* two threads calling parallel_for on the same pool at once */
  pthread_t th[2];
  caller_arg args[2] = {{p, 0}, {p, 1 << 20}};
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, caller, &args[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  /* tiny jobs back to back: workers often wake when the job is over */
  for (int r = 0; r < 3000; r++) run(p, r, r + 2 + r % 97, 1 + r % 3, false);
  rt_pool_destroy(p);

  for (int r = 0; r < 20; r++) {           /* create/destroy cycles shut down cleanly */
    rt_pool *q = rt_pool_create(r % 3 + 1);
    CHECK(q != NULL);
    if (q) {
      run(q, 0, 1000, 0, false);
      rt_pool_destroy(q);
    }
  }
  rt_pool *q = rt_pool_create(0);          /* one per core */
  CHECK(q && rt_pool_threads(q) >= 1);
  if (q) {
    run(q, 0, 12345, 0, false);
    rt_pool_destroy(q);
  }
  return check_finish("test_threadpool");
}
