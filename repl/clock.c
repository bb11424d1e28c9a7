/* clock.c -- module "lattice.clock", preloaded by the `lattice` executable
** for benchmarks and scripts that time themselves: Lua's os.clock() is CPU
** time summed over threads, useless for timing parallel kernels.
**   require("lattice.clock").now() -> seconds (monotonic wall clock, float) */
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl.h"

static int l_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static int open_clock(lua_State *L) {
  static const luaL_Reg fns[] = {{"now", l_now}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}

void repl_open_clock(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, open_clock);
  lua_setfield(L, -2, "lattice.clock");
  lua_pop(L, 1);
}
