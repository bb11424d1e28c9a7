/*
** lua_host.c -- a C program that embeds Lattice's interpreter: it creates a
** lua_State, opens Lattice through the public header, runs a kernel written
** in a Lua string and checks what the kernel computed against plain C.
**
** Against an installed Lattice (docs/install.md), either
**     cc lua_host.c $(pkg-config --cflags --libs lattice) -o lua_host
** or CMake with this folder's CMakeLists.txt (find_package(Lattice)).
** Run: ./lua_host [N]   (prints one line; exit status 0 when every element matches)
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>
#include <lattice_lua.h>

/* The chunk's name: the tracer finds a kernel's source through it, so the
** text is registered under the same name that luaL_loadbuffer gets. */
static const char chunkname[] = "=lua_host";

static const char script[] =
  "local lt = require 'lattice'\n"
  "local n = ...\n"
  "lt.init { default_fp = lt.f64 }     -- Lua floats in kernels are f64, as in C\n"
  "local x, y = lt.field(lt.f64, n), lt.field(lt.i32, n)\n"
  "local fill = lt.kernel(function(a)\n"
  "  for i in lt.ndrange(n) do\n"
  "    x[i] = a * i * i + 1.0 / (i + 1)\n"
  "    y[i] = i * 7919 % 1013 - 500\n"
  "  end\n"
  "end, { a = lt.f64 })\n"
  "fill(0.5)\n"
  "return x:to_table(), y:to_table(), lt.version\n";

/* Reads t[i] (1-based) of the table at idx as a number. */
static double geti(lua_State *L, int idx, lua_Integer i) {
  lua_geti(L, idx, i);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  if (n < 1) {
    fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
    return 2;
  }
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "lua_host: cannot create a Lua state\n");
    return 1;
  }
  luaL_openlibs(L);
  luaL_requiref(L, "lattice", luaopen_lattice, 0);   /* require "lattice" now finds it */
  lua_pop(L, 1);

  lt_register_source(L, chunkname, script, strlen(script));
  if (luaL_loadbuffer(L, script, strlen(script), chunkname) != LUA_OK) {
    fprintf(stderr, "lua_host: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  lua_pushinteger(L, n);
  if (lua_pcall(L, 1, 3, 0) != LUA_OK) {
    fprintf(stderr, "lua_host: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }

  int bad = 0;
  const char *version = lua_tostring(L, -1);
  if (!version || strcmp(version, LT_VERSION) != 0) {
    fprintf(stderr, "lua_host: the library says version %s, the header %s\n", version ? version : "(none)", LT_VERSION);
    bad++;
  }
  /* the same arithmetic in plain C */
  for (int i = 0; i < n && bad < 5; i++) {
    double xe = 0.5 * i * i + 1.0 / (i + 1), xg = geti(L, -3, i + 1);
    double ye = (double)(i * 7919 % 1013 - 500), yg = geti(L, -2, i + 1);
    if (fabs(xg - xe) > 1e-12 * fabs(xe) || yg != ye) {
      fprintf(stderr, "lua_host: element %d: kernel gave x=%.17g y=%.17g, C gives x=%.17g y=%.17g\n", i, xg, yg, xe, ye);
      bad++;
    }
  }
  if (!bad) printf("lua_host: %d elements match plain C (Lattice %s)\n", n, LT_VERSION);
  lua_close(L);
  return bad ? 1 : 0;
}
