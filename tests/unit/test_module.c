/*
** test_module.c -- AOT modules through the public API: a script run in a
** runtime (lt_run_string) saves modules with lt.aot.module (and checks the
** saver's refusals itself); fresh runtimes (1 and 2 threads) load them from
** the file and from memory, make tree instances, launch every kernel and
** compare fields and results with C references and with the JIT's results
** from the script (lt.random's numbers, a serial f64 sum); two modules in
** one runtime, a module beside a script's own trees, a pool that fills up,
** runtimes on two threads; then every misuse of the API (counts, kinds,
** dtypes, shapes, other tree types and modules, destroyed and freed
** handles, NULL pointers, zeroed handles) and corrupt module files
** (truncations, byte flips, formats, targets, CPU features, unknown
** sections, a module loaded twice), each an error naming the file and what
** is wrong, never a crash.
*/
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "check.h"
#include "lattice_lua.h"
#include "program/module.h"

#define CHECK_ST(call, want)                                                             \
  do {                                                                                   \
    lt_status st_ = (call);                                                              \
    CHECKF(st_ == (want), "%s gave %s, expected %s (%s)", #call, lt_status_name(st_), lt_status_name(want), \
           lt_last_error(rt));                                                           \
  } while (0)

/* ---- the modules ------------------------------------------------------------------------ */

static char dir[] = "/tmp/lattice_test_module_XXXXXX";
static char path_a[128], path_b[128], path_v4[128], path_trees[128];

/* The JIT's results in the saving script, for the host's results to equal. */
static double rnd_jit[16], dot_jit;

/* Saved in a runtime with debug on, so lt.assert is compiled into the module. */
static const char script[] =
  "local lt = require 'lattice'\n"
  "local dir = MODULE_DIR\n"
  "local Grid = lt.tree {\n"
  "  fields = { a = lt.f32, b = lt.i32, v = lt.vec2 },\n"
  "  lt.pointer(lt.ij, 4) { lt.dense(lt.ij, 4) { 'a', 'b', 'v' } },\n"
  "}\n"
  "local Aux = lt.tree { fields = { c = lt.f64 }, lt.dense(lt.i, 8) { 'c' } }\n"
  "local Other = lt.tree { fields = { z = lt.i32 }, lt.dense(lt.i, 8) { 'z' } }\n"
  "local fill = lt.kernel(function(g, s, n, jmax)\n"
  "  for i, j in lt.ndrange(16, 16) do\n"
  "    if j < jmax and (i + j) % 3 == 0 then\n"
  "      g.a[i][j] = s * i + j\n"
  "      g.b[i][j] = n * i - j\n"
  "      g.v[i][j] = lt.vec2(i + s, j - s)\n"
  "    end\n"
  "  end\n"
  "end, { g = Grid, s = lt.f32, n = lt.i32, jmax = lt.i32 })\n"
  "local sumb = lt.kernel(function(g)\n"
  "  local t = lt.i64(0)\n"
  "  for i, j in g.b do t = t + g.b[i][j] end\n"
  "  return t\n"
  "end, { g = Grid })\n"
  "local count = lt.kernel(function(g)\n"
  "  local c = 0\n"
  "  for i, j in g.a do c = c + 1 end\n"
  "  return c\n"
  "end, { g = Grid })\n"
  "local stash = lt.kernel(function(g, h)\n"
  "  for i in lt.ndrange(8) do h.c[i] = g.a[2 * i][2 * i] end\n"
  "end, { g = Grid, h = Aux })\n"
  "local dot = lt.kernel(function(x, w, n)\n"      /* n's type: add_kernel's signature */
  "  local acc = lt.f64(0)\n"
  "  for i in lt.serial(0, n - 1) do\n"
  "    acc = acc + lt.f64(x[i]) * w.x + lt.f64(i) * w.y\n"
  "  end\n"
  "  return acc\n"
  "end, { x = lt.ndarray_type(lt.f32, 1), w = lt.vec2 })\n"
  "local mat = lt.kernel(function(m)\n"
  "  return m[0][0] + 10 * m[0][1] + 100 * m[1][0] + 1000 * m[1][1]\n"
  "end, { m = lt.mat2 })\n"
  "local ivec = lt.kernel(function(p) return p.x * 1000 + p.y end, { p = lt.ivec2 })\n"
  "local say = lt.kernel(function(n) print('module says', n) end, { n = lt.i32 })\n"
  "local checked = lt.kernel(function(n)\n"
  "  lt.assert(n >= 0, 'n must not be negative')\n"
  "  return n * 2\n"
  "end, { n = lt.i32 })\n"
  "local rnd = lt.kernel(function(x)\n"
  "  for i in lt.ndrange(x.shape[1]) do x[i] = lt.random() end\n"
  "end, { x = lt.ndarray_type(lt.f32, 1) })\n"
  "local shift = lt.kernel(function(dst, src)\n"
  "  for i in lt.ndrange(dst.shape[1] - 1) do dst[i + 1] = src[i] * 2 end\n"
  "end, { dst = lt.ndarray_type(lt.i32, 1), src = lt.ndarray_type(lt.i32, 1) })\n"
  "local touch = lt.kernel(function(u, k)\n"
  "  for i in lt.ndrange(8) do u.z[i] = i * k end\n"
  "end, { u = Other, k = lt.i32 })\n"
  "local glob = lt.field(lt.f32, 8)\n"
  "local use_glob = lt.kernel(function() for i in glob do glob[i] = 1 end end)\n"
  /* the JIT's numbers: lt.random first (its draws depend on the launches before) */
  "local r = lt.ndarray(lt.f32, 16)\n"
  "rnd(r)\n"
  "RND = {}\n"
  "for i = 0, 15 do RND[i + 1] = r[i] end\n"
  "local x = lt.ndarray(lt.f32, 8)\n"
  "for i = 0, 7 do x[i] = i * 0.37 - 1.1 end\n"
  "DOT = dot(x, lt.vec2(0.3, -1.7), 8)\n"
  /* module A */
  "local m = lt.aot.module { arch = 'cpu', cpu = 'x86-64-v2' }\n"
  "m:add_tree_type('grid', Grid)\n"
  "m:add_tree_type('aux', Aux)\n"
  "for _, k in ipairs { {'fill', fill}, {'sumb', sumb}, {'count', count}, {'stash', stash}, {'mat', mat},\n"
  "    {'ivec', ivec}, {'say', say}, {'checked', checked}, {'rnd', rnd}, {'shift', shift} } do\n"
  "  m:add_kernel(k[1], k[2])\n"
  "end\n"
  "m:add_kernel('dot', dot, { n = lt.i32 })\n"
  /* what the saver refuses */
  "local function refused(want, f, ...)\n"
  "  local ok, e = pcall(f, ...)\n"
  "  assert(not ok, 'not refused: ' .. want)\n"
  "  assert(tostring(e):find(want, 1, true), 'wanted \"' .. want .. '\" in: ' .. tostring(e))\n"
  "  return tostring(e)\n"
  "end\n"
  "local e = refused('tree instance', m.add_kernel, m, 'use_glob', use_glob)\n"
  "assert(e:find(\"'use_glob'\", 1, true) and e:find(\"'glob'\", 1, true), e)\n"
  "assert(e:find('^module_script:%d+: '), 'the message names the script line: ' .. e)\n"
  "refused('not in the module', m.add_kernel, m, 'touch', touch)\n"
  "refused(\"already has a kernel named 'fill'\", m.add_kernel, m, 'fill', sumb)\n"
  "refused(\"already has a tree type named 'grid'\", m.add_kernel, m, 'grid', sumb)\n"
  "refused(\"names 'nn'\", m.add_kernel, m, 'dot2', dot, { nn = lt.i32 })\n"
  "refused('must be a kernel', m.add_kernel, m, 'k2', 42)\n"
  "refused('already in the module', m.add_tree_type, m, 'grid2', Grid)\n"
  "refused('must be an identifier', m.add_tree_type, m, 'no spaces', Other)\n"
  "refused('tpu', lt.aot.module, { arch = 'tpu' })\n"
  "refused('arch', lt.aot.module, { arch = 42 })\n"
  "refused('pentium', lt.aot.module, { arch = 'cpu', cpu = 'pentium' })\n"
  "refused(\"unknown option 'threads'\", lt.aot.module, { threads = 2 })\n"
  "refused('give the module', m.save, m, '')\n"
  "e = refused('cannot write', m.save, m, dir .. '/no/such/dir/x.ltm')\n"
  "assert(e:find('^module_script:%d+: '), 'the message names the script line: ' .. e)\n"
  "m:save(dir .. '/a.ltm')\n"
  /* module B: another tree type, at its own tree slot (it fits beside A) */
  "local mb = lt.aot.module {}\n"
  "mb:add_tree_type('other', Other)\n"
  "mb:add_kernel('touch', touch)\n"
  "mb:save(dir .. '/b.ltm')\n"
  /* Grid for the newest CPUs, and a module of tree types alone */
  "local m4 = lt.aot.module { cpu = 'x86-64-v4' }\n"
  "m4:add_tree_type('grid', Grid)\n"
  "m4:add_kernel('fill', fill)\n"
  "m4:add_kernel('sumb', sumb)\n"
  "m4:save(dir .. '/v4.ltm')\n"
  "local mt = lt.aot.module {}\n"
  "mt:add_tree_type('grid', Grid)\n"
  "mt:save(dir .. '/trees.ltm')\n";

static void save_modules(void) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 1;
  cfg.device_memory = 64 << 20;
  cfg.debug = 1;
  if (lt_runtime_create(&cfg, &rt) != LT_OK) {
    fprintf(stderr, "lt_runtime_create: %s\n", lt_last_error(rt));
    exit(1);
  }
  char set[256];
  snprintf(set, sizeof set, "MODULE_DIR = '%s'", dir);
  CHECK_ST(lt_run_string(rt, set, "=module_dir"), LT_OK);
  if (lt_run_string(rt, script, "=module_script") != LT_OK) {
    fprintf(stderr, "the saving script failed: %s\n", lt_last_error(rt));
    exit(1);
  }
  lua_State *L = lt_lua_state(rt);
  lua_getglobal(L, "RND");
  for (int i = 0; i < 16; i++) {
    lua_geti(L, -1, i + 1);
    rnd_jit[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  lua_getglobal(L, "DOT");
  dot_jit = lua_tonumber(L, -1);
  lua_pop(L, 2);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

static lt_runtime make_rt(int threads) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = threads;
  cfg.device_memory = 64 << 20;
  if (lt_runtime_create(&cfg, &rt) != LT_OK) {
    fprintf(stderr, "lt_runtime_create: %s\n", lt_last_error(rt));
    exit(1);
  }
  return rt;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)len);
  if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) exit(1);
  fclose(f);
  *n = (size_t)len;
  return p;
}

/* ---- the C references ----------------------------------------------------------------------- */

enum { N = 16 };

typedef struct {
  float a[N][N], vx[N][N], vy[N][N];
  int32_t b[N][N];
  int active[N / 4][N / 4];        /* blocks of the pointer level */
} grid_ref;

static void fill_ref(grid_ref *g, float s, int32_t n, int32_t jmax) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      if (!(j < jmax && (i + j) % 3 == 0)) continue;
      float t = s * (float)i;
      g->a[i][j] = t + (float)j;
      g->b[i][j] = (int32_t)((uint32_t)n * (uint32_t)i - (uint32_t)j);   /* i32 wraps */
      g->vx[i][j] = (float)i + s;
      g->vy[i][j] = (float)j - s;
      g->active[i / 4][j / 4] = 1;
    }
}

static int64_t sumb_ref(const grid_ref *g) {
  int64_t t = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) t += g->b[i][j];
  return t;
}

static int64_t count_ref(const grid_ref *g) {
  int64_t c = 0;
  for (int i = 0; i < N / 4; i++)
    for (int j = 0; j < N / 4; j++) c += g->active[i][j] ? 16 : 0;
  return c;
}

static float xs[8];

static double dot_ref(float wx, float wy, int n) {
  double acc = 0;
  for (int i = 0; i < n; i++) {
    double p = (double)xs[i] * (double)wx;
    acc = acc + p;
    double q = (double)i * (double)wy;
    acc = acc + q;
  }
  return acc;
}

/* ---- capturing what kernels print ------------------------------------------------------------ */

static int saved_stdout = -1;
static char capture_path[160];

static void capture_begin(void) {
  fflush(stdout);
  snprintf(capture_path, sizeof capture_path, "%s/stdout.txt", dir);
  int fd = open(capture_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  saved_stdout = dup(1);
  if (fd < 0 || saved_stdout < 0 || dup2(fd, 1) < 0) exit(1);
  close(fd);
}

static char *capture_end(void) {
  fflush(stdout);
  dup2(saved_stdout, 1);
  close(saved_stdout);
  size_t n;
  unsigned char *p = read_all(capture_path, &n);
  char *s = realloc(p, n + 1);
  s[n] = 0;
  return s;
}

/* ---- loading and running ---------------------------------------------------------------------- */

typedef struct {
  lt_kernel fill, sumb, count, stash, dot, mat, ivec, say, checked, rnd, shift;
} kernels_a;

static void find_kernels(lt_runtime rt, lt_module m, kernels_a *k) {
  CHECK_ST(lt_module_kernel(rt, m, "fill", &k->fill), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "sumb", &k->sumb), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "count", &k->count), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "stash", &k->stash), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "dot", &k->dot), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "mat", &k->mat), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "ivec", &k->ivec), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "say", &k->say), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "checked", &k->checked), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "rnd", &k->rnd), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "shift", &k->shift), LT_OK);
}

/* Every field of instance g equals the reference (inactive cells read zero). */
static void check_grid(lt_runtime rt, lt_tree g, const grid_ref *want, const char *what) {
  lt_field fa, fb, fx, fy;
  CHECK_ST(lt_tree_field(rt, g, "a", &fa), LT_OK);
  CHECK_ST(lt_tree_field(rt, g, "b", &fb), LT_OK);
  CHECK_ST(lt_tree_field(rt, g, "v.x", &fx), LT_OK);
  CHECK_ST(lt_tree_field(rt, g, "v.y", &fy), LT_OK);
  static float a[N][N], vx[N][N], vy[N][N];
  static int32_t b[N][N];
  int64_t begin[2] = {0, 0}, extent[2] = {N, N};
  CHECK_ST(lt_field_read_box(rt, fa, begin, extent, 2, LT_F32, a, sizeof a), LT_OK);
  CHECK_ST(lt_field_read_box(rt, fb, begin, extent, 2, LT_I32, b, sizeof b), LT_OK);
  CHECK_ST(lt_field_read_box(rt, fx, begin, extent, 2, LT_F32, vx, sizeof vx), LT_OK);
  CHECK_ST(lt_field_read_box(rt, fy, begin, extent, 2, LT_F32, vy, sizeof vy), LT_OK);
  int bad = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      bad += a[i][j] != want->a[i][j] || b[i][j] != want->b[i][j] || vx[i][j] != want->vx[i][j] ||
             vy[i][j] != want->vy[i][j];
  CHECKF(bad == 0, "%s: %d cells differ from C", what, bad);
  /* single elements too */
  int64_t at[2] = {3, 6};
  float e = -1;
  int32_t ib = -1;
  CHECK_ST(lt_field_read(rt, fa, at, 2, LT_F32, &e), LT_OK);
  CHECK(e == want->a[3][6]);
  CHECK_ST(lt_field_read(rt, fb, at, 2, LT_I32, &ib), LT_OK);
  CHECK(ib == want->b[3][6]);
}

static void check_result(lt_value r, lt_value_kind kind, int64_t i, double f, const char *what) {
  CHECKF(r.kind == kind, "%s: result kind %d, expected %d", what, (int)r.kind, (int)kind);
  if (kind == LT_VALUE_INT) CHECKF(r.as.i == i, "%s: %lld, expected %lld", what, (long long)r.as.i, (long long)i);
  if (kind == LT_VALUE_FLOAT) CHECKF(r.as.f == f, "%s: %.17g, expected %.17g", what, r.as.f, f);
}

/* Loads module A (from the file or from its bytes), runs every kernel, compares with C. */
static void test_run(int threads, int from_memory) {
  lt_runtime rt = make_rt(threads);
  lt_module m;
  size_t nbytes = 0;
  unsigned char *bytes = read_all(path_a, &nbytes);
  if (from_memory) CHECK_ST(lt_module_load_memory(rt, bytes, nbytes, "a-in-memory", &m), LT_OK);
  else CHECK_ST(lt_module_load(rt, path_a, &m), LT_OK);
  free(bytes);      /* the runtime keeps its own copy */
  CHECK(m.id != 0);

  uint64_t tb = 0, ab = 0;
  CHECK_ST(lt_module_tree_type(rt, m, "grid", &tb), LT_OK);
  CHECK(tb > 0);
  CHECK_ST(lt_module_tree_type(rt, m, "aux", &ab), LT_OK);
  CHECK(ab >= 8 * sizeof(double));    /* dense: every cell in the root container */
  CHECK_ST(lt_module_tree_type(rt, m, "aux", NULL), LT_OK);
  CHECK_ST(lt_module_tree_type(rt, m, "Grid", &tb), LT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(lt_last_error(rt), "lt_module_tree_type");
  CHECK_CONTAINS(lt_last_error(rt), "'Grid'");
  CHECK_CONTAINS(lt_last_error(rt), from_memory ? "a-in-memory" : path_a);

  kernels_a k;
  find_kernels(rt, m, &k);

  /* lt.random first, as in the script: the same numbers as the JIT's, whatever the threads */
  float r[16] = {0};
  int64_t n16 = 16;
  lt_ndarray ra;
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 1, &n16, r, sizeof r, NULL, NULL, &ra), LT_OK);
  lt_value rv = lt_nd(ra), res;
  CHECK_ST(lt_kernel_launch(rt, k.rnd, &rv, 1, &res), LT_OK);
  CHECK(res.kind == LT_VALUE_NONE);
  int bad = 0, distinct = 0;
  for (int i = 0; i < 16; i++) {
    bad += !(r[i] >= 0 && r[i] < 1) || (double)r[i] != rnd_jit[i];
    distinct += i > 0 && r[i] != r[0];
  }
  CHECKF(bad == 0, "lt.random: %d numbers differ from the JIT's (or out of [0, 1))", bad);
  CHECK(distinct > 10);

  lt_tree g, g2, h;
  CHECK_ST(lt_tree_create(rt, m, "grid", &g), LT_OK);
  CHECK_ST(lt_tree_create(rt, m, "grid", &g2), LT_OK);
  CHECK_ST(lt_tree_create(rt, m, "aux", &h), LT_OK);
  CHECK(g.id && g2.id && h.id && g.id != g2.id);

  static grid_ref want, want2, zero;
  memset(&want, 0, sizeof want);
  memset(&want2, 0, sizeof want2);
  check_grid(rt, g, &zero, "a new instance");

  /* fill: floats that round, an i32 that wraps, a vector field */
  lt_value fa[4] = {lt_tree_value(g), lt_float(0.1), lt_int(300000007), lt_int(9)};
  CHECK_ST(lt_kernel_launch(rt, k.fill, fa, 4, &res), LT_OK);
  CHECK(res.kind == LT_VALUE_NONE);
  fill_ref(&want, 0.1f, 300000007, 9);
  check_grid(rt, g, &want, "fill");
  check_grid(rt, g2, &zero, "the other instance");
  /* the second instance: its own memory; a float 3.0 for an integer parameter is 3 */
  lt_value fb[4] = {lt_tree_value(g2), lt_float(-2.75), lt_float(-3.0), lt_int(16)};
  CHECK_ST(lt_kernel_launch(rt, k.fill, fb, 4, NULL), LT_OK);
  fill_ref(&want2, -2.75f, -3, 16);
  check_grid(rt, g2, &want2, "fill of g2");
  check_grid(rt, g, &want, "g after g2's fill");

  lt_value ga = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, k.sumb, &ga, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, sumb_ref(&want), 0, "sumb");
  CHECK_ST(lt_kernel_launch(rt, k.count, &ga, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, count_ref(&want), 0, "count");
  CHECK(count_ref(&want) < N * N);    /* a sparse instance */
  lt_value g2a = lt_tree_value(g2);
  CHECK_ST(lt_kernel_launch(rt, k.count, &g2a, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, count_ref(&want2), 0, "count of g2");

  /* a host write activates a block the kernels then see */
  lt_field fbf;
  CHECK_ST(lt_tree_field(rt, g, "b", &fbf), LT_OK);
  int64_t at[2] = {13, 14};
  int32_t val = -123456;
  CHECK(!want.active[3][3]);
  CHECK_ST(lt_field_write(rt, fbf, at, 2, LT_I32, &val), LT_OK);
  want.b[13][14] = val;
  want.active[3][3] = 1;
  CHECK_ST(lt_kernel_launch(rt, k.sumb, &ga, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, sumb_ref(&want), 0, "sumb after a host write");
  CHECK_ST(lt_kernel_launch(rt, k.count, &ga, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, count_ref(&want), 0, "count after a host write");
  lt_dtype dt;
  int nd;
  int64_t shape[LT_MAX_DIMS];
  CHECK_ST(lt_field_shape(rt, fbf, &dt, &nd, shape), LT_OK);
  CHECK(dt == LT_I32 && nd == 2 && shape[0] == N && shape[1] == N);

  /* two instances of two tree types */
  lt_value sa[2] = {lt_tree_value(g), lt_tree_value(h)};
  CHECK_ST(lt_kernel_launch(rt, k.stash, sa, 2, NULL), LT_OK);
  lt_field fc;
  CHECK_ST(lt_tree_field(rt, h, "c", &fc), LT_OK);
  double c[8];
  int64_t b0 = 0, e8 = 8;
  CHECK_ST(lt_field_read_box(rt, fc, &b0, &e8, 1, LT_F64, c, sizeof c), LT_OK);
  bad = 0;
  for (int i = 0; i < 8; i++) bad += c[i] != (double)want.a[2 * i][2 * i];
  CHECKF(bad == 0, "stash: %d values differ", bad);

  /* an ndarray, a vector, an integer: a serial sum, exact, as the JIT's */
  for (int i = 0; i < 8; i++) xs[i] = (float)(i * 0.37 - 1.1);
  int64_t n8 = 8;
  lt_ndarray xa;
  CHECK_ST(lt_ndarray_wrap(rt, LT_F32, 1, &n8, xs, sizeof xs, NULL, NULL, &xa), LT_OK);
  double w[2] = {0.3, -1.7};
  lt_value da[3] = {lt_nd(xa), lt_vec(w, 2), lt_int(8)};
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_OK);
  check_result(res, LT_VALUE_FLOAT, 0, dot_ref(0.3f, -1.7f, 8), "dot");
  check_result(res, LT_VALUE_FLOAT, 0, dot_jit, "dot against the JIT");
  da[2] = lt_int(5);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_OK);
  check_result(res, LT_VALUE_FLOAT, 0, dot_ref(0.3f, -1.7f, 5), "dot of 5");
  /* past the ndarray's end: the module was compiled in debug mode, so it checks */
  da[2] = lt_int(9);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_RUNTIME);
  CHECK_CONTAINS(lt_last_error(rt), "index 8 out of range");
  CHECK_CONTAINS(lt_last_error(rt), "'x'");

  /* matrices row-major; integer vectors */
  double mv[4] = {1, 2, 3, 4};
  lt_value ma = lt_vec(mv, 4);
  CHECK_ST(lt_kernel_launch(rt, k.mat, &ma, 1, &res), LT_OK);
  check_result(res, LT_VALUE_FLOAT, 0, 1 + 10 * 2 + 100 * 3 + 1000 * 4, "mat");
  double iv[2] = {-7, 42};
  lt_value ia = lt_vec(iv, 2);
  CHECK_ST(lt_kernel_launch(rt, k.ivec, &ia, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, -7 * 1000 + 42, 0, "ivec");

  /* two ndarrays; one for both is refused where they would race, and nothing runs */
  int32_t src[8], dst[8] = {0}, same[8];
  for (int i = 0; i < 8; i++) src[i] = same[i] = 3 * i - 5;
  lt_ndarray sd, ss, sm;
  CHECK_ST(lt_ndarray_wrap(rt, LT_I32, 1, &n8, dst, sizeof dst, NULL, NULL, &sd), LT_OK);
  CHECK_ST(lt_ndarray_wrap(rt, LT_I32, 1, &n8, src, sizeof src, NULL, NULL, &ss), LT_OK);
  CHECK_ST(lt_ndarray_wrap(rt, LT_I32, 1, &n8, same, sizeof same, NULL, NULL, &sm), LT_OK);
  lt_value sh[2] = {lt_nd(sd), lt_nd(ss)};
  CHECK_ST(lt_kernel_launch(rt, k.shift, sh, 2, NULL), LT_OK);
  bad = dst[0] != 0;
  for (int i = 1; i < 8; i++) bad += dst[i] != 2 * src[i - 1];
  CHECK(bad == 0);
  sh[0] = sh[1] = lt_nd(sm);
  CHECK_ST(lt_kernel_launch(rt, k.shift, sh, 2, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "arguments 'dst' and 'src' are the same ndarray");
  bad = 0;
  for (int i = 0; i < 8; i++) bad += same[i] != 3 * i - 5;
  CHECK(bad == 0);

  /* print reaches stdout */
  lt_value say = lt_int(42);
  capture_begin();
  lt_status st = lt_kernel_launch(rt, k.say, &say, 1, &res);
  char *out = capture_end();
  CHECK(st == LT_OK);
  CHECK_CONTAINS(out, "module says\t42\n");
  free(out);

  /* lt.assert: LT_ERROR_RUNTIME with its message; the runtime goes on */
  lt_value ca = lt_int(21);
  CHECK_ST(lt_kernel_launch(rt, k.checked, &ca, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, 42, 0, "checked");
  ca = lt_int(-1);
  res = lt_int(77);
  CHECK_ST(lt_kernel_launch(rt, k.checked, &ca, 1, &res), LT_ERROR_RUNTIME);
  CHECK_CONTAINS(lt_last_error(rt), "lt_kernel_launch");
  CHECK_CONTAINS(lt_last_error(rt), "assertion failed: n must not be negative");
  CHECK_CONTAINS(lt_last_error(rt), "checked");
  CHECK(res.kind == LT_VALUE_NONE);
  ca = lt_int(5);
  CHECK_ST(lt_kernel_launch(rt, k.checked, &ca, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, 10, 0, "checked after a failure");
  CHECK_STREQ(lt_last_error(rt), "");
  check_grid(rt, g, &want, "g after the failures");

  /* a destroyed instance's memory goes to the next, which starts at zero */
  CHECK_ST(lt_tree_destroy(rt, g2), LT_OK);
  lt_tree g3;
  CHECK_ST(lt_tree_create(rt, m, "grid", &g3), LT_OK);
  check_grid(rt, g3, &zero, "an instance after a destroyed one");
  for (int round = 0; round < 20; round++) {    /* no growth: create, fill, destroy */
    lt_tree t;
    CHECK_ST(lt_tree_create(rt, m, "grid", &t), LT_OK);
    lt_value ta[4] = {lt_tree_value(t), lt_float(1), lt_int(round), lt_int(16)};
    CHECK_ST(lt_kernel_launch(rt, k.fill, ta, 4, NULL), LT_OK);
    CHECK_ST(lt_tree_destroy(rt, t), LT_OK);
  }
  check_grid(rt, g, &want, "g at the end");
  CHECK_ST(lt_ndarray_release(rt, xa), LT_OK);
  CHECK_ST(lt_ndarray_release(rt, ra), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_OK);
  /* freed: its trees' slots are free again, so it loads anew */
  CHECK_ST(lt_module_load(rt, path_a, &m), LT_OK);
  CHECK_ST(lt_tree_create(rt, m, "grid", &g), LT_OK);
  check_grid(rt, g, &zero, "an instance of the reloaded module");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);      /* with a module and an instance alive */
}

/* A module of tree types alone; module B beside module A. */
static void test_modules_together(void) {
  lt_runtime rt = make_rt(2);
  lt_module a, b, t;
  CHECK_ST(lt_module_load(rt, path_a, &a), LT_OK);
  CHECK_ST(lt_module_load(rt, path_b, &b), LT_OK);
  lt_kernel touch, fill, none;
  CHECK_ST(lt_module_kernel(rt, b, "touch", &touch), LT_OK);
  CHECK_ST(lt_module_kernel(rt, a, "fill", &fill), LT_OK);
  CHECK_ST(lt_module_kernel(rt, a, "touch", &none), LT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(lt_last_error(rt), "no kernel 'touch'");
  CHECK_ST(lt_kernel_find(rt, "fill", &none), LT_ERROR_NOT_FOUND);   /* module kernels are not exports */
  lt_tree u, g;
  CHECK_ST(lt_tree_create(rt, b, "other", &u), LT_OK);
  CHECK_ST(lt_tree_create(rt, a, "grid", &g), LT_OK);
  lt_value ta[2] = {lt_tree_value(u), lt_int(-3)};
  CHECK_ST(lt_kernel_launch(rt, touch, ta, 2, NULL), LT_OK);
  lt_field z;
  CHECK_ST(lt_tree_field(rt, u, "z", &z), LT_OK);
  int32_t zs[8];
  int64_t b0 = 0, e8 = 8;
  CHECK_ST(lt_field_read_box(rt, z, &b0, &e8, 1, LT_I32, zs, sizeof zs), LT_OK);
  int bad = 0;
  for (int i = 0; i < 8; i++) bad += zs[i] != -3 * i;
  CHECK(bad == 0);
  /* an instance of module B's tree type for module A's kernel */
  lt_value fa[4] = {lt_tree_value(u), lt_float(1), lt_int(1), lt_int(16)};
  CHECK_ST(lt_kernel_launch(rt, fill, fa, 4, NULL), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'g' must be an instance of tree type 'grid'");
  CHECK_CONTAINS(lt_last_error(rt), "'other' of another module");
  ta[0] = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, touch, ta, 2, NULL), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "'grid' of another module");
  /* module B freed: its instance and kernel go, A's stay */
  CHECK_ST(lt_module_free(rt, b), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, touch, ta, 2, NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_field(rt, u, "z", &z), LT_ERROR_INVALID_HANDLE);
  fa[0] = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, fill, fa, 4, NULL), LT_OK);
  /* the tree-only module's 'grid' sits where A's does: refused while A is loaded */
  CHECK_ST(lt_module_load(rt, path_trees, &t), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), "is taken");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);

  rt = make_rt(1);
  CHECK_ST(lt_module_load(rt, path_trees, &t), LT_OK);
  CHECK_ST(lt_module_kernel(rt, t, "fill", &none), LT_ERROR_NOT_FOUND);
  CHECK_ST(lt_tree_create(rt, t, "grid", &g), LT_OK);
  lt_field fv;
  CHECK_ST(lt_tree_field(rt, g, "v.y", &fv), LT_OK);
  int64_t at[2] = {15, 15};
  float v = 2.5f, back = 0;
  CHECK_ST(lt_field_write(rt, fv, at, 2, LT_F32, &v), LT_OK);
  CHECK_ST(lt_field_read(rt, fv, at, 2, LT_F32, &back), LT_OK);
  CHECK(back == 2.5f);
  CHECK_ST(lt_module_free(rt, t), LT_OK);
  CHECK_ST(lt_field_read(rt, fv, at, 2, LT_F32, &back), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* A pool that fills up; a module beside a script's own trees. */
static void test_pool_and_lua(void) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 2;
  cfg.device_memory = 8 << 20;     /* about the least a runtime takes: room for a few hundred grids */
  CHECKF(lt_runtime_create(&cfg, &rt) == LT_OK, "%s", lt_last_error(rt));
  lt_module m;
  CHECK_ST(lt_module_load(rt, path_a, &m), LT_OK);
  lt_kernel fill, count;
  CHECK_ST(lt_module_kernel(rt, m, "fill", &fill), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "count", &count), LT_OK);
  /* instances filled until their blocks no longer fit: LT_ERROR_RUNTIME naming the pool */
  enum { MAX = 4000 };
  lt_tree *ts = malloc(MAX * sizeof *ts);
  int made = 0;
  lt_status st = LT_OK;
  lt_value fa[4] = {{0}, lt_float(1), lt_int(1), lt_int(16)}, res = {0};
  while (made < MAX && st == LT_OK) {
    st = lt_tree_create(rt, m, "grid", &ts[made]);
    if (st != LT_OK) break;
    fa[0] = lt_tree_value(ts[made++]);
    st = lt_kernel_launch(rt, fill, fa, 4, NULL);
  }
  CHECKF(st == LT_ERROR_RUNTIME && made > 10, "%d instances, then %s (%s)", made, lt_status_name(st),
         lt_last_error(rt));
  CHECK_CONTAINS(lt_last_error(rt), "out of device memory");
  CHECK_CONTAINS(lt_last_error(rt), "kernel fill");
  /* the runtime goes on: the full instances read as before, and the blocks of destroyed ones are
  ** reused */
  fa[0] = lt_tree_value(ts[0]);
  CHECK_ST(lt_kernel_launch(rt, count, fa, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, N * N, 0, "count of a full instance");
  for (int i = 0; i < made; i++) CHECK_ST(lt_tree_destroy(rt, ts[i]), LT_OK);
  for (int i = 0; i < made - 1; i++) {
    CHECK_ST(lt_tree_create(rt, m, "grid", &ts[i]), LT_OK);
    fa[0] = lt_tree_value(ts[i]);
    CHECK_ST(lt_kernel_launch(rt, fill, fa, 4, NULL), LT_OK);
  }
  CHECK_ST(lt_kernel_launch(rt, count, fa, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, N * N, 0, "count after the pool had room again");
  free(ts);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);

  rt = make_rt(2);
  CHECK_ST(lt_module_load(rt, path_a, &m), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "fill", &fill), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "count", &count), LT_OK);
  lt_tree g;
  CHECK_ST(lt_tree_create(rt, m, "grid", &g), LT_OK);
  fa[0] = lt_tree_value(g);
  /* a script's trees beside the module's: made after the module, they go elsewhere */
  static const char beside[] =
    "local lt = require 'lattice'\n"
    "local y = lt.field(lt.i32, 8)\n"
    "local k = lt.kernel(function(s) for i in y do y[i] = i * s end end, { s = lt.i32 })\n"
    "lt.export('y', y)\n"
    "lt.export('ky', k)\n";
  CHECK_ST(lt_run_string(rt, beside, "=beside"), LT_OK);
  lt_kernel ky;
  lt_field y;
  CHECK_ST(lt_kernel_find(rt, "ky", &ky), LT_OK);
  CHECK_ST(lt_field_find(rt, "y", &y), LT_OK);
  lt_value s = lt_int(5);
  CHECK_ST(lt_kernel_launch(rt, ky, &s, 1, NULL), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, fill, fa, 4, NULL), LT_OK);
  int32_t ys[8];
  int64_t b0 = 0, e8 = 8;
  CHECK_ST(lt_field_read_box(rt, y, &b0, &e8, 1, LT_I32, ys, sizeof ys), LT_OK);
  int bad = 0;
  for (int i = 0; i < 8; i++) bad += ys[i] != 5 * i;
  CHECK(bad == 0);
  CHECK_ST(lt_kernel_launch(rt, count, fa, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, N * N, 0, "count beside a script's tree");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);

  /* made before it, they hold its slots: refused, saying so */
  rt = make_rt(1);
  CHECK_ST(lt_run_string(rt, "local lt = require 'lattice'\nx = lt.field(lt.f32, 4)\nx[0] = 1\n", "=first"), LT_OK);
  CHECK_ST(lt_module_load(rt, path_a, &m), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), "is taken in this runtime");
  CHECK_CONTAINS(lt_last_error(rt), "a runtime of its own");
  CHECK_ST(lt_run_string(rt, "assert(x[0] == 1)", "=after"), LT_OK);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

/* The host's memory: the pool in its block (lt_runtime_config.pool_memory) and
** instances' fixed parts in its blocks (lt_tree_create_in), used until the pool
** is exhausted, which names the host's pool. */
static void test_host_memory(void) {
  enum { POOL = 8 << 20 };
  unsigned char *pool = aligned_alloc(64, POOL);
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 2;
  cfg.device_memory = POOL;
  cfg.pool_memory = pool + 8;      /* misaligned */
  CHECK_ST(lt_runtime_create(&cfg, &rt), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "64-byte alignment");
  cfg.pool_memory = pool;
  cfg.arch = LT_ARCH_CUDA;
  CHECK_ST(lt_runtime_create(&cfg, &rt), LT_ERROR_INVALID_ARGUMENT);
  cfg.arch = LT_ARCH_CPU;
  memset(pool, 0xab, POOL);
  CHECKF(lt_runtime_create(&cfg, &rt) == LT_OK, "%s", lt_last_error(rt));
  int zeroed = 1;
  for (size_t i = 0; i < POOL; i += 4096) zeroed &= pool[i] != 0xab;
  CHECK(zeroed);                   /* the runtime took the block */
  lt_module m;
  CHECK_ST(lt_module_load(rt, path_a, &m), LT_OK);
  lt_kernel fill, count;
  CHECK_ST(lt_module_kernel(rt, m, "fill", &fill), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "count", &count), LT_OK);
  uint64_t bytes = 0;
  CHECK_ST(lt_module_tree_type(rt, m, "grid", &bytes), LT_OK);
  size_t block = (bytes + 63) / 64 * 64;
  lt_tree bad;
  unsigned char *one = aligned_alloc(64, block + 64);
  CHECK_ST(lt_tree_create_in(rt, m, "grid", one + 4, block, &bad), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_tree_create_in(rt, m, "grid", one, (size_t)bytes - 1, &bad), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "needs a block of");
  CHECK_ST(lt_tree_create_in(rt, m, "grid", NULL, block, &bad), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_tree_create_in(rt, m, "nope", one, block, &bad), LT_ERROR_NOT_FOUND);
  free(one);
  /* instances in the host's blocks, filled until the pool's cells run out */
  enum { MAX = 4000 };
  unsigned char *blocks = aligned_alloc(64, (size_t)MAX * block);
  memset(blocks, 0xcd, (size_t)MAX * block);
  lt_tree *ts = malloc(MAX * sizeof *ts);
  int made = 0;
  lt_status st = LT_OK;
  lt_value fa[4] = {{0}, lt_float(1), lt_int(1), lt_int(16)}, res = {0};
  while (made < MAX && st == LT_OK) {
    st = lt_tree_create_in(rt, m, "grid", blocks + (size_t)made * block, block, &ts[made]);
    if (st != LT_OK) break;
    fa[0] = lt_tree_value(ts[made++]);
    st = lt_kernel_launch(rt, fill, fa, 4, NULL);
  }
  CHECKF(st == LT_ERROR_RUNTIME && made > 10, "%d instances, then %s (%s)", made, lt_status_name(st),
         lt_last_error(rt));
  CHECK_CONTAINS(lt_last_error(rt), "the host's memory pool");
  /* the fixed part is the host's block: zeroed, then the pointer table written there */
  int nonzero = 0;
  for (size_t i = 0; i < (size_t)bytes; i++) nonzero += blocks[i] != 0 && blocks[i] != 0xcd;
  CHECK(nonzero > 0);
  fa[0] = lt_tree_value(ts[0]);
  CHECK_ST(lt_kernel_launch(rt, count, fa, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, N * N, 0, "count of a full instance in host memory");
  for (int i = 0; i < made; i++) CHECK_ST(lt_tree_destroy(rt, ts[i]), LT_OK);
  /* the cells came back: an instance fits again */
  CHECK_ST(lt_tree_create_in(rt, m, "grid", blocks, block, &ts[0]), LT_OK);
  fa[0] = lt_tree_value(ts[0]);
  CHECK_ST(lt_kernel_launch(rt, fill, fa, 4, NULL), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, count, fa, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, N * N, 0, "count after the host's pool had room again");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  free(ts);
  free(blocks);
  free(pool);                      /* the host's again */
}

/* Runtimes on two threads at once, each with its own copy of module A. */
typedef struct {
  const unsigned char *bytes;
  size_t n;
  int seed, failures;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  lt_runtime rt = make_rt(1);
  lt_module m;
  lt_kernel fill, sumb;
  lt_tree g;
  if (lt_module_load_memory(rt, w->bytes, w->n, "threaded", &m) != LT_OK || lt_module_kernel(rt, m, "fill", &fill) ||
      lt_module_kernel(rt, m, "sumb", &sumb) || lt_tree_create(rt, m, "grid", &g)) {
    w->failures++;
    lt_runtime_destroy(rt);
    return NULL;
  }
  static grid_ref refs[2];
  grid_ref *want = &refs[w->seed & 1];
  for (int round = 0; round < 20; round++) {
    memset(want, 0, sizeof *want);
    int32_t n = w->seed * 1000 + round;
    fill_ref(want, 0.5f, n, 16);
    lt_value fa[4] = {lt_tree_value(g), lt_float(0.5), lt_int(n), lt_int(16)}, res = {0};
    if (lt_kernel_launch(rt, fill, fa, 4, NULL) != LT_OK || lt_kernel_launch(rt, sumb, fa, 1, &res) != LT_OK ||
        res.kind != LT_VALUE_INT || res.as.i != sumb_ref(want))
      w->failures++;
  }
  lt_runtime_destroy(rt);
  return NULL;
}

static void test_threads(void) {
  size_t n;
  unsigned char *bytes = read_all(path_a, &n);
  worker w[2] = {{bytes, n, 1, 0}, {bytes, n, 2, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  CHECKF(w[0].failures == 0 && w[1].failures == 0, "%d and %d failures", w[0].failures, w[1].failures);
  free(bytes);
}

/* ---- misuse ------------------------------------------------------------------------------------ */

static void test_misuse(void) {
  lt_runtime rt = make_rt(1);
  lt_module m;
  kernels_a k;
  CHECK_ST(lt_module_load(rt, path_a, &m), LT_OK);
  find_kernels(rt, m, &k);
  lt_tree g, h;
  CHECK_ST(lt_tree_create(rt, m, "grid", &g), LT_OK);
  CHECK_ST(lt_tree_create(rt, m, "aux", &h), LT_OK);
  lt_value res;

  /* counts */
  lt_value fa[5] = {lt_tree_value(g), lt_float(1), lt_int(2), lt_int(16), lt_int(0)};
  CHECK_ST(lt_kernel_launch(rt, k.fill, fa, 3, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "kernel fill takes 4 arguments (g, s, n, jmax), got 3");
  CHECK_ST(lt_kernel_launch(rt, k.fill, fa, 5, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "got 5");
  CHECK_ST(lt_kernel_launch(rt, k.fill, NULL, 0, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_kernel_launch(rt, k.fill, NULL, 4, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "args is NULL");
  CHECK_ST(lt_kernel_launch(rt, k.fill, fa, -1, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_kernel_launch(rt, k.checked, NULL, 0, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "takes 1 argument (n), got 0");

  /* kinds and types, each naming the parameter */
  lt_value bad[4] = {lt_tree_value(g), lt_float(1), lt_float(1.5), lt_int(16)};
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'n' is i32 and needs an integer, got 1.5");
  bad[2] = lt_float(1e300);
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  bad[2] = lt_int(2);
  bad[0] = lt_int(7);
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'g' must be a tree instance (lt_tree_value), got an integer");
  bad[0] = lt_tree_value(g);
  bad[1] = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 's' must be a number");
  double two[2] = {1, 2};
  bad[1] = lt_vec(two, 2);
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "got a vector");
  bad[1].kind = (lt_value_kind)99;
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "not an lt_value_kind");
  bad[1] = lt_float(1);
  bad[0] = lt_tree_value(h);        /* another tree type of the same module */
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'g' must be an instance of tree type 'grid', got one of 'aux'");
  lt_value sa[2] = {lt_tree_value(h), lt_tree_value(g)};   /* swapped */
  CHECK_ST(lt_kernel_launch(rt, k.stash, sa, 2, &res), LT_ERROR_TYPE);
  sa[0] = sa[1] = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, k.stash, sa, 2, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'h' must be an instance of tree type 'aux'");
  lt_tree zero_tree = {0};
  bad[0] = lt_tree_value(zero_tree);
  CHECK_ST(lt_kernel_launch(rt, k.fill, bad, 4, &res), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "zero");

  /* ndarrays of the wrong dtype or ndim, released ones, vectors of the wrong length */
  int64_t n8 = 8, s22[2] = {2, 4};
  lt_ndarray x64, x2d, x32;
  CHECK_ST(lt_ndarray_create(rt, LT_F64, 1, &n8, &x64), LT_OK);
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 2, s22, &x2d), LT_OK);
  CHECK_ST(lt_ndarray_create(rt, LT_F32, 1, &n8, &x32), LT_OK);
  double w[3] = {0.5, 0.25, 9};
  lt_value da[3] = {lt_nd(x64), lt_vec(w, 2), lt_int(4)};
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'x' must be an ndarray of f32 with 1 dimension, got one of f64 with 1");
  da[0] = lt_nd(x2d);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "got one of f32 with 2");
  da[0] = lt_int(3);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'x' must be an ndarray (lt_nd)");
  da[0] = lt_nd(x32);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_OK);
  check_result(res, LT_VALUE_FLOAT, 0, 0.25 * (0 + 1 + 2 + 3), "dot over zeros");
  da[1] = lt_vec(w, 3);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'w' takes 2 numbers");
  da[1] = lt_vec(w, 1);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_SHAPE);
  da[1] = lt_vec(NULL, 2);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(lt_last_error(rt), "'w'");
  da[1] = lt_float(0.5);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "argument 'w' must be a vector (lt_vec), got a float");
  da[1] = lt_vec(w, 2);
  CHECK_ST(lt_ndarray_release(rt, x32), LT_OK);
  CHECK_ST(lt_kernel_launch(rt, k.dot, da, 3, &res), LT_ERROR_INVALID_HANDLE);
  double frac[2] = {1, 2.5};
  lt_value ia = lt_vec(frac, 2);
  CHECK_ST(lt_kernel_launch(rt, k.ivec, &ia, 1, &res), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "component 1 is i32 and needs an integer");
  double m4[4] = {1, 2, 3, 4};
  lt_value ma = lt_vec(m4, 2);
  CHECK_ST(lt_kernel_launch(rt, k.mat, &ma, 1, &res), LT_ERROR_SHAPE);
  CHECK_CONTAINS(lt_last_error(rt), "takes 4 numbers (2x2 f32)");

  /* fields of an instance */
  lt_field f, fa2;
  CHECK_ST(lt_tree_field(rt, g, "v", &f), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "'v.x'");
  CHECK_CONTAINS(lt_last_error(rt), "vector of 2 components");
  CHECK_ST(lt_tree_field(rt, g, "v.z", &f), LT_ERROR_NOT_FOUND);
  CHECK_ST(lt_tree_field(rt, g, "nothing", &f), LT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(lt_last_error(rt), "tree type 'grid' has no field 'nothing'");
  CHECK_ST(lt_tree_field(rt, g, "c", &f), LT_ERROR_NOT_FOUND);    /* aux's field */
  CHECK_ST(lt_tree_field(rt, g, "", &f), LT_ERROR_NOT_FOUND);
  CHECK_ST(lt_tree_field(rt, g, NULL, &f), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_tree_field(rt, g, "a", NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_tree_field(rt, zero_tree, "a", &f), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_field(rt, g, "a", &fa2), LT_OK);
  int64_t at[2] = {1, 2}, far[2] = {16, 0};
  double d;
  float e;
  CHECK_ST(lt_field_read(rt, fa2, at, 2, LT_F64, &d), LT_ERROR_TYPE);
  CHECK_CONTAINS(lt_last_error(rt), "holds f32");
  CHECK_ST(lt_field_read(rt, fa2, far, 2, LT_F32, &e), LT_ERROR_SHAPE);
  CHECK_ST(lt_field_read(rt, fa2, at, 1, LT_F32, &e), LT_ERROR_SHAPE);

  /* handles of the wrong kind */
  lt_module as_module = {k.fill.id};
  CHECK_ST(lt_tree_create(rt, as_module, "grid", &h), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "the handle is a kernel, not a module");
  lt_tree as_tree = {m.id};
  CHECK_ST(lt_tree_destroy(rt, as_tree), LT_ERROR_INVALID_HANDLE);
  lt_kernel as_kernel = {g.id};
  CHECK_ST(lt_kernel_launch(rt, as_kernel, NULL, 0, &res), LT_ERROR_INVALID_HANDLE);
  lt_field as_field = {g.id};
  CHECK_ST(lt_field_read(rt, as_field, at, 2, LT_F32, &e), LT_ERROR_INVALID_HANDLE);

  /* a destroyed instance, and its fields */
  lt_tree gone;
  lt_field gf;
  CHECK_ST(lt_tree_create(rt, m, "grid", &gone), LT_OK);
  CHECK_ST(lt_tree_field(rt, gone, "b", &gf), LT_OK);
  CHECK_ST(lt_tree_destroy(rt, gone), LT_OK);
  CHECK_ST(lt_tree_destroy(rt, gone), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "invalid");
  int32_t iv = 1;
  CHECK_ST(lt_field_read(rt, gf, at, 2, LT_I32, &iv), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_write(rt, gf, at, 2, LT_I32, &iv), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_shape(rt, gf, NULL, NULL, NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_field(rt, gone, "b", &gf), LT_ERROR_INVALID_HANDLE);
  lt_value ga[4] = {lt_tree_value(gone), lt_float(1), lt_int(2), lt_int(16)};
  CHECK_ST(lt_kernel_launch(rt, k.fill, ga, 4, &res), LT_ERROR_INVALID_HANDLE);
  ga[0] = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, k.fill, ga, 4, &res), LT_OK);

  /* names and NULL pointers */
  lt_kernel kk;
  lt_tree t;
  lt_module m2;
  CHECK_ST(lt_module_kernel(rt, m, "nothing", &kk), LT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(lt_last_error(rt), "no kernel 'nothing'");
  CHECK_ST(lt_module_kernel(rt, m, "grid", &kk), LT_ERROR_NOT_FOUND);    /* a tree type, not a kernel */
  CHECK_ST(lt_module_kernel(rt, m, NULL, &kk), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_kernel(rt, m, "fill", NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_tree_create(rt, m, "fill", &t), LT_ERROR_NOT_FOUND);    /* a kernel, not a tree type */
  CHECK_ST(lt_tree_create(rt, m, NULL, &t), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_tree_create(rt, m, "grid", NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_tree_type(rt, m, NULL, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_load(rt, NULL, &m2), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_load(rt, path_a, NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_load_memory(rt, NULL, 100, "x", &m2), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_load_memory(rt, "LTMODULE", 8, "x", NULL), LT_ERROR_INVALID_ARGUMENT);
  CHECK_ST(lt_module_load(rt, "/nonexistent/dir/m.ltm", &m2), LT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(lt_last_error(rt), "/nonexistent/dir/m.ltm");
  CHECK(m2.id == 0);
  CHECK_ST(lt_module_load(rt, dir, &m2), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), dir);
  CHECK_CONTAINS(lt_last_error(rt), "a directory, not a module file");
  CHECK_ST(lt_module_load(rt, "/dev/null", &m2), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), "/dev/null: not a Lattice module");

  /* zeroed handles, and a zeroed or destroyed runtime */
  lt_module zm = {0};
  lt_kernel zk = {0};
  lt_runtime zr = {0};
  CHECK_ST(lt_module_free(rt, zm), LT_ERROR_INVALID_HANDLE);
  CHECK_CONTAINS(lt_last_error(rt), "zero");
  CHECK_ST(lt_module_tree_type(rt, zm, "grid", NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_create(rt, zm, "grid", &t), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_module_kernel(rt, zm, "fill", &kk), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_destroy(rt, zero_tree), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_kernel_launch(rt, zk, NULL, 0, &res), LT_ERROR_INVALID_HANDLE);
  CHECK(lt_module_load(zr, path_a, &m2) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_module_load_memory(zr, "x", 1, NULL, &m2) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_module_free(zr, m) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_module_tree_type(zr, m, "grid", NULL) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_tree_create(zr, m, "grid", &t) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_tree_destroy(zr, g) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_tree_field(zr, g, "a", &f) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_module_kernel(zr, m, "fill", &kk) == LT_ERROR_INVALID_HANDLE);

  /* another runtime's handles */
  lt_runtime rt2 = make_rt(1);
  {
    lt_runtime keep = rt;
    rt = rt2;
    CHECK_ST(lt_module_tree_type(rt2, m, "grid", NULL), LT_ERROR_INVALID_HANDLE);
    CHECK_ST(lt_tree_create(rt2, m, "grid", &t), LT_ERROR_INVALID_HANDLE);
    CHECK_ST(lt_tree_field(rt2, g, "a", &f), LT_ERROR_INVALID_HANDLE);
    CHECK_ST(lt_kernel_launch(rt2, k.fill, ga, 4, &res), LT_ERROR_INVALID_HANDLE);
    lt_module mo;
    CHECK_ST(lt_module_load(rt2, path_a, &mo), LT_OK);    /* its own copy: slots are per runtime */
    lt_tree go;
    CHECK_ST(lt_tree_create(rt2, mo, "grid", &go), LT_OK);
    rt = keep;
    ga[0] = lt_tree_value(go);                          /* rt2's instance in rt */
    CHECK_ST(lt_kernel_launch(rt, k.fill, ga, 4, &res), LT_ERROR_INVALID_HANDLE);
    CHECK_ST(lt_runtime_destroy(rt2), LT_OK);
  }

  /* after lt_module_free every handle of the module is invalid */
  lt_field keep_f;
  CHECK_ST(lt_tree_field(rt, g, "v.x", &keep_f), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_ERROR_INVALID_HANDLE);
  ga[0] = lt_tree_value(g);
  CHECK_ST(lt_kernel_launch(rt, k.fill, ga, 4, &res), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_kernel_launch(rt, k.checked, NULL, 0, &res), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_field(rt, g, "a", &f), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_destroy(rt, g), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_destroy(rt, h), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_read(rt, keep_f, at, 2, LT_F32, &e), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_read(rt, fa2, at, 2, LT_F32, &e), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_module_kernel(rt, m, "fill", &kk), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_module_tree_type(rt, m, "grid", NULL), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_tree_create(rt, m, "grid", &t), LT_ERROR_INVALID_HANDLE);
  /* a new module reuses the freed slots; the old handles stay invalid */
  lt_module again;
  CHECK_ST(lt_module_load(rt, path_a, &again), LT_OK);
  CHECK(again.id != m.id);
  CHECK_ST(lt_tree_create(rt, again, "grid", &t), LT_OK);
  CHECK_ST(lt_tree_field(rt, g, "a", &f), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_kernel_launch(rt, k.fill, ga, 4, &res), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_field_read(rt, keep_f, at, 2, LT_F32, &e), LT_ERROR_INVALID_HANDLE);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);

  /* a destroyed runtime */
  CHECK(lt_module_free(rt, again) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_tree_create(rt, again, "grid", &t) == LT_ERROR_INVALID_HANDLE);
  CHECK(lt_kernel_launch(rt, k.fill, ga, 4, &res) == LT_ERROR_INVALID_HANDLE);
}

/* ---- corrupt modules ------------------------------------------------------------------------ */

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The header's length and the trailer made right for the n bytes at p. */
static void fix_up(unsigned char *p, size_t n) {
  put_u64(p + 16, n);
  put_u64(p + n - 8, fnv1a(p, n - 8));
}

/* The sections of a module: offsets of their headers (and one past the last). */
typedef struct {
  int n;
  size_t at[64];
  uint32_t tag[64];
} sections;

static sections sections_of(const unsigned char *p, size_t n) {
  sections s = {0};
  size_t at = 32;
  uint32_t nsec = get_u32(p + 12);
  for (uint32_t i = 0; i < nsec && i < 63 && at + 16 <= n - 8; i++) {
    s.at[s.n] = at;
    s.tag[s.n++] = get_u32(p + at);
    at += 16 + get_u64(p + at + 8);
  }
  s.at[s.n] = at;
  return s;
}

static void find_bytes(const unsigned char *p, size_t n, const char *what, size_t *at) {
  size_t len = strlen(what);
  *at = 0;
  for (size_t i = 0; i + len <= n; i++)
    if (memcmp(p + i, what, len) == 0) {
      *at = i;
      return;
    }
}

/* Loads the n bytes at p, which must fail with `want` and a message naming the module and `says`. */
static void refused(lt_runtime rt, const unsigned char *p, size_t n, lt_status want, const char *says, int line) {
  lt_module m = {12345};
  lt_status st = lt_module_load_memory(rt, p, n, "corrupt.ltm", &m);
  const char *msg = lt_last_error(rt);
  if (st != want || !strstr(msg, "lt_module_load_memory: corrupt.ltm: ") || (says && !strstr(msg, says)) ||
      m.id != 0) {
    fprintf(stderr, "%s:%d: a module of %zu bytes gave %s (%s), wanted %s with \"%s\"\n", __FILE__, line, n,
            lt_status_name(st), msg, lt_status_name(want), says ? says : "");
    check_failures++;
  }
  if (st == LT_OK) lt_module_free(rt, m);
}
#define REFUSED(p, n, says) refused(rt, p, n, LT_ERROR_MODULE, says, __LINE__)

static void test_corrupt(void) {
  lt_runtime rt = make_rt(1);
  size_t n;
  unsigned char *orig = read_all(path_a, &n);
  unsigned char *p = malloc(n + 64);
  CHECK(memcmp(orig, "LTMODULE", 8) == 0 && get_u32(orig + 8) == PROG_MODULE_FORMAT && get_u64(orig + 16) == n &&
        get_u64(orig + 24) == 0 && get_u64(orig + n - 8) == fnv1a(orig, n - 8));
  sections sec = sections_of(orig, n);
  CHECK(sec.n == (int)get_u32(orig + 12) && sec.at[sec.n] == n - 8);
  CHECK(sec.tag[0] == 1 && sec.tag[1] == 2 && sec.tag[2] == 2 && sec.tag[3] == 3 && sec.tag[sec.n - 1] == 4);

  /* the bytes as saved load; an empty buffer does not */
  lt_module m;
  CHECK_ST(lt_module_load_memory(rt, orig, n, NULL, &m), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_OK);
  CHECK_ST(lt_module_load_memory(rt, orig, 0, NULL, &m), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), "(memory): not a Lattice module");
  /* format 1 (the same file layout, code that reads the slot shift from the runtime) still loads */
  memcpy(p, orig, n);
  put_u32(p + 8, 1);
  fix_up(p, n);
  CHECK_ST(lt_module_load_memory(rt, p, n, NULL, &m), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_OK);

  /* truncations: the header's length disagrees (every length into the first section, then a
  ** dense sample: each load costs about the same, whatever its length) */
  for (size_t len = 0; len < n; len += len < 256 ? 1 : 17)
    REFUSED(orig, len, len < 40 ? "not a Lattice module" : "the header says");
  /* truncations with the header and checksum made right: a section runs past the end (every
  ** length through the trees, then a dense sample of the kernels and a sparser one of the code) */
  for (size_t len = 32; len + 8 < n; len += len < sec.at[3] + 64 ? 1 : len < sec.at[sec.n - 1] + 64 ? 7 : 41) {
    memcpy(p, orig, len);
    fix_up(p, len + 8);
    REFUSED(p, len + 8, "its length runs past the end of the file");
  }
  /* a file on disk, cut short */
  char cut[160];
  snprintf(cut, sizeof cut, "%s/cut.ltm", dir);
  FILE *f = fopen(cut, "wb");
  CHECK(f && fwrite(orig, 1, n / 2, f) == n / 2);
  fclose(f);
  CHECK_ST(lt_module_load(rt, cut, &m), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), cut);
  CHECK_CONTAINS(lt_last_error(rt), "truncated");

  /* whole sections dropped (nsections and checksum made right): trees alone load */
  for (int keep = 1; keep < sec.n; keep++) {
    size_t len = sec.at[keep] + 8;
    memcpy(p, orig, sec.at[keep]);
    put_u32(p + 12, (uint32_t)keep);
    fix_up(p, len);
    if (sec.tag[keep - 1] == 3) {
      REFUSED(p, len, "kernels but no");
    } else {
      CHECK_ST(lt_module_load_memory(rt, p, len, "short.ltm", &m), LT_OK);
      lt_tree t;
      CHECK_ST(lt_tree_create(rt, m, "grid", &t), keep >= 2 ? LT_OK : LT_ERROR_NOT_FOUND);
      CHECK_ST(lt_module_kernel(rt, m, "fill", &(lt_kernel){0}), LT_ERROR_NOT_FOUND);
      CHECK_ST(lt_module_free(rt, m), LT_OK);
    }
  }

  /* one byte changed anywhere: the checksum (or the header) says so */
  for (size_t at = 0; at < n; at += at < 64 || at + 64 > n ? 1 : 29) {
    memcpy(p, orig, n);
    p[at] ^= (unsigned char)(1u << (at % 8));
    REFUSED(p, n, at < 8 ? "not a Lattice module" : at < 12 ? "module format" : at >= 16 && at < 24 ? "the header says"
                  : at >= 24 && at < 32 ? NULL : "checksum mismatch: the file is corrupt");
  }

  /* the section count changed, with a right checksum */
  for (uint32_t v = 0; v < 40; v += v == 0 ? 1 : 7) {
    if (v == get_u32(orig + 12)) continue;
    memcpy(p, orig, n);
    put_u32(p + 12, v);
    fix_up(p, n);
    REFUSED(p, n, v == 0 ? "bytes after the last section" : v < get_u32(orig + 12) ? "bytes after the last section"
                  : "runs past the end");
  }
  memcpy(p, orig, n);
  put_u32(p + 12, 0xffffffffu);
  fix_up(p, n);
  REFUSED(p, n, "runs past the end");

  /* a format this runtime does not read, with a right checksum */
  memcpy(p, orig, n);
  put_u32(p + 8, PROG_MODULE_FORMAT + 1);
  fix_up(p, n);
  char want[96];
  snprintf(want, sizeof want, "module format %d; this runtime reads formats 1 to %d", PROG_MODULE_FORMAT + 1,
           PROG_MODULE_FORMAT);
  REFUSED(p, n, want);
  put_u32(p + 8, 0);
  fix_up(p, n);
  REFUSED(p, n, "module format 0");
  memcpy(p, orig, n);
  memcpy(p, "LTMODULF", 8);
  REFUSED(p, n, "not a Lattice module (no LTMODULE header)");
  memcpy(p, "\x7f" "ELF\2\1\1\0", 8);
  REFUSED(p, n, "not a Lattice module");

  /* the target and the CPU features edited in place */
  size_t at;
  memcpy(p, orig, n);
  find_bytes(p, n, "x86_64-unknown-linux-gnu", &at);
  CHECK(at > 32 && at < sec.at[1]);
  memcpy(p + at, "arm_64-unknown-linux-gnu", 24);
  fix_up(p, n);
  REFUSED(p, n, "section 0 (INFO): the module's code is for target 'arm_64-unknown-linux-gnu'");
  memcpy(p, orig, n);
  find_bytes(p, n, "sse3,ssse3", &at);
  CHECK(at > 32 && at < sec.at[1]);
  memcpy(p + at, "zzz3", 4);            /* a feature no CPU has */
  fix_up(p, n);
  REFUSED(p, n, "needs zzz3, which this CPU lacks");

  /* a section of a later format: skipped unless it is marked required */
  for (int required = 0; required < 2; required++) {
    size_t end = n - 8;
    memcpy(p, orig, end);
    put_u32(p + end, 99);
    put_u32(p + end + 4, (uint32_t)required);
    put_u64(p + end + 8, 4);
    memcpy(p + end + 16, "abcd", 4);
    put_u32(p + 12, get_u32(orig + 12) + 1);
    fix_up(p, end + 28);
    if (required) {
      char want[100];
      snprintf(want, sizeof want, "section %d (unknown): tag 99 is required but unknown", sec.n);
      REFUSED(p, end + 28, want);
    } else {
      CHECK_ST(lt_module_load_memory(rt, p, end + 28, "later.ltm", &m), LT_OK);
      CHECK_ST(lt_module_free(rt, m), LT_OK);
    }
  }
  /* bytes after the last section; a section count too large; sections out of order */
  memcpy(p, orig, n - 8);
  memcpy(p + n - 8, "junk", 4);
  fix_up(p, n + 4);
  REFUSED(p, n + 4, "4 bytes after the last section");
  memcpy(p, orig, n);
  put_u32(p + 12, get_u32(orig + 12) + 1);
  fix_up(p, n);
  REFUSED(p, n, "runs past the end");
  memcpy(p, orig, n);
  put_u32(p + 32, 9);                    /* INFO's tag: an unknown section first */
  fix_up(p, n);
  REFUSED(p, n, "the INFO section must come first");
  memcpy(p, orig, n);
  put_u32(p + sec.at[1], 3);             /* the first tree read as a kernel */
  fix_up(p, n);
  REFUSED(p, n, "section 1 (KERNEL");

  /* bytes changed with the checksum made right: refused or loaded, never a crash. The machine
  ** code is left alone (a shared object that lies is not something a loader can check). */
  int loaded = 0, total = 0;
  for (at = 32; at < sec.at[sec.n - 1]; at += at < sec.at[3] ? 1 : 13) {
    for (int v = 0; v < (at < sec.at[3] ? 2 : 1); v++) {
      memcpy(p, orig, n);
      p[at] = v ? (unsigned char)(p[at] ^ 0xff) : (unsigned char)(p[at] + 1);
      fix_up(p, n);
      lt_module mm = {0};
      lt_status st = lt_module_load_memory(rt, p, n, "flip.ltm", &mm);
      total++;
      if (st == LT_OK) {
        loaded++;
        CHECK_ST(lt_module_free(rt, mm), LT_OK);
      } else {
        CHECKF(st == LT_ERROR_MODULE && strstr(lt_last_error(rt), "lt_module_load_memory: flip.ltm: "),
               "byte %zu: %s: %s", at, lt_status_name(st), lt_last_error(rt));
      }
    }
  }
  CHECK(loaded < total);
  /* the runtime is fine after all that */
  CHECK_ST(lt_module_load_memory(rt, orig, n, NULL, &m), LT_OK);
  kernels_a k;
  find_kernels(rt, m, &k);
  lt_value ca = lt_int(4), res;
  CHECK_ST(lt_kernel_launch(rt, k.checked, &ca, 1, &res), LT_OK);
  check_result(res, LT_VALUE_INT, 8, 0, "after the corrupt modules");

  /* the same module twice: its tree slots and SNode ids are taken */
  lt_module twice = {99};
  CHECK_ST(lt_module_load(rt, path_a, &twice), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), path_a);
  CHECK_CONTAINS(lt_last_error(rt), "tree type 'grid'");
  CHECK_CONTAINS(lt_last_error(rt), "is taken in this runtime");
  CHECK(twice.id == 0);
  CHECK_ST(lt_module_load_memory(rt, orig, n, "again", &twice), LT_ERROR_MODULE);
  CHECK_CONTAINS(lt_last_error(rt), "is taken in this runtime");
  CHECK_ST(lt_kernel_launch(rt, k.checked, &ca, 1, &res), LT_OK);   /* the first is untouched */
  lt_tree g;
  CHECK_ST(lt_tree_create(rt, m, "grid", &g), LT_OK);
  lt_value fa[4] = {lt_tree_value(g), lt_float(1), lt_int(1), lt_int(16)};
  CHECK_ST(lt_kernel_launch(rt, k.fill, fa, 4, NULL), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_OK);

  /* built for x86-64-v4: refused naming the AVX-512 features this CPU lacks */
  __builtin_cpu_init();
  int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
  lt_module m4 = {7};
  lt_status st = lt_module_load(rt, path_v4, &m4);
  if (!avx512) {
    CHECK(st == LT_ERROR_MODULE && m4.id == 0);
    CHECK_CONTAINS(lt_last_error(rt), path_v4);
    CHECK_CONTAINS(lt_last_error(rt), "x86-64-v4");
    CHECK_CONTAINS(lt_last_error(rt), "avx512");
    if (!__builtin_cpu_supports("avx512f")) CHECK_CONTAINS(lt_last_error(rt), "avx512f");
    CHECK_CONTAINS(lt_last_error(rt), "which this CPU lacks");
  } else {
    CHECKF(st == LT_OK, "%s", lt_last_error(rt));
    lt_kernel f4, s4;
    CHECK_ST(lt_module_kernel(rt, m4, "fill", &f4), LT_OK);
    CHECK_ST(lt_module_kernel(rt, m4, "sumb", &s4), LT_OK);
    CHECK_ST(lt_tree_create(rt, m4, "grid", &g), LT_OK);
    lt_value a4[4] = {lt_tree_value(g), lt_float(0.1), lt_int(300000007), lt_int(9)};
    CHECK_ST(lt_kernel_launch(rt, f4, a4, 4, NULL), LT_OK);
    static grid_ref want;
    memset(&want, 0, sizeof want);
    fill_ref(&want, 0.1f, 300000007, 9);
    check_grid(rt, g, &want, "fill for x86-64-v4");
    CHECK_ST(lt_kernel_launch(rt, s4, a4, 1, &res), LT_OK);
    check_result(res, LT_VALUE_INT, sumb_ref(&want), 0, "sumb for x86-64-v4");
  }
  printf("test_module: %d of %d modules with a changed byte loaded; avx512: %s\n", loaded, total,
         avx512 ? "yes" : "no");
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
  free(p);
  free(orig);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path_a, sizeof path_a, "%s/a.ltm", dir);
  snprintf(path_b, sizeof path_b, "%s/b.ltm", dir);
  snprintf(path_v4, sizeof path_v4, "%s/v4.ltm", dir);
  snprintf(path_trees, sizeof path_trees, "%s/trees.ltm", dir);
  save_modules();
  test_run(1, 0);
  test_run(2, 1);
  test_modules_together();
  test_pool_and_lua();
  test_host_memory();
  test_threads();
  test_misuse();
  test_corrupt();
  const char *files[] = {path_a, path_b, path_v4, path_trees, capture_path};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    if (files[i][0]) unlink(files[i]);
  char cut[160];
  snprintf(cut, sizeof cut, "%s/cut.ltm", dir);
  unlink(cut);
  rmdir(dir);
  return check_finish("test_module");
}
