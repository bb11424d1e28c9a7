/* luac.c -- build-time tool: compiles a stdlib Lua file to Lua bytecode (with
** its debug information: line numbers and local names stay in tracebacks).
**   luac OUT IN CHUNKNAME
** CHUNKNAME must be the name src/lang/lang.c gives the module's chunk
** ("=lattice/tracer.lua"): a binary chunk keeps the name it was compiled with.
** Loading bytecode instead of parsing the source saves lattice's start-up the
** ~10 ms that parsing ~300 KB of stdlib took. */
#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>

static int write(lua_State *L, const void *p, size_t n, void *out) {
  (void)L;
  return fwrite(p, 1, n, out) == n ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: luac OUT IN CHUNKNAME\n");
    return 1;
  }
  lua_State *L = luaL_newstate();
  if (!L) return 1;
  FILE *in = fopen(argv[2], "rb");
  if (!in) {
    perror(argv[2]);
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) luaL_addlstring(&b, chunk, n);
  fclose(in);
  luaL_pushresult(&b);
  size_t len;
  const char *src = lua_tolstring(L, -1, &len);
  if (luaL_loadbufferx(L, src, len, argv[3], "t") != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 1;
  }
  FILE *out = fopen(argv[1], "wb");
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  int rc = lua_dump(L, write, out, 0);
  if (fclose(out) != 0 || rc != 0) {
    fprintf(stderr, "luac: cannot write %s\n", argv[1]);
    return 1;
  }
  lua_close(L);
  return 0;
}
