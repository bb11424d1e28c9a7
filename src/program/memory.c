/*
** memory.c -- the memory kernels see (fields, the sparse pool, ndarrays),
** reached through the backend's device-memory interface (jit.h), and single
** field elements by index.
**
** On the CPU that memory is the host's: a copy here is a memcpy. On CUDA
** every access is a copy through be->mem_read / mem_write. A failed copy
** (be->error says why, e.g. the CUDA context was lost) is a message naming
** what was accessed, worded here once.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

bool prog_host_memory(const jit_backend *be) { return !be || be->host_memory; }

/* "what 'name': cannot VERB N bytes of device memory (why)". */
static bool fail(const char *verb, size_t n, const char *what, const char *name, const char *why, char *err,
                 size_t errlen) {
  if (!what)
    snprintf(err, errlen, "cannot %s %zu bytes of device memory (%s)", verb, n, why);
  else if (!name)
    snprintf(err, errlen, "%s: cannot %s %zu bytes of device memory (%s)", what, verb, n, why);
  else
    snprintf(err, errlen, "%s '%s': cannot %s %zu bytes of device memory (%s)", what, name, verb, n, why);
  return false;
}

bool prog_mem_read(jit_backend *be, void *dst, const char *src, size_t n, const char *what, const char *name,
                   char *err, size_t errlen) {
  if (prog_host_memory(be)) memcpy(dst, src, n);
  else if (!be->mem_read(be, dst, src, n)) return fail("read", n, what, name, be->error, err, errlen);
  return true;
}

bool prog_mem_write(jit_backend *be, char *dst, const void *src, size_t n, const char *what, const char *name,
                    char *err, size_t errlen) {
  if (prog_host_memory(be)) memcpy(dst, src, n);
  else if (!be->mem_write(be, dst, src, n)) return fail("write", n, what, name, be->error, err, errlen);
  return true;
}

/* ---- field elements ------------------------------------------------------------------ */

char *prog_element(prog_program *p, const ir_snode *s, char *root, const int64_t *idx, bool write) {
  if (!ir_snode_under_sparse(s)) return root + ir_snode_offset(s, idx);
  return jit_sparse_element(p->sparse, s, root, idx, write);
}

void prog_shape_text(const ir_snode *s, char *buf, size_t len) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, len - n, "(");
  for (int i = 0; i < s->nidx && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s->total_shape[i]);
  if (n < len) snprintf(buf + n, len - n, ")");
}

void prog_box_text(const ir_snode *s, char *buf, size_t len) {
  bool offset = false;
  for (int i = 0; i < s->nidx; i++) offset = offset || s->index_offset[i] != 0;
  if (!offset) {
    size_t n = (size_t)snprintf(buf, len, "shape ");
    if (n < len) prog_shape_text(s, buf + n, len - n);
    return;
  }
  size_t n = 0;
  for (int i = 0; i < s->nidx && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, "%s[%lld, %lld)", i ? " x " : "box ", (long long)s->index_offset[i],
                          (long long)(s->index_offset[i] + s->total_shape[i]));
}

bool prog_check_index(const ir_snode *s, const int64_t *idx, char *err, size_t errlen) {
  for (int i = 0; i < s->nidx; i++) {
    if (idx[i] < 0 || idx[i] >= s->total_shape[i]) {
      char shape[160];
      prog_shape_text(s, shape, sizeof shape);
      snprintf(err, errlen, "index %lld out of range for axis %d of field '%s' with shape %s", (long long)idx[i],
               i, s->name ? s->name : "?", shape);
      return false;
    }
  }
  return true;
}

static size_t elem_bytes(const ir_snode *s) { return (size_t)(ir_type_bits(s->dtype) + 7) / 8; }

bool prog_field_read(prog_program *p, const ir_snode *s, char *root, const int64_t *idx, void *value, char *err,
                     size_t errlen) {
  if (!prog_check_index(s, idx, err, errlen)) return false;
  const char *e = prog_element(p, s, root, idx, false);
  if (!e) {
    memset(value, 0, elem_bytes(s));
    return true;
  }
  return prog_mem_read(p->be, value, e, elem_bytes(s), "field", s->name, err, errlen);
}

bool prog_field_write(prog_program *p, const ir_snode *s, char *root, const int64_t *idx, const void *value,
                      char *err, size_t errlen) {
  if (!prog_check_index(s, idx, err, errlen)) return false;
  char *e = prog_element(p, s, root, idx, true);
  if (!e) {
    if (!prog_take_error(p, err, errlen))
      snprintf(err, errlen, "cannot activate the cell of field '%s'", s->name ? s->name : "?");
    return false;
  }
  return prog_mem_write(p->be, e, value, elem_bytes(s), "field", s->name, err, errlen);
}

/* Advances idx through the box row-major; false after the last element. */
static bool next_in_box(int n, const int64_t *begin, const int64_t *extent, int64_t *idx) {
  for (int i = n - 1; i >= 0; i--) {
    if (++idx[i] < begin[i] + extent[i]) return true;
    idx[i] = begin[i];
  }
  return false;
}

bool prog_field_box(prog_program *p, const ir_snode *s, char *root, const int64_t *begin, const int64_t *extent,
                    void *dst, const void *src, char *err, size_t errlen) {
  size_t es = elem_bytes(s);
  int64_t count = 1, idx[IR_MAX_INDICES] = {0};
  for (int i = 0; i < s->nidx; i++) {
    count *= extent[i];
    idx[i] = begin[i];
  }
  if (count == 0) return true;
  bool host = prog_host_memory(p->be);
  if (ir_snode_under_sparse(s) || (!host && count <= 64)) {   /* element by element, through the runtime */
    for (int64_t k = 0;; k++) {
      bool ok = dst ? prog_field_read(p, s, root, idx, (char *)dst + k * (int64_t)es, err, errlen)
                    : prog_field_write(p, s, root, idx, (const char *)src + k * (int64_t)es, err, errlen);
      if (!ok) return false;
      if (!next_in_box(s->nidx, begin, extent, idx)) return true;
    }
  }
  /* Under dense levels the field lies in [lo, lo + n) of its instance (each
  ** level above adds at most num_cells - 1 cells): on a device that span is
  ** copied once each way (a write is a read-modify-write: fields sharing the
  ** cells lie in it too); in host memory it is the memory itself. */
  int64_t zero[IR_MAX_INDICES] = {0};
  int64_t lo = ir_snode_offset(s, zero), n = (int64_t)es;
  for (const ir_snode *a = s->parent; a; a = a->parent) n += (a->num_cells - 1) * a->cell_bytes;
  char *view = root + lo;
  if (!host) {
    view = malloc((size_t)n);
    if (!view) {
      snprintf(err, errlen, "field '%s': out of host memory for a copy of %lld bytes", s->name ? s->name : "?",
               (long long)n);
      return false;
    }
    if (!prog_mem_read(p->be, view, root + lo, (size_t)n, "field", s->name, err, errlen)) {
      free(view);
      return false;
    }
  }
  for (int64_t k = 0;; k++) {
    char *e = view + (ir_snode_offset(s, idx) - lo);
    if (dst) memcpy((char *)dst + k * (int64_t)es, e, es);
    else memcpy(e, (const char *)src + k * (int64_t)es, es);
    if (!next_in_box(s->nidx, begin, extent, idx)) break;
  }
  bool ok = host || dst || prog_mem_write(p->be, root + lo, view, (size_t)n, "field", s->name, err, errlen);
  if (!host) free(view);
  return ok;
}
