/*
** cuda_api.c -- core.cuda_probe: whether this machine can run the CUDA
** backend, for lt.init{arch = "cuda" | "auto"}. The driver is loaded once per
** process (src/jit/cuda/cuda_driver.c) and stays loaded. core.device_copy_ms:
** the GPU's copy speed, the reference of bench/gpu.lua.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/cuda/cuda_driver.h"
#include "lang.h"
#include "program/env.h"

static cuda_driver driver;
static cuda_device_info device;
static char probe_err[512];
static bool probe_ok;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void) {
  lt_env env;
  lt_env_read(&env);   /* LT_CUDA_DRIVER: tests point it at other libraries */
  probe_ok = cuda_driver_load(&driver, env.cuda_driver, probe_err, sizeof probe_err) &&
             cuda_probe(&driver, &device, probe_err, sizeof probe_err);
}

/* core.cuda_probe() -> {name, sm, multiprocessors, memory, driver} | nil, reason */
static int l_cuda_probe(lua_State *L) {
  pthread_once(&probe_once, probe);
  if (!probe_ok) {
    lua_pushnil(L);
    lua_pushstring(L, probe_err);
    return 2;
  }
  lua_createtable(L, 0, 5);
  lua_pushstring(L, device.name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, device.sm);
  lua_setfield(L, -2, "sm");
  lua_pushinteger(L, device.multiprocessors);
  lua_setfield(L, -2, "multiprocessors");
  lua_pushinteger(L, (lua_Integer)device.memory);
  lua_setfield(L, -2, "memory");
  lua_pushinteger(L, device.driver_version);
  lua_setfield(L, -2, "driver");
  return 1;
}

/* core.device_copy_ms(prog, bytes, reps) -> ms | nil, reason: the median time of a
** device-to-device copy on the program's GPU (bench/gpu.lua's reference). */
static int l_device_copy_ms(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  lua_Integer bytes = luaL_checkinteger(L, 2), reps = luaL_optinteger(L, 3, 20);
  double ms = 0;
  if (!p->be || strcmp(p->be->name, "cuda") != 0) {
    lua_pushnil(L);
    lua_pushstring(L, "device_copy_ms: the program does not run on CUDA");
    return 2;
  }
  if (bytes <= 0 || !jit_cuda_copy_ms(p->be, (uint64_t)bytes, (int)reps, &ms)) {
    lua_pushnil(L);
    lua_pushstring(L, bytes <= 0 ? "device_copy_ms: bytes must be positive" : p->be->error);
    return 2;
  }
  lua_pushnumber(L, ms);
  return 1;
}

void lang_open_cuda(lua_State *L) {
  static const luaL_Reg fns[] = {{"cuda_probe", l_cuda_probe}, {"device_copy_ms", l_device_copy_ms}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
