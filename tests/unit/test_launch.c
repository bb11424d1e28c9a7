/*
** test_launch.c -- jit_launch, the one schedule of a kernel call
** (src/jit/launch.c), against a model. The backend is the CPU backend with
** its task hooks replaced by ones that only record what they are asked to
** run (task, GC stage, begin and end of a launch) and inject what a test
** needs: a struct-for that changes a level's cells, a task error, a runtime
** failure, a device failure. The kernel's task list comes from the real
** pipeline (lists at three levels, a struct-for, deactivate_all, GC); the
** expected sequence is derived from that list by a model of list validity
** (a level's list is valid for the instance it was built for until a cell
** of one of its ancestors changes), for a synchronous backend (the CPU's
** contract) and an asynchronous one (CUDA's). The lists_reused counter of
** lt.print_stats is checked against the model's count too.
*/
#include "runtime/runtime.h"
#include "test_jit_sparse_world.h"

enum { BEGIN = -1, END = -2 };
typedef struct {
  int task, stage;
  bool ok;                            /* END: the ok given to launch_end */
} step;

typedef enum { NOTHING, TASK_ERROR, RUNTIME_ERROR, DEVICE_FAIL } failure;

static step got[1024];
static int ngot;
static struct {
  int task;                           /* the task that fails (-1: none) */
  failure what;
  int mark_task, mark_snode;          /* running mark_task changes mark_snode's cells */
  bool begin_fails;
} act = {-1, NOTHING, -1, -1, false};

static void record(int task, int stage, bool ok) {
  if (ngot < (int)(sizeof got / sizeof got[0])) got[ngot++] = (step){task, stage, ok};
}

static bool f_begin(jit_backend *be, jit_kernel *jk, rt_context *ctx) {
  record(BEGIN, 0, true);
  if (act.begin_fails) snprintf(be->error, sizeof be->error, "injected: begin");
  return !act.begin_fails;
}

static bool f_run(jit_backend *be, jit_kernel *jk, int i, rt_context *ctx, int stage) {
  record(i, stage, true);
  if (i == act.mark_task && stage == 0) rt_mark_changed(ctx->runtime, act.mark_snode);
  if (i != act.task || stage != 0) return true;
  switch (act.what) {
  case TASK_ERROR: *ctx->error = RT_ERR_INDEX; break;
  case RUNTIME_ERROR: ctx->runtime->error = RT_RTERR_POOL; break;
  case DEVICE_FAIL: snprintf(be->error, sizeof be->error, "injected: task %d", i); return false;
  default: break;
  }
  return true;
}

static bool f_end(jit_backend *be, jit_kernel *jk, rt_context *ctx, bool ok) {
  record(END, 0, ok);
  return ok;
}

/* ---- the model ---- */

typedef struct {
  char *built[IR_MAX_SNODES];         /* the instance a level's list holds (NULL: none) */
  int64_t built_at[IR_MAX_SNODES], changed_at[IR_MAX_SNODES], clock, reused;
} model;

static bool stale(const model *m, sw *w, int level, char *root) {
  if (m->built[level] != root || !root) return true;
  for (const ir_snode *a = w->p->snodes[level]->parent; a; a = a->parent)
    if (m->changed_at[a->id] > m->built_at[level]) return true;
  return false;
}

/* The steps a launch of jk over roots should take, and its error code.
** lists false: no list bookkeeping (jit_launch without a jit_sparse). */
static int expect(model *m, sw *w, jit_kernel *jk, char **roots, bool sync, bool lists, step *out, int *nout) {
  int n = 0, code = RT_ERR_OK;
  out[n++] = (step){BEGIN, 0, true};
  int32_t reused = -1;
  failure seen = NOTHING;
  for (int i = 0; i < jk->ntasks; i++) {
    const jit_task *t = &jk->tasks[i];
    char *root = t->tree >= 0 ? roots[t->tree] : NULL;
    if (t->kind == IR_task_clear_list && lists) {
      if (!stale(m, w, t->snode, root)) {
        m->reused++;
        reused = t->snode;
        continue;
      }
      reused = -1;
    } else if (t->kind == IR_task_listgen && reused == t->snode) {
      reused = -1;
      continue;
    }
    failure f = i == act.task ? act.what : NOTHING;
    int stages = f == DEVICE_FAIL || t->kind != IR_task_gc ? 1 : 3;   /* a failed stage is the last */
    for (int s = 0; s < stages; s++) out[n++] = (step){i, s, true};
    if (i == act.mark_task) m->changed_at[act.mark_snode] = ++m->clock;
    if (f != NOTHING && seen == NOTHING) seen = f;
    if (f == DEVICE_FAIL) {
      out[n++] = (step){END, 0, false};
      *nout = n;
      return RT_ERR_DEVICE;
    }
    if (t->kind == IR_task_listgen && lists) {
      bool ok = !(sync && f == RUNTIME_ERROR);
      m->built[t->snode] = ok ? root : NULL;
      m->built_at[t->snode] = ++m->clock;
    }
    if (sync && f != NOTHING) break;
  }
  out[n++] = (step){END, 0, true};
  if (seen == TASK_ERROR) code = RT_ERR_INDEX;
  if (seen == RUNTIME_ERROR) {
    code = RT_ERR_RUNTIME;
    if (!sync)   /* which list it hit is not known: all of the kernel's are forgotten */
      for (int i = 0; i < jk->ntasks; i++)
        if (jk->tasks[i].kind == IR_task_listgen) m->built[jk->tasks[i].snode] = NULL;
  }
  *nout = n;
  return code;
}

static void print_steps(const char *what, const step *s, int n) {
  fprintf(stderr, "  %s:", what);
  for (int i = 0; i < n; i++) {
    if (s[i].task == BEGIN) fprintf(stderr, " begin");
    else if (s[i].task == END) fprintf(stderr, " end%s", s[i].ok ? "" : "(failed)");
    else if (s[i].stage) fprintf(stderr, " %d.%d", s[i].task, s[i].stage);
    else fprintf(stderr, " %d", s[i].task);
  }
  fputc('\n', stderr);
}

/* Launches jk over roots and checks the steps, the result, the error code
** and the reuse counter against the model. */
static void launch_and_check(const char *what, model *m, sw *w, jit_kernel *jk, char **roots, jit_sparse *sp) {
  step want[1024];
  int nwant = 0;
  int64_t reused_before = m->reused, counter_before = sw_stats(w).lists_reused;
  int code = expect(m, w, jk, roots, w->be->synchronous, sp != NULL, want, &nwant);
  ngot = 0;
  uint64_t args[RT_MAX_ARGS] = {0}, ret = 0;
  char gtmp[64] = {0};
  int32_t error = 0;
  int64_t info[4] = {0};
  rt_context ctx = {.roots = roots, .args = args, .ret = &ret, .gtmp = gtmp, .error = &error, .error_info = info,
                    .runtime = sp ? NULL : jit_sparse_runtime(w->sp)};
  bool ok = jit_launch(w->be, sp, jk, &ctx);
  bool same = ngot == nwant;
  for (int i = 0; same && i < nwant; i++)
    same = got[i].task == want[i].task && got[i].stage == want[i].stage && got[i].ok == want[i].ok;
  CHECKF(same, "%s: the steps differ from the model", what);
  if (!same) {
    print_steps("model", want, nwant);
    print_steps("got  ", got, ngot);
  }
  CHECKF(ok == (code == RT_ERR_OK) && error == code, "%s: launch %d, error %d; model: error %d", what, ok,
         (int)error, code);
  int64_t counted = sw_stats(w).lists_reused - counter_before;
  CHECKF(counted == m->reused - reused_before, "%s: %lld lists reused, model %lld", what, (long long)counted,
         (long long)(m->reused - reused_before));
  if (act.what != NOTHING) {   /* the failure was injected: its task ran */
    bool ran = false;
    for (int i = 0; i < ngot; i++) ran |= got[i].task == act.task;
    CHECKF(ran, "%s: task %d, which fails, did not run", what, act.task);
  }
  char msg[768];
  if (code == RT_ERR_RUNTIME) {
    CHECK(jit_sparse_take_error(w->sp, w->p, msg, sizeof msg));   /* and clears it */
    CHECK_CONTAINS(msg, "pool");
  }
  if (code == RT_ERR_DEVICE) CHECK_CONTAINS(w->be->error, "injected");
}

/* The kernel's tasks without their code: what the schedule sees. */
static jit_kernel *tasks_of(sw *w, const char *text) {
  ir_kernel *k = ir_parse(text, w->p, w->err, sizeof w->err);
  if (!k || !ir_compile(k, true, NULL, NULL)) {
    fprintf(stderr, "%s\n", k ? k->error : w->err);
    return NULL;
  }
  jit_kernel *jk = calloc(1, sizeof *jk);
  int n = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next) n++;
  jk->tasks = calloc((size_t)n, sizeof *jk->tasks);
  for (ir_stmt *s = k->body->first; s; s = s->next) jit_task_describe(&jk->tasks[jk->ntasks++], k, s);
  jk->name = "prune";
  jk->needs_runtime = true;
  ir_kernel_free(k);
  return jk;
}

static int find_task(jit_kernel *jk, ir_op kind) {
  for (int i = 0; i < jk->ntasks; i++)
    if (jk->tasks[i].kind == kind) return i;
  return -1;
}

int main(void) {
  sw w;
  if (!sw_init(&w, 16 << 20, 2) || !sw_fields(&w, "field x <f32> dense [i:2] pointer [i:4] bitmasked [i:8]\n")) {
    fprintf(stderr, "test_launch: %s\n", w.err);
    return 1;
  }
  char L1[64], L2[64], L3[64];
  ir_snode_label(sw_level(&w, "x", 3), L1, sizeof L1);
  ir_snode_label(sw_level(&w, "x", 2), L2, sizeof L2);
  ir_snode_label(sw_level(&w, "x", 1), L3, sizeof L3);
  char text[2048];
  snprintf(text, sizeof text,
           "kernel prune() {\n  $0 = struct_for %s {\n    <i32> $1 = loop_index $0 0\n"
           "    <f32*> $2 = global_ptr x [$1]\n    <f32> $3 = global_load $2\n    <f32> $4 = const 0.0\n"
           "    <i1> $5 = cmp_le $3 $4\n    $6 = if $5 {\n      $7 = snode_deactivate %s [$1]\n    }\n  }\n"
           "  $8 = snode_deactivate_all %s\n}\n",
           L3, L2, L1);
  jit_kernel *jk = tasks_of(&w, text);
  if (!jk) return 1;
  /* the pipeline gives what the model needs: lists at three levels, GC */
  int sf = find_task(jk, IR_task_struct_for), gc = find_task(jk, IR_task_gc);
  int lg = -1;   /* the listgen of the bitmasked level's list after the struct-for */
  for (int i = sf + 1; i < jk->ntasks; i++)
    if (jk->tasks[i].kind == IR_task_listgen && jk->tasks[i].snode == sw_level(&w, "x", 1)->id && lg < 0) lg = i;
  CHECK(sf >= 0 && gc > sf && lg > gc && find_task(jk, IR_task_deactivate_all) > lg);
  int pointer = sw_level(&w, "x", 2)->id;

  w.be->launch_begin = f_begin;
  w.be->run_task = f_run;
  w.be->launch_end = f_end;
  model m = {0};
  char *roots[IR_MAX_TREES];
  memcpy(roots, w.roots, sizeof roots);

  /* the struct-for deactivates pointer cells: the lists below it go stale */
  act.mark_task = sf;
  act.mark_snode = pointer;
  launch_and_check("first launch", &m, &w, jk, roots, w.sp);
  CHECK(m.reused > 0);   /* the lists of the later deactivate_all above the change */
  launch_and_check("second launch", &m, &w, jk, roots, w.sp);
  act.mark_task = -1;
  launch_and_check("nothing changes", &m, &w, jk, roots, w.sp);

  /* a cell activated from the host */
  int64_t i0 = 5;
  CHECK(jit_sparse_snode_op(w.sp, sw_level(&w, "x", 1), roots[0], &i0, JIT_SN_ACTIVATE) == 1);
  m.changed_at[pointer] = ++m.clock;   /* the pointer cell on the way, and the cell */
  m.changed_at[sw_level(&w, "x", 1)->id] = ++m.clock;
  launch_and_check("after an activation", &m, &w, jk, roots, w.sp);

  /* another instance of the tree, then the first again */
  int tree = sw_place(&w, "x")->tree;
  char *other = jit_sparse_new_instance(w.sp, w.p, tree, w.err, sizeof w.err);
  CHECK(other != NULL);
  roots[tree] = other;
  launch_and_check("another instance", &m, &w, jk, roots, w.sp);
  launch_and_check("another instance again", &m, &w, jk, roots, w.sp);
  roots[tree] = w.roots[tree];
  launch_and_check("the first instance", &m, &w, jk, roots, w.sp);

  /* errors on a synchronous backend stop the launch at once */
  act.task = sf;
  act.what = TASK_ERROR;
  launch_and_check("a task error", &m, &w, jk, roots, w.sp);
  /* the struct-for's change makes lg rebuild the bitmasked level's list */
  act.mark_task = sf;
  act.task = lg;
  act.what = RUNTIME_ERROR;
  launch_and_check("a runtime failure in a listgen", &m, &w, jk, roots, w.sp);
  act.mark_task = -1;
  act.what = NOTHING;
  launch_and_check("its list is built again", &m, &w, jk, roots, w.sp);
  act.task = gc;
  act.what = DEVICE_FAIL;
  launch_and_check("a device failure", &m, &w, jk, roots, w.sp);

  /* an asynchronous backend runs every task; errors come with launch_end */
  w.be->synchronous = false;
  act.task = sf;
  act.what = TASK_ERROR;
  launch_and_check("async: a task error", &m, &w, jk, roots, w.sp);
  act.mark_task = sf;
  act.task = lg;
  act.what = RUNTIME_ERROR;
  launch_and_check("async: a runtime failure", &m, &w, jk, roots, w.sp);
  act.mark_task = -1;
  act.what = NOTHING;
  launch_and_check("async: every list built again", &m, &w, jk, roots, w.sp);
  launch_and_check("async: and reused", &m, &w, jk, roots, w.sp);
  act.task = sf;
  act.what = DEVICE_FAIL;
  launch_and_check("async: a device failure", &m, &w, jk, roots, w.sp);
  w.be->synchronous = true;
  act.what = NOTHING;

  /* without the jit_sparse: every list task runs, the root's list set anyway */
  model none = m;
  launch_and_check("no bookkeeping", &none, &w, jk, roots, NULL);

  /* refused before anything runs */
  act.begin_fails = true;
  ngot = 0;
  int32_t error = 0;
  rt_context ctx = {.roots = roots, .error = &error};
  CHECK(!jit_launch(w.be, w.sp, jk, &ctx) && error == RT_ERR_DEVICE && ngot == 1 && got[0].task == BEGIN);
  act.begin_fails = false;
  ngot = 0;
  error = 0;
  ctx.runtime = NULL;
  CHECK(!jit_launch(w.be, NULL, jk, &ctx) && error == RT_ERR_RUNTIME && ngot == 0);   /* no runtime */

  free(jk->tasks);
  free(jk);
  sw_free(&w);
  return check_finish("test_launch");
}
