/*
** test_capi.c -- the public C API (include/lattice.h) in C alone: no Lua
** state is made (only calls that need no script: runtimes, configs, errors,
** ndarrays over the runtime's and the host's memory, finding exports that do
** not exist) and every misuse the header promises to catch: NULL pointers,
** bad dtypes and shapes, wrong byte counts, handles used after release or
** after lt_runtime_destroy, another runtime's handles, zeroed handles, and a
** runtime called from a second thread while the first is inside it
** (LT_ERROR_BUSY, made deterministic by a release callback that blocks).
** The Lua-side cases are in test_embed.c.
*/
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lattice.h"

#define CHECK_ST(call, want)                                                             \
  do {                                                                                   \
    lt_status st_ = (call);                                                              \
    CHECKF(st_ == (want), "%s gave %s, expected %s", #call, lt_status_name(st_), lt_status_name(want)); \
  } while (0)

static const lt_runtime zero_rt;

static lt_runtime make_rt(void) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 2;
  cfg.device_memory = 64 << 20;
  lt_status st = lt_runtime_create(&cfg, &rt);
  if (st != LT_OK) {
    fprintf(stderr, "lt_runtime_create: %s: %s\n", lt_status_name(st), lt_last_error(zero_rt));
    exit(1);
  }
  return rt;
}

/* ---- names, sizes, configs ------------------------------------------------------- */

static void test_names(void) {
  CHECK_STREQ(lt_status_name(LT_OK), "LT_OK");
  CHECK_STREQ(lt_status_name(LT_ERROR_SHAPE), "LT_ERROR_SHAPE");
  CHECK_STREQ(lt_status_name(LT_ERROR_BUSY), "LT_ERROR_BUSY");
  CHECK_STREQ(lt_status_name(LT_ERROR_UNSUPPORTED), "LT_ERROR_UNSUPPORTED");
  CHECK(lt_status_name((lt_status)99) != NULL && strlen(lt_status_name((lt_status)99)) > 0);
  CHECK(lt_status_name((lt_status)-1) != NULL);
  const struct { lt_dtype t; size_t n; } sizes[] = {
    {LT_I8, sizeof(int8_t)}, {LT_I16, sizeof(int16_t)}, {LT_I32, sizeof(int32_t)}, {LT_I64, sizeof(int64_t)},
    {LT_U8, sizeof(uint8_t)}, {LT_U16, sizeof(uint16_t)}, {LT_U32, sizeof(uint32_t)}, {LT_U64, sizeof(uint64_t)},
    {LT_F32, sizeof(float)}, {LT_F64, sizeof(double)}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    CHECKF(lt_dtype_size(sizes[i].t) == sizes[i].n, "dtype %d", (int)sizes[i].t);
  const int bad[] = {-1, 0, 1, 12, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(lt_dtype_size((lt_dtype)bad[i]) == 0);
}

static void test_config(void) {
  lt_runtime_config c;
  memset(&c, 0x5a, sizeof c);
  lt_runtime_config_default(&c);
  CHECK(c.arch == LT_ARCH_CPU && c.threads == 0 && c.device_memory == 0 && c.debug == 0);
  lt_runtime_config_default(NULL);   /* nothing to fill: no crash */

  lt_runtime rt = {12345};
  CHECK_ST(lt_runtime_create(NULL, &rt), LT_OK);   /* NULL: the defaults */
  CHECK(rt.id != 0);
  CHECK_STREQ(lt_last_error(rt), "");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);

  CHECK_ST(lt_runtime_create(NULL, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(zero_rt), "lt_runtime_create");
  CHECK_CONTAINS(lt_last_error(zero_rt), "out is NULL");

  const struct {
    lt_runtime_config cfg;
    lt_status want;
    const char *msg;
  } bad[] = {
    {{.arch = (lt_arch)7}, LT_ERROR_INVALID_ARGUMENT, "arch is 7"},
    {{.arch = (lt_arch)-1}, LT_ERROR_INVALID_ARGUMENT, "arch is -1"},
    {{.threads = -1}, LT_ERROR_INVALID_ARGUMENT, "threads is -1"},
    {{.threads = 1025}, LT_ERROR_INVALID_ARGUMENT, "threads is 1025"},
    {{.device_memory = UINT64_MAX}, LT_ERROR_INVALID_ARGUMENT, "device_memory"},
    {{.device_memory = (uint64_t)1 << 62}, LT_ERROR_OUT_OF_MEMORY, "memory pool"},   /* beyond any address space */
    {{.device_memory = 16}, LT_ERROR_OUT_OF_MEMORY, "too small"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rt.id = 12345;
    lt_status st = lt_runtime_create(&bad[i].cfg, &rt);
    CHECKF(st == bad[i].want, "bad config %zu gave %s (%s)", i, lt_status_name(st), lt_last_error(zero_rt));
    CHECKF(rt.id == 0, "bad config %zu left a handle", i);
    CHECK_CONTAINS(lt_last_error(zero_rt), "lt_runtime_create: ");
    CHECK_CONTAINS(lt_last_error(zero_rt), bad[i].msg);
  }

  /* CUDA where there is no driver: a backend error saying so, not a crash */
  const char *was = getenv("LT_CUDA_DRIVER");
  char *saved = was ? strdup(was) : NULL;
  setenv("LT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  lt_runtime_config cuda;
  lt_runtime_config_default(&cuda);
  cuda.arch = LT_ARCH_CUDA;
  CHECK_ST(lt_runtime_create(&cuda, &rt), LT_ERROR_BACKEND);
  CHECK_CONTAINS(lt_last_error(zero_rt), "CUDA");
  if (saved) setenv("LT_CUDA_DRIVER", saved, 1);
  else unsetenv("LT_CUDA_DRIVER");
  free(saved);
}

/* ---- lt_last_error ------------------------------------------------------------------ */

static void *invalid_call_thread(void *arg) {
  lt_runtime stale = {(uint64_t)(uintptr_t)arg};
  lt_ndarray a;
  int64_t n = 4;
  lt_ndarray_create(stale, LT_F32, 1, &n, &a);   /* this thread's own message */
  return strdup(lt_last_error(stale));
}

static void test_last_error(void) {
  lt_runtime rt = make_rt();
  lt_ndarray a;
  int64_t n = 8;
  CHECK_ST(lt_ndarray_create(rt, (lt_dtype)99, 1, &n, &a), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_ndarray_create: ");
  CHECK_CONTAINS(lt_last_error(rt), "dtype 99");
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 1, &n, &a), LT_OK);
  CHECK_STREQ(lt_last_error(rt), "");   /* a success clears it */

  /* an invalid runtime: the calling thread's message, per thread */
  CHECK_ST(lt_ndarray_create(zero_rt, LT_F32, 1, &n, &a), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(zero_rt), "lt_ndarray_create: ");
  CHECK_CONTAINS(lt_last_error(zero_rt), "zero");
  lt_runtime stale = {rt.id ^ ((uint64_t)1 << 40)};   /* another serial, the same slot */
  CHECK_ST(lt_ndarray_release(stale, a), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(stale), "lt_ndarray_release: ");
  pthread_t t;
  pthread_create(&t, NULL, invalid_call_thread, (void *)(uintptr_t)stale.id);
  char *other = NULL;
  pthread_join(t, (void **)&other);
  CHECK_CONTAINS(other, "lt_ndarray_create: ");
  CHECK_CONTAINS(lt_last_error(stale), "lt_ndarray_release: ");   /* ours is unchanged */
  free(other);
  CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* ---- ndarrays the runtime allocates --------------------------------------------------- */

static void test_ndarray_create(void) {
  lt_runtime rt = make_rt();
  /* every dtype, 1 to LT_MAX_DIMS dimensions: shape back, zeroed, write/read round trip */
  for (int t = LT_I8; t <= LT_F64; t++) {
    for (int nd = 1; nd <= LT_MAX_DIMS; nd++) {
      int64_t shape[LT_MAX_DIMS];
      size_t count = 1;
      for (int k = 0; k < nd; k++) count *= (size_t)(shape[k] = 1 + (k * 3 + t) % 3);
      lt_ndarray a = {999};
      CHECK_ST(lt_ndarray_create(rt, (lt_dtype)t, nd, shape, &a), LT_OK);
      lt_dtype dt = 0;
      int got_nd = 0;
      int64_t got[LT_MAX_DIMS];
      memset(got, 0x77, sizeof got);
      CHECK_ST(lt_ndarray_shape(rt, a, &dt, &got_nd, got), LT_OK);
      CHECK(dt == (lt_dtype)t && got_nd == nd);
      for (int k = 0; k < LT_MAX_DIMS; k++) CHECKF(got[k] == (k < nd ? shape[k] : 0), "axis %d", k);
      size_t bytes = count * lt_dtype_size((lt_dtype)t);
      unsigned char *buf = malloc(bytes), *back = malloc(bytes);
      memset(buf, 0xcd, bytes);
      CHECK_ST(lt_ndarray_read(rt, a, buf, bytes), LT_OK);
      for (size_t i = 0; i < bytes; i++) CHECKF(buf[i] == 0, "byte %zu of a new array", i);
      for (size_t i = 0; i < bytes; i++) buf[i] = (unsigned char)(i * 37 + t);
      CHECK_ST(lt_ndarray_write(rt, a, buf, bytes), LT_OK);
      CHECK_ST(lt_ndarray_read(rt, a, back, bytes), LT_OK);
      CHECK(memcmp(buf, back, bytes) == 0);
      CHECK_ST(lt_ndarray_shape(rt, a, NULL, NULL, NULL), LT_OK);   /* every output optional */
      CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
      free(buf);
      free(back);
    }
  }

  int64_t shape[LT_MAX_DIMS + 1] = {2, 3, 1, 1, 1, 1, 1, 1, 1};
  lt_ndarray a = {999};
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 2, shape, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "out is NULL");
  CHECK_ST(lt_ndarray_create(rt, (lt_dtype)0, 2, shape, &a), LT_ERROR_TYPE);
  CHECK(a.id == 0);
  CHECK_ST(lt_ndarray_create(rt, (lt_dtype)12, 2, shape, &a), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "dtype 12");
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 0, shape, &a), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "ndim is 0");
  CHECK_ST(lt_ndarray_create(rt, LT_F32, -3, shape, &a), LT_ERROR_SHAPE);
  CHECK_ST(lt_ndarray_create(rt, LT_F32, LT_MAX_DIMS + 1, shape, &a), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "ndim is 9");
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 2, NULL, &a), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "shape is NULL");
  int64_t zero[2] = {3, 0}, neg[2] = {-4, 2}, huge[2] = {1 << 20, 1 << 12};
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 2, zero, &a), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "extent 1");
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 2, neg, &a), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "-4");
  CHECK_ST(lt_ndarray_create(rt, LT_I8, 2, huge, &a), LT_ERROR_SHAPE);   /* 2^32 elements */
  CHECK_CONTAINS(lt_last_error(rt), "too large");
  CHECK(a.id == 0);

  /* whole-array copies take exactly the array's bytes */
  CHECK_ST(lt_ndarray_create(rt, LT_F64, 2, shape, &a), LT_OK);
  double buf[7] = {0};
  CHECK_ST(lt_ndarray_read(rt, a, buf, 5 * sizeof(double)), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_ndarray_read: ");
  CHECK_CONTAINS(lt_last_error(rt), "40 bytes");
  CHECK_ST(lt_ndarray_read(rt, a, buf, 7 * sizeof(double)), LT_ERROR_SHAPE);
  CHECK_ST(lt_ndarray_write(rt, a, buf, 6 * sizeof(double) - 1), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_ndarray_write: ");
  CHECK_ST(lt_ndarray_read(rt, a, NULL, 6 * sizeof(double)), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_ndarray_write(rt, a, NULL, 6 * sizeof(double)), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_ndarray_read(rt, a, buf, 6 * sizeof(double)), LT_OK);
  CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* ---- ndarrays over the host's memory ------------------------------------------------ */

typedef struct {
  int calls;
  void *data;                      /* what the callback got */
  void *user;
} release_log;

static void on_release(void *user, void *data) {
  release_log *log = user;
  log->calls++;
  log->data = data;
  log->user = user;
}

static void test_ndarray_wrap(void) {
  lt_runtime rt = make_rt();
  int64_t shape[2] = {3, 5};
  float *host = malloc(15 * sizeof(float));
  for (int i = 0; i < 15; i++) host[i] = (float)i * 0.5f;
  release_log log = {0};
  lt_ndarray a = {0};
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, host, 15 * sizeof(float), on_release, &log, &a), LT_OK);
  CHECK(log.calls == 0);

  /* no copy on the CPU: the array's contents are the host's buffer */
  float back[15];
  CHECK_ST(lt_ndarray_read(rt, a, back, sizeof back), LT_OK);
  for (int i = 0; i < 15; i++) CHECK(back[i] == (float)i * 0.5f);
  host[7] = -3.25f;
  CHECK_ST(lt_ndarray_read(rt, a, back, sizeof back), LT_OK);
  CHECK(back[7] == -3.25f);
  for (int i = 0; i < 15; i++) back[i] = (float)(100 - i);
  CHECK_ST(lt_ndarray_write(rt, a, back, sizeof back), LT_OK);
  for (int i = 0; i < 15; i++) CHECK(host[i] == (float)(100 - i));
  /* the portable way to see results (a copy on CUDA) reads into the wrapped
  ** buffer itself: on the CPU source and destination are the same memory */
  CHECK_ST(lt_ndarray_read(rt, a, host, 15 * sizeof(float)), LT_OK);
  CHECK_ST(lt_ndarray_write(rt, a, host, 15 * sizeof(float)), LT_OK);
  for (int i = 0; i < 15; i++) CHECK(host[i] == (float)(100 - i));
  lt_dtype dt;
  int nd;
  int64_t got[LT_MAX_DIMS];
  CHECK_ST(lt_ndarray_shape(rt, a, &dt, &nd, got), LT_OK);
  CHECK(dt == LT_F32 && nd == 2 && got[0] == 3 && got[1] == 5 && got[2] == 0);

  /* released: the callback runs exactly once, with the buffer and user pointer */
  CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
  CHECK(log.calls == 1 && log.data == host && log.user == &log);
  CHECK_ST(lt_ndarray_release(rt, a), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_ndarray_release: ");
  CHECK_ST(lt_ndarray_read(rt, a, back, sizeof back), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_ndarray_write(rt, a, back, sizeof back), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_ndarray_shape(rt, a, &dt, &nd, got), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_ndarray_shape: ");
  CHECK(log.calls == 1);

  /* a failed wrap does not take the buffer: no callback */
  release_log none = {0};
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, host, 14 * sizeof(float), on_release, &none, &a), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "lt_ndarray_wrap: ");
  CHECK_CONTAINS(lt_last_error(rt), "56 bytes");
  CHECK(a.id == 0);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, host, 16 * sizeof(float), on_release, &none, &a), LT_ERROR_SHAPE);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F64, 2, shape, host, 15 * sizeof(float), on_release, &none, &a), LT_ERROR_SHAPE);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, NULL, 15 * sizeof(float), on_release, &none, &a),
           LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "NULL");
  CHECK_ST(lt_ndarray_wrap(rt, (lt_dtype)42, 2, shape, host, 60, on_release, &none, &a), LT_ERROR_TYPE);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 9, shape, host, 60, on_release, &none, &a), LT_ERROR_SHAPE);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, NULL, host, 60, on_release, &none, &a), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, host, 60, on_release, &none, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, (char *)host + 1, 60, on_release, &none, &a), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "aligned");
  CHECK(none.calls == 0);

  /* no callback: fine; arrays the host never released go with the runtime,
  ** each callback once */
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, host, 60, NULL, NULL, &a), LT_OK);
  CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
  release_log kept[3] = {{0}};
  int32_t *ints = calloc(12, sizeof(int32_t));
  int64_t n4 = 4;
  lt_ndarray k[3];
  for (int i = 0; i < 3; i++)
    CHECK_ST(lt_ndarray_wrap(rt, LT_I32, 1, &n4, ints + 4 * i, 16, on_release, &kept[i], &k[i]), LT_OK);
  CHECK_ST(lt_ndarray_release(rt, k[1]), LT_OK);
  CHECK(kept[0].calls == 0 && kept[1].calls == 1 && kept[2].calls == 0);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  CHECK(kept[0].calls == 1 && kept[1].calls == 1 && kept[2].calls == 1);
  CHECK(kept[0].data == ints && kept[2].data == ints + 8);
  CHECK_ST(lt_ndarray_release(rt, k[0]), LT_ERROR_INVALID_HANDLE);
  CHECK(kept[0].calls == 1);
  free(ints);
  free(host);
}

/* A release callback that uses its runtime again (the same thread may: it is
** inside the runtime's call) and makes enough arrays to move the runtime's
** table of objects: the array being released must still go cleanly. */
typedef struct {
  lt_runtime rt;
  lt_ndarray made[40];
  int made_ok;
} reenter_ctx;

static void reenter_release(void *user, void *data) {
  reenter_ctx *c = user;
  int64_t n = 2;
  for (int i = 0; i < 40; i++) c->made_ok += lt_ndarray_create(c->rt, LT_I64, 1, &n, &c->made[i]) == LT_OK;
}

static void test_release_reenters(void) {
  reenter_ctx c = {.rt = make_rt()};
  double buf[4] = {1, 2, 3, 4};
  int64_t n = 4;
  lt_ndarray a;
  CHECK_ST(lt_ndarray_wrap(c.rt, LT_F64, 1, &n, buf, sizeof buf, reenter_release, &c, &a), LT_OK);
  CHECK_ST(lt_ndarray_release(c.rt, a), LT_OK);
  CHECK(c.made_ok == 40);
  CHECK_ST(lt_ndarray_shape(c.rt, a, NULL, NULL, NULL), LT_ERROR_INVALID_HANDLE);   /* gone */
  for (int i = 0; i < 40; i++) {
    int64_t v[2] = {i, -i}, w[2];
    CHECK_ST(lt_ndarray_write(c.rt, c.made[i], v, sizeof v), LT_OK);
    CHECK_ST(lt_ndarray_read(c.rt, c.made[i], w, sizeof w), LT_OK);
    CHECK(w[0] == i && w[1] == -i);
  }
  CHECK_ST(lt_runtime_destroy(c.rt), LT_OK);
}

/* ---- handles ------------------------------------------------------------------------ */

static void test_handles(void) {
  lt_runtime r1 = make_rt(), r2 = make_rt(), r3 = make_rt();
  CHECK(r1.id != r2.id && r2.id != r3.id && r1.id != r3.id);
  int64_t n = 3;
  lt_ndarray a1, a2, a3;
  CHECK_ST(lt_ndarray_create(r1, LT_I32, 1, &n, &a1), LT_OK);
  CHECK_ST(lt_ndarray_create(r2, LT_I32, 1, &n, &a2), LT_OK);
  CHECK_ST(lt_ndarray_create(r3, LT_I32, 1, &n, &a3), LT_OK);
  int32_t v1[3] = {1, 2, 3}, v2[3] = {4, 5, 6}, got[3];
  CHECK_ST(lt_ndarray_write(r1, a1, v1, sizeof v1), LT_OK);
  CHECK_ST(lt_ndarray_write(r2, a2, v2, sizeof v2), LT_OK);

  /* another runtime's handle (the first object of each: the same slot) */
  CHECK_ST(lt_ndarray_read(r2, a1, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r2), "lt_ndarray_read: ");
  CHECK_CONTAINS(lt_last_error(r2), "invalid");
  CHECK_ST(lt_ndarray_release(r1, a2), LT_ERROR_INVALID_HANDLE);
  /* zeroed and made-up handles */
  lt_ndarray zero = {0}, bogus = {0xdeadbeefcafeULL};
  CHECK_ST(lt_ndarray_read(r1, zero, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r1), "zero");
  CHECK_ST(lt_ndarray_shape(r1, bogus, NULL, NULL, NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_ndarray_release(r1, bogus), LT_ERROR_INVALID_HANDLE);
  lt_runtime bogus_rt = {0xdeadbeefcafeULL};
  CHECK_ST(lt_ndarray_read(bogus_rt, a1, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  CHECK(lt_runtime_destroy(zero_rt) == LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(zero_rt), "lt_runtime_destroy: ");

  /* an ndarray handle where a field or kernel handle belongs */
  lt_field f = {a1.id};
  lt_kernel k = {a1.id};
  int64_t idx = 0;
  float x;
  CHECK_ST(lt_field_read(r1, f, &idx, 1, LT_F32, &x), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r1), "not a field");
  CHECK_ST(lt_field_write(r1, f, &idx, 1, LT_F32, &x), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_shape(r1, f, NULL, NULL, NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_kernel_launch(r1, k, NULL, 0, NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r1), "not a kernel");
  lt_field fz = {0};
  lt_kernel kz = {0};
  CHECK_ST(lt_field_read_box(r1, fz, &idx, &idx, 1, LT_F32, &x, sizeof x), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_write_box(r1, fz, &idx, &idx, 1, LT_F32, &x, sizeof x), LT_ERROR_INVALID_HANDLE);
  lt_value result = lt_int(7);
  CHECK_ST(lt_kernel_launch(r1, kz, NULL, 0, &result), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r1), "zero");

  /* destroying one runtime leaves the others as they were */
  CHECK_ST(lt_runtime_destroy(r2), LT_OK);
  CHECK_ST(lt_runtime_destroy(r2), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r2), "lt_runtime_destroy: ");
  CHECK_ST(lt_ndarray_read(r2, a2, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(r2), "lt_ndarray_read: ");
  CHECK_ST(lt_ndarray_create(r2, LT_I32, 1, &n, &a2), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_ndarray_read(r1, a1, got, sizeof got), LT_OK);
  CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3);
  CHECK_ST(lt_ndarray_read(r3, a3, got, sizeof got), LT_OK);
  CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0);

  /* a runtime made later (it may take the freed slot) does not revive the old handles */
  lt_runtime r4 = make_rt();
  lt_ndarray a4;
  CHECK_ST(lt_ndarray_create(r4, LT_I32, 1, &n, &a4), LT_OK);
  CHECK(r4.id != r2.id);
  CHECK_ST(lt_ndarray_read(r2, a2, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_ndarray_read(r4, a2, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  /* nor does an array made later in a released array's slot */
  CHECK_ST(lt_ndarray_release(r1, a1), LT_OK);
  lt_ndarray b1;
  CHECK_ST(lt_ndarray_create(r1, LT_I32, 1, &n, &b1), LT_OK);
  CHECK(b1.id != a1.id);
  CHECK_ST(lt_ndarray_read(r1, a1, got, sizeof got), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_ndarray_read(r1, b1, got, sizeof got), LT_OK);

  CHECK_ST(lt_runtime_destroy(r1), LT_OK);
  CHECK_ST(lt_runtime_destroy(r3), LT_OK);
  CHECK_ST(lt_runtime_destroy(r4), LT_OK);
  CHECK_ST(lt_ndarray_read(r1, b1, got, sizeof got), LT_ERROR_INVALID_HANDLE);
}

static void test_find(void) {
  lt_runtime rt = make_rt();
  lt_kernel k = {77};
  lt_field f = {77};
  CHECK_ST(lt_kernel_find(rt, "step", &k), LT_ERROR_NOT_FOUND);
  CHECK(k.id == 0);
  CHECK_CONTAINS(lt_last_error(rt), "lt_kernel_find: ");
  CHECK_CONTAINS(lt_last_error(rt), "'step'");
  CHECK_CONTAINS(lt_last_error(rt), "lt.export");
  CHECK_ST(lt_field_find(rt, "x", &f), LT_ERROR_NOT_FOUND);
  CHECK(f.id == 0);
  CHECK_CONTAINS(lt_last_error(rt), "lt_field_find: ");
  CHECK_CONTAINS(lt_last_error(rt), "'x'");
  CHECK_ST(lt_field_find(rt, "", &f), LT_ERROR_NOT_FOUND);
  CHECK_ST(lt_kernel_find(rt, NULL, &k), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_kernel_find(rt, "step", NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_field_find(rt, NULL, &f), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_field_find(rt, "x", NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_kernel_find(zero_rt, "step", &k), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  CHECK_ST(lt_field_find(rt, "x", &f), LT_ERROR_INVALID_HANDLE);
}

/* ---- threads ------------------------------------------------------------------------ */

/* One thread holds the runtime inside lt_ndarray_release: the release callback
** says it is inside, then waits until the test has made its calls from the
** other thread. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int inside, done;
  lt_runtime rt;
  lt_ndarray a;
  lt_status reentry;               /* a call from inside the callback, same thread */
  lt_status released;
} hold_ctx;

static void hold_release(void *user, void *data) {
  hold_ctx *h = user;
  int64_t n = 1;
  lt_ndarray b;
  h->reentry = lt_ndarray_create(h->rt, LT_U8, 1, &n, &b);   /* the thread inside may */
  if (h->reentry == LT_OK) h->reentry = lt_ndarray_release(h->rt, b);
  pthread_mutex_lock(&h->lock);
  h->inside = 1;
  pthread_cond_broadcast(&h->cond);
  while (!h->done) pthread_cond_wait(&h->cond, &h->lock);
  pthread_mutex_unlock(&h->lock);
}

static void *hold_thread(void *arg) {
  hold_ctx *h = arg;
  h->released = lt_ndarray_release(h->rt, h->a);
  return NULL;
}

static void test_busy(void) {
  hold_ctx h = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .rt = make_rt()};
  lt_runtime other = make_rt();
  static uint16_t buf[6];
  int64_t n = 6;
  CHECK_ST(lt_ndarray_wrap(h.rt, LT_U16, 1, &n, buf, sizeof buf, hold_release, &h, &h.a), LT_OK);
  lt_ndarray b;
  CHECK_ST(lt_ndarray_create(h.rt, LT_U16, 1, &n, &b), LT_OK);
  pthread_t t;
  pthread_create(&t, NULL, hold_thread, &h);
  pthread_mutex_lock(&h.lock);
  while (!h.inside) pthread_cond_wait(&h.cond, &h.lock);
  pthread_mutex_unlock(&h.lock);

  /* the other thread is inside h.rt: every call on it is BUSY at once */
  lt_ndarray c;
  uint16_t got[6];
  lt_kernel k;
  CHECK_ST(lt_ndarray_create(h.rt, LT_U16, 1, &n, &c), LT_ERROR_BUSY);
  CHECK_CONTAINS(lt_last_error(h.rt), "lt_ndarray_create: ");
  CHECK_CONTAINS(lt_last_error(h.rt), "another thread");
  CHECK_ST(lt_ndarray_read(h.rt, b, got, sizeof got), LT_ERROR_BUSY);
  CHECK_CONTAINS(lt_last_error(h.rt), "lt_ndarray_read: ");
  CHECK_ST(lt_kernel_find(h.rt, "k", &k), LT_ERROR_BUSY);
  CHECK_ST(lt_ndarray_release(h.rt, b), LT_ERROR_BUSY);
  CHECK_ST(lt_runtime_destroy(h.rt), LT_ERROR_BUSY);
  CHECK_CONTAINS(lt_last_error(h.rt), "lt_runtime_destroy: ");
  /* another runtime is free meanwhile */
  CHECK_ST(lt_ndarray_create(other, LT_U16, 1, &n, &c), LT_OK);
  CHECK_ST(lt_ndarray_release(other, c), LT_OK);
  CHECK_STREQ(lt_last_error(other), "");

  pthread_mutex_lock(&h.lock);
  h.done = 1;
  pthread_cond_broadcast(&h.cond);
  pthread_mutex_unlock(&h.lock);
  pthread_join(t, NULL);
  CHECK_ST(h.released, LT_OK);
  CHECK_ST(h.reentry, LT_OK);
  /* free again: this thread may use it now */
  CHECK_ST(lt_ndarray_read(h.rt, b, got, sizeof got), LT_OK);
  CHECK_ST(lt_ndarray_release(h.rt, b), LT_OK);
  CHECK_ST(lt_runtime_destroy(h.rt), LT_OK);
  CHECK_ST(lt_runtime_destroy(other), LT_OK);
}

/* Different runtimes on different threads at the same time: independent. */
static void *own_runtime_thread(void *arg) {
  int seed = (int)(intptr_t)arg, bad = 0;
  lt_runtime rt = make_rt();
  for (int round = 0; round < 50; round++) {
    int64_t n = 16 + round;
    int64_t *host = malloc((size_t)n * sizeof *host), *back = malloc((size_t)n * sizeof *back);
    for (int64_t i = 0; i < n; i++) host[i] = seed * 1000000 + round * 1000 + i;
    lt_ndarray a, b;
    bad += lt_ndarray_wrap(rt, LT_I64, 1, &n, host, (size_t)n * sizeof *host, NULL, NULL, &a) != LT_OK;
    bad += lt_ndarray_create(rt, LT_I64, 1, &n, &b) != LT_OK;
    bad += lt_ndarray_write(rt, b, host, (size_t)n * sizeof *host) != LT_OK;
    bad += lt_ndarray_read(rt, b, back, (size_t)n * sizeof *back) != LT_OK;
    bad += memcmp(host, back, (size_t)n * sizeof *host) != 0;
    bad += lt_ndarray_release(rt, a) != LT_OK;
    bad += lt_ndarray_release(rt, b) != LT_OK;
    bad += strcmp(lt_last_error(rt), "") != 0;
    free(host);
    free(back);
  }
  bad += lt_runtime_destroy(rt) != LT_OK;
  return (void *)(intptr_t)bad;
}

static void test_threads_independent(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, own_runtime_thread, (void *)(intptr_t)(i + 1));
  for (int i = 0; i < 4; i++) {
    void *bad;
    pthread_join(t[i], &bad);
    CHECKF(bad == NULL, "thread %d: %d failures", i, (int)(intptr_t)bad);
  }
}

/* ---- CUDA (the mock driver): wrapped host memory is copied at once ------------------- */

static void test_cuda_wrap(void) {
  const char *mock = getenv("LT_MOCK_CUDA_DRIVER");
  if (!mock || !*mock) {
    printf("test_capi: CUDA cases skipped (LT_MOCK_CUDA_DRIVER is not set)\n");
    return;
  }
  setenv("LT_CUDA_DRIVER", mock, 1);
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.arch = LT_ARCH_CUDA;
  cfg.device_memory = 64 << 20;
  lt_runtime rt;
  lt_status st = lt_runtime_create(&cfg, &rt);
  CHECKF(st == LT_OK, "a CUDA runtime on the mock driver: %s", lt_last_error(zero_rt));
  if (st == LT_OK) {
    float host[6] = {1, 2, 3, 4, 5, 6}, back[6];
    int64_t shape[2] = {2, 3};
    release_log log = {0};
    lt_ndarray a;
    CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 2, shape, host, sizeof host, on_release, &log, &a), LT_OK);
    CHECK(log.calls == 1 && log.data == host);   /* copied to the device; the buffer is the host's again */
    host[0] = 99;
    CHECK_ST(lt_ndarray_read(rt, a, back, sizeof back), LT_OK);
    CHECK(back[0] == 1 && back[5] == 6);
    back[2] = -7;
    CHECK_ST(lt_ndarray_write(rt, a, back, sizeof back), LT_OK);
    CHECK(host[2] == 3);
    memset(back, 0, sizeof back);
    CHECK_ST(lt_ndarray_read(rt, a, back, sizeof back), LT_OK);
    CHECK(back[2] == -7);
    CHECK_ST(lt_ndarray_release(rt, a), LT_OK);
    CHECK(log.calls == 1);
    CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  }
  unsetenv("LT_CUDA_DRIVER");
}

int main(void) {
  test_names();
  test_config();
  test_last_error();
  test_ndarray_create();
  test_ndarray_wrap();
  test_release_reenters();
  test_handles();
  test_find();
  test_busy();
  test_threads_independent();
  test_cuda_wrap();
  return check_finish("test_capi");
}
