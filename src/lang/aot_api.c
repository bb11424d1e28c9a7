/*
** aot_api.c -- the C half of lt.aot.module (stdlib/lattice/aot.lua): the
** module description in Lua tables marshalled into a mod_spec for the
** program layer (src/program/module_write.c). Arrays live in Lua userdata,
** so an error raised half-way leaks nothing.
*/
#include <string.h>

#include "lang.h"
#include "program/module.h"

static int get_int(lua_State *L, int t, const char *key) {
  lua_getfield(L, t, key);
  int v = (int)luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* t[key] as a string that stays alive while t is on the stack. */
static const char *get_str(lua_State *L, int t, const char *key) {
  lua_getfield(L, t, key);
  const char *s = luaL_checkstring(L, -1);
  lua_pop(L, 1);
  return s;
}

static void copy_name(char *dst, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = 0;
}

/* The tree specs from the list at idx (aot.lua's m.trees). */
static mod_tree_spec *trees_of(lua_State *L, int idx, prog_program *p, int *n) {
  *n = (int)luaL_len(L, idx);
  if (*n > MOD_MAX_TREES) luaL_error(L, "a module holds at most %d tree types", MOD_MAX_TREES);
  mod_tree_spec *ts = lua_newuserdatauv(L, sizeof *ts * (size_t)(*n ? *n : 1), 0);
  for (int i = 0; i < *n; i++) {
    lua_geti(L, idx, i + 1);
    int t = lua_gettop(L);
    ts[i].name = get_str(L, t, "name");
    ts[i].root = ir_program_snode(p->ir, get_int(L, t, "root"));
    if (!ts[i].root || ts[i].root->kind != IR_SN_root) luaL_error(L, "tree type '%s' is gone", ts[i].name);
    lua_getfield(L, t, "fields");
    int fl = lua_gettop(L);
    int nf = (int)luaL_len(L, fl);
    if (nf > MOD_MAX_FIELDS) luaL_error(L, "tree type '%s' has more than %d fields", ts[i].name, MOD_MAX_FIELDS);
    mod_field *fs = lua_newuserdatauv(L, sizeof *fs * (size_t)(nf ? nf : 1), 0);
    lua_setfield(L, t, "_spec_fields");          /* kept alive by the tree's table */
    memset(fs, 0, sizeof *fs * (size_t)(nf ? nf : 1));
    for (int f = 0; f < nf; f++) {
      lua_geti(L, fl, f + 1);
      int ft = lua_gettop(L);
      copy_name(fs[f].name, sizeof fs[f].name, get_str(L, ft, "name"));
      fs[f].kind = (mod_field_kind)get_int(L, ft, "kind");
      fs[f].rows = get_int(L, ft, "rows");
      fs[f].cols = get_int(L, ft, "cols");
      lua_getfield(L, ft, "comps");
      fs[f].ncomp = (int)luaL_len(L, -1);
      if (fs[f].ncomp > (int)(sizeof fs[f].comp / sizeof *fs[f].comp))
        luaL_error(L, "field '%s' has too many components for a module", fs[f].name);
      for (int k = 0; k < fs[f].ncomp; k++) {
        lua_geti(L, -1, k + 1);
        fs[f].comp[k] = (int)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
      }
      lua_pop(L, 2);
    }
    ts[i].fields = fs;
    ts[i].nfields = nf;
    lua_pop(L, 2);
  }
  return ts;
}

/* One kernel entry (aot.lua's {name, compiled, params}) at idx into k. */
static void kernel_of(lua_State *L, int idx, mod_kernel_spec *k) {
  k->name = get_str(L, idx, "name");
  lua_getfield(L, idx, "compiled");
  k->compiled = luaL_checkudata(L, -1, LANG_COMPILED);
  lua_pop(L, 1);
  if (!k->compiled->prog || !k->compiled->prog->ir)
    luaL_error(L, "kernel '%s' was compiled for a program that lt.init has reset", k->name);
  lua_getfield(L, idx, "params");
  int pl = lua_gettop(L);
  k->nparams = (int)luaL_len(L, pl);
  if (k->nparams > MOD_MAX_PARAMS) luaL_error(L, "kernel '%s' has more than %d parameters", k->name, MOD_MAX_PARAMS);
  mod_param *ps = lua_newuserdatauv(L, sizeof *ps * MOD_MAX_PARAMS, 0);
  lua_setfield(L, idx, "_spec_params");
  memset(ps, 0, sizeof *ps * MOD_MAX_PARAMS);
  for (int i = 0; i < k->nparams; i++) {
    lua_geti(L, pl, i + 1);
    int q = lua_gettop(L);
    copy_name(ps[i].name, sizeof ps[i].name, get_str(L, q, "name"));
    ps[i].kind = (mod_param_kind)get_int(L, q, "kind");
    ps[i].dtype = (ir_type)get_int(L, q, "dtype");
    ps[i].rows = get_int(L, q, "rows");
    ps[i].cols = get_int(L, q, "cols");
    ps[i].ndim = get_int(L, q, "ndim");
    ps[i].tree = get_int(L, q, "tree");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  k->params = ps;
}

/* core.aot_cpu_known(name) -> whether a module can target that CPU */
static int l_aot_cpu_known(lua_State *L) {
  lua_pushboolean(L, prog_module_cpu_features(luaL_checkstring(L, 1)) != NULL);
  return 1;
}

/* core.aot_check(prog, trees, kernel): raises when the kernel uses a field
** outside the tree instances it takes */
static int l_aot_check(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  mod_spec spec = {0};
  spec.trees = trees_of(L, 2, p, &spec.ntrees);
  mod_kernel_spec k;
  kernel_of(L, 3, &k);
  spec.kernels = &k;
  spec.nkernels = 1;
  char err[1024];
  char why[1024];
  if (!prog_kernel_ready(k.compiled, why, sizeof why)) return luaL_error(L, "kernel '%s': %s", k.name, why);
  if (!prog_module_kernel_check(p, &spec, 0, err, sizeof err)) return luaL_error(L, "%s", err);
  return 0;
}

/* core.aot_save(prog, path, cpu|nil, trees, kernels, has_cpu, {sm...}) */
static int l_aot_save(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  const char *path = luaL_checkstring(L, 2);
  mod_spec spec = {0};
  spec.cpu = luaL_optstring(L, 3, NULL);
  luaL_checktype(L, 4, LUA_TTABLE);
  luaL_checktype(L, 5, LUA_TTABLE);
  spec.trees = trees_of(L, 4, p, &spec.ntrees);
  spec.nkernels = (int)luaL_len(L, 5);
  if (spec.nkernels > MOD_MAX_KERNELS) return luaL_error(L, "a module holds at most %d kernels", MOD_MAX_KERNELS);
  mod_kernel_spec *ks = lua_newuserdatauv(L, sizeof *ks * (size_t)(spec.nkernels ? spec.nkernels : 1), 0);
  for (int i = 0; i < spec.nkernels; i++) {
    lua_geti(L, 5, i + 1);
    kernel_of(L, lua_gettop(L), &ks[i]);
    lua_pop(L, 1);
  }
  spec.kernels = ks;
  spec.has_cpu = lua_toboolean(L, 6);
  luaL_checktype(L, 7, LUA_TTABLE);
  spec.nsms = (int)luaL_len(L, 7);
  if (spec.nsms > MOD_MAX_SMS) return luaL_error(L, "at most %d SMs in a module", MOD_MAX_SMS);
  const char *sms[MOD_MAX_SMS];
  for (int i = 0; i < spec.nsms; i++) {
    lua_geti(L, 7, i + 1);
    sms[i] = luaL_checkstring(L, -1);   /* the list keeps it alive */
    lua_pop(L, 1);
  }
  spec.sms = sms;
  char err[2048] = "";
  if (!prog_module_save(p, &spec, path, err, sizeof err)) return luaL_error(L, "lt.aot: saving %s: %s", path, err);
  return 0;
}

void lang_open_aot(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"aot_cpu_known", l_aot_cpu_known}, {"aot_check", l_aot_check}, {"aot_save", l_aot_save}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
