/* repl.h -- the `lattice` executable: shared helpers of main.c and repl.c.
** main.c parses the command line and runs scripts; repl.c is the interactive
** loop. Both load every chunk through repl_load so the kernel tracer can find
** the source of functions that were not read from a file. */
#ifndef LATTICE_REPL_H
#define LATTICE_REPL_H

#include <stddef.h>
#include <lua.h>

#define REPL_PROGNAME "lattice"

/* Registers text under chunkname in package.loaded["lattice.sources"], then
** loads it like luaL_loadbuffer (mode "t"). Returns the status of the load. */
int repl_load(lua_State *L, const char *text, size_t len, const char *chunkname);

/* Calls the function below its nargs arguments in protected mode with a
** traceback message handler; Ctrl-C interrupts it (between Lua instructions). */
int repl_docall(lua_State *L, int nargs, int nres);

/* Prints "lattice: <message at the top>" to stderr when status is an error
** and pops it; returns status. */
int repl_report(lua_State *L, int status);

/* The interactive loop: reads stdin until end of file or :quit. With a
** terminal: prompts, line editing and history; otherwise plain line-by-line
** evaluation with no prompt (for pipes and tests). Returns the exit status. */
int repl_run(lua_State *L);

/* traceback.c: pushes msg (when not NULL) and a stack traceback of L from
** level on, like luaL_traceback but without Lattice's internal frames, unless
** the environment has LT_TRACEBACK=full. */
void repl_traceback(lua_State *L, const char *msg, int level);

/* clock.c: preloads "lattice.clock" (now() -> monotonic seconds). */
void repl_open_clock(lua_State *L);

#endif
