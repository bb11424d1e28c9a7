/*
** cuda_driver.c -- loading the CUDA driver API at run time (cuda_driver.h)
** and describing the GPU Lattice would use.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_driver.h"

bool cuda_driver_load(cuda_driver *d, const char *path, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  if (!path) path = "libcuda.so.1";
  d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *why = dlerror();
    snprintf(err, errlen, "cannot load the NVIDIA driver library %s (%s): is the NVIDIA driver installed?",
             path, why ? why : "not found");
    return false;
  }
  /* dlsym returns void *; the cast through a union keeps ISO C quiet */
#define F(field, symbol, ret, params)                                                    \
  {                                                                                      \
    union {                                                                              \
      void *p;                                                                           \
      ret(*f) params;                                                                    \
    } u = {dlsym(d->lib, symbol)};                                                       \
    if (!u.p) {                                                                          \
      snprintf(err, errlen, "the NVIDIA driver library %s has no entry point %s (driver too old?)", \
               path, symbol);                                                            \
      cuda_driver_unload(d);                                                             \
      return false;                                                                      \
    }                                                                                    \
    d->field = u.f;                                                                      \
  }
  CUDA_DRIVER_FUNCTIONS(F)
#undef F
  return true;
}

void cuda_driver_unload(cuda_driver *d) {
  if (d->lib) dlclose(d->lib);
  memset(d, 0, sizeof *d);
}

bool cuda_error(cuda_driver *d, CUresult r, const char *call, char *err, size_t errlen) {
  const char *text = NULL;
  if (d->cuGetErrorString) d->cuGetErrorString(r, &text);
  snprintf(err, errlen, "%s failed: %s (CUDA error %d)", call, text ? text : "unknown error", r);
  return false;
}

bool cuda_probe(cuda_driver *d, cuda_device_info *info, char *err, size_t errlen) {
  memset(info, 0, sizeof *info);
  CUresult r = d->cuInit(0);
  if (r) return cuda_error(d, r, "cuInit", err, errlen);
  d->cuDriverGetVersion(&info->driver_version);
  int count = 0;
  if ((r = d->cuDeviceGetCount(&count))) return cuda_error(d, r, "cuDeviceGetCount", err, errlen);
  if (count < 1) {
    snprintf(err, errlen, "the NVIDIA driver reports no GPU");
    return false;
  }
  CUdevice dev;
  if ((r = d->cuDeviceGet(&dev, 0))) return cuda_error(d, r, "cuDeviceGet", err, errlen);
  if ((r = d->cuDeviceGetName(info->name, (int)sizeof info->name, dev))) return cuda_error(d, r, "cuDeviceGetName", err, errlen);
  int major = 0, minor = 0;
  d->cuDeviceGetAttribute(&major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
  d->cuDeviceGetAttribute(&minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
  d->cuDeviceGetAttribute(&info->multiprocessors, CU_ATTR_MULTIPROCESSOR_COUNT, dev);
  d->cuDeviceTotalMem(&info->memory, dev);
  info->sm = major * 10 + minor;
  if (info->sm < 70) {
    snprintf(err, errlen, "the GPU %s is sm_%d; Lattice needs sm_70 (Volta) or newer", info->name, info->sm);
    return false;
  }
  return true;
}
