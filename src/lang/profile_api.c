/*
** profile_api.c -- the kernel profiler's records (src/jit/profile.h) for
** lt.profiler (stdlib/lattice/profiler.lua): a profile as a userdata
** holding one reference, given to the current program while the profiler
** is on. The table and the switch are profiler.lua's.
*/
#include "lang.h"

#define LANG_PROFILE "lattice.profile"

typedef struct {
  jit_profile *pf;
} profile_box;

static jit_profile *check_profile(lua_State *L, int idx) {
  profile_box *b = luaL_checkudata(L, idx, LANG_PROFILE);
  return b->pf;
}

static int l_profile_gc(lua_State *L) {
  profile_box *b = luaL_checkudata(L, 1, LANG_PROFILE);
  jit_profile_release(b->pf);
  b->pf = NULL;
  return 0;
}

/* core.profile_new() -> profile */
static int l_profile_new(lua_State *L) {
  profile_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->pf = NULL;
  luaL_setmetatable(L, LANG_PROFILE);
  b->pf = jit_profile_new();
  if (!b->pf) return luaL_error(L, "lt.profiler: out of memory");
  return 1;
}

/* core.profile_attach(prog, profile | nil): the program's later launches are
** profiled into profile, or not at all */
static int l_profile_attach(lua_State *L) {
  prog_program *p = lang_to_program(L, 1);
  jit_profile *pf = lua_isnoneornil(L, 2) ? NULL : check_profile(L, 2);
  if (p && p->ir) prog_set_profile(p, pf);
  return 0;
}

/* core.profile_clear(profile) */
static int l_profile_clear(lua_State *L) {
  jit_profile_clear(check_profile(L, 1));
  return 0;
}

static void set_number(lua_State *L, const char *key, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, key);
}

static void set_integer(lua_State *L, const char *key, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, key);
}

/* core.profile_records(profile) -> { {name, kind, kernel, task, snode, calls,
** reused, total_ms, min_ms, max_ms}, ... } in the order the records were
** made (a kernel before its tasks), those without calls or reuse left out.
** kind is "kernel" or the task's ("range_for", "listgen", ...); kernel
** names a task's kernel; task (0-based) and snode only for tasks. */
static int l_profile_records(lua_State *L) {
  jit_profile *pf = check_profile(L, 1);
  lua_newtable(L);
  int n = 0;
  for (int i = 0; i < jit_profile_count(pf); i++) {
    const jit_profile_record *r = jit_profile_at(pf, i);
    if (r->calls == 0 && r->reused == 0) continue;
    lua_createtable(L, 0, 10);
    lua_pushstring(L, r->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, r->kernel < 0 ? "kernel" : jit_profile_kind_name(r->kind));
    lua_setfield(L, -2, "kind");
    if (r->kernel >= 0) {
      lua_pushstring(L, jit_profile_at(pf, r->kernel)->name);
      lua_setfield(L, -2, "kernel");
      set_integer(L, "task", r->task);
      if (r->snode >= 0) set_integer(L, "snode", r->snode);
    }
    set_integer(L, "calls", r->calls);
    set_integer(L, "reused", r->reused);
    set_number(L, "total_ms", r->total_ms);
    set_number(L, "min_ms", r->min_ms);
    set_number(L, "max_ms", r->max_ms);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

void lang_open_profile(lua_State *L) {
  if (luaL_newmetatable(L, LANG_PROFILE)) {
    lua_pushcfunction(L, l_profile_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"profile_new", l_profile_new},
    {"profile_attach", l_profile_attach},
    {"profile_clear", l_profile_clear},
    {"profile_records", l_profile_records},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
