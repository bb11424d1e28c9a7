/*
** test_rt_service.c -- rt_serve (src/runtime/service.h), the requests the
** host sends to wherever the pool is: every op against a plain C model of
** which cells are active and what they hold (random walks over a pointer ->
** bitmasked tree, appends to dynamic lists), deactivate_all and GC, pool
** exhaustion as a failed flag plus a recorded error, and malformed requests
** refused without touching memory.
*/
#include "check.h"
#include "rt_helpers.h"
#include "runtime/service.h"

/* Tree A: S0 root -> S1 pointer [i: 8 blocks of 16] -> S2 bitmasked [16] of i32.
** Tree B: S3 root -> S4 dense [4 rows] -> S5 dynamic [capacity 10, chunks of 4] of i64. */
enum { A_ROOT, A_PTR, A_BM, B_ROOT, B_ROWS, B_DYN, NSN = 8 };
#define NI 128
#define DYN_CAP 10

static rt_request req_of(int32_t op, int32_t snode, char *root) {
  rt_request r;
  memset(&r, 0xAB, sizeof r);   /* outputs must be written by rt_serve, whatever was there */
  r.op = op;
  r.snode = snode;
  r.root = root;
  r.depth = 0;
  r.activate = 0;
  r.cell = 0;
  return r;
}

static rt_meta meta(int32_t id, int32_t kind, int32_t cells, int64_t cell_bytes, int32_t axis, int32_t below) {
  rt_meta m = h_meta1(id, kind, cells, cell_bytes);
  if (axis < 0) {   /* a root: one cell, no axes */
    m.naxes = 0;
    return m;
  }
  m.axis[0] = axis;
  m.below[0] = below;
  return m;
}

static int add(rt_runtime *rt, rt_meta m) {
  rt_request r = req_of(RT_REQ_ADD_SNODE, 0, NULL);
  r.meta = m;
  rt_serve(rt, &r);
  return r.value == 1 && !r.failed;
}

/* path of tree A down to a place (depth 3), or to S2's container (depth 2),
** or to S1's container (depth 1), for index i */
static void path_a(rt_request *r, int i, int depth) {
  rt_req_level lv[3] = {{A_ROOT, 0, 0}, {A_PTR, i / 16, 0}, {A_BM, i % 16, 0}};
  r->depth = depth;
  for (int l = 0; l < depth; l++) r->path[l] = lv[l];
}

static char *element(rt_runtime *rt, char *root, int i, int activate, int *failed) {
  rt_request r = req_of(RT_REQ_ELEMENT, 0, root);
  path_a(&r, i, 3);
  r.activate = activate;
  rt_serve(rt, &r);
  *failed = r.failed;
  return r.addr;
}

static int64_t level_op(rt_runtime *rt, char *root, int32_t op, int32_t snode, int i) {
  rt_request r = req_of(op, snode, root);
  path_a(&r, i, snode == A_PTR ? 1 : 2);
  r.cell = snode == A_PTR ? i / 16 : i % 16;
  r.activate = op == RT_REQ_ACTIVATE;
  rt_serve(rt, &r);
  CHECK(!r.failed);
  return r.value;
}

static void test_init(void) {
  char err[256];
  uint64_t size = 64 << 20;
  char *pool = rt_mempool_reserve(size, err, sizeof err);
  rt_request r = req_of(RT_REQ_INIT, 0, NULL);
  r.pool = pool;
  r.bytes = size;
  r.nsnodes = NSN;
  r.ambient_bytes = 4096;
  r.reserve = 1 << 20;
  rt_serve(NULL, &r);
  CHECK(!r.failed && r.addr == pool && r.error == RT_RTERR_OK);
  rt_runtime *rt = (rt_runtime *)r.addr;
  CHECK(rt->pool_size == size && rt->reserve == (1u << 20) && rt->nsnodes == NSN);
  /* too small for the state: refused, nothing returned */
  rt_request small = req_of(RT_REQ_INIT, 0, NULL);
  small.pool = pool;
  small.bytes = 4096;
  small.nsnodes = NSN;
  small.ambient_bytes = 4096;
  rt_serve(NULL, &small);
  CHECK(small.failed && small.addr == NULL);
  /* any other op needs a runtime */
  rt_request none = req_of(RT_REQ_GC, 0, NULL);
  rt_serve(NULL, &none);
  CHECK(none.failed);
  rt_mempool_release(pool, size);
}

/* A runtime (INIT through rt_serve) with trees A and B registered and one
** instance of each. */
typedef struct {
  h_rt h;
  char *ra, *rb;
} world;

static void world_new(world *w, uint64_t size) {
  w->h = h_rt_new(size, NSN, 4096);
  rt_runtime *rt = w->h.rt;
  int64_t bm_bytes = rt_container_bytes(RT_KIND_BITMASKED, 16, 4);
  int64_t ptr_bytes = rt_container_bytes(RT_KIND_POINTER, 8, bm_bytes);
  CHECK(add(rt, meta(A_ROOT, RT_KIND_DENSE, 1, ptr_bytes, -1, 1)));
  CHECK(add(rt, meta(A_PTR, RT_KIND_POINTER, 8, bm_bytes, 0, 16)));
  CHECK(add(rt, meta(A_BM, RT_KIND_BITMASKED, 16, 4, 0, 1)));
  int64_t dyn_bytes = rt_container_bytes(RT_KIND_DYNAMIC, DYN_CAP, 8);
  CHECK(add(rt, meta(B_ROOT, RT_KIND_DENSE, 1, 4 * dyn_bytes, -1, 1)));
  CHECK(add(rt, meta(B_ROWS, RT_KIND_DENSE, 4, dyn_bytes, 0, 1)));
  CHECK(add(rt, meta(B_DYN, RT_KIND_DYNAMIC, DYN_CAP, 8, 1, 1)));
  rt_request a = req_of(RT_REQ_BUMP_DATA, A_ROOT, NULL);
  a.bytes = (uint64_t)ptr_bytes;
  a.align = 64;
  rt_serve(rt, &a);
  rt_request b = a;
  b.snode = B_ROOT;
  b.bytes = (uint64_t)(4 * dyn_bytes);
  rt_serve(rt, &b);
  CHECK(!a.failed && !b.failed && a.addr && b.addr && a.addr != b.addr);
  CHECK(((uintptr_t)a.addr & 63) == 0 && ((uintptr_t)b.addr & 63) == 0);
  CHECK(a.addr > rt->pool && a.addr + ptr_bytes <= rt->pool + rt->pool_size);
  CHECK(h_all_zero(a.addr, ptr_bytes) && h_all_zero(b.addr, 4 * dyn_bytes));
  w->ra = a.addr;
  w->rb = b.addr;
}

static void test_add_snode(void) {
  world w;
  world_new(&w, 64 << 20);
  rt_runtime *rt = w.h.rt;
  CHECK(rt_runtime_meta(rt, A_BM)->rt == rt && rt_runtime_meta(rt, B_DYN)->chunk_cells == 4);
  /* registering an id twice, or a bad description, is refused and recorded */
  CHECK(!add(rt, meta(A_PTR, RT_KIND_POINTER, 8, 72, 0, 16)));
  CHECK(rt->error == RT_RTERR_META && rt->error_snode == A_PTR);
  h_rt_free(&w.h);
}

/* Random activations, writes, lookups and deactivations against a model. */
static void test_walks(void) {
  world w;
  world_new(&w, 64 << 20);
  rt_runtime *rt = w.h.rt;
  int on[NI] = {0}, blk[NI / 16] = {0};
  int32_t val[NI] = {0};
  char *addr[NI] = {0};
  uint64_t seed = 12345;
  for (int step = 0; step < 4000; step++) {
    int i = h_randn(&seed, NI), what = h_randn(&seed, 5), failed;
    if (what == 0) {          /* write through an activating walk */
      int32_t *p = (int32_t *)element(rt, w.ra, i, 1, &failed);
      CHECK(p && !failed);
      if (!p) continue;
      if (addr[i]) CHECKF((char *)p == addr[i], "step %d: cell %d moved while active", step, i);
      addr[i] = (char *)p;
      *p = val[i] = step + 1;
      on[i] = blk[i / 16] = 1;
    } else if (what == 1) {   /* deactivate one bitmasked cell */
      level_op(rt, w.ra, RT_REQ_DEACTIVATE, A_BM, i);
      on[i] = 0;
      val[i] = 0;
      addr[i] = NULL;
    } else if (what == 2) {   /* activate without writing */
      CHECK(level_op(rt, w.ra, RT_REQ_ACTIVATE, A_BM, i) == 1);
      on[i] = blk[i / 16] = 1;
    } else {                  /* look up: same cell, same value; inactive reads give NULL */
      char *p = element(rt, w.ra, i, 0, &failed);
      CHECK(!failed);
      if (!on[i]) {
        CHECKF(p == NULL, "step %d: inactive %d gave a cell", step, i);
      } else {
        CHECKF(p != NULL, "step %d: active %d gave no cell", step, i);
        if (p && addr[i]) CHECK(p == addr[i]);
        if (p) CHECKF(*(int32_t *)p == val[i], "step %d: cell %d holds %d, model %d", step, i, *(int32_t *)p, val[i]);
      }
    }
    if (step % 97 == 0) {
      int64_t nbm = 0, nptr = 0;
      for (int k = 0; k < NI; k++) {
        nbm += on[k];
        CHECKF(level_op(rt, w.ra, RT_REQ_IS_ACTIVE, A_BM, k) == on[k], "step %d: is_active %d", step, k);
      }
      for (int b = 0; b < NI / 16; b++) {
        nptr += blk[b];
        CHECK(level_op(rt, w.ra, RT_REQ_IS_ACTIVE, A_PTR, b * 16) == blk[b]);
      }
      CHECKF(rt_runtime_active(rt, A_BM) == nbm, "step %d: %lld active, model %lld", step,
             (long long)rt_runtime_active(rt, A_BM), (long long)nbm);
      CHECK(rt_runtime_active(rt, A_PTR) == nptr);
    }
  }
  /* LENGTH of a level that is not a dynamic */
  CHECK(level_op(rt, w.ra, RT_REQ_LENGTH, A_BM, 0) == (blk[0] ? -1 : 0));
  CHECK(rt->error == RT_RTERR_OK);

  /* deactivate_all of the bitmasked level: every cell off, blocks stay */
  int64_t ptr_active = rt_runtime_active(rt, A_PTR), built = rt->lists_built;
  rt_request d = req_of(RT_REQ_DEACTIVATE_ALL, A_BM, w.ra);
  path_a(&d, 0, 2);
  rt_serve(rt, &d);
  CHECK(!d.failed && d.error == RT_RTERR_OK);
  CHECK(rt->lists_built == built + 3);   /* the lists of the root, the pointer and the bitmasked level */
  CHECK(rt_listgen_size(rt, A_BM) == ptr_active);   /* one bitmasked container per active block */
  CHECK(rt_runtime_active(rt, A_BM) == 0 && rt_runtime_active(rt, A_PTR) == ptr_active);
  for (int k = 0; k < NI; k++) CHECK(level_op(rt, w.ra, RT_REQ_IS_ACTIVE, A_BM, k) == 0);

  /* deactivate_all of the pointer level: its cells are recycled and collected */
  int64_t runs = rt->gc_runs;
  d = req_of(RT_REQ_DEACTIVATE_ALL, A_PTR, w.ra);
  path_a(&d, 0, 1);
  rt_serve(rt, &d);
  CHECK(!d.failed && rt_runtime_active(rt, A_PTR) == 0 && rt->gc_runs == runs + 1);
  CHECK(rt_list_size(&rt->allocators[A_PTR].recycled) == 0);
  CHECK(rt_list_size(&rt->allocators[A_PTR].free) == ptr_active);
  int32_t made = rt_list_size(&rt->allocators[A_PTR].data);
  for (int b = 0; b < NI / 16; b++) CHECK(level_op(rt, w.ra, RT_REQ_IS_ACTIVE, A_PTR, b * 16) == 0);
  /* activating again reuses the collected cells, zero-filled */
  int failed;
  for (int b = 0; b < ptr_active; b++) {
    int32_t *p = (int32_t *)element(rt, w.ra, b * 16 + 3, 1, &failed);
    CHECK(p && !failed && *p == 0);
  }
  CHECK(rt_list_size(&rt->allocators[A_PTR].data) == made);

  /* GC of one SNode: collects what a deactivation recycled */
  level_op(rt, w.ra, RT_REQ_DEACTIVATE, A_PTR, 3);
  CHECK(rt_list_size(&rt->allocators[A_PTR].recycled) == 1);
  rt_request g = req_of(RT_REQ_GC, A_PTR, NULL);
  runs = rt->gc_runs;
  rt_serve(rt, &g);
  CHECK(!g.failed && rt->gc_runs == runs + 1 && rt_list_size(&rt->allocators[A_PTR].recycled) == 0);
  g.snode = A_BM;   /* no allocator */
  rt_serve(rt, &g);
  CHECK(g.failed && rt->gc_runs == runs + 1);

  /* LIST_ROOT: the root's list holds the instance */
  rt_request lr = req_of(RT_REQ_LIST_ROOT, A_ROOT, w.ra);
  rt_serve(rt, &lr);
  CHECK(!lr.failed && rt_listgen_size(rt, A_ROOT) == 1 && rt_listgen_element(rt, A_ROOT, 0)->container == w.ra);
  CHECK(rt->error == RT_RTERR_OK);
  h_rt_free(&w.h);
}

static int64_t dyn_op(rt_runtime *rt, char *root, int32_t op, int row, int cell, char **addr) {
  rt_request r = req_of(op, B_DYN, root);
  rt_req_level lv[2] = {{B_ROOT, 0, 0}, {B_ROWS, row, 0}};
  r.depth = 2;
  r.path[0] = lv[0];
  r.path[1] = lv[1];
  r.cell = cell;
  r.activate = op == RT_REQ_APPEND || op == RT_REQ_ACTIVATE;
  rt_serve(rt, &r);
  if (addr) *addr = r.addr;
  return r.value;
}

static void test_dynamic(void) {
  world w;
  world_new(&w, 64 << 20);
  rt_runtime *rt = w.h.rt;
  int len[4] = {0};
  char *cells[4][DYN_CAP];
  uint64_t seed = 99;
  for (int step = 0; step < 60; step++) {
    int row = h_randn(&seed, 4);
    char *c;
    int64_t at = dyn_op(rt, w.rb, RT_REQ_APPEND, row, 0, &c);
    if (len[row] == DYN_CAP) {
      CHECK(at == -1 && c == NULL);
      continue;
    }
    CHECKF(at == len[row], "row %d: appended at %lld, model %d", row, (long long)at, len[row]);
    CHECK(c != NULL);
    if (!c) continue;
    for (int k = 0; k < len[row]; k++) CHECK(cells[row][k] != c);
    *(int64_t *)c = 1000 * row + at;
    cells[row][len[row]++] = c;
  }
  for (int row = 0; row < 4; row++) {
    CHECK(dyn_op(rt, w.rb, RT_REQ_LENGTH, row, 0, NULL) == len[row]);
    for (int k = 0; k < DYN_CAP; k++) CHECK(dyn_op(rt, w.rb, RT_REQ_IS_ACTIVE, row, k, NULL) == (k < len[row]));
    for (int k = 0; k < len[row]; k++) CHECK(*(int64_t *)cells[row][k] == 1000 * row + k);
  }
  CHECK(rt_runtime_active(rt, B_DYN) == len[0] + len[1] + len[2] + len[3]);
  /* DEACTIVATE clears the whole list, whatever the cell */
  dyn_op(rt, w.rb, RT_REQ_DEACTIVATE, 2, 7, NULL);
  CHECK(dyn_op(rt, w.rb, RT_REQ_LENGTH, 2, 0, NULL) == 0);
  CHECK(rt_runtime_active(rt, B_DYN) == len[0] + len[1] + len[3]);
  /* APPEND on a level that is not a dynamic is refused */
  rt_request r = req_of(RT_REQ_APPEND, A_BM, w.ra);
  path_a(&r, 0, 2);
  rt_serve(rt, &r);
  CHECK(r.failed && r.value == -1 && r.addr == NULL);
  CHECK(rt->error == RT_RTERR_OK);
  h_rt_free(&w.h);
}

/* A pool with room for a few blocks: activation fails with the flag set and
** the error recorded; so does an instance too large for what is left. */
static void test_exhaustion(void) {
  world w;
  uint64_t size = rt_runtime_min_pool(NSN, 4096) + (256 << 10);
  world_new(&w, size);
  rt_runtime *rt = w.h.rt;
  int failed = 0, made = 0;
  for (int round = 0; round < 10000 && !failed; round++) {
    /* a fresh instance each round: its 8 blocks take pointer cells */
    rt_request a = req_of(RT_REQ_BUMP_DATA, A_ROOT, NULL);
    a.bytes = 64;
    a.align = 64;
    rt_serve(rt, &a);
    if (a.failed) {
      CHECK(a.addr == NULL && a.error == RT_RTERR_POOL && rt->error == RT_RTERR_POOL);
      failed = 1;
      break;
    }
    for (int b = 0; b < 8 && !failed; b++) {
      char *p = element(rt, a.addr, b * 16, 1, &failed);
      if (failed) {
        CHECK(p == NULL && rt->error == RT_RTERR_POOL);
      } else {
        CHECK(p != NULL);
        made++;
      }
    }
  }
  CHECK(failed && made > 0);
  CHECK(rt->error == RT_RTERR_POOL);
  /* a request too large for any pool */
  rt->error = RT_RTERR_OK;
  rt_request big = req_of(RT_REQ_BUMP_DATA, B_ROOT, NULL);
  big.bytes = size * 2;
  big.align = 64;
  rt_serve(rt, &big);
  CHECK(big.failed && big.addr == NULL && big.error == RT_RTERR_POOL && rt->error_snode == B_ROOT);
  char msg[512];
  CHECK(rt_runtime_describe_error(rt, "S3root", msg, sizeof msg));
  CHECK_CONTAINS(msg, "S3root");
  h_rt_free(&w.h);
}

/* Malformed requests are refused without touching the pool. */
static void test_bad_requests(void) {
  world w;
  world_new(&w, 64 << 20);
  rt_runtime *rt = w.h.rt;
  uint64_t used = rt->pool_used;
  rt_request r = req_of(RT_REQ_NUM_OPS, 0, w.ra);
  rt_serve(rt, &r);
  CHECK(r.failed);
  r = req_of(RT_REQ_IS_ACTIVE, NSN + 3, w.ra);   /* SNode out of range */
  rt_serve(rt, &r);
  CHECK(r.failed);
  r = req_of(RT_REQ_IS_ACTIVE, 7, w.ra);         /* never registered */
  rt_serve(rt, &r);
  CHECK(r.failed);
  r = req_of(RT_REQ_ELEMENT, 0, w.ra);           /* too deep */
  r.depth = RT_REQ_MAX_DEPTH + 1;
  rt_serve(rt, &r);
  CHECK(r.failed && r.addr == NULL);
  r = req_of(RT_REQ_ELEMENT, 0, w.ra);           /* a cell beyond the container */
  path_a(&r, 5, 3);
  r.path[1].cell = 8;
  r.activate = 1;
  rt_serve(rt, &r);
  CHECK(r.failed && r.addr == NULL);
  r = req_of(RT_REQ_ACTIVATE, A_BM, w.ra);       /* the same for the op's own cell */
  path_a(&r, 5, 2);
  r.cell = 16;
  rt_serve(rt, &r);
  CHECK(r.failed);
  r = req_of(RT_REQ_BUMP_DATA, 0, NULL);         /* alignment not a power of two */
  r.bytes = 64;
  r.align = 24;
  rt_serve(rt, &r);
  CHECK(r.failed && r.addr == NULL);
  CHECK(rt->pool_used == used && rt->error == RT_RTERR_OK && rt_runtime_active(rt, A_PTR) == 0);
  h_rt_free(&w.h);
}

int main(void) {
  test_init();
  test_add_snode();
  test_walks();
  test_dynamic();
  test_exhaustion();
  test_bad_requests();
  return check_finish("test_rt_service");
}
