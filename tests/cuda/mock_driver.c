/*
** mock_driver.c -- a stand-in for libcuda.so.1, so that the CUDA backend's
** host logic (memory, modules, launches, error paths) can be tested on a
** machine without a GPU: point LT_CUDA_DRIVER at the library CMake builds
** from this file (build/tests/cuda/libltmockcuda.so). tests/README.md
** describes it for users of the mock; this comment says how it behaves.
**
** One device, "Lattice mock GPU": sm_80, 4 multiprocessors, driver 12040,
** LT_MOCK_CUDA_MEMORY bytes of memory (default 1 GiB; read at every call).
** Device addresses are host addresses (malloc'd, 256-byte aligned) filled
** with 0xA5 as allocated, because the real cuMemAlloc does not zero either.
** Copies and memsets must stay inside one live allocation, as on a GPU.
**
** The mock cannot run PTX. A kernel named lt_serve(rt_runtime *rt,
** rt_request *req) -- the backend's host-request kernel -- runs rt_serve
** natively (the runtime's C sources are linked in; a test may put its own
** function in rt_serve's place); every other launch is counted and does
** nothing. Modules must be PTX text with .version and .target; a function
** exists when the PTX has `.entry NAME(`.
**
** LT_MOCK_CUDA_FAIL (read at every call; a comma-separated list) injects
** failures: "module": cuModuleLoadDataEx fails with CUDA_ERROR_INVALID_PTX
** and a log; "launch": cuLaunchKernel fails with CUDA_ERROR_LAUNCH_FAILED;
** "sync": a launch (not lt_serve) faults, and the next synchronizing call
** (cuCtxSynchronize, cuEventSynchronize, the memcpys, cuMemFree) returns
** CUDA_ERROR_ILLEGAL_ADDRESS; the context is then lost, and every later call
** on it returns the same, like the real driver, until the primary context
** is released to zero retains (which destroys it and everything in it).
**
** LT_MOCK_CUDA_PTXAS=<ptxas>: every module loaded is also assembled for
** sm_80, and refused with ptxas's output as the log when it does not.
**
** The current context is per thread, as in the driver: a thread that never
** called cuCtxSetCurrent gets CUDA_ERROR_INVALID_CONTEXT.
*/
#include <pthread.h>
#include <sys/mman.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jit/cuda/cuda_driver.h"

#ifdef LT_MOCK_HAVE_SERVE
#include "runtime/service.h"
#endif

/* Every entry point of cuda_driver.h, exported under the driver's symbol
** name (cuMemAlloc is cuMemAlloc_v2): the X-macro declares them, so a
** definition below whose signature differs does not compile, and one that
** is missing does not link (every_entry_point refers to all of them; -z defs
** in tests/tests.cmake). */
#define EXPORT __attribute__((visibility("default")))
#define F(field, symbol, ret, params) EXPORT ret field params __asm__(symbol);
CUDA_DRIVER_FUNCTIONS(F)
#undef F
#define F(field, symbol, ret, params) .field = field,
__attribute__((used)) static const cuda_driver every_entry_point = {CUDA_DRIVER_FUNCTIONS(F)};
#undef F

struct rt_runtime;                  /* src/runtime/runtime.h */
struct rt_request;                  /* src/runtime/service.h */

/* Extras for tests (tests/unit/test_cuda_mock.c), looked up with dlsym. */
EXPORT int lt_mock_cuda_launches(void);
EXPORT int lt_mock_cuda_serves(void);
EXPORT size_t lt_mock_cuda_allocated(void);
EXPORT const char *lt_mock_cuda_last_kernel(void);
typedef void (*lt_mock_cuda_serve_fn)(struct rt_runtime *rt, struct rt_request *req);
EXPORT void lt_mock_cuda_set_serve(lt_mock_cuda_serve_fn fn);
EXPORT int lt_mock_cuda_native(CUmodule m, const char *name, void (*fn)(void *, int64_t, int64_t), int32_t *sregs);

/* CUresult values the mock returns beyond cuda_driver.h's */
enum {
  ERR_INVALID_VALUE = 1,
  ERR_NOT_INITIALIZED = 3,
  ERR_NO_DEVICE = 100,
  ERR_INVALID_DEVICE = 101,
  ERR_INVALID_IMAGE = 200,
  ERR_INVALID_CONTEXT = 201,
  ERR_INVALID_PTX = 218,
  ERR_INVALID_HANDLE = 400,
  ERR_NOT_SUPPORTED = 801,
};

#define MOCK_NAME "Lattice mock GPU"
#define MOCK_SM_MAJOR 8
#define MOCK_SM_MINOR 0
#define MOCK_SMS 4
#define MOCK_DRIVER 12040
#define MOCK_ALIGN 256
#define MOCK_FILL 0xA5
#define MOCK_MAX_THREADS 1024
#define MOCK_MAX_SHARED 49152

/* ---- state: one device, its primary context, guarded by one lock ----------- */

typedef struct { char *p; size_t bytes, mapped; } allocation;   /* mapped: whole pages */

#define NAME_MAX_BYTES 256

typedef void (*native_entry)(void *ctx, int64_t begin, int64_t end);
struct CUfunc_st {
  struct CUfunc_st *next;
  char name[NAME_MAX_BYTES];
  native_entry native;              /* a host build of the entry (lt_mock_cuda_native) */
  int32_t *sregs;                   /* where it reads tid.x, ntid.x, ctaid.x, nctaid.x */
};
struct CUmod_st {
  struct CUmod_st *next;
  char *ptx;
  struct CUfunc_st *functions;
};
struct CUevent_st {
  struct CUevent_st *next;
  int recorded;
  double ms;                        /* the host's monotonic clock when recorded */
};
struct CUctx_st { int unused; };

static void free_module(struct CUmod_st *m) {
  while (m->functions) {
    struct CUfunc_st *f = m->functions;
    m->functions = f->next;
    free(f);
  }
  free(m->ptx);
  free(m);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct CUctx_st primary;
static int retains;                 /* primary context alive while > 0 */
static _Thread_local int current;   /* this thread made the primary current */
static int lost;                    /* a kernel faulted: sticky ILLEGAL_ADDRESS */
static int fault_pending;           /* ... reported at the next synchronizing call */
static allocation *allocs;
static size_t nallocs, cap_allocs, used_bytes;
static struct CUmod_st *modules;
static struct CUevent_st *events;
static int launches, serves;
static char last_kernel[NAME_MAX_BYTES];
static lt_mock_cuda_serve_fn serve_hook;   /* replaces rt_serve when set */

/* Whether LT_MOCK_CUDA_FAIL lists `what`. */
static int fail_on(const char *what) {
  const char *s = getenv("LT_MOCK_CUDA_FAIL");
  size_t n = strlen(what);
  while (s && *s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == n && strncmp(s, what, n) == 0) return 1;
    s = end ? end + 1 : NULL;
  }
  return 0;
}

static size_t total_memory(void) {
  const char *s = getenv("LT_MOCK_CUDA_MEMORY");
  if (s && *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 0 && v > 0) return (size_t)v;
    fprintf(stderr, "mock CUDA driver: LT_MOCK_CUDA_MEMORY=%s is not a byte count; using 1 GiB\n", s);
  }
  return (size_t)1 << 30;
}

/* The checks every call on the context makes, in the driver's order. */
static CUresult context_ok(void) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (!current || retains == 0) return ERR_INVALID_CONTEXT;
  if (lost) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return CUDA_SUCCESS;
}

/* A call that waits for the GPU: where a faulted kernel is noticed. */
static CUresult synchronize(void) {
  CUresult r = context_ok();
  if (r) return r;
  if (fault_pending) {
    fault_pending = 0;
    lost = 1;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_SUCCESS;
}

/* The allocation holding [p, p + n), or NULL. */
static allocation *find_range(CUdeviceptr p, size_t n) {
  for (size_t i = 0; i < nallocs; i++) {
    uintptr_t base = (uintptr_t)allocs[i].p;
    if (p >= base && p - base <= allocs[i].bytes && n <= allocs[i].bytes - (p - base)) return &allocs[i];
  }
  return NULL;
}

static void destroy_context(void) {
  for (size_t i = 0; i < nallocs; i++) munmap(allocs[i].p, allocs[i].mapped);
  free(allocs);
  allocs = NULL;
  nallocs = cap_allocs = used_bytes = 0;
  while (modules) {
    struct CUmod_st *m = modules;
    modules = m->next;
    free_module(m);
  }
  while (events) {
    struct CUevent_st *e = events;
    events = e->next;
    free(e);
  }
  lost = fault_pending = 0;
}

/* Every entry point takes the lock; the bodies below run under it. */
/* LT_MOCK_CUDA_GUARD=1: device memory is mapped PROT_NONE whenever no driver
** call is running, so host code that dereferences a device address (instead
** of copying) crashes at once, as it would with a real GPU. Slow with large
** pools (every call changes the protection of every allocation). */
static int guard = -1;
static void expose(int on) {
  if (guard < 0) {
    const char *g = getenv("LT_MOCK_CUDA_GUARD");
    guard = g && *g && strcmp(g, "0") != 0;
  }
  if (!guard) return;
  for (size_t i = 0; i < nallocs; i++)
    mprotect(allocs[i].p, allocs[i].mapped, on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

#define LOCKED(body)                     \
  do {                                   \
    pthread_mutex_lock(&lock);           \
    expose(1);                           \
    CUresult locked_r_ = (body);         \
    expose(0);                           \
    pthread_mutex_unlock(&lock);         \
    return locked_r_;                    \
  } while (0)

/* ---- driver, device, context ---------------------------------------------- */

CUresult cuInit(unsigned flags) {
  if (flags != 0) return ERR_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  initialized = 1;
  pthread_mutex_unlock(&lock);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  if (!version) return ERR_INVALID_VALUE;
  *version = MOCK_DRIVER;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char **text) {
  static const struct { int code; const char *text; } texts[] = {
    {CUDA_SUCCESS, "no error"},
    {ERR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {ERR_NOT_INITIALIZED, "initialization error"},
    {ERR_NO_DEVICE, "no CUDA-capable device is detected"},
    {ERR_INVALID_DEVICE, "invalid device ordinal"},
    {ERR_INVALID_IMAGE, "device kernel image is invalid"},
    {ERR_INVALID_CONTEXT, "invalid device context"},
    {ERR_INVALID_PTX, "a PTX JIT compilation failed"},
    {ERR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {ERR_NOT_SUPPORTED, "operation not supported"},
  };
  if (!text) return ERR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (texts[i].code == e) {
      *text = texts[i].text;
      return CUDA_SUCCESS;
    }
  *text = NULL;                      /* what the driver does for unknown codes */
  return ERR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *count) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (!count) return ERR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (!dev) return ERR_INVALID_VALUE;
  if (ordinal != 0) return ERR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (dev != 0) return ERR_INVALID_DEVICE;
  if (!name || len <= 0) return ERR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", MOCK_NAME);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (dev != 0) return ERR_INVALID_DEVICE;
  if (!v) return ERR_INVALID_VALUE;
  switch (attr) {
  case 1: *v = MOCK_MAX_THREADS; break;            /* MAX_THREADS_PER_BLOCK */
  case 2: case 3: *v = 1024; break;                /* MAX_BLOCK_DIM_X, _Y */
  case 4: *v = 64; break;                          /* MAX_BLOCK_DIM_Z */
  case 5: *v = 2147483647; break;                  /* MAX_GRID_DIM_X */
  case 6: case 7: *v = 65535; break;               /* MAX_GRID_DIM_Y, _Z */
  case 8: *v = MOCK_MAX_SHARED; break;             /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 10: *v = 32; break;                         /* WARP_SIZE */
  case CU_ATTR_MULTIPROCESSOR_COUNT: *v = MOCK_SMS; break;
  case 39: *v = 2048; break;                       /* MAX_THREADS_PER_MULTIPROCESSOR */
  case CU_ATTR_COMPUTE_CAPABILITY_MAJOR: *v = MOCK_SM_MAJOR; break;
  case CU_ATTR_COMPUTE_CAPABILITY_MINOR: *v = MOCK_SM_MINOR; break;
  default: return ERR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (dev != 0) return ERR_INVALID_DEVICE;
  if (!bytes) return ERR_INVALID_VALUE;
  *bytes = total_memory();
  return CUDA_SUCCESS;
}

static CUresult retain(CUcontext *ctx, CUdevice dev) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (dev != 0) return ERR_INVALID_DEVICE;
  if (!ctx) return ERR_INVALID_VALUE;
  retains++;
  *ctx = &primary;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) { LOCKED(retain(ctx, dev)); }

static CUresult release(CUdevice dev) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (dev != 0) return ERR_INVALID_DEVICE;
  if (retains == 0) return ERR_INVALID_CONTEXT;
  if (--retains == 0) destroy_context();  /* the driver destroys it at zero retains */
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { LOCKED(release(dev)); }

static CUresult set_current(CUcontext ctx) {
  if (!initialized) return ERR_NOT_INITIALIZED;
  if (ctx && (ctx != &primary || retains == 0)) return ERR_INVALID_CONTEXT;
  current = ctx != NULL;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) { LOCKED(set_current(ctx)); }

CUresult cuCtxSynchronize(void) { LOCKED(synchronize()); }

/* ---- memory ------------------------------------------------------------------ */

static CUresult mem_alloc(CUdeviceptr *p, size_t bytes) {
  CUresult r = context_ok();
  if (r) return r;
  if (!p || bytes == 0) return ERR_INVALID_VALUE;
  size_t rounded = (bytes + MOCK_ALIGN - 1) / MOCK_ALIGN * MOCK_ALIGN;
  size_t total = total_memory();
  if (rounded < bytes || used_bytes > total || rounded > total - used_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  if (nallocs == cap_allocs) {
    size_t cap = cap_allocs ? 2 * cap_allocs : 64;
    allocation *a = realloc(allocs, cap * sizeof *a);
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    allocs = a;
    cap_allocs = cap;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE), mapped = (rounded + page - 1) / page * page;
  void *mem = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  /* not zero: code that forgets to zero shows (in large allocations the first
  ** and last MiB, so that a big pool costs no memory until used) */
  if (rounded <= (4u << 20)) {
    memset(mem, MOCK_FILL, rounded);
  } else {
    memset(mem, MOCK_FILL, 1u << 20);
    memset((char *)mem + rounded - (1u << 20), MOCK_FILL, 1u << 20);
  }
  allocs[nallocs++] = (allocation){mem, rounded, mapped};
  used_bytes += rounded;
  *p = (CUdeviceptr)(uintptr_t)mem;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) { LOCKED(mem_alloc(p, bytes)); }

static CUresult mem_free(CUdeviceptr p) {
  CUresult r = synchronize();
  if (r) return r;
  if (p == 0) return CUDA_SUCCESS;     /* like cudaFree(0) */
  for (size_t i = 0; i < nallocs; i++)
    if ((uintptr_t)allocs[i].p == p) {
      munmap(allocs[i].p, allocs[i].mapped);
      used_bytes -= allocs[i].bytes;
      allocs[i] = allocs[--nallocs];
      return CUDA_SUCCESS;
    }
  return ERR_INVALID_VALUE;            /* not the start of a live allocation */
}
CUresult cuMemFree(CUdeviceptr p) { LOCKED(mem_free(p)); }

static CUresult mem_info(size_t *free_bytes, size_t *total) {
  CUresult r = context_ok();
  if (r) return r;
  if (!free_bytes || !total) return ERR_INVALID_VALUE;
  *total = total_memory();
  *free_bytes = used_bytes < *total ? *total - used_bytes : 0;
  return CUDA_SUCCESS;
}
CUresult cuMemGetInfo(size_t *free_bytes, size_t *total) { LOCKED(mem_info(free_bytes, total)); }

/* A copy or memset touching device memory: checks, then memmove/memset. */
static CUresult copy(void *dst, CUdeviceptr ddst, const void *src, CUdeviceptr dsrc, size_t n) {
  CUresult r = synchronize();
  if (r) return r;
  if (n == 0) return CUDA_SUCCESS;
  if ((ddst && !find_range(ddst, n)) || (dsrc && !find_range(dsrc, n))) return ERR_INVALID_VALUE;
  if (!ddst && !dst) return ERR_INVALID_VALUE;
  if (!dsrc && !src) return ERR_INVALID_VALUE;
  memmove(ddst ? (void *)(uintptr_t)ddst : dst, dsrc ? (const void *)(uintptr_t)dsrc : src, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  if (!dst) return ERR_INVALID_VALUE;
  LOCKED(copy(NULL, dst, src, 0, n));
}
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  if (!src) return ERR_INVALID_VALUE;
  LOCKED(copy(dst, 0, NULL, src, n));
}
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (!dst || !src) return ERR_INVALID_VALUE;
  LOCKED(copy(NULL, dst, NULL, src, n));
}
/* The asynchronous copies on the default stream: the queued launches run
** first (copy synchronises), then the copy, so the order is the stream's;
** only the default stream exists here. */
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  if (!dst || s) return ERR_INVALID_VALUE;
  LOCKED(copy(NULL, dst, src, 0, n));
}
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  if (!src || s) return ERR_INVALID_VALUE;
  LOCKED(copy(dst, 0, NULL, src, n));
}
/* Page-locked host memory is plain host memory here. */
static CUresult alloc_host(void **p, size_t bytes) {
  CUresult r = context_ok();
  if (r) return r;
  if (!p || bytes == 0) return ERR_INVALID_VALUE;
  *p = malloc(bytes);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemAllocHost(void **p, size_t bytes) { LOCKED(alloc_host(p, bytes)); }
CUresult cuMemFreeHost(void *p) {
  free(p);
  return CUDA_SUCCESS;
}

/* memset; whole pages set to zero are handed back to the kernel instead
** (they read as zero again), so clearing a large pool commits no memory. */
static void zero_or_set(char *p, unsigned char v, size_t n) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)p + page - 1) / page * page, b = ((uintptr_t)p + n) / page * page;
  if (v != 0 || b <= a) {
    memset(p, v, n);
    return;
  }
  memset(p, 0, a - (uintptr_t)p);
  madvise((void *)a, b - a, MADV_DONTNEED);
  memset((void *)b, 0, (uintptr_t)p + n - b);
}

static CUresult memset8(CUdeviceptr dst, unsigned char v, size_t n) {
  CUresult r = context_ok();           /* asynchronous: does not report faults */
  if (r) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (!find_range(dst, n)) return ERR_INVALID_VALUE;
  zero_or_set((char *)(uintptr_t)dst, v, n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) { LOCKED(memset8(dst, v, n)); }

/* ---- modules and functions ------------------------------------------------------ */

/* Writes the JIT error log the way the driver does: into the buffer of
** CU_JIT_ERROR_LOG_BUFFER, at most the bytes of _SIZE_BYTES, whose value the
** driver then replaces by the bytes written. */
static void jit_log(unsigned nopts, int *opts, void **values, const char *text) {
  char *buf = NULL;
  int size_at = -1;
  for (unsigned i = 0; i < nopts; i++) {
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) buf = values[i];
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) size_at = (int)i;
  }
  if (!buf || size_at < 0) return;
  size_t size = (size_t)(uintptr_t)values[size_at];
  if (size == 0) return;
  snprintf(buf, size, "%s", text);
  size_t written = strlen(buf) + 1;
  values[size_at] = (void *)(uintptr_t)written;
}

/* With LT_MOCK_CUDA_PTXAS=<ptxas>, every module is assembled for the mock's
** sm_80 the way the driver's JIT would, and refused with ptxas's complaint in
** the log: the mock/ tests then check the exact PTX the backend loads (the
** runtime's request kernel, libdevice linked in). */
static bool assembles(const char *ptx, unsigned nopts, int *opts, void **values) {
  const char *ptxas = getenv("LT_MOCK_CUDA_PTXAS");
  if (!ptxas || !*ptxas || strchr(ptxas, '\'')) return true;
  char path[] = "/tmp/lt_mock_ptx_XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return true;   /* cannot check: accept, as the mock did before */
  fputs(ptx, f);
  fclose(f);
  char cmd[1200], out[1024] = "";
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_80 -c '%s' -o /dev/null 2>&1", ptxas, path);
  FILE *p = popen(cmd, "r");
  size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
  out[n] = 0;
  int rc = p ? pclose(p) : -1;
  unlink(path);
  if (rc == 0) return true;
  jit_log(nopts, opts, values, out[0] ? out : "ptxas failed");
  return false;
}

static CUresult load(CUmodule *m, const void *image, unsigned nopts, int *opts, void **values) {
  CUresult r = context_ok();
  if (r) return r;
  if (!m || !image || (nopts && (!opts || !values))) return ERR_INVALID_VALUE;
  const char *ptx = image;
  if (strncmp(ptx, "\177ELF", 4) == 0) return ERR_INVALID_IMAGE;   /* a cubin: PTX text only */
  if (fail_on("module")) {
    jit_log(nopts, opts, values,
            "ptxas application ptx input, line 1; error   : mock failure (LT_MOCK_CUDA_FAIL=module)");
    return ERR_INVALID_PTX;
  }
  if (!strstr(ptx, ".version")) {
    jit_log(nopts, opts, values, "ptxas application ptx input, line 1; fatal   : Missing .version directive");
    return ERR_INVALID_PTX;
  }
  if (!strstr(ptx, ".target")) {
    jit_log(nopts, opts, values, "ptxas application ptx input, line 1; fatal   : Missing .target directive");
    return ERR_INVALID_PTX;
  }
  if (!assembles(ptx, nopts, opts, values)) return ERR_INVALID_PTX;
  struct CUmod_st *mod = calloc(1, sizeof *mod);
  if (!mod || !(mod->ptx = strdup(ptx))) {
    free(mod);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  mod->next = modules;
  modules = mod;
  *m = mod;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned nopts, int *opts, void **values) {
  LOCKED(load(m, image, nopts, opts, values));
}

static struct CUmod_st **find_module(CUmodule m) {
  struct CUmod_st **p = &modules;
  while (*p && *p != m) p = &(*p)->next;
  return *p ? p : NULL;
}

static CUresult unload(CUmodule m) {
  CUresult r = context_ok();
  if (r) return r;
  struct CUmod_st **p = find_module(m);
  if (!p) return ERR_INVALID_HANDLE;
  *p = m->next;
  free_module(m);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { LOCKED(unload(m)); }

static int is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

/* Whether the PTX declares a kernel `.entry NAME(` (spaces allowed around NAME). */
static int has_entry(const char *ptx, const char *name) {
  size_t n = strlen(name);
  for (const char *s = strstr(ptx, ".entry"); s; s = strstr(s + 1, ".entry")) {
    const char *p = s + 6;
    if (*p != ' ' && *p != '\t') continue;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, name, n) != 0 || is_ident(p[n])) continue;
    p += n;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == '(') return 1;
  }
  return 0;
}

static CUresult get_function(CUfunction *f, CUmodule m, const char *name) {
  CUresult r = context_ok();
  if (r) return r;
  if (!f || !name) return ERR_INVALID_VALUE;
  if (!find_module(m)) return ERR_INVALID_HANDLE;
  for (struct CUfunc_st *g = m->functions; g; g = g->next)
    if (strcmp(g->name, name) == 0) {
      *f = g;                          /* the same handle every time, as the driver */
      return CUDA_SUCCESS;
    }
  if (strlen(name) >= NAME_MAX_BYTES || !has_entry(m->ptx, name)) return CUDA_ERROR_NOT_FOUND;
  struct CUfunc_st *g = calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  strcpy(g->name, name);
  g->next = m->functions;
  m->functions = g;
  *f = g;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { LOCKED(get_function(f, m, name)); }

static int function_alive(CUfunction f) {
  for (struct CUmod_st *m = modules; m; m = m->next)
    for (struct CUfunc_st *g = m->functions; g; g = g->next)
      if (g == f) return 1;
  return 0;
}

static CUresult func_attribute(int *v, int attr, CUfunction f) {
  CUresult r = context_ok();
  if (r) return r;
  if (!v) return ERR_INVALID_VALUE;
  if (!function_alive(f)) return ERR_INVALID_HANDLE;
  switch (attr) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = MOCK_MAX_THREADS; break;
  case 1: case 2: case 3: *v = 0; break;    /* shared, const, local bytes */
  case 4: *v = 32; break;                   /* registers per thread */
  case 5: case 6: *v = 80; break;           /* PTX and binary version */
  default: return ERR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) { LOCKED(func_attribute(v, attr, f)); }

/* ---- events ------------------------------------------------------------------ */

static int event_alive(CUevent e) {
  for (struct CUevent_st *x = events; x; x = x->next)
    if (x == e) return 1;
  return 0;
}

static CUresult event_create(CUevent *e, unsigned flags) {
  CUresult r = context_ok();
  if (r) return r;
  if (!e) return ERR_INVALID_VALUE;
  struct CUevent_st *x = calloc(1, sizeof *x);
  if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
  x->next = events;
  events = x;
  *e = x;
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *e, unsigned flags) { LOCKED(event_create(e, flags)); }

/* Launches run when they are made (one GPU thread after another), so the
** host's clock when an event is recorded is when the work before it ended. */
static CUresult event_record(CUevent e) {
  CUresult r = context_ok();
  if (r) return r;
  if (!event_alive(e)) return ERR_INVALID_HANDLE;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  e->recorded = 1;
  e->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) { LOCKED(event_record(e)); }

static CUresult event_sync(CUevent e) {
  CUresult r = synchronize();
  if (r) return r;
  return event_alive(e) ? CUDA_SUCCESS : ERR_INVALID_HANDLE;
}
CUresult cuEventSynchronize(CUevent e) { LOCKED(event_sync(e)); }

static CUresult event_elapsed(float *ms, CUevent a, CUevent b) {
  CUresult r = context_ok();
  if (r) return r;
  if (!ms) return ERR_INVALID_VALUE;
  if (!event_alive(a) || !event_alive(b) || !a->recorded || !b->recorded) return ERR_INVALID_HANDLE;
  *ms = (float)(b->ms - a->ms);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { LOCKED(event_elapsed(ms, a, b)); }

static CUresult event_destroy(CUevent e) {
  CUresult r = context_ok();
  if (r) return r;
  struct CUevent_st **p = &events;
  while (*p && *p != e) p = &(*p)->next;
  if (!*p) return ERR_INVALID_HANDLE;
  *p = e->next;
  free(e);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e) { LOCKED(event_destroy(e)); }

/* ---- launches ------------------------------------------------------------------ */

/* lt_serve(rt_runtime *rt, rt_request *req): params[i] points at argument i,
** and device addresses are host addresses, so the request runs right here. */
static CUresult serve(void **params) {
  if (!params || !params[0] || !params[1]) return ERR_INVALID_VALUE;
  struct rt_runtime *rt = *(struct rt_runtime **)params[0];
  struct rt_request *req = *(struct rt_request **)params[1];
  if (serve_hook) {
    serve_hook(rt, req);
  } else {
#ifdef LT_MOCK_HAVE_SERVE
    rt_serve(rt, req);
#else
    fprintf(stderr, "mock CUDA driver: built without src/runtime/service.c, cannot run lt_serve\n");
    return ERR_NOT_SUPPORTED;
#endif
  }
  serves++;
  return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared_bytes, void **params) {
  CUresult r = context_ok();
  if (r) return r;
  if (!function_alive(f)) return ERR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 ||
      bz > 64 || (unsigned long long)bx * by * bz > MOCK_MAX_THREADS || shared_bytes > MOCK_MAX_SHARED)
    return ERR_INVALID_VALUE;
  if (fail_on("launch")) return CUDA_ERROR_LAUNCH_FAILED;
  if (strcmp(f->name, "lt_serve") == 0) {
    if ((r = serve(params))) return r;
  } else if (fail_on("sync")) {
    fault_pending = 1;
  } else if (f->native) {
    /* the grid, one thread after another: entries are (ctx, i64 begin, i64 end) */
    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || !params) return ERR_INVALID_VALUE;
    void *ctx = (void *)(uintptr_t)*(CUdeviceptr *)params[0];
    int64_t begin = *(int64_t *)params[1], end = *(int64_t *)params[2];
    for (unsigned b = 0; b < gx; b++)
      for (unsigned t = 0; t < bx; t++) {
        f->sregs[0] = (int32_t)t;
        f->sregs[1] = (int32_t)bx;
        f->sregs[2] = (int32_t)b;
        f->sregs[3] = (int32_t)gx;
        f->native(ctx, begin, end);
      }
  }
  launches++;
  snprintf(last_kernel, sizeof last_kernel, "%s", f->name);
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra) {
  LOCKED(launch(f, gx, gy, gz, bx, by, bz, shared_bytes, params));
}

/* ---- extras for tests ---------------------------------------------------------- */

/* Successful launches, lt_serve included. */
int lt_mock_cuda_launches(void) {
  pthread_mutex_lock(&lock);
  int n = launches;
  pthread_mutex_unlock(&lock);
  return n;
}

/* Successful lt_serve launches (rt_serve calls). */
int lt_mock_cuda_serves(void) {
  pthread_mutex_lock(&lock);
  int n = serves;
  pthread_mutex_unlock(&lock);
  return n;
}

/* Device bytes allocated now (each allocation rounded up to 256 bytes). */
size_t lt_mock_cuda_allocated(void) {
  pthread_mutex_lock(&lock);
  size_t n = used_bytes;
  pthread_mutex_unlock(&lock);
  return n;
}

/* The name of the kernel launched last ("" before any launch). */
const char *lt_mock_cuda_last_kernel(void) { return last_kernel; }

/* Gives kernel `name` of module m a host build to run at its launches
** (cuda_emulate.c beside this file, in lattice-mockgpu): it looks for this
** entry point to know the backend talks to the mock. 0 on success. */
int lt_mock_cuda_native(CUmodule m, const char *name, native_entry fn, int32_t *sregs) {
  pthread_mutex_lock(&lock);
  CUfunction f = NULL;
  CUresult r = fn && sregs ? get_function(&f, m, name) : ERR_INVALID_VALUE;
  if (!r) {
    f->native = fn;
    f->sregs = sregs;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

/* Makes lt_serve call fn instead of rt_serve (NULL: rt_serve again), so a
** test can see the arguments a backend passes. */
void lt_mock_cuda_set_serve(lt_mock_cuda_serve_fn fn) {
  pthread_mutex_lock(&lock);
  serve_hook = fn;
  pthread_mutex_unlock(&lock);
}
