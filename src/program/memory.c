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
