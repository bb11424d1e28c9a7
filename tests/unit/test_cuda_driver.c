/*
** test_cuda_driver.c -- loading the CUDA driver at run time: a library that
** is not there and a library without the driver's entry points are refused
** with messages naming them; with a real driver (a GPU machine), the probe
** describes device 0. The Lua side (lt.init{arch = "cuda" | "auto"}) is
** tests/lang/arch.lua.
*/
#include <stdio.h>

#include "check.h"
#include "jit/cuda/cuda_driver.h"

int main(void) {
  cuda_driver d;
  char err[512];
  CHECK(!cuda_driver_load(&d, "/nonexistent/libcuda.so.1", err, sizeof err));
  CHECK_CONTAINS(err, "cannot load the NVIDIA driver library /nonexistent/libcuda.so.1");
  CHECK(d.lib == NULL && d.cuInit == NULL);
  /* a real library that is not the driver: the first entry point is missing */
  CHECK(!cuda_driver_load(&d, "libc.so.6", err, sizeof err));
  CHECK_CONTAINS(err, "has no entry point cuInit");
  CHECK(d.lib == NULL);
  if (cuda_driver_load(&d, NULL, err, sizeof err)) {
    cuda_device_info info;
    if (cuda_probe(&d, &info, err, sizeof err)) {
      printf("test_cuda_driver: %s, sm_%d, %d SMs, %zu MiB, driver %d\n", info.name, info.sm,
             info.multiprocessors, info.memory >> 20, info.driver_version);
      CHECK(info.sm >= 70 && info.memory > 0 && info.multiprocessors > 0);
    } else {
      printf("test_cuda_driver: driver present, no usable GPU: %s\n", err);
    }
    cuda_driver_unload(&d);
  } else {
    printf("test_cuda_driver: no NVIDIA driver here (%s)\n", err);
  }
  return check_finish("test_cuda_driver");
}
