/*
** env_api.c -- core.env(): the environment settings (src/program/env.c, the
** only place that reads them) as a table for the Lua side of lt.init; and
** what the process runs in: core.isatty(fd), core.now() (progress lines of
** lt.compile and lattice.example), core.sleep(s) (lattice.gui's fps_limit).
*/
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "lang.h"
#include "program/env.h"

static void set_string(lua_State *L, const char *key, const char *v) {
  if (!v) return;   /* unset or empty: the key is absent */
  lua_pushstring(L, v);
  lua_setfield(L, -2, key);
}

/* core.env() -> {arch =, memory_limit =, cuda_driver =, libdevice =, cuda_home =,
** cuda_path =, check_ptx =, tmpdir =, cache_dir = (the kernel cache's directory, from
** LT_CACHE, XDG_CACHE_HOME or HOME), cache_max = (strings, absent when unset or empty),
** dump_llvm =, dump_ptx = (booleans)} */
static int l_env(lua_State *L) {
  lt_env e;
  lt_env_read(&e);
  lua_createtable(L, 0, 10);
  set_string(L, "arch", e.arch);
  set_string(L, "memory_limit", e.memory_limit);
  set_string(L, "cuda_driver", e.cuda_driver);
  set_string(L, "libdevice", e.libdevice);
  set_string(L, "cuda_home", e.cuda_home);
  set_string(L, "cuda_path", e.cuda_path);
  set_string(L, "check_ptx", e.check_ptx);
  set_string(L, "tmpdir", e.tmpdir);
  set_string(L, "cache_dir", e.cache_dir[0] ? e.cache_dir : NULL);
  set_string(L, "cache_max", e.cache_max);
  set_string(L, "gui", e.gui);
  set_string(L, "display", e.display);
  lua_pushboolean(L, e.dump_llvm);
  lua_setfield(L, -2, "dump_llvm");
  lua_pushboolean(L, e.dump_ptx);
  lua_setfield(L, -2, "dump_ptx");
  return 1;
}

/* core.isatty(fd) -> whether file descriptor fd (1: stdout, 2: stderr) is a terminal */
static int l_isatty(lua_State *L) {
  lua_Integer fd = luaL_checkinteger(L, 1);
  lua_pushboolean(L, fd >= 0 && fd <= 1024 && isatty((int)fd));
  return 1;
}

/* core.now() -> seconds on a monotonic wall clock (os.clock() is CPU time summed over threads) */
static int l_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

/* core.sleep(seconds): waits (a window's frame-rate limit); 0 to 10 s */
static int l_sleep(lua_State *L) {
  lua_Number s = luaL_checknumber(L, 1);
  if (!(s >= 0 && s <= 10)) return luaL_error(L, "core.sleep: expected 0 to 10 seconds, got %f", (double)s);
  struct timespec ts = {(time_t)s, (long)((s - (lua_Number)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  return 0;
}

void lang_open_env(lua_State *L) {
  static const luaL_Reg fns[] = {{"env", l_env},     {"isatty", l_isatty}, {"now", l_now},
                                 {"sleep", l_sleep}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
