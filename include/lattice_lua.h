/*
** lattice_lua.h -- embedding Lattice's Lua interpreter in a C host.
**
** A host that owns a lua_State makes Lattice available with
**     luaL_requiref(L, "lattice", luaopen_lattice, 0);
** after which Lua code does `local lt = require "lattice"` (the Lua modules of
** the standard library, e.g. "lattice.tracer", are embedded and found by a
** package searcher that luaopen_lattice installs). examples/host/lua_host.c
** is a complete host.
*/
#ifndef LATTICE_LUA_H
#define LATTICE_LUA_H

#include <stddef.h>

#include "lattice.h"   /* LT_API and the version */

#ifdef __cplusplus
extern "C" {   /* lua.h too, as lua.hpp does: Lua is C */
#endif

#include <lua.h>

/* Opens the module: returns 1 value, the `lt` table. */
LT_API int luaopen_lattice(lua_State *L);

/* Registers the source text of a chunk so kernels defined in it can be traced
** (a host that runs code with luaL_loadbuffer instead of from files calls this
** with the same chunk name). */
LT_API void lt_register_source(lua_State *L, const char *chunkname, const char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif
