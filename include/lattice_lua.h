/*
** lattice_lua.h -- Lua in a Lattice runtime, and Lattice in a host's own Lua.
**
** Two ways to embed:
** 1. Lattice's own state: lt_run_string / lt_run_file run Lua code in the
**    runtime's Lua state (made on first use, with the standard libraries and
**    `lt` loaded). The script's lt.init adopts the runtime (the options of
**    lt_runtime_config hold; the script may repeat them, not change them).
**    What the script exports with lt.export("name", value) (kernels, fields)
**    the host finds with lt_kernel_find / lt_field_find (lattice.h).
** 2. A host that owns a lua_State makes Lattice available with
**        luaL_requiref(L, "lattice", luaopen_lattice, 0);
**    after which Lua code does `local lt = require "lattice"` (the stdlib's
**    Lua modules are embedded). examples/host/lua_host.c is such a host.
*/
#ifndef LATTICE_LUA_H
#define LATTICE_LUA_H

#include <stddef.h>

#include "lattice.h"   /* LT_API, the version, runtimes and handles */

#ifdef __cplusplus
extern "C" {   /* lua.h too, as lua.hpp does: Lua is C */
#endif

#include <lua.h>

/* Runs Lua source text in the runtime's state; chunkname names it in
** messages and tracebacks (NULL: "=(host)"; kernels defined in it can be
** traced: the text is registered as lt_register_source does). A Lua error
** is LT_ERROR_SCRIPT with its message and traceback in lt_last_error. */
LT_API lt_status lt_run_string(lt_runtime rt, const char *source, const char *chunkname);
/* Runs a .lua file in the runtime's state (arg is empty). */
LT_API lt_status lt_run_file(lt_runtime rt, const char *path);
/* The runtime's Lua state (made on first use), or NULL for an invalid
** handle. Use it only from the thread that uses the runtime, never after
** lt_runtime_destroy. */
LT_API lua_State *lt_lua_state(lt_runtime rt);
/* Pushes the ndarray onto L (the runtime's state) as an lt.ndarray that Lua
** code uses like its own (it holds a reference of its own). */
LT_API lt_status lt_push_ndarray(lt_runtime rt, lua_State *L, lt_ndarray a);

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
