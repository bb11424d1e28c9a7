/*
** env.h -- the environment variables Lattice reads, all of them, read in one
** place (env.c). The program layer hands them down as plain values (e.g.
** jit_options to the backends); the Lua module sees them through core.env()
** (src/lang/env_api.c). docs/language.md, "Environment variables", is the
** user's reference.
*/
#ifndef LATTICE_PROGRAM_ENV_H
#define LATTICE_PROGRAM_ENV_H

#include <stdbool.h>

#include "jit/jit.h"

/* Every string points into the environment (valid until the environment
** changes: copy what you keep) or is NULL when the variable is unset or
** empty. */
typedef struct {
  const char *arch;           /* LT_ARCH: lt.init's arch where the script names none */
  const char *memory_limit;   /* LT_MEMORY_LIMIT: bytes of host memory the CPU pool may
                              ** take instead of RAM + swap (checked by lt.init) */
  const char *cuda_driver;    /* LT_CUDA_DRIVER: the CUDA driver library (libcuda.so.1) */
  const char *libdevice;      /* LT_LIBDEVICE: CUDA's libdevice.10.bc, this file only */
  const char *cuda_home;      /* CUDA_HOME, CUDA_PATH: toolkits searched for libdevice */
  const char *cuda_path;
  const char *check_ptx;      /* LT_CHECK_PTX: a ptxas that assembles every kernel's PTX */
  const char *tmpdir;         /* TMPDIR: where ptxas's input is written (/tmp) */
  /* LT_CACHE: "off" (or 0, false, no): no offline kernel cache; a directory:
  ** the cache there; unset: $XDG_CACHE_HOME/lattice, else $HOME/.cache/lattice */
  char cache_dir[1024];       /* "" when off or when no directory could be named */
  const char *cache_max;      /* LT_CACHE_MAX: the cache's size limit in bytes (256 MiB) */
  const char *gui;            /* LT_GUI: "headless" makes lattice.gui windows headless */
  const char *display;        /* DISPLAY, else WAYLAND_DISPLAY: whether lattice.gui can open a window */
  bool dump_llvm;             /* LT_DUMP_LLVM set: each CPU kernel's optimised LLVM IR on stderr */
  bool dump_ptx;              /* LT_DUMP_PTX set: each CUDA kernel's PTX on stderr */
} lt_env;

/* Reads the environment into *out: this is the only place where Lattice's
** library calls getenv. */
void lt_env_read(lt_env *out);

/* The settings of e that the backends and the code generator take, with
** lt.init's debug (its strings are e's). */
void lt_env_jit_options(const lt_env *e, bool debug, jit_options *out);

#endif
