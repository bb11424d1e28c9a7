/* traceback.c -- the stack traceback under an error message, showing the
** user's frames: frames of Lattice's own Lua modules (embedded chunks named
** "=lattice/NAME.lua", "=lattice.lua") and C functions they call are left
** out, each run of them as one line saying how many; LT_TRACEBACK=full keeps
** every frame (luaL_traceback's text), for debugging Lattice itself.
** Otherwise the lines read as lua5.4's (lauxlib.c's luaL_traceback). */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl.h"

#define LEVELS1 10       /* frames shown before and after the middle of a long stack is skipped, */
#define LEVELS2 11       /* as lauxlib.c does */

static int internal_source(const lua_Debug *ar) {
  return strncmp(ar->source, "=lattice/", 9) == 0 || strcmp(ar->source, "=lattice.lua") == 0;
}

/* Whether the function at the top of the stack is a field of a loaded module
** (package.loaded): then its name replaces "function <file:line>", as lauxlib
** does. Leaves the name on the stack and returns 1, or pops nothing and 0. */
static int global_name(lua_State *L, int fn) {
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushnil(L);
  while (lua_next(L, -2)) {                           /* each module */
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {                       /* each of its fields */
        if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
          const char *mod = lua_tostring(L, -4), *field = lua_tostring(L, -2);
          if (strcmp(mod, LUA_GNAME) == 0) lua_pushstring(L, field);   /* a global */
          else lua_pushfstring(L, "%s.%s", mod, field);
          lua_replace(L, top + 1);
          lua_settop(L, top + 1);
          return 1;
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return 0;
}

/* Appends what the frame ar is ("function 'f'", "local 'g'", "main chunk", ...). */
static void add_name(lua_State *L, luaL_Buffer *b, lua_Debug *ar) {
  if (*ar->namewhat != '\0') {
    lua_pushfstring(L, "%s '%s'", ar->namewhat, ar->name);
  } else if (*ar->what == 'm') {
    lua_pushliteral(L, "main chunk");
  } else if (*ar->what != 'C') {
    lua_pushfstring(L, "function <%s:%d>", ar->short_src, ar->linedefined);
  } else {
    lua_pushliteral(L, "?");
  }
  luaL_addvalue(b);
}

/* luaL_traceback's text without Lattice's internal frames. */
static void user_traceback(lua_State *L, lua_State *L1, const char *msg, int level) {
  lua_Debug ar;
  int last = level;
  while (lua_getstack(L1, last, &ar)) last++;         /* the number of frames */
  /* which frames to show: a Lua frame of a lattice module is internal, and
  ** so is a C function whose caller is internal */
  char *hide = calloc((size_t)(last > 0 ? last : 1), 1);
  for (int l = last - 1; l >= level; l--) {
    lua_getstack(L1, l, &ar);
    lua_getinfo(L1, "S", &ar);
    if (*ar.what == 'C') hide[l] = l + 1 < last && hide[l + 1];
    else hide[l] = internal_source(&ar) != 0;
  }
  int nshown = 0;
  for (int l = level; l < last; l++) nshown += !hide[l];
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (msg) {
    luaL_addstring(&b, msg);
    luaL_addchar(&b, '\n');
  }
  luaL_addstring(&b, "stack traceback:");
  int rank = 0, hidden = 0, tail = 0;
  for (int l = level; l <= last; l++) {
    if (l < last && hide[l]) {
      hidden++;
      lua_getstack(L1, l, &ar);
      lua_getinfo(L1, "t", &ar);
      tail = ar.istailcall;   /* its callers are gone: say so, as for a shown frame */
      continue;
    }
    if (hidden) {
      lua_pushfstring(L, "\n\t(%d frame%s inside Lattice; LT_TRACEBACK=full shows them)%s", hidden,
                      hidden == 1 ? "" : "s", tail ? "\n\t(...tail calls...)" : "");
      luaL_addvalue(&b);
      hidden = tail = 0;
    }
    if (l == last) break;
    rank++;
    if (nshown > LEVELS1 + LEVELS2 && rank > LEVELS1 && rank <= nshown - LEVELS2) {
      if (rank == LEVELS1 + 1) {
        lua_pushfstring(L, "\n\t...\t(skipping %d levels)", nshown - LEVELS1 - LEVELS2);
        luaL_addvalue(&b);
      }
      continue;
    }
    lua_getstack(L1, l, &ar);
    lua_getinfo(L1, "Slntf", &ar);
    if (ar.currentline <= 0) lua_pushfstring(L, "\n\t%s: in ", ar.short_src);
    else lua_pushfstring(L, "\n\t%s:%d: in ", ar.short_src, ar.currentline);
    luaL_addvalue(&b);
    lua_xmove(L1, L, 1);                              /* the frame's function */
    if (global_name(L, lua_gettop(L))) {
      lua_pushfstring(L, "function '%s'", lua_tostring(L, -1));
      lua_remove(L, -2);
      lua_remove(L, -2);
      luaL_addvalue(&b);
    } else {
      lua_pop(L, 1);
      add_name(L, &b, &ar);
    }
    if (ar.istailcall) luaL_addstring(&b, "\n\t(...tail calls...)");
  }
  free(hide);
  luaL_pushresult(&b);
}

void repl_traceback(lua_State *L, const char *msg, int level) {
  const char *mode = getenv("LT_TRACEBACK");
  if (mode && strcmp(mode, "full") == 0) luaL_traceback(L, L, msg, level);
  else user_traceback(L, L, msg, level);
}
