/*
** test_ir_fields.c -- IR_PRINT_FIELDS: the declarations of the trees a
** kernel names make the text stand alone. Parsed into a fresh program, every
** SNode comes back with its id, kind, axes, shape, name and layout, and the
** text prints back identically -- for trees whose ids interleave (as lt.root
** and tree types make them), branches, places at any level, every level
** kind, unnamed places, names that need quotes or are taken twice; and the
** `tree` declaration's errors.
*/
#include <stdlib.h>

#include "check.h"
#include "ir/ir.h"
#include "ir/snode.h"

static ir_snode *level(ir_program *p, ir_snode *parent, ir_snode_kind kind, const char *axes,
                       const int64_t *shape) {
  int ax[IR_MAX_INDICES], n = 0;
  for (; axes[n]; n++) ax[n] = axes[n] - 'i';
  char err[256];
  ir_snode *s = ir_snode_level(p, parent, kind, n, ax, shape, err, sizeof err);
  CHECKF(s != NULL, "%s", err);
  return s;
}

static ir_snode *place(ir_program *p, ir_snode *parent, ir_type t, const char *name) {
  char err[256];
  ir_snode *s = ir_snode_place(p, parent, t, name, err, sizeof err);
  CHECKF(s != NULL, "%s", err);
  return s;
}

/* The same SNode in both programs: structure and layout. */
static void same_snode(const ir_snode *a, const ir_snode *b) {
  CHECKF(b && a->id == b->id && a->kind == b->kind && a->nchildren == b->nchildren && a->naxes == b->naxes &&
             a->dtype == b->dtype && a->num_cells == b->num_cells && a->chunk_cells == b->chunk_cells &&
             a->cell_bytes == b->cell_bytes && a->container_bytes == b->container_bytes &&
             a->offset == b->offset && a->nidx == b->nidx,
         "S%d differs", a->id);
  if (!b) return;
  CHECKF((!a->name && !b->name) || (a->name && b->name && strcmp(a->name, b->name) == 0), "S%d's name", a->id);
  CHECK((a->parent ? a->parent->id : -1) == (b->parent ? b->parent->id : -1));
  for (int k = 0; k < a->naxes; k++) CHECK(a->axes[k] == b->axes[k] && a->shape[k] == b->shape[k]);
}

/* print (fields) -> parse into a fresh program -> print: the same text, and
** the program has the same SNodes where the kernel's trees are. */
static char *roundtrip(ir_kernel *k) {
  char err[512];
  char *t1 = ir_print_ex(k, IR_PRINT_FIELDS);
  ir_program *p2 = ir_program_new();
  ir_kernel *k2 = ir_parse(t1, p2, err, sizeof err);
  CHECKF(k2 != NULL, "%s\n%s", err, t1);
  if (k2) {
    char *t2 = ir_print_ex(k2, IR_PRINT_FIELDS);
    CHECK_STREQ(t1, t2);
    free(t2);
    CHECKF(ir_verify(k2, err, sizeof err), "%s", err);
    for (int i = 0; i < p2->nsnodes; i++)
      if (p2->snodes[i]) same_snode(k->prog->snodes[i], p2->snodes[i]);
  }
  ir_kernel_free(k2);
  ir_program_free(p2);
  return t1;
}

static ir_stmt *ptr(ir_builder *b, const ir_snode *pl, ir_stmt *i) {
  ir_stmt *idx[IR_MAX_INDICES] = {i, i, i, i};
  return ir_b_global_ptr(b, pl->id, pl->nidx, idx);
}

static void test_interleaved(void) {
  ir_program *p = ir_program_new();
  char err[256];
  static const int64_t s4[] = {4, 4}, s8[] = {8, 8}, s64[] = {64};
  /* tree 0: begun, then tree 1 is built whole, then tree 0 goes on */
  ir_snode *r0 = ir_snode_root(p);
  ir_snode *a = place(p, level(p, r0, IR_SN_dense, "i", s64), IR_f32, "a");
  ir_snode *r1 = ir_snode_root(p);
  ir_snode *ptr1 = level(p, r1, IR_SN_pointer, "ij", s8);
  ir_snode *rho = place(p, level(p, ptr1, IR_SN_dense, "ij", s4), IR_f32, "rho");
  ir_snode *bm = level(p, ptr1, IR_SN_bitmasked, "ij", s4);
  ir_snode *mass = place(p, bm, IR_i32, "mass");
  place(p, bm, IR_u8, NULL);                             /* unnamed */
  CHECK(ir_snode_layout(p, r1, err, sizeof err));
  ir_snode *blk = level(p, r0, IR_SN_pointer, "ji", s4);  /* column-major */
  ir_snode *x = place(p, level(p, blk, IR_SN_dense, "ij", s4), IR_f64, "x y");   /* needs quotes */
  ir_snode *dyn = ir_snode_dynamic(p, level(p, r0, IR_SN_dense, "i", s4), 1, 64, 16, err, sizeof err);
  CHECKF(dyn != NULL, "%s", err);
  ir_snode *l = place(p, dyn, IR_i32, "a");              /* a's name again */
  place(p, r0, IR_i64, "S3");                            /* a name like a label */
  CHECK(ir_snode_layout(p, r0, err, sizeof err));
  /* tree 2, unused: a third "rho" does not make the kernel's ambiguous */
  ir_snode *r2 = ir_snode_root(p);
  place(p, level(p, r2, IR_SN_dense, "i", s64), IR_f32, "rho");
  CHECK(ir_snode_layout(p, r2, err, sizeof err));

  ir_kernel *k = ir_kernel_new("k", p);
  ir_builder b;
  ir_builder_init(&b, k);
  ir_stmt *i = ir_b_const_int(&b, IR_i32, 1);
  ir_b_global_store(&b, ptr(&b, a, i), ir_b_const_float(&b, IR_f32, 2));
  ir_b_global_store(&b, ptr(&b, x, i), ir_b_const_float(&b, IR_f64, 2));
  ir_b_global_load(&b, ptr(&b, rho, i));
  ir_b_global_load(&b, ptr(&b, mass, i));
  ir_stmt *idx[1] = {i};
  ir_b_snode_append(&b, dyn->id, 1, idx, i);
  ir_b_global_load(&b, ptr(&b, l, i));
  ir_b_snode_deactivate(&b, bm->id, 2, (ir_stmt *[]){i, i});
  char *t = roundtrip(k);
  /* both trees need `tree` (tree 0 has holes, tree 1 fills them); names
  ** that exist twice or look like labels give labels */
  CHECKF(strncmp(t, "tree S0root {\n  S1dense [i:64] {\n    S2place<f32> a\n  }\n"
                    "  S10pointer [j:4, i:4] {\n", 70) == 0 &&
         strstr(t, "S14dynamic [j:64] chunk=16 {\n      S15place<i32> a\n") &&
         strstr(t, "  S16place<i64> S3\n}\ntree S3root {\n  S4pointer [i:8, j:8] {\n") &&
         strstr(t, "      S9place<u8>\n") && strstr(t, "S12place<f64> \"x y\"\n") &&
         strstr(t, "global_ptr S2place<f32> [") && strstr(t, "global_ptr S12place<f64> [") &&
         strstr(t, "global_ptr rho [") && strstr(t, "global_ptr mass [") && !strstr(t, "S17"),
         "%s", t);
  free(t);
  ir_kernel_free(k);

  /* a kernel of the third tree alone: `tree`, as its ids start at S17, not
  ** at the S0 a `field` would give; rho is unique among the trees declared */
  k = ir_kernel_new("third", p);
  ir_builder_init(&b, k);
  i = ir_b_const_int(&b, IR_i32, 0);
  ir_b_global_load(&b, ptr(&b, r2->children[0]->children[0], i));
  t = roundtrip(k);
  CHECKF(strncmp(t, "tree S17root {\n  S18dense [i:64] {\n    S19place<f32> rho\n  }\n}\nkernel third() {\n", 80) == 0 &&
         strstr(t, "global_ptr rho ["), "%s", t);
  free(t);
  ir_kernel_free(k);
  ir_program_free(p);
}

static void test_errors(void) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"tree S0root {\n  S1dense [i:4] {\n    S1place<f32> x\n  }\n}\nkernel k() {\n}\n", "line 3: S1 is declared twice"},
      {"field x <f32>\ntree S1root {\n}\nkernel k() {\n}\n", "line 2: S1 is declared twice"},
      {"tree S0dense {\n}\nkernel k() {\n}\n", "line 1: a tree starts with its root"},
      {"tree S0root {\n  S1root {\n  }\n}\nkernel k() {\n}\n", "line 2: S1: a root cannot be a child"},
      {"tree S0root {\n  S1frob [i:4] {\n  }\n}\nkernel k() {\n}\n", "line 2: bad SNode label 'S1frob'"},
      {"tree S0root {\n  x\n}\nkernel k() {\n}\n", "line 2: expected an SNode such as S1dense"},
      {"tree S0root {\n  S1dense [i:0] {\n  }\n}\nkernel k() {\n}\n", "line 2: dense under S0root: extent 0"},
      {"tree S0root {\n  S1place<f32> x {\n  }\n}\nkernel k() {\n}\n", "line 2: expected an SNode"},
      {"tree S0root {\n  S1dynamic [i:8] {\n    S2dense [j:2] {\n    }\n  }\n}\nkernel k() {\n}\n",
       "line 3: S1dynamic: a dynamic level must be the last level"},
      {"tree S0root {\n  S1dense [i:4] {\n  }\n", "line 4: missing '}'"},
      {"tree S9999root {\n}\nkernel k() {\n}\n", "line 1: SNode id 9999 is out of range"},
      {"tree S0root {\n  S1dense [i:4] {\n  }\n  S1dense [i:4] {\n  }\n}\nkernel k() {\n}\n", "line 4: S1 is declared twice"},
      {"tree S0root {\n  S1dense [i:4] {\n    S2place<f32> x\n  }\n}\nkernel k() {\n  <i32> $0 = const 0\n"
       "  $1 = snode_activate S2dense [$0]\n}\n", "line 8: S2 is a place, not a dense"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ir_program *p = ir_program_new();
    char err[512] = "";
    ir_kernel *k = ir_parse(cases[i].text, p, err, sizeof err);
    CHECKF(k == NULL, "case %zu was accepted", i);
    CHECK_CONTAINS(err, cases[i].want);
    ir_kernel_free(k);
    ir_program_free(p);
  }
  char err[256];
  CHECK(!ir_parse("tree S0root {\n}\nkernel k() {\n}\n", NULL, err, sizeof err));
  CHECK_CONTAINS(err, "line 1: tree declarations need a program");
  /* ids may leave holes and fill them later; a `field` after takes the lowest free ids */
  ir_program *p = ir_program_new();
  ir_kernel *k = ir_parse("tree S5root {\n  S6dense [i:2] {\n    S7place<f32> x\n  }\n}\n"
                          "tree S1root {\n  S2place<i32>\n}\nfield y <f32>\nkernel k() {\n}\n", p, err, sizeof err);
  CHECKF(k != NULL, "%s", err);
  CHECK(p->nsnodes == 8 && p->nfree_snodes == 1 && !p->snodes[4] && p->snodes[2]->parent == p->snodes[1] &&
        p->snodes[0]->kind == IR_SN_root && p->snodes[3]->parent == p->snodes[0] && p->snodes[3]->name &&
        strcmp(p->snodes[3]->name, "y") == 0 && p->ntrees == 3 && p->trees[0].materialized &&
        p->trees[0].bytes == 8);
  ir_kernel_free(k);
  ir_program_free(p);
}

int main(void) {
  test_interleaved();
  test_errors();
  return check_finish("test_ir_fields");
}
