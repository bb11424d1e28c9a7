/*
** test_module_grad.c -- adjoint kernels in AOT modules (docs/aot.md,
** docs/autodiff.md): a script saves a tree type with a gradient field
** (needs_grad) and a kernel with its adjoint (m:add_grad_kernel); a fresh
** runtime loads the module, runs the kernel and its adjoint through the C
** API and compares the gradients with the derivative by hand, and with the
** JIT's k:grad in the saving script.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lattice_lua.h"

#define CHECK_ST(call, want)                                                             \
  do {                                                                                   \
    lt_status st_ = (call);                                                              \
    CHECKF(st_ == (want), "%s gave %s, expected %s (%s)", #call, lt_status_name(st_), lt_status_name(want), \
           lt_last_error(rt));                                                           \
  } while (0)

enum { N = 8 };
static char dir[] = "/tmp/lattice_test_module_grad_XXXXXX";
static char path[160];
static double jit_ugrad[N], jit_agrad;

/* energy(h, a) = sum_i a u_i^2 + sin(w_i) u_i; d/du_i = 2 a u_i + sin(w_i), d/da = sum u_i^2 */
static const char script[] =
  "local lt = require 'lattice'\n"
  "local Heat = lt.tree { fields = { u = lt.f64, w = lt.f64 }, needs_grad = { 'u' },\n"
  "  lt.dense(lt.i, 8) { 'u', 'w' } }\n"
  "local energy = lt.kernel(function(h, a)\n"
  "  local s = lt.f64(0)\n"
  "  for i in lt.ndrange(8) do s = s + a * h.u[i] * h.u[i] + lt.sin(h.w[i]) * h.u[i] end\n"
  "  return s\n"
  "end, { h = Heat, a = lt.f64 })\n"
  "local m = lt.aot.module {}\n"
  "m:add_tree_type('heat', Heat)\n"
  "m:add_kernel('energy', energy)\n"
  "m:add_grad_kernel('energy_grad', energy)\n"
  "local ok, e = pcall(m.add_grad_kernel, m, 'energy_grad', energy)\n"
  "assert(not ok and tostring(e):find(\"already has a kernel named 'energy_grad'\", 1, true), tostring(e))\n"
  "ok, e = pcall(m.add_grad_kernel, m, 'nd_grad', lt.kernel(function(x, h)\n"
  "  for i in lt.ndrange(8) do h.u[i] = x[i] end end, { x = lt.ndarray_type(lt.f64, 1), h = Heat }))\n"
  "assert(not ok and tostring(e):find(\"gradient arrays ('x.grad')\", 1, true), tostring(e))\n"
  "m:save(MODULE_PATH)\n"
  /* the JIT's gradients, for the module's to equal */
  "local h = Heat:instantiate()\n"
  "for i = 0, 7 do h.u[i] = 0.25 * i - 0.6; h.w[i] = 0.1 * i end\n"
  "local g = energy:grad(h, 1.5)\n"
  "AGRAD = g.a\n"
  "UGRAD = {}\n"
  "for i = 0, 7 do UGRAD[i + 1] = h.u.grad[i] end\n";

static void save_module(void) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = 1;
  cfg.device_memory = 16 << 20;
  if (lt_runtime_create(&cfg, &rt) != LT_OK) {
    fprintf(stderr, "lt_runtime_create: %s\n", lt_last_error(rt));
    exit(1);
  }
  char set[256];
  snprintf(set, sizeof set, "MODULE_PATH = '%s'", path);
  CHECK_ST(lt_run_string(rt, set, "=module_path"), LT_OK);
  if (lt_run_string(rt, script, "=grad_script") != LT_OK) {
    fprintf(stderr, "the saving script failed: %s\n", lt_last_error(rt));
    exit(1);
  }
  lua_State *L = lt_lua_state(rt);
  lua_getglobal(L, "AGRAD");
  jit_agrad = lua_tonumber(L, -1);
  lua_getglobal(L, "UGRAD");
  for (int i = 0; i < N; i++) {
    lua_geti(L, -1, i + 1);
    jit_ugrad[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

static void test_grad(int threads) {
  lt_runtime rt = {0};
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  cfg.threads = threads;
  cfg.device_memory = 16 << 20;
  CHECK_ST(lt_runtime_create(&cfg, &rt), LT_OK);
  lt_module m = {0};
  CHECK_ST(lt_module_load(rt, path, &m), LT_OK);
  lt_tree h = {0};
  CHECK_ST(lt_tree_create(rt, m, "heat", &h), LT_OK);
  lt_field u, w, ug;
  CHECK_ST(lt_tree_field(rt, h, "u", &u), LT_OK);
  CHECK_ST(lt_tree_field(rt, h, "w", &w), LT_OK);
  CHECK_ST(lt_tree_field(rt, h, "u.grad", &ug), LT_OK);
  lt_field none;
  CHECK_ST(lt_tree_field(rt, h, "w.grad", &none), LT_ERROR_NOT_FOUND);   /* w has no gradient */
  double uv[N], wv[N];
  for (int i = 0; i < N; i++) {
    uv[i] = 0.25 * i - 0.6;
    wv[i] = 0.1 * i;
  }
  int64_t begin[1] = {0}, extent[1] = {N};
  CHECK_ST(lt_field_write_box(rt, u, begin, extent, 1, LT_F64, uv, sizeof uv), LT_OK);
  CHECK_ST(lt_field_write_box(rt, w, begin, extent, 1, LT_F64, wv, sizeof wv), LT_OK);
  lt_kernel energy, grad;
  CHECK_ST(lt_module_kernel(rt, m, "energy", &energy), LT_OK);
  CHECK_ST(lt_module_kernel(rt, m, "energy_grad", &grad), LT_OK);
  const double a = 1.5;
  lt_value r;
  lt_value args[2] = {lt_tree_value(h), lt_float(a)};
  CHECK_ST(lt_kernel_launch(rt, energy, args, 2, &r), LT_OK);
  double e = 0;
  for (int i = 0; i < N; i++) e += a * uv[i] * uv[i] + sin(wv[i]) * uv[i];
  CHECKF(r.kind == LT_VALUE_FLOAT && fabs(r.as.f - e) < 1e-12, "energy %.17g, expected %.17g", r.as.f, e);
  /* the adjoint: the primal's arguments, then result.grad (the seed), then args.grad */
  lt_ndarray out;
  int64_t slots[1] = {16};
  CHECK_ST(lt_ndarray_create(rt, LT_F64, 1, slots, &out), LT_OK);
  lt_value gargs[4] = {lt_tree_value(h), lt_float(a), lt_float(1.0), lt_nd(out)};
  CHECK_ST(lt_kernel_launch(rt, grad, gargs, 3, NULL), LT_ERROR_INVALID_ARGUMENT);   /* args.grad missing */
  CHECK_ST(lt_kernel_launch(rt, grad, gargs, 4, NULL), LT_OK);
  double ugv[N], og[16];
  CHECK_ST(lt_field_read_box(rt, ug, begin, extent, 1, LT_F64, ugv, sizeof ugv), LT_OK);
  CHECK_ST(lt_ndarray_read(rt, out, og, sizeof og), LT_OK);
  double sum_u2 = 0;
  int bad = 0;
  for (int i = 0; i < N; i++) {
    double want = 2 * a * uv[i] + sin(wv[i]);
    bad += fabs(ugv[i] - want) > 1e-12 || ugv[i] != jit_ugrad[i];
    sum_u2 += uv[i] * uv[i];
  }
  CHECKF(bad == 0, "%d of u.grad differ from 2 a u + sin w or from the JIT's", bad);
  CHECKF(fabs(og[0] - sum_u2) < 1e-12 && og[0] == jit_agrad, "d energy / d a = %.17g, expected %.17g (JIT %.17g)",
         og[0], sum_u2, jit_agrad);
  /* a second run adds to the gradients (they accumulate, as with k:grad) */
  CHECK_ST(lt_kernel_launch(rt, grad, gargs, 4, NULL), LT_OK);
  CHECK_ST(lt_field_read_box(rt, ug, begin, extent, 1, LT_F64, ugv, sizeof ugv), LT_OK);
  CHECKF(fabs(ugv[3] - 2 * (2 * a * uv[3] + sin(wv[3]))) < 1e-12, "accumulated u.grad[3] = %.17g", ugv[3]);
  CHECK_ST(lt_ndarray_release(rt, out), LT_OK);
  CHECK_ST(lt_tree_destroy(rt, h), LT_OK);
  CHECK_ST(lt_module_free(rt, m), LT_OK);
  CHECK_ST(lt_runtime_destroy(rt), LT_OK);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/grad.ltm", dir);
  save_module();
  test_grad(1);
  test_grad(2);
  unlink(path);
  rmdir(dir);
  return check_finish("test_module_grad");
}
