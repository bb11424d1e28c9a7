/*
** test_jit_sparse_device.c -- jit_sparse on a pool the host may not touch,
** as on a GPU: the CPU backend wrapped so that its pool is PROT_NONE except
** while a device-memory call (mem_read, mem_write, mem_zero, serve) or a
** launch runs. Any host access to the pool that bypasses the backend
** crashes the test. Host writes, reads, snode ops, append, kernels with list
** reuse, deactivate_all, GC and instance reuse are checked against a model;
** a failing backend gives jit_sparse_take_error's message, never a crash.
*/
#include <sys/mman.h>

#include "test_jit_sparse_world.h"

/* ---- the guarded backend ---- */

static jit_backend orig;             /* the CPU backend's own functions */
static char *g_pool;
static uint64_t g_size;
static int g_open;                   /* nesting: a launch calls mem_read itself */
static bool g_fail;                  /* every call fails, as after a lost CUDA context */
static int g_outside;                /* accesses outside the pool */

static void open_pool(void) {
  if (g_open++ == 0 && g_pool) mprotect(g_pool, g_size, PROT_READ | PROT_WRITE);
}
static void close_pool(void) {
  if (--g_open == 0 && g_pool) mprotect(g_pool, g_size, PROT_NONE);
}
static bool in_pool(const char *p, size_t n) {
  bool ok = g_pool && p >= g_pool && n <= g_size && (uint64_t)(p - g_pool) <= g_size - n;
  if (!ok) g_outside++;
  return ok;
}
static bool injected(jit_backend *be) {
  if (g_fail) snprintf(be->error, sizeof be->error, "injected failure (context lost)");
  return g_fail;
}

static char *g_alloc(jit_backend *be, uint64_t bytes) {
  char *p = orig.mem_alloc(be, bytes);
  if (p) {
    g_pool = p;
    g_size = bytes;
    mprotect(p, bytes, PROT_NONE);
  }
  return p;
}
static void g_free(jit_backend *be, char *p, uint64_t bytes) {
  if (p == g_pool) g_pool = NULL;
  orig.mem_free(be, p, bytes);
}
static bool g_read(jit_backend *be, void *dst, const char *src, size_t n) {
  if (injected(be) || !in_pool(src, n)) return false;
  open_pool();
  bool ok = orig.mem_read(be, dst, src, n);
  close_pool();
  return ok;
}
static bool g_write(jit_backend *be, char *dst, const void *src, size_t n) {
  if (injected(be) || !in_pool(dst, n)) return false;
  open_pool();
  bool ok = orig.mem_write(be, dst, src, n);
  close_pool();
  return ok;
}
static bool g_zero(jit_backend *be, char *dst, size_t n) {
  if (injected(be) || !in_pool(dst, n)) return false;
  open_pool();
  bool ok = orig.mem_zero(be, dst, n);
  close_pool();
  return ok;
}
static bool g_serve(jit_backend *be, struct rt_runtime *rt, struct rt_request *req) {
  if (injected(be)) return false;
  open_pool();
  bool ok = orig.serve(be, rt, req);
  close_pool();
  return ok;
}
/* the pool stays open from a launch's beginning to its end */
static bool g_begin(jit_backend *be, jit_kernel *jk, rt_context *ctx) {
  open_pool();
  return !orig.launch_begin || orig.launch_begin(be, jk, ctx);
}
static bool g_end(jit_backend *be, jit_kernel *jk, rt_context *ctx, bool ok) {
  ok = !orig.launch_end ? ok : orig.launch_end(be, jk, ctx, ok);
  close_pool();
  return ok;
}

static bool guarded_init(sw *w, uint64_t pool) {
  memset(w, 0, sizeof *w);
  w->p = ir_program_new();
  w->be = jit_cpu_create(2, NULL, w->err, sizeof w->err);
  if (!w->be) return false;
  orig = *w->be;
  w->be->host_memory = false;
  w->be->mem_alloc = g_alloc;
  w->be->mem_free = g_free;
  w->be->mem_read = g_read;
  w->be->mem_write = g_write;
  w->be->mem_zero = g_zero;
  w->be->serve = g_serve;
  w->be->launch_begin = g_begin;
  w->be->launch_end = g_end;
  w->sp = jit_sparse_create(w->be, pool, w->err, sizeof w->err);
  return w->sp != NULL;
}

/* ---- the test ---- */

#define NV 128   /* v: pointer [i:16] bitmasked [i:8] */

static int h_randn_local(uint64_t *s) {   /* xorshift64*, an index of v */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (int)((*s * 0x2545F4914F6CDD1DULL) >> 33) % NV;
}

static char *elem(sw *w, const char *name, int64_t i, int64_t j, bool activate) {
  ir_snode *pl = sw_place(w, name);
  int64_t idx[2] = {i, j};
  return jit_sparse_element(w->sp, pl, w->roots[pl->tree], idx, activate);
}

static void put_i32(sw *w, const char *name, int64_t i, int64_t j, int32_t v) {
  char *at = elem(w, name, i, j, true);
  CHECK(at != NULL);
  if (at) CHECK(w->be->mem_write(w->be, at, &v, sizeof v));
}

static int64_t op(sw *w, const char *name, int up, int64_t i, jit_sn_op o) {
  ir_snode *lvl = sw_level(w, name, up);
  return jit_sparse_snode_op(w->sp, lvl, w->roots[lvl->tree], &i, o);
}

static void check_model(sw *w, const int32_t *val, const char *when) {
  int64_t on = 0;
  for (int i = 0; i < NV; i++) {
    on += val[i] != 0;
    CHECKF(sw_get_i32(w, "v", i, 0) == val[i], "%s: v[%d] = %lld, model %d", when, i,
           (long long)sw_get_i32(w, "v", i, 0), val[i]);
    CHECKF(op(w, "v", 1, i, JIT_SN_IS_ACTIVE) == (val[i] != 0), "%s: is_active %d", when, i);
  }
  CHECKF(jit_sparse_active_cells(w->sp, sw_level(w, "v", 1)->id) == on, "%s: active cells", when);
}

static void test_guarded(void) {
  sw w;
  if (!guarded_init(&w, 64 << 20)) { CHECKF(0, "%s", w.err); sw_free(&w); return; }
  CHECKF(sw_fields(&w, "field v <i32> pointer [i:16] bitmasked [i:8]\nfield n <i32>\n"
                       "field d <i32> dense [i:4] dynamic [j:16] chunk=4\n"), "%s", w.err);
  int32_t val[NV] = {0};
  uint64_t seed = 7;
  for (int k = 0; k < 40; k++) {
    int i = h_randn_local(&seed);
    val[i] = 3 * i + 1;
    put_i32(&w, "v", i, 0, val[i]);
  }
  check_model(&w, val, "after writes");

  /* a struct-for counts the active cells; the second launch reuses the lists */
  char L[64];
  ir_snode_label(sw_level(&w, "v", 1), L, sizeof L);
  jit_kernel *count = sw_compile(&w,
      "kernel count() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n    <i32*> $2 = global_ptr n []\n"
      "    <i32> $3 = const 1\n    <i32> $4 = atomic_add $2 $3\n  }\n}\n", L);
  if (!count) { CHECK(0); sw_free(&w); return; }
  int64_t on = 0;
  for (int i = 0; i < NV; i++) on += val[i] != 0;
  put_i32(&w, "n", 0, 0, 0);
  CHECK(sw_launch(&w, count, NULL, 0));
  CHECK(sw_get_i32(&w, "n", 0, 0) == on);
  jit_sparse_stats a = sw_stats(&w);
  put_i32(&w, "n", 0, 0, 0);
  CHECK(sw_launch(&w, count, NULL, 0));
  CHECK(sw_get_i32(&w, "n", 0, 0) == on);
  jit_sparse_stats b = sw_stats(&w);
  CHECK(b.lists_reused > a.lists_reused && b.lists_built == a.lists_built);
  /* a new block (a pointer cell switching on) makes the lists stale */
  int fresh = -1;
  for (int i = 0; i < NV && fresh < 0; i += 8)
    if (!op(&w, "v", 2, i, JIT_SN_IS_ACTIVE)) fresh = i;
  if (fresh >= 0) {
    CHECK(op(&w, "v", 1, fresh, JIT_SN_ACTIVATE) == 1);
    val[fresh] = -5;
    put_i32(&w, "v", fresh, 0, -5);
    on++;
  }
  put_i32(&w, "n", 0, 0, 0);
  CHECK(sw_launch(&w, count, NULL, 0));
  CHECK(sw_get_i32(&w, "n", 0, 0) == on);
  CHECK(sw_stats(&w).lists_built > b.lists_built);
  check_model(&w, val, "after kernels");

  /* deactivate one cell, then all of the pointer level */
  for (int i = 0; i < NV; i++)
    if (val[i]) {
      op(&w, "v", 1, i, JIT_SN_DEACTIVATE);
      val[i] = 0;
      break;
    }
  check_model(&w, val, "after deactivate");
  int64_t runs = sw_stats(&w).gc_runs;
  jit_sparse_deactivate_all(w.sp, sw_level(&w, "v", 2), w.roots[sw_place(&w, "v")->tree]);
  memset(val, 0, sizeof val);
  check_model(&w, val, "after deactivate_all");
  CHECK(sw_stats(&w).gc_runs > runs);
  CHECK(jit_sparse_active_cells(w.sp, sw_level(&w, "v", 2)->id) == 0);
  jit_sparse_gc_all(w.sp);

  /* append to a dynamic list and read the elements back */
  ir_snode *dyn = sw_level(&w, "d", 1), *dpl = sw_place(&w, "d");
  int64_t row = 2;
  for (int k = 0; k < 6; k++) {
    int32_t at = -2;
    char *cell = jit_sparse_append(w.sp, dyn, w.roots[dyn->tree], &row, &at);
    CHECK(cell != NULL && at == k);
    int32_t v = 100 + k;
    if (cell) CHECK(w.be->mem_write(w.be, cell + dpl->offset, &v, sizeof v));
  }
  CHECK(jit_sparse_snode_op(w.sp, dyn, w.roots[dyn->tree], &row, JIT_SN_LENGTH) == 6);
  for (int k = 0; k < 6; k++) CHECK(sw_get_i32(&w, "d", row, k) == 100 + k);
  CHECK(sw_get_i32(&w, "d", 1, 0) == 0);

  /* a freed instance comes back zeroed */
  int tree = sw_place(&w, "d")->tree;
  jit_sparse_free_instance(w.sp, w.p, tree, w.roots[tree]);
  char *again = jit_sparse_new_instance(w.sp, w.p, tree, w.err, sizeof w.err);
  CHECK(again == w.roots[tree]);
  CHECK(sw_get_i32(&w, "d", row, 0) == 0);
  CHECK(jit_sparse_snode_op(w.sp, dyn, again, &row, JIT_SN_LENGTH) == 0);

  /* the backend fails: answers are "nothing", take_error says why, no crash */
  char msg[768] = "";
  CHECK(!jit_sparse_take_error(w.sp, w.p, msg, sizeof msg));
  g_fail = true;
  CHECK(elem(&w, "v", 5, 0, true) == NULL);
  CHECK(op(&w, "v", 1, 5, JIT_SN_IS_ACTIVE) == 0);
  CHECK(jit_sparse_take_error(w.sp, w.p, msg, sizeof msg));
  CHECK_CONTAINS(msg, "the cpu backend failed: injected failure");
  CHECK(jit_sparse_new_instance(w.sp, w.p, tree, w.err, sizeof w.err) == NULL);
  CHECK_CONTAINS(w.err, "injected failure");
  jit_sparse_stats st;
  jit_sparse_get_stats(w.sp, &st);
  jit_sparse_gc_all(w.sp);
  jit_sparse_deactivate_all(w.sp, sw_level(&w, "v", 2), w.roots[sw_place(&w, "v")->tree]);
  CHECK(jit_sparse_list_stale(w.sp, NULL, sw_level(&w, "v", 1)->id, w.roots[0]));
  CHECK(jit_sparse_take_error(w.sp, w.p, msg, sizeof msg));
  g_fail = false;
  CHECK(!jit_sparse_take_error(w.sp, w.p, msg, sizeof msg));
  put_i32(&w, "v", 9, 0, 42);
  CHECK(sw_get_i32(&w, "v", 9, 0) == 42);

  CHECKF(g_outside == 0, "%d device accesses outside the pool", g_outside);
  CHECK(g_open == 0);
  w.be->release(w.be, count);
  sw_free(&w);
  CHECK(g_pool == NULL);   /* freed through the backend */
}

int main(void) {
  test_guarded();
  return check_finish("test_jit_sparse_device");
}
