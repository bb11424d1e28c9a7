/*
** lattice.h -- the public C API of Lattice.
**
** Installed with the shared library (docs/install.md): find it with
** `pkg-config --cflags --libs lattice` or CMake's `find_package(Lattice)`
** (target Lattice::lattice).
**
** Only the functions declared LT_API are exported from liblattice.so and
** from the Lua module lattice.so; everything else inside them is built with
** -fvisibility=hidden. The Lua-embedding part of the API lives in
** lattice_lua.h, which this header still includes so that hosts written
** against the single header keep compiling; new hosts that embed the
** interpreter include <lattice_lua.h>.
*/
#ifndef LATTICE_H
#define LATTICE_H

#include "lattice_version.h"   /* LT_VERSION, LT_VERSION_MAJOR/MINOR/PATCH, LT_VERSION_NUM */

/* LT_API: what the libraries export (the public lt_* functions, luaopen_lattice). */
#if defined(__GNUC__) || defined(__clang__)
#define LT_API extern __attribute__((visibility("default")))
#else
#define LT_API extern
#endif

#include "lattice_lua.h"

#endif
