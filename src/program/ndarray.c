/*
** ndarray.c -- arrays of one scalar type passed to kernels as arguments.
**
** Elements are row-major (the last index varies fastest), numbered
** 0..size-1. A kernel gets the data's address and the extents as arguments,
** so one compiled kernel serves every shape.
**
** Where the data lives: on a backend with host memory (the CPU), a 64-byte
** aligned host allocation that belongs to no program, or the host's own
** buffer (prog_ndarray_wrap: no copy; the owner's release callback runs when
** the last reference goes). On a device (CUDA), memory from the program's
** be->mem_alloc, reached only through copies; such an array belongs to that
** program and is unusable once the program is reset. An array made before
** any program (or on the CPU) starts in host memory and moves to the device
** on its first launch there.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

jit_backend *prog_ndarray_backend(const prog_ndarray *a) { return a->prog ? a->prog->be : NULL; }

size_t prog_ndarray_elem_bytes(const prog_ndarray *a) { return (size_t)ir_type_bits(a->dtype) / 8; }

static bool device_program(const prog_program *p) { return p && p->ir && p->be && !prog_host_memory(p->be); }

/* Checks the shape (extents and the element count are i32 in kernels) and
** fills a's type, shape and size. */
static bool set_shape(prog_ndarray *a, ir_type t, int ndim, const int64_t *shape, char *err, size_t errlen) {
  if (t <= IR_i1 || t >= IR_NUM_TYPES) {
    snprintf(err, errlen, "an ndarray's element type must be a number type");
    return false;
  }
  if (ndim < 1 || ndim > IR_MAX_INDICES) {
    snprintf(err, errlen, "an ndarray has 1 to %d dimensions, got %d", IR_MAX_INDICES, ndim);
    return false;
  }
  a->dtype = t;
  a->ndim = ndim;
  a->size = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] <= 0) {
      snprintf(err, errlen, "extent %d of the ndarray is %lld; extents must be positive", i, (long long)shape[i]);
      return false;
    }
    if (shape[i] > INT32_MAX || a->size > INT32_MAX / shape[i]) {
      snprintf(err, errlen, "the array is too large (at most 2^31 - 1 elements)");
      return false;
    }
    a->shape[i] = shape[i];
    a->size *= shape[i];
  }
  return true;
}

prog_ndarray *prog_ndarray_new(prog_program *prog, ir_type t, int ndim, const int64_t *shape, char *err,
                               size_t errlen) {
  prog_ndarray *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (!set_shape(a, t, ndim, shape, err, errlen)) {
    free(a);
    return NULL;
  }
  a->refs = 1;
  a->bytes = ((size_t)a->size * prog_ndarray_elem_bytes(a) + 63) / 64 * 64;
  if (device_program(prog)) {
    a->data = prog->be->mem_alloc(prog->be, a->bytes);   /* zeroed */
    if (!a->data) {
      snprintf(err, errlen, "cannot allocate %zu bytes of device memory (%s)", a->bytes, prog->be->error);
      free(a);
      return NULL;
    }
    a->prog = prog;
    prog_retain(prog);
  } else {
    a->data = aligned_alloc(64, a->bytes);
    if (!a->data) {
      snprintf(err, errlen, "out of memory allocating %zu bytes", a->bytes);
      free(a);
      return NULL;
    }
    memset(a->data, 0, a->bytes);
  }
  return a;
}

prog_ndarray *prog_ndarray_wrap(prog_program *prog, ir_type t, int ndim, const int64_t *shape, void *data,
                                size_t bytes, void (*release)(void *ud, void *data), void *ud, char *err,
                                size_t errlen) {
  prog_ndarray probe = {0};
  if (!data) {
    snprintf(err, errlen, "the host buffer is NULL");
    return NULL;
  }
  if (!set_shape(&probe, t, ndim, shape, err, errlen)) return NULL;
  size_t need = (size_t)probe.size * prog_ndarray_elem_bytes(&probe);
  if (bytes != need) {
    snprintf(err, errlen,
             "the host buffer has %zu bytes, but a row-major, contiguous %s array of %lld elements needs %zu",
             bytes, ir_type_name(t), (long long)probe.size, need);
    return NULL;
  }
  if ((uintptr_t)data % prog_ndarray_elem_bytes(&probe) != 0) {
    snprintf(err, errlen, "the host buffer at %p is not aligned to its %s elements (%zu bytes)", data,
             ir_type_name(t), prog_ndarray_elem_bytes(&probe));
    return NULL;
  }
  if (device_program(prog)) {   /* a device: a copy in its memory; the host's buffer goes back now */
    prog_ndarray *a = prog_ndarray_new(prog, t, ndim, shape, err, errlen);
    if (!a) return NULL;
    if (!prog_mem_write(prog->be, a->data, data, need, "ndarray", NULL, err, errlen)) {
      prog_ndarray_release(a);
      return NULL;
    }
    if (release) release(ud, data);
    return a;
  }
  prog_ndarray *a = malloc(sizeof *a);
  if (!a) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  *a = probe;
  a->refs = 1;
  a->bytes = need;
  a->data = data;
  a->borrowed = true;
  a->release = release;
  a->release_ud = ud;
  return a;
}

bool prog_ndarray_detach(prog_ndarray *a, bool keep) {
  if (!a->borrowed) return true;
  size_t bytes = (a->bytes + 63) / 64 * 64;
  char *copy = aligned_alloc(64, bytes);
  if (copy && keep) memcpy(copy, a->data, a->bytes);
  else if (copy) memset(copy, 0, bytes);
  if (a->release) a->release(a->release_ud, a->data);
  a->data = copy;
  a->borrowed = false, a->release = NULL, a->release_ud = NULL;
  return copy != NULL;
}

void prog_ndarray_retain(prog_ndarray *a) { a->refs++; }

void prog_ndarray_release(prog_ndarray *a) {
  if (!a || --a->refs > 0) return;
  if (a->borrowed) {
    if (a->release) a->release(a->release_ud, a->data);
  } else if (!a->prog) {
    free(a->data);
  } else if (a->data && a->prog->ir && a->prog->be) {   /* (a reset program's backend took its memory with it) */
    a->prog->be->mem_free(a->prog->be, a->data, a->bytes);
  }
  if (a->prog) prog_release(a->prog);
  free(a);
}

bool prog_ndarray_usable(const prog_ndarray *a, char *err, size_t errlen) {
  if (a->prog && !a->prog->ir) {
    snprintf(err, errlen, "this ndarray was in the device memory of a program that has been reset; its values "
                          "are gone: make it again");
    return false;
  }
  return true;
}

char *prog_ndarray_address(prog_ndarray *a, prog_program *prog, char *err, size_t errlen) {
  if (!prog_ndarray_usable(a, err, errlen)) return NULL;
  if (!device_program(prog) || a->prog == prog) return a->data;
  if (a->prog) {
    snprintf(err, errlen, "this ndarray is in the device memory of another program");
    return NULL;
  }
  /* a host array's first launch on a device: it moves there */
  jit_backend *be = prog->be;
  char *d = be->mem_alloc(be, a->bytes);
  if (!d) {
    snprintf(err, errlen, "cannot allocate %zu bytes of device memory for an ndarray (%s)", a->bytes, be->error);
    return NULL;
  }
  if (!prog_mem_write(be, d, a->data, (size_t)a->size * prog_ndarray_elem_bytes(a), "ndarray", NULL, err,
                      errlen)) {
    be->mem_free(be, d, a->bytes);
    return NULL;
  }
  if (!a->borrowed) free(a->data);
  else if (a->release) a->release(a->release_ud, a->data);
  a->borrowed = false;
  a->release = NULL;
  a->data = d;
  a->prog = prog;
  prog_retain(prog);
  return d;
}

static bool whole(const prog_ndarray *a, size_t bytes, char *err, size_t errlen) {
  size_t n = (size_t)a->size * prog_ndarray_elem_bytes(a);
  if (bytes == n) return prog_ndarray_usable(a, err, errlen);
  snprintf(err, errlen, "the buffer has %zu bytes; the ndarray's %lld %s elements take %zu", bytes,
           (long long)a->size, ir_type_name(a->dtype), n);
  return false;
}

bool prog_ndarray_read(prog_ndarray *a, void *dst, size_t bytes, char *err, size_t errlen) {
  return whole(a, bytes, err, errlen) &&
         prog_mem_read(prog_ndarray_backend(a), dst, a->data, bytes, "ndarray", NULL, err, errlen);
}

bool prog_ndarray_write(prog_ndarray *a, const void *src, size_t bytes, char *err, size_t errlen) {
  return whole(a, bytes, err, errlen) &&
         prog_mem_write(prog_ndarray_backend(a), a->data, src, bytes, "ndarray", NULL, err, errlen);
}
