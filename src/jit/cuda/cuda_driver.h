/*
** cuda_driver.h -- the CUDA driver API, loaded at run time.
**
** Lattice never links against libcuda: a machine without an NVIDIA driver
** builds and runs the CPU backend. cuda_driver_load dlopens the driver and
** looks every entry point up by name (the _v2 names where the driver has
** them); the types below are the few the API needs, declared here so that
** building needs no CUDA headers either.
*/
#ifndef LATTICE_CUDA_DRIVER_H
#define LATTICE_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;                       /* 0 = CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef uint64_t CUdeviceptr;

enum {                                      /* CUresult values the backend tells apart */
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_FAILED = 719,
};

enum {                                      /* CUjit_option values (cuModuleLoadDataEx) */
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

enum {                                      /* CUfunction_attribute */
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
};

enum {                                      /* CUdevice_attribute values used here */
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

/* The entry points, NULL until loaded. */
#define CUDA_DRIVER_FUNCTIONS(_)                                                               \
  _(cuInit, "cuInit", CUresult, (unsigned flags))                                              \
  _(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int *version))                        \
  _(cuGetErrorString, "cuGetErrorString", CUresult, (CUresult e, const char **text))           \
  _(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int *count))                              \
  _(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice *dev, int ordinal))                        \
  _(cuDeviceGetName, "cuDeviceGetName", CUresult, (char *name, int len, CUdevice dev))         \
  _(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult, (int *v, int attr, CUdevice dev))  \
  _(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t *bytes, CUdevice dev))          \
  _(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext *ctx, CUdevice dev)) \
  _(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice dev))      \
  _(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext ctx))                             \
  _(cuCtxSynchronize, "cuCtxSynchronize", CUresult, (void))                                    \
  _(cuMemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr *p, size_t bytes))                     \
  _(cuMemFree, "cuMemFree_v2", CUresult, (CUdeviceptr p))                                      \
  _(cuMemGetInfo, "cuMemGetInfo_v2", CUresult, (size_t *free_bytes, size_t *total))           \
  _(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult, (CUdeviceptr dst, const void *src, size_t n))   \
  _(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult, (void *dst, CUdeviceptr src, size_t n))         \
  _(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t n))   \
  _(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult,                                       \
    (CUdeviceptr dst, const void *src, size_t n, CUstream s))                                  \
  _(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult, (void *dst, CUdeviceptr src, size_t n, CUstream s)) \
  _(cuMemAllocHost, "cuMemAllocHost_v2", CUresult, (void **p, size_t bytes))                  \
  _(cuMemFreeHost, "cuMemFreeHost", CUresult, (void *p))                                       \
  _(cuMemsetD8, "cuMemsetD8_v2", CUresult, (CUdeviceptr dst, unsigned char v, size_t n))       \
  _(cuModuleLoadDataEx, "cuModuleLoadDataEx", CUresult,                                        \
    (CUmodule *m, const void *image, unsigned nopts, int *opts, void **values))               \
  _(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule m))                                  \
  _(cuModuleGetFunction, "cuModuleGetFunction", CUresult, (CUfunction *f, CUmodule m, const char *name)) \
  _(cuFuncGetAttribute, "cuFuncGetAttribute", CUresult, (int *v, int attr, CUfunction f))    \
  _(cuEventCreate, "cuEventCreate", CUresult, (CUevent *e, unsigned flags))                    \
  _(cuEventRecord, "cuEventRecord", CUresult, (CUevent e, CUstream s))                         \
  _(cuEventSynchronize, "cuEventSynchronize", CUresult, (CUevent e))                           \
  _(cuEventElapsedTime, "cuEventElapsedTime", CUresult, (float *ms, CUevent a, CUevent b))     \
  _(cuEventDestroy, "cuEventDestroy_v2", CUresult, (CUevent e))                                \
  _(cuLaunchKernel, "cuLaunchKernel", CUresult,                                                \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
     unsigned shared_bytes, CUstream stream, void **params, void **extra))

typedef struct {
  void *lib;                                /* the dlopen handle */
#define F(field, symbol, ret, params) ret (*field) params;
  CUDA_DRIVER_FUNCTIONS(F)
#undef F
} cuda_driver;

/* What cuda_probe found: device 0. */
typedef struct {
  char name[256];
  int sm;                                   /* compute capability, e.g. 90 for 9.0 */
  int multiprocessors;
  size_t memory;                            /* bytes */
  int driver_version;                       /* e.g. 12040 */
} cuda_device_info;

/* Opens the driver at `path` (NULL: "libcuda.so.1") and looks up every
** entry point; false with the reason in err (no library, or the first
** missing entry point). */
bool cuda_driver_load(cuda_driver *d, const char *path, char *err, size_t errlen);
void cuda_driver_unload(cuda_driver *d);

/* err = "call failed: <the driver's text> (CUDA error N)"; returns false. */
bool cuda_error(cuda_driver *d, CUresult r, const char *call, char *err, size_t errlen);

/* Initialises the driver and describes device 0; false with the reason in
** err (cuInit failed, no device, a device older than sm_70). */
bool cuda_probe(cuda_driver *d, cuda_device_info *info, char *err, size_t errlen);

#endif
