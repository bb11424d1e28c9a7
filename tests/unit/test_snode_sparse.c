/*
** test_snode_sparse.c -- sparse SNode levels (bitmasked, pointer, dynamic):
** the rules checked when a tree is built (each error names the SNode and the
** rule), index views, and the layout contract with the runtime: container
** sizes are compared with the runtime's own rt_container_bytes when its
** header is there, and with the formulas of snode.h written out here.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir/snode.h"

#if defined(__has_include)
#if __has_include("runtime/runtime.h")
#include "runtime/runtime.h"
#define HAVE_RT 1
#endif
#endif

static char err[512];

static ir_snode *level(ir_program *p, ir_snode *parent, ir_snode_kind kind, const char *axes,
                       const int64_t *shape) {
  int ax[8], n = 0;
  for (const char *c = axes; *c; c++) ax[n++] = (int)(strchr("ijklmnop", *c) - "ijklmnop");
  return ir_snode_level(p, parent, kind, n, ax, shape, err, sizeof err);
}

/* err must hold every one of the (NULL-terminated) words */
static void expect_error(const void *made, const char *what, ...) {
  CHECKF(made == NULL, "%s: built, but should be rejected", what);
  va_list ap;
  va_start(ap, what);
  for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
    CHECKF(strstr(err, w) != NULL, "%s: message lacks \"%s\": %s", what, w, err);
  va_end(ap);
}

static void test_rules(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = level(p, r, IR_SN_dense, "ij", (int64_t[]){4, 2});
  CHECKF(d != NULL, "%s", err);
  ir_snode *dyn = ir_snode_dynamic(p, d, 2, 64, 0, err, sizeof err);
  CHECKF(dyn != NULL, "%s", err);
  /* dynamic is terminal: nothing but places under it */
  expect_error(level(p, dyn, IR_SN_dense, "l", (int64_t[]){2}), "dense under dynamic",
               "S2dynamic", "last level", NULL);
  expect_error(level(p, dyn, IR_SN_pointer, "l", (int64_t[]){2}), "pointer under dynamic",
               "S2dynamic", "only places", NULL);
  expect_error(ir_snode_dynamic(p, dyn, 3, 4, 0, err, sizeof err), "dynamic under dynamic",
               "S2dynamic", "last level", NULL);
  CHECKF(ir_snode_place(p, dyn, IR_i32, "l", err, sizeof err) != NULL, "%s", err);
  /* the dynamic's axis must be new */
  expect_error(ir_snode_dynamic(p, d, 1, 8, 0, err, sizeof err), "dynamic on an ancestor's axis",
               "S1dense", "axis j", "already split", NULL);
  /* a dynamic has exactly one axis */
  expect_error(level(p, d, IR_SN_dynamic, "kl", (int64_t[]){2, 2}), "2-D dynamic", "S1dense",
               "exactly one axis", NULL);
  /* extents */
  expect_error(level(p, r, IR_SN_pointer, "i", (int64_t[]){0}), "pointer of extent 0", "pointer",
               "S0root", "extents must be > 0", NULL);
  expect_error(level(p, r, IR_SN_bitmasked, "i", (int64_t[]){-3}), "bitmasked of extent -3",
               "bitmasked", "extents must be > 0", NULL);
  expect_error(ir_snode_dynamic(p, r, 0, 0, 0, err, sizeof err), "dynamic of capacity 0",
               "extents must be > 0", NULL);
  expect_error(ir_snode_dynamic(p, r, 0, 8, 9, err, sizeof err), "chunk larger than the list",
               "chunk", NULL);
  /* more than 8 indices: there is no ninth axis */
  int ax9 = 8;
  int64_t one = 1;
  expect_error(ir_snode_level(p, r, IR_SN_pointer, 1, &ax9, &one, err, sizeof err), "axis 8",
               "at most 8 indices", NULL);
  ir_snode *r2 = ir_snode_root(p);
  CHECKF(ir_snode_place(p, r2, IR_f32, "x", err, sizeof err) != NULL, "%s", err);
  /* sparse levels nest in any order */
  ir_snode *pp = level(p, r2, IR_SN_pointer, "i", (int64_t[]){4});
  ir_snode *pb = pp ? level(p, pp, IR_SN_bitmasked, "i", (int64_t[]){4}) : NULL;
  ir_snode *pd = pb ? level(p, pb, IR_SN_pointer, "j", (int64_t[]){4}) : NULL;
  CHECKF(pd != NULL, "%s", err);
  ir_program_free(p);
}

static void test_index_view(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = level(p, r, IR_SN_dense, "i", (int64_t[]){4});
  ir_snode *dyn = ir_snode_dynamic(p, d, 1, 100, 0, err, sizeof err);
  ir_snode *l = ir_snode_place(p, dyn, IR_i32, "l", err, sizeof err);
  CHECKF(l && ir_snode_layout(p, r, err, sizeof err), "%s", err);
  CHECK(l->nidx == 2 && l->total_shape[0] == 4 && l->total_shape[1] == 100);
  CHECK(dyn->num_cells == 100 && dyn->chunk_cells == 16);
  CHECK(ir_snode_default_chunk(1) == 1 && ir_snode_default_chunk(100) == 16 &&
        ir_snode_default_chunk(1024) == 32 && ir_snode_default_chunk(3) == 2);
  CHECK(ir_snode_under_sparse(l) && !ir_snode_under_sparse(d));
  int64_t idx[2] = {1, 5};
  CHECK(ir_snode_offset(l, idx) == -1); /* in a chunk: no static address */
  CHECK(ir_snode_kind_from_name("pointer") == IR_SN_pointer && ir_snode_kind_from_name("hash") < 0);
  ir_program_free(p);
}

static int64_t up8(int64_t x) { return (x + 7) / 8 * 8; }

/* Container sizes by the formulas of snode.h, and by the runtime's. */
static void test_layout_contract(void) {
  static const ir_type types[] = {IR_i8, IR_i16, IR_f32, IR_f64};
  int bad = 0, n = 0;
  srand(7);
  for (int t = 0; t < 200; t++) {
    ir_program *p = ir_program_new();
    ir_snode *r = ir_snode_root(p);
    ir_snode_kind kind = (ir_snode_kind[]){IR_SN_bitmasked, IR_SN_pointer, IR_SN_dynamic}[t % 3];
    int64_t cells = 1 + rand() % 100;
    ir_snode *s = kind == IR_SN_dynamic ? ir_snode_dynamic(p, r, 0, cells, 0, err, sizeof err)
                                        : level(p, r, kind, "i", &cells);
    int nplaces = 1 + rand() % 3;
    int64_t cell = 0, align = 1;
    for (int k = 0; k < nplaces; k++) {
      ir_type ty = types[rand() % 4];
      int64_t sz = ir_type_bits(ty) / 8;
      char name[8];
      snprintf(name, sizeof name, "f%d", k);
      CHECKF(ir_snode_place(p, s, ty, name, err, sizeof err) != NULL, "%s", err);
      cell = (cell + sz - 1) / sz * sz + sz;
      if (sz > align) align = sz;
    }
    cell = (cell + align - 1) / align * align;
    CHECKF(ir_snode_layout(p, r, err, sizeof err), "%s", err);
    int64_t want = kind == IR_SN_bitmasked ? up8(up8(cells * cell) + 4 * ((cells + 31) / 32))
                   : kind == IR_SN_pointer ? up8(4 * cells) : 32;   /* node_dynamic.h: lock, n, head, tail, pad */
    bad += s->cell_bytes != cell || s->container_bytes != want;
    if (kind == IR_SN_bitmasked)
      bad += s->meta_offset != up8(cells * cell) || s->meta_bytes != 4 * ((cells + 31) / 32);
    else
      bad += s->meta_offset != 0 || s->meta_bytes != want;
#ifdef HAVE_RT
    int32_t rk = kind == IR_SN_bitmasked ? RT_KIND_BITMASKED
                 : kind == IR_SN_pointer ? RT_KIND_POINTER : RT_KIND_DYNAMIC;
    bad += rt_container_bytes(rk, cells, cell) != s->container_bytes;
    n++;
#endif
    bad += p->trees[r->tree].bytes != want;
    ir_program_free(p);
  }
  CHECKF(bad == 0, "%d layout mismatches", bad);
#ifdef HAVE_RT
  CHECK(n == 200); /* every tree was compared with the runtime's sizes */
#endif
  (void)n;
}

/* Bitmasked cells stay in the tree's memory: dense(i:4) -> bitmasked(i:4) ->
** {a i32, b i8}: a bitmasked container is 4 cells of 8 bytes, then 4 bytes of
** mask, padded to 40; the dense level's cells are those containers. */
static void test_bitmasked_offsets(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = level(p, r, IR_SN_dense, "i", (int64_t[]){4});
  ir_snode *bm = level(p, d, IR_SN_bitmasked, "i", (int64_t[]){4});
  ir_snode *a = ir_snode_place(p, bm, IR_i32, "a", err, sizeof err);
  ir_snode *b = ir_snode_place(p, bm, IR_i8, "b", err, sizeof err);
  CHECKF(a && b && ir_snode_layout(p, r, err, sizeof err), "%s", err);
  CHECK(bm->cell_bytes == 8 && bm->meta_offset == 32 && bm->meta_bytes == 4);
  CHECK(bm->container_bytes == 40 && d->cell_bytes == 40 && p->trees[r->tree].bytes == 160);
  int bad = 0;
  for (int64_t i = 0; i < 16; i++) {
    bad += ir_snode_offset(a, &i) != (i / 4) * 40 + (i % 4) * 8;
    bad += ir_snode_offset(b, &i) != (i / 4) * 40 + (i % 4) * 8 + 4;
  }
  CHECK(bad == 0);
  /* under a pointer, no static address */
  ir_snode *r2 = ir_snode_root(p);
  ir_snode *pt = level(p, r2, IR_SN_pointer, "i", (int64_t[]){4});
  ir_snode *x = ir_snode_place(p, level(p, pt, IR_SN_dense, "i", (int64_t[]){4}), IR_f32, "x", err,
                               sizeof err);
  CHECKF(x && ir_snode_layout(p, r2, err, sizeof err), "%s", err);
  int64_t i = 3;
  CHECK(ir_snode_offset(x, &i) == -1);
  CHECK(pt->container_bytes == 16 && pt->cell_bytes == 16);   /* four 4-byte slots */
  ir_program_free(p);
}

/* The verifier's rules for the sparse ops, on kernels built with the builder. */
static void test_verify_ops(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = level(p, r, IR_SN_dense, "i", (int64_t[]){4});
  ir_snode *dyn = ir_snode_dynamic(p, d, 1, 16, 4, err, sizeof err);
  ir_snode *l = ir_snode_place(p, dyn, IR_i32, "l", err, sizeof err);
  CHECKF(l && ir_snode_layout(p, r, err, sizeof err), "%s", err);
  struct {
    int which;
    const char *want; /* NULL: valid */
  } cases[] = {
      {0, NULL},
      {1, "works on dynamic levels"},
      {2, "is not a level"},
      {3, "takes 1 indices"},
      {4, "only pointer and dynamic"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ir_kernel *k = ir_kernel_new("v", p);
    ir_builder b;
    ir_builder_init(&b, k);
    ir_stmt *i = ir_b_const_int(&b, IR_i32, 1);
    ir_stmt *ij[2] = {i, i};
    switch (cases[c].which) {
    case 0:
      ir_b_snode_append(&b, dyn->id, 1, &i, i);
      ir_b_snode_length(&b, dyn->id, 1, &i);
      ir_b_snode_is_active(&b, dyn->id, 2, ij);
      ir_b_snode_activate(&b, d->id, 1, &i);
      break;
    case 1: ir_b_snode_length(&b, d->id, 1, &i); break;
    case 2: ir_b_snode_activate(&b, l->id, 2, ij); break;
    case 3: ir_b_snode_deactivate(&b, dyn->id, 2, ij); break;
    case 4: {
      k->offloaded = true;
      ir_remove(i);
      ir_b_op(&b, IR_task_gc, IR_void, 0, NULL)->aux = d->id;
      break;
    }
    }
    bool ok = ir_verify(k, err, sizeof err);
    if (cases[c].want)
      CHECKF(!ok && strstr(err, cases[c].want), "case %zu: %s", c, ok ? "accepted" : err);
    else
      CHECKF(ok, "case %zu: %s", c, err);
    ir_kernel_free(k);
  }
  ir_program_free(p);
}

int main(void) {
  test_rules();
  test_index_view();
  test_layout_contract();
  test_bitmasked_offsets();
  test_verify_ops();
  return check_finish("test_snode_sparse");
}
