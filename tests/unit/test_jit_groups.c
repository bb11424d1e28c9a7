/*
** test_jit_groups.c -- the CPU backend compiling one kernel's tasks as
** several modules on several threads (cpu_compile.c): a kernel of six
** range_for tasks becomes several modules (jit_cpu_llvm_ir shows each), one
** of three small serial tasks stays one; every task's results equal C;
** a kernel whose tasks use the runtime bitcode (bounds checks) in several
** modules links (each module keeps its own internal copy) and still raises
** its errors; many such kernels compiled at once (compile_start) and waited
** for in another order all give their results; a multi-module kernel from
** the offline cache in a second backend is a hit with the same results.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "jit/cpu/cpu.h"
#include "jit_helpers.h"

enum { N = 1000, NT = 6, CHAIN = 40 };

static char err[1024];

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; p && (p = strstr(p, what)) != NULL; p++) n++;
  return n;
}

typedef struct {
  ir_program *p;
  ir_snode *x, *y[NT];
} world;

static void world_init(world *w) {
  w->p = ir_program_new();
  w->x = h_field1(w->p, IR_i32, N, "x");
  for (int t = 0; t < NT; t++) {
    char name[8];
    snprintf(name, sizeof name, "y%d", t);
    w->y[t] = h_field1(w->p, IR_i32, N, name);
  }
}

/* y_t[i] = f_t(x[i] + arg0): CHAIN steps of v = v * (3 + t) + (k ^ t), integers (wrapping) */
static int32_t f_ref(int t, int32_t v) {
  uint32_t u = (uint32_t)v;
  for (int k = 0; k < CHAIN; k++) u = u * (uint32_t)(3 + t) + (uint32_t)(k ^ t);
  return (int32_t)u;
}

/* the bounds check of x[i] (a call into the runtime bitcode) */
static void check(ir_builder *b, ir_snode *x, ir_stmt *i) {
  ir_stmt *chk = ir_b_op(b, IR_check_index, IR_void, 1, &i);
  chk->aux = x->id;
  chk->imm.ival = 0;
}

/* ntasks range_for tasks over N, each CHAIN steps long; small: serial
** tasks of one step, at element 5 only */
static ir_kernel *make(world *w, const char *name, int ntasks, bool small, bool debug) {
  ir_kernel *k = ir_kernel_new(name, w->p);
  k->nargs = 1;
  k->arg_types[0] = IR_i32;
  k->debug = debug;
  ir_builder b;
  ir_builder_init(&b, k);
  for (int t = 0; t < ntasks; t++) {
    ir_stmt *task = h_task(&b, small ? IR_task_serial : IR_task_range_for, 0, small ? 1 : N);
    ir_stmt *i = small ? ir_b_const_int(&b, IR_i32, 5) : ir_b_loop_index(&b, task);
    if (debug) check(&b, w->x, i);
    ir_stmt *v = ir_b_binary(&b, IR_add, ir_b_global_load(&b, h_ptr(&b, w->x, i)), ir_b_arg(&b, 0));
    for (int s = 0; s < (small ? 1 : CHAIN); s++)
      v = ir_b_binary(&b, IR_add, ir_b_binary(&b, IR_mul, v, ir_b_const_int(&b, IR_i32, 3 + t)),
                      ir_b_const_int(&b, IR_i32, s ^ t));
    ir_b_global_store(&b, h_ptr(&b, w->y[t], i), v);
  }
  return k;
}

static void check_run(jit_backend *be, world *w, jit_kernel *jk, int ntasks, bool small, int32_t a, const char *what) {
  h_ctx h;
  h_ctx_init(&h, w->p);
  for (int i = 0; i < N; i++) *(int32_t *)h_elem(&h, w->x, i) = i * 7 - 300;
  h.args[0] = (uint64_t)(uint32_t)a;
  CHECKF(jit_launch(be, NULL, jk, &h.ctx), "%s: launch", what);
  int bad = 0;
  for (int t = 0; t < ntasks; t++)
    for (int i = small ? 5 : 0; i < (small ? 6 : N); i++) {
      int32_t v = i * 7 - 300 + a, want;
      if (small) {
        want = (int32_t)((uint32_t)v * (uint32_t)(3 + t) + (uint32_t)t);
      } else {
        want = f_ref(t, v);
      }
      if (*(int32_t *)h_elem(&h, w->y[t], i) != want && bad++ < 3)
        fprintf(stderr, "  %s: y%d[%d] = %d, want %d\n", what, t, i, *(int32_t *)h_elem(&h, w->y[t], i), want);
    }
  CHECKF(bad == 0, "%s: %d elements wrong", what, bad);
  h_ctx_free(&h, w->p);
}

static void test_split(jit_backend *be) {
  world w;
  world_init(&w);
  ir_kernel *big = make(&w, "big", NT, false, false), *small = make(&w, "small", 3, true, false);
  char *ir = jit_cpu_llvm_ir(be, big, err, sizeof err);
  int nbig = count(ir, "; ModuleID");
  CHECKF(nbig >= 3 && nbig <= NT, "six sizeable tasks: %d modules", nbig);
  for (int t = 0; t < NT; t++) {   /* every task defined exactly once */
    char def[64];
    snprintf(def, sizeof def, "_task%d(ptr noalias", t);
    CHECKF(count(ir, def) == 1, "task %d defined %d times", t, count(ir, def));
  }
  free(ir);
  ir = jit_cpu_llvm_ir(be, small, err, sizeof err);
  CHECKF(count(ir, "; ModuleID") == 1, "three small serial tasks: %d modules", count(ir, "; ModuleID"));
  free(ir);
  jit_kernel *jk = be->compile(be, big, err, sizeof err);
  CHECKF(jk && jk->ntasks == NT, "%s", err);
  if (jk) {
    check_run(be, &w, jk, NT, false, 5, "big");
    be->release(be, jk);
  }
  jk = be->compile(be, small, err, sizeof err);
  CHECKF(jk != NULL, "%s", err);
  if (jk) {
    check_run(be, &w, jk, 3, true, -2, "small");
    be->release(be, jk);
  }
  printf("test_jit_groups: six tasks in %d modules\n", nbig);
  ir_kernel_free(big);
  ir_kernel_free(small);
  ir_program_free(w.p);
}

/* debug: every access bounds-checked through the runtime bitcode, in every module */
static void test_runtime_in_groups(jit_backend *be) {
  world w;
  world_init(&w);
  ir_kernel *k = make(&w, "checked", NT, false, true);
  char *ir = jit_cpu_llvm_ir(be, k, err, sizeof err);
  int mods = count(ir, "; ModuleID");
  CHECKF(mods >= 3, "debug: %d modules", mods);
  /* no module leaves a runtime function for another to define (each has its own copy, internal) */
  int external = 0;
  for (const char *l = ir; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *end = strchr(l, '\n'), *rt = strstr(l, "@rt_");
    if (strncmp(l, "declare", 7) == 0 && rt && (!end || rt < end)) external++;
  }
  CHECKF(external == 0, "debug: %d runtime functions declared, not defined", external);
  free(ir);
  jit_kernel *jk = be->compile(be, k, err, sizeof err);
  CHECKF(jk != NULL, "%s", err);
  if (jk) {
    check_run(be, &w, jk, NT, false, 1, "checked");
    be->release(be, jk);
  }
  ir_kernel_free(k);
  /* an out-of-range index in the last task is caught there */
  ir_kernel *bad = make(&w, "bad", NT, false, true);
  ir_builder b;
  ir_builder_init(&b, bad);
  ir_stmt *task = h_task(&b, IR_task_serial, 0, 1);
  (void)task;
  ir_stmt *out = ir_b_const_int(&b, IR_i32, N + 3);
  check(&b, w.x, out);
  ir_b_global_store(&b, h_ptr(&b, w.x, out), ir_b_const_int(&b, IR_i32, 1));
  jk = be->compile(be, bad, err, sizeof err);
  CHECKF(jk != NULL, "%s", err);
  if (jk) {
    h_ctx h;
    h_ctx_init(&h, w.p);
    CHECK(!jit_launch(be, NULL, jk, &h.ctx) && h.error == RT_ERR_INDEX && h.error_info[2] == N + 3);
    h_ctx_free(&h, w.p);
    be->release(be, jk);
  }
  ir_kernel_free(bad);
  ir_program_free(w.p);
}

/* several multi-module kernels at once, waited for last first */
static void test_many(jit_backend *be) {
  enum { K = 5 };
  world w;
  world_init(&w);
  ir_kernel *ks[K];
  jit_pending *ps[K];
  for (int i = 0; i < K; i++) {
    char name[16];
    snprintf(name, sizeof name, "many%d", i);
    ks[i] = make(&w, name, NT - i % 3, false, i == 2);
    ps[i] = be->compile_start(be, ks[i], err, sizeof err);
    CHECKF(ps[i] != NULL, "%s", err);
  }
  for (int i = K - 1; i >= 0; i--) {
    jit_kernel *jk = ps[i] ? be->compile_wait(be, ps[i], err, sizeof err) : NULL;
    CHECKF(jk != NULL, "many%d: %s", i, err);
    if (jk) {
      char what[16];
      snprintf(what, sizeof what, "many%d", i);
      check_run(be, &w, jk, NT - i % 3, false, i, what);
      be->release(be, jk);
    }
    ir_kernel_free(ks[i]);
  }
  ir_program_free(w.p);
}

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || e->d_name[1] == '.')) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    remove(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

/* a multi-module kernel through the offline cache */
static void test_cache(void) {
  char dir[] = "/tmp/lattice_test_jit_groups_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  jit_options o = {.cache_dir = dir};
  world w;
  world_init(&w);
  ir_kernel *k = make(&w, "cached", NT, false, false);
  for (int run = 0; run < 2; run++) {
    jit_backend *be = jit_cpu_create(2, &o, err, sizeof err);
    CHECKF(be != NULL, "%s", err);
    if (!be) break;
    jit_kernel *jk = be->compile(be, k, err, sizeof err);
    CHECKF(jk && jk->cached == (run == 1), "run %d: %s", run, jk ? "cached wrong" : err);
    if (jk) {
      check_run(be, &w, jk, NT, false, 9, run ? "from the cache" : "into the cache");
      be->release(be, jk);
    }
    be->destroy(be);
  }
  ir_kernel_free(k);
  ir_program_free(w.p);
  rm_dir(dir);
}

int main(void) {
  jit_backend *be = jit_cpu_create(2, NULL, err, sizeof err);
  if (!be) {
    fprintf(stderr, "test_jit_groups: %s\n", err);
    return 1;
  }
  test_split(be);
  test_runtime_in_groups(be);
  test_many(be);
  be->destroy(be);
  test_cache();
  return check_finish("test_jit_groups");
}
