/*
** lang.c -- luaopen_lattice: the "lattice.core" table of C functions, the
** package searcher for the Lua modules embedded from stdlib/, and the `lt`
** table (assembled in stdlib/lattice/init.lua).
*/
#include <string.h>

#include "lang.h"
#include "lattice_lua.h"

typedef struct { const char *name; const unsigned char *data; size_t size; } lt_embedded;
extern const lt_embedded lt_stdlib[];
/* The same modules as Lua bytecode (cmake/luac.c), when the build made it
** (LT_STDLIB_BC): loading it skips parsing ~300 KB of source at every
** start-up. A strong reference: a weak one would not pull the table's object
** out of liblattice's static archive, and the source would be parsed. */
#ifdef LT_STDLIB_BC
extern const lt_embedded lt_stdlib_bc[];
#else
static const lt_embedded lt_stdlib_bc[] = {{NULL, NULL, 0}};
#endif

/* Defined by src/lang/image.c when it is built (weak so the core links without it). */
extern int luaopen_lattice_image(lua_State *L) __attribute__((weak));

/* How the embedded modules were loaded, for core.stdlib_loads() (a test
** checks that the bytecode is used: a build that left it out, or a Lua that
** refuses it, would still work, only slower). Process-wide counts. */
static int loads_bytecode, loads_source;

static const lt_embedded *find_embedded(const lt_embedded *table, const char *name) {
  for (const lt_embedded *e = table; e && e->name; e++)
    if (strcmp(e->name, name) == 0) return e;
  return NULL;
}

/* package.searchers entry: "lattice.tracer" -> the embedded stdlib/lattice/tracer.lua.
** Chunks are named "=lattice/tracer.lua" so the tracer can tell its own
** frames from the user's when it looks for the line to blame (the bytecode
** was compiled under the same name). The bytecode is tried first; should
** this Lua refuse it (another version's format), the source is parsed. */
static int search_embedded(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const lt_embedded *e = find_embedded(lt_stdlib, name);
  const lt_embedded *bc = find_embedded(lt_stdlib_bc, name);
  if (!e) {
    lua_pushfstring(L, "no embedded module '%s'", name);
    return 1;
  }
  luaL_Buffer chunk;
  luaL_buffinit(L, &chunk);
  luaL_addstring(&chunk, "=");
  for (const char *c = name; *c; c++) luaL_addchar(&chunk, *c == '.' ? '/' : *c);
  luaL_addstring(&chunk, ".lua");
  luaL_pushresult(&chunk);
  if (bc && luaL_loadbufferx(L, (const char *)bc->data, bc->size, lua_tostring(L, -1), "b") == LUA_OK) {
    loads_bytecode++;
    lua_pushstring(L, name);
    return 2;
  }
  if (bc) lua_pop(L, 1);           /* the bytecode's error: the source decides */
  if (luaL_loadbufferx(L, (const char *)e->data, e->size, lua_tostring(L, -1), "t") != LUA_OK)
    return lua_error(L);
  loads_source++;
  lua_pushstring(L, name);
  return 2;
}

static void install_searcher(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers");
  if (lua_istable(L, -1)) {
    /* once per state: look for ourselves */
    int n = (int)luaL_len(L, -1);
    for (int i = 1; i <= n; i++) {
      lua_geti(L, -1, i);
      bool found = lua_tocfunction(L, -1) == search_embedded;
      lua_pop(L, 1);
      if (found) { lua_pop(L, 2); return; }
    }
    /* insert at position 2: after preload, before the file searchers */
    for (int i = n; i >= 2; i--) {
      lua_geti(L, -1, i);
      lua_seti(L, -2, i + 1);
    }
    lua_pushcfunction(L, search_embedded);
    lua_seti(L, -2, 2);
  }
  lua_pop(L, 2);
}

void lt_register_source(lua_State *L, const char *chunkname, const char *text, size_t len) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  luaL_getsubtable(L, -1, "lattice.sources");
  lua_pushlstring(L, text, len);
  lua_setfield(L, -2, chunkname);
  lua_pop(L, 2);
}

/* core.stdlib_loads() -> modules loaded from bytecode, from source (this process) */
static int l_stdlib_loads(lua_State *L) {
  lua_pushinteger(L, loads_bytecode);
  lua_pushinteger(L, loads_source);
  return 2;
}

int luaopen_lattice(lua_State *L) {
  install_searcher(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_newtable(L);
  lang_open_program(L);
  lang_open_snode(L);
  lang_open_field(L);
  lang_open_ir(L);
  lang_open_kernel(L);
  lang_open_tree(L);
  lang_open_aot(L);
  lang_open_ndarray(L);
  lang_open_cuda(L);
  lang_open_embed(L);
  lang_open_env(L);
  lang_open_profile(L);
#ifdef LT_HAVE_SDL2
  lang_open_gui(L);                 /* core.gui; nil without SDL2 (lattice.gui says so) */
#endif
  lua_pushliteral(L, LT_VERSION);   /* lt.version, lt.version_num (init.lua) */
  lua_setfield(L, -2, "version");
  lua_pushinteger(L, LT_VERSION_NUM);
  lua_setfield(L, -2, "version_num");
  lua_pushcfunction(L, l_stdlib_loads);
  lua_setfield(L, -2, "stdlib_loads");
  lua_setfield(L, -2, "lattice.core");
  lua_pop(L, 1);
  if (luaopen_lattice_image) {
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_lattice_image);
    lua_setfield(L, -2, "lattice.image");
    lua_pop(L, 1);
  }
  lua_getglobal(L, "require");
  lua_pushstring(L, "lattice.init");
  lua_call(L, 1, 1);
  return 1;
}
