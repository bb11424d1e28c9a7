/*
** test_snode.c -- SNode trees: validation messages, index views and layouts.
** Every offset is compared against a formula written out here by hand for
** the tree at hand, and random chains against an independent re-derivation
** plus a check that no two elements overlap.
*/
#include <stdlib.h>

#include "check.h"
#include "ir/snode.h"

static char err[512];

static ir_snode *dense(ir_program *p, ir_snode *parent, const char *axes, const int64_t *shape) {
  int ax[8], n = 0;
  for (const char *c = axes; *c; c++) ax[n++] = (int)(strchr("ijklmnop", *c) - "ijklmnop");
  ir_snode *s = ir_snode_dense(p, parent, n, ax, shape, err, sizeof err);
  CHECKF(s != NULL, "%s", err);
  return s;
}

static ir_snode *place(ir_program *p, ir_snode *parent, ir_type t, const char *name) {
  ir_snode *s = ir_snode_place(p, parent, t, name, err, sizeof err);
  CHECKF(s != NULL, "%s", err);
  return s;
}

static void layout(ir_program *p, ir_snode *root) {
  bool ok = ir_snode_layout(p, root, err, sizeof err);
  CHECKF(ok, "%s", err);
}

static int64_t off2(ir_snode *x, int64_t i, int64_t j) {
  int64_t idx[2] = {i, j};
  return ir_snode_offset(x, idx);
}

static void test_row_and_column_major(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *x = place(p, dense(p, r, "ij", (int64_t[]){5, 7}), IR_f32, "x");
  layout(p, r);
  CHECK(x->nidx == 2 && x->total_shape[0] == 5 && x->total_shape[1] == 7);
  CHECK(p->trees[r->tree].bytes == 5 * 7 * 4);
  CHECK(p->trees[r->tree].materialized);
  int bad = 0;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++) bad += off2(x, i, j) != (i * 7 + j) * 4;
  CHECK(bad == 0);

  /* dense(ji): cells listed j first, so i varies fastest (column-major) */
  ir_snode *r2 = ir_snode_root(p);
  ir_snode *y = place(p, dense(p, r2, "ji", (int64_t[]){7, 5}), IR_f64, "y");
  layout(p, r2);
  CHECK(y->nidx == 2 && y->physical_index_position[0] == 0 && y->physical_index_position[1] == 1);
  CHECK(y->total_shape[0] == 5 && y->total_shape[1] == 7);
  bad = 0;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++) bad += off2(y, i, j) != (j * 5 + i) * 8;
  CHECK(bad == 0);
  CHECK(p->trees[r2->tree].bytes == 35 * 8);
  CHECK(r2->tree == 1);
  ir_program_free(p);
}

static void test_nested_blocks(void) {
  /* 3x5 blocks of 4x2 elements: i extent 12, j extent 10 */
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *outer = dense(p, r, "ij", (int64_t[]){3, 5});
  ir_snode *inner = dense(p, outer, "ij", (int64_t[]){4, 2});
  ir_snode *x = place(p, inner, IR_f32, "x");
  layout(p, r);
  CHECK(x->total_shape[0] == 12 && x->total_shape[1] == 10);
  CHECK(outer->below[0] == 4 && outer->below[1] == 2);
  CHECK(inner->below[0] == 1 && inner->below[1] == 1);
  CHECK(inner->cell_bytes == 4 && outer->cell_bytes == 32);
  int bad = 0;
  for (int i = 0; i < 12; i++)
    for (int j = 0; j < 10; j++) {
      int64_t want = ((i / 4) * 5 + j / 2) * 32 + ((i % 4) * 2 + j % 2) * 4;
      bad += off2(x, i, j) != want;
    }
  CHECK(bad == 0);
  CHECK(p->trees[0].bytes == 12 * 10 * 4);
  ir_program_free(p);
}

static void test_several_places(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *d = dense(p, r, "i", (int64_t[]){6});
  ir_snode *a = place(p, d, IR_f32, "a");
  ir_snode *b = place(p, d, IR_f64, "b");
  ir_snode *c = place(p, d, IR_i8, "c");
  ir_snode *e = place(p, d, IR_i16, "e");
  ir_snode *f = place(p, d, IR_i1, "f");
  layout(p, r);
  /* a@0 (4), b aligned to 8 @8, c @16, e aligned to 2 @18, f @20; cell 21 -> 24 */
  CHECK(a->offset == 0 && b->offset == 8 && c->offset == 16 && e->offset == 18 && f->offset == 20);
  CHECK(d->cell_bytes == 24);
  CHECK(p->trees[0].bytes == 6 * 24);
  int bad = 0;
  for (int64_t i = 0; i < 6; i++) {
    bad += ir_snode_offset(a, &i) != i * 24;
    bad += ir_snode_offset(b, &i) != i * 24 + 8;
    bad += ir_snode_offset(c, &i) != i * 24 + 16;
    bad += ir_snode_offset(e, &i) != i * 24 + 18;
    bad += ir_snode_offset(f, &i) != i * 24 + 20;
  }
  CHECK(bad == 0);

  /* two containers side by side under the root */
  ir_snode *r2 = ir_snode_root(p);
  ir_snode *u = place(p, dense(p, r2, "i", (int64_t[]){10}), IR_f32, "u");
  ir_snode *dv = dense(p, r2, "ij", (int64_t[]){2, 3});
  ir_snode *v = place(p, dv, IR_u8, "v");
  ir_snode *w = place(p, r2, IR_u64, "w"); /* a 0-D field */
  layout(p, r2);
  CHECK(dv->offset == 40);
  CHECK(w->offset == 48 && w->nidx == 0);
  CHECK(p->trees[r2->tree].bytes == 56);
  bad = 0;
  for (int64_t i = 0; i < 10; i++) bad += ir_snode_offset(u, &i) != i * 4;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) bad += off2(v, i, j) != 40 + i * 3 + j;
  CHECK(bad == 0);
  CHECK(ir_snode_offset(w, NULL) == 48);
  ir_program_free(p);
}

static void test_non_power_of_two(void) {
  /* k split above (i, j): x(i, j, k) at k * 21 cells + i * 7 + j */
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  ir_snode *dk = dense(p, r, "k", (int64_t[]){5});
  ir_snode *x = place(p, dense(p, dk, "ij", (int64_t[]){3, 7}), IR_i32, "x");
  layout(p, r);
  CHECK(x->nidx == 3);
  CHECK(x->total_shape[0] == 3 && x->total_shape[1] == 7 && x->total_shape[2] == 5);
  int bad = 0;
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 7; j++)
      for (int64_t k = 0; k < 5; k++) {
        int64_t idx[3] = {i, j, k};
        bad += ir_snode_offset(x, idx) != (k * 21 + i * 7 + j) * 4;
      }
  CHECK(bad == 0);

  /* a level that splits j under one that splits i, beside a place */
  ir_snode *r2 = ir_snode_root(p);
  ir_snode *di = dense(p, r2, "i", (int64_t[]){4});
  ir_snode *y = place(p, di, IR_f32, "y");
  ir_snode *z = place(p, dense(p, di, "j", (int64_t[]){3}), IR_f32, "z");
  layout(p, r2);
  CHECK(y->nidx == 1 && z->nidx == 2);
  bad = 0;
  for (int64_t i = 0; i < 4; i++) {
    bad += ir_snode_offset(y, &i) != i * 16;
    for (int j = 0; j < 3; j++) bad += off2(z, i, j) != i * 16 + 4 + j * 4;
  }
  CHECK(bad == 0);
  ir_program_free(p);
}

static void test_bad_trees(void) {
  ir_program *p = ir_program_new();
  ir_snode *r = ir_snode_root(p);
  int ax[3] = {0, 0, 1};
  int64_t sh[3] = {4, 4, 4};
  CHECK(!ir_snode_dense(p, r, 2, ax, sh, err, sizeof err));
  CHECK_CONTAINS(err, "axis i is listed twice");
  CHECK(!ir_snode_dense(p, r, 1, (int[]){8}, sh, err, sizeof err));
  CHECK_CONTAINS(err, "axis 8 is out of range");
  CHECK(!ir_snode_dense(p, r, 1, (int[]){-1}, sh, err, sizeof err));
  CHECK_CONTAINS(err, "out of range");
  CHECK(!ir_snode_dense(p, r, 1, (int[]){1}, (int64_t[]){0}, err, sizeof err));
  CHECK_CONTAINS(err, "extent 0 along axis j; extents must be > 0");
  CHECK(!ir_snode_dense(p, r, 0, ax, sh, err, sizeof err));
  CHECK_CONTAINS(err, "0 axes given");
  CHECK(!ir_snode_dense(p, r, 9, ax, sh, err, sizeof err));
  CHECK(!ir_snode_dense(p, NULL, 1, ax, sh, err, sizeof err));
  CHECK_CONTAINS(err, "needs a parent");
  /* the extent of one index stays below 2^31 along a path */
  ir_snode *big = dense(p, r, "i", (int64_t[]){1 << 16});
  CHECK(!ir_snode_dense(p, big, 1, (int[]){0}, (int64_t[]){1 << 16}, err, sizeof err));
  CHECK_CONTAINS(err, "below 2^31");
  ir_snode *x = place(p, big, IR_f32, "x");
  CHECK(!ir_snode_place(p, x, IR_f32, "y", err, sizeof err));
  CHECK_CONTAINS(err, "place holds one value and can have no children");
  CHECK_CONTAINS(err, "S");
  CHECK(!ir_snode_dense(p, x, 1, ax, sh, err, sizeof err));
  CHECK_CONTAINS(err, "can have no children");
  CHECK(!ir_snode_place(p, big, IR_void, "v", err, sizeof err));
  CHECK_CONTAINS(err, "needs a value type");
  layout(p, r);
  /* a materialised tree never changes */
  CHECK(!ir_snode_place(p, big, IR_f32, "late", err, sizeof err));
  CHECK_CONTAINS(err, "already materialised");

  /* two branches that split the same axis differently */
  ir_snode *r2 = ir_snode_root(p);
  ir_snode *d = dense(p, r2, "i", (int64_t[]){4});
  place(p, d, IR_f32, "y");
  place(p, dense(p, d, "i", (int64_t[]){8}), IR_f32, "x2");
  CHECK(!ir_snode_layout(p, r2, err, sizeof err));
  CHECK_CONTAINS(err, "split axis i differently");
  CHECK(!ir_snode_layout(p, d, err, sizeof err));
  CHECK_CONTAINS(err, "root");

  char lab[64];
  CHECK_STREQ(ir_snode_label(x, lab, sizeof lab), "S2place<f32>");
  CHECK_STREQ(ir_snode_label(big, lab, sizeof lab), "S1dense");
  CHECK_STREQ(ir_snode_label(r, lab, sizeof lab), "S0root");
  CHECK_STREQ(ir_snode_kind_name(IR_SN_dense), "dense");
  ir_program_free(p);
}

/* ---- random chains: root -> L levels -> places ----------------------------- */

static unsigned rng = 12345;
static int rnd(int n) {
  rng = rng * 1103515245u + 12345u;
  return (int)((rng >> 16) % (unsigned)n);
}

static int type_size(ir_type t) { return t == IR_i1 ? 1 : ir_type_bits(t) / 8; }

static void test_random_chains(void) {
  const ir_type types[] = {IR_i1, IR_i8, IR_i16, IR_i32, IR_i64, IR_f32, IR_f64};
  for (int iter = 0; iter < 300; iter++) {
    ir_program *p = ir_program_new();
    ir_snode *r = ir_snode_root(p);
    int nlev = 1 + rnd(3);
    int naxes[3], axes[3][3];
    int64_t shape[3][3];
    ir_snode *n = r;
    for (int l = 0; l < nlev; l++) {
      int perm[3] = {0, 1, 2};
      for (int q = 2; q > 0; q--) {
        int s = rnd(q + 1), t = perm[q];
        perm[q] = perm[s], perm[s] = t;
      }
      naxes[l] = 1 + rnd(3);
      for (int q = 0; q < naxes[l]; q++) axes[l][q] = perm[q], shape[l][q] = 1 + rnd(5);
      n = ir_snode_dense(p, n, naxes[l], axes[l], shape[l], err, sizeof err);
      CHECKF(n != NULL, "%s", err);
    }
    int np = 1 + rnd(3);
    ir_snode *pl[3];
    ir_type pt[3];
    for (int q = 0; q < np; q++) {
      pt[q] = types[rnd(7)];
      pl[q] = place(p, n, pt[q], NULL);
    }
    layout(p, r);

    /* reference: bottom cell = places packed with natural alignment */
    int64_t poff[3], cur = 0, align = 1;
    for (int q = 0; q < np; q++) {
      int64_t sz = type_size(pt[q]);
      cur = (cur + sz - 1) / sz * sz;
      poff[q] = cur;
      cur += sz;
      if (sz > align) align = sz;
    }
    int64_t cell[4];
    cell[nlev] = (cur + align - 1) / align * align; /* bytes of a cell of the last level */
    for (int l = nlev - 1; l >= 1; l--) {
      int64_t cells = 1;
      for (int q = 0; q < naxes[l]; q++) cells *= shape[l][q];
      cell[l] = cells * cell[l + 1];
    }
    /* used axes and their total extents */
    int64_t ext[3] = {1, 1, 1};
    bool used[3] = {false, false, false};
    for (int l = 0; l < nlev; l++)
      for (int q = 0; q < naxes[l]; q++) ext[axes[l][q]] *= shape[l][q], used[axes[l][q]] = true;
    int nidx = 0, vaxis[3];
    for (int a = 0; a < 3; a++)
      if (used[a]) vaxis[nidx++] = a;
    CHECK(pl[0]->nidx == nidx);
    int64_t total = 1;
    for (int v = 0; v < nidx; v++) {
      CHECK(pl[0]->physical_index_position[v] == vaxis[v]);
      CHECK(pl[0]->total_shape[v] == ext[vaxis[v]]);
      total *= ext[vaxis[v]];
    }
    int64_t bytes = p->trees[0].bytes;
    CHECK(bytes == total / 1 * cell[nlev] / 1 || total == 0);
    unsigned char *seen = calloc((size_t)bytes, 1);
    int bad = 0;
    for (int64_t e = 0; e < total; e++) {
      int64_t idx[3] = {0, 0, 0}, phys[3] = {0, 0, 0}, rest = e;
      for (int v = nidx - 1; v >= 0; v--) {
        idx[v] = rest % ext[vaxis[v]];
        rest /= ext[vaxis[v]];
        phys[vaxis[v]] = idx[v];
      }
      /* offset from the levels, top down: digit of axis a at level l */
      int64_t want = 0;
      for (int l = 0; l < nlev; l++) {
        int64_t c = 0;
        for (int q = 0; q < naxes[l]; q++) {
          int a = axes[l][q];
          int64_t below = 1;
          for (int m = l + 1; m < nlev; m++)
            for (int t = 0; t < naxes[m]; t++)
              if (axes[m][t] == a) below *= shape[m][t];
          c = c * shape[l][q] + (phys[a] / below) % shape[l][q];
        }
        want += c * cell[l + 1];
      }
      for (int q = 0; q < np; q++) {
        int64_t got = ir_snode_offset(pl[q], idx);
        bad += got != want + poff[q];
        int64_t sz = type_size(pt[q]);
        if (got < 0 || got + sz > bytes || got % sz) {
          bad++;
          continue;
        }
        for (int64_t b = 0; b < sz; b++) bad += seen[got + b]++ != 0; /* no overlap */
      }
    }
    CHECKF(bad == 0, "iteration %d: %d wrong offsets", iter, bad);
    free(seen);
    ir_program_free(p);
  }
}

int main(void) {
  test_row_and_column_major();
  test_nested_blocks();
  test_several_places();
  test_non_power_of_two();
  test_bad_trees();
  test_random_chains();
  return check_finish("test_snode");
}
