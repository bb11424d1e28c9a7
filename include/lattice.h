/*
** lattice.h -- the public C API of Lattice for embedding hosts.
**
** A host that owns a lua_State makes Lattice available with
**     luaL_requiref(L, "lattice", luaopen_lattice, 0);
** after which Lua code does `local lt = require "lattice"` (the Lua modules of
** the standard library, e.g. "lattice.tracer", are embedded and found by a
** package searcher that luaopen_lattice installs).
*/
#ifndef LATTICE_H
#define LATTICE_H

#include <lua.h>

#include "lattice_version.h"   /* LT_VERSION, generated from project() in CMakeLists.txt */

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the module: returns 1 value, the `lt` table. */
int luaopen_lattice(lua_State *L);

/* Registers the source text of a chunk so kernels defined in it can be traced
** (a host that runs code with luaL_loadbuffer instead of from files calls this
** with the same chunk name). */
void lt_register_source(lua_State *L, const char *chunkname, const char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif
