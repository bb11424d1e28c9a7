/*
** module_read.c -- reading an AOT module file (module.h): the header, the
** checksum, each section's content, then (prog_module_check) the trees
** rebuilt in a program and the kernels' IR parsed and verified against
** them. The file is untrusted input: every length, count, index and name is
** checked before use and every failure is a message naming the file, the
** section and what is wrong. Needs only src/ir (and jit_hash), so the fuzz
** harness (tests/fuzz/fuzz_module.c) runs exactly this code.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../jit/kcache.h"
#include "module.h"

/* ---- a bounded cursor ------------------------------------------------------------ */

typedef struct {
  const unsigned char *p;
  size_t n, at;
  bool bad;                        /* a read ran past the end */
  char what[400];                  /* "section 3 (KERNEL 'step')": for messages */
} cursor;

static uint64_t get_le(cursor *c, int bytes) {
  if (c->bad || c->n - c->at < (size_t)bytes) {
    c->bad = true;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)c->p[c->at + (size_t)i] << (8 * i);
  c->at += (size_t)bytes;
  return v;
}
static uint32_t get_u32(cursor *c) { return (uint32_t)get_le(c, 4); }
static int64_t get_i64(cursor *c) { return (int64_t)get_le(c, 8); }
static unsigned get_u8(cursor *c) { return (unsigned)get_le(c, 1); }

/* A string into buf (cap bytes with the NUL); false when too long, not
** printable text, or past the end. */
static bool get_str(cursor *c, char *buf, size_t cap) {
  uint32_t len = get_u32(c);
  if (c->bad || len >= cap || c->n - c->at < len) {
    c->bad = true;
    return false;
  }
  memcpy(buf, c->p + c->at, len);
  buf[len] = 0;
  c->at += len;
  for (uint32_t i = 0; i < len; i++)
    if ((unsigned char)buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t') {
      c->bad = true;
      return false;
    }
  return true;
}

/* A string of any length up to max, malloc'd; NULL when bad (c->bad set). */
static char *get_text(cursor *c, uint32_t max) {
  uint32_t len = get_u32(c);
  if (c->bad || len > max || c->n - c->at < len) {
    c->bad = true;
    return NULL;
  }
  char *s = malloc((size_t)len + 1);
  if (!s) {
    c->bad = true;
    return NULL;
  }
  memcpy(s, c->p + c->at, len);
  s[len] = 0;
  c->at += len;
  if (strlen(s) != len) {          /* a NUL inside */
    free(s);
    c->bad = true;
    return NULL;
  }
  return s;
}

static bool fail(char *err, size_t errlen, const prog_module *m, const cursor *c, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
static bool fail(char *err, size_t errlen, const prog_module *m, const cursor *c, const char *fmt, ...) {
  int n = snprintf(err, errlen, "%s: %s%s", m->file, c && c->what[0] ? c->what : "", c && c->what[0] ? ": " : "");
  if (n < 0 || (size_t)n >= errlen) return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return false;
}

/* ---- sections ------------------------------------------------------------------ */

/* Room for one more of n items of `size` in *array (capacity *cap),
** doubling: a module's sections arrive one by one and their number is
** unknown until the end. */
static bool grow(void **array, int *cap, int n, size_t size) {
  if (n < *cap) return true;
  int ncap = *cap ? *cap * 2 : 4;
  void *a = realloc(*array, (size_t)ncap * size);
  if (!a) return false;
  memset((char *)a + (size_t)*cap * size, 0, (size_t)(ncap - *cap) * size);
  *array = a;
  *cap = ncap;
  return true;
}

static bool read_info(prog_module *m, cursor *c, char *err, size_t errlen) {
  get_str(c, m->lattice_version, sizeof m->lattice_version);
  get_str(c, m->triple, sizeof m->triple);
  get_str(c, m->cpu, sizeof m->cpu);
  get_str(c, m->features, sizeof m->features);
  if (c->bad) return fail(err, errlen, m, c, "truncated or malformed (Lattice version, target, CPU, features)");
  if (m->triple[0] && strcmp(m->triple, "x86_64-unknown-linux-gnu") != 0)
    return fail(err, errlen, m, c, "the module's code is for target '%s'; this runtime runs x86_64-unknown-linux-gnu",
                m->triple);
  return true;
}

static bool is_name(const char *s) { return s[0] != 0; }
/* i8 ... f64: what fields, parameters and ndarrays hold */
static bool scalar_dtype(ir_type t) { return t >= IR_i8 && t <= IR_f64; }

static bool read_tree(prog_module *m, cursor *c, char *err, size_t errlen) {
  if (m->ntrees == MOD_MAX_TREES) return fail(err, errlen, m, c, "more than %d tree types", MOD_MAX_TREES);
  if (!grow((void **)&m->trees, &m->trees_cap, m->ntrees, sizeof *m->trees))
    return fail(err, errlen, m, c, "out of memory");
  mod_tree *t = &m->trees[m->ntrees];
  memset(t, 0, sizeof *t);
  get_str(c, t->name, sizeof t->name);
  t->slot = (int)get_u32(c);
  t->bytes = get_i64(c);
  uint32_t nnodes = get_u32(c);
  if (c->bad) return fail(err, errlen, m, c, "truncated header of a tree type");
  snprintf(c->what + strlen(c->what), sizeof c->what - strlen(c->what), " '%s'", t->name);
  if (!is_name(t->name)) return fail(err, errlen, m, c, "a tree type without a name");
  for (int i = 0; i < m->ntrees; i++)
    if (strcmp(m->trees[i].name, t->name) == 0) return fail(err, errlen, m, c, "the name is used twice");
  if (t->slot < 0 || t->slot >= IR_MAX_TREES) return fail(err, errlen, m, c, "tree slot %d out of range", t->slot);
  if (t->bytes <= 0) return fail(err, errlen, m, c, "a root container of %lld bytes", (long long)t->bytes);
  if (nnodes < 2 || nnodes > IR_MAX_SNODES) return fail(err, errlen, m, c, "%u SNodes (2 to %d)", nnodes, IR_MAX_SNODES);
  t->nodes = calloc(nnodes, sizeof *t->nodes);
  if (!t->nodes) return fail(err, errlen, m, c, "out of memory");
  t->nnodes = (int)nnodes;
  m->ntrees++;                     /* from here on freed with the module */
  for (uint32_t i = 0; i < nnodes && !c->bad; i++) {
    mod_node *d = &t->nodes[i];
    d->id = (int)get_u32(c);
    d->parent = (int)get_u32(c);
    unsigned kind = get_u8(c), dtype = get_u8(c), naxes = get_u8(c);
    if (c->bad) break;
    if (d->id < 0 || d->id >= IR_MAX_SNODES) return fail(err, errlen, m, c, "SNode id %d out of range", d->id);
    if (i == 0 ? d->parent != -1 : (d->parent < 0 || (uint32_t)d->parent >= i))
      return fail(err, errlen, m, c, "SNode %u: parent %d is not an earlier node", i, d->parent);
    if (kind >= IR_SN_NUM_KINDS) return fail(err, errlen, m, c, "SNode %u: kind %u unknown", i, kind);
    d->kind = (ir_snode_kind)kind;
    if ((i == 0) != (d->kind == IR_SN_root)) return fail(err, errlen, m, c, "SNode %u: the root must come first, once", i);
    if (naxes > IR_MAX_INDICES) return fail(err, errlen, m, c, "SNode %u: %u axes", i, naxes);
    d->naxes = (int)naxes;
    d->dtype = (ir_type)dtype;
    if (d->kind == IR_SN_place && !scalar_dtype(d->dtype))
      return fail(err, errlen, m, c, "SNode %u: a place of type %u", i, dtype);
    for (int a = 0; a < d->naxes; a++) {
      d->axes[a] = (int)get_u8(c);
      d->shape[a] = get_i64(c);
    }
    d->chunk_cells = get_i64(c);
    get_str(c, d->name, sizeof d->name);
    d->offset = get_i64(c);
    d->cell_bytes = get_i64(c);
    d->container_bytes = get_i64(c);
    d->meta_offset = get_i64(c);
  }
  if (c->bad) return fail(err, errlen, m, c, "truncated or malformed SNode list");
  uint32_t nfields = get_u32(c);
  if (c->bad || nfields > MOD_MAX_FIELDS) return fail(err, errlen, m, c, "malformed field list");
  t->fields = calloc(nfields ? nfields : 1, sizeof *t->fields);
  if (!t->fields) return fail(err, errlen, m, c, "out of memory");
  for (uint32_t i = 0; i < nfields; i++) {
    mod_field *f = &t->fields[i];
    get_str(c, f->name, sizeof f->name);
    f->kind = (mod_field_kind)get_u8(c);
    f->rows = (int)get_u32(c);
    f->cols = (int)get_u32(c);
    f->ncomp = (int)get_u32(c);
    if (c->bad) return fail(err, errlen, m, c, "truncated field %u", i);
    t->nfields = (int)i + 1;
    bool shape_ok = f->rows >= 1 && f->cols >= 1 && f->rows <= IR_MAX_INDICES && f->cols <= IR_MAX_INDICES;
    /* rows * cols only once both are in range: the file's u32s may overflow an int */
    int want = !shape_ok ? -1 : f->kind == MOD_FIELD_SCALAR ? 1 : f->rows * f->cols;
    if (!is_name(f->name) || f->kind > MOD_FIELD_MATRIX || !shape_ok || f->ncomp != want ||
        (f->kind == MOD_FIELD_VECTOR && f->cols != 1))
      return fail(err, errlen, m, c, "field %u ('%s') is malformed", i, f->name);
    for (int k = 0; k < f->ncomp; k++) {
      uint32_t node = get_u32(c);
      if (c->bad || node >= nnodes || t->nodes[node].kind != IR_SN_place)
        return fail(err, errlen, m, c, "field '%s': component %d is not a place of the tree", f->name, k);
      f->comp[k] = (int)node;
    }
  }
  return true;
}

static bool read_kernel(prog_module *m, cursor *c, char *err, size_t errlen) {
  if (m->nkernels == MOD_MAX_KERNELS) return fail(err, errlen, m, c, "more than %d kernels", MOD_MAX_KERNELS);
  if (!grow((void **)&m->kernels, &m->kernels_cap, m->nkernels, sizeof *m->kernels))
    return fail(err, errlen, m, c, "out of memory");
  mod_kernel *k = &m->kernels[m->nkernels];
  memset(k, 0, sizeof *k);
  get_str(c, k->name, sizeof k->name);
  get_str(c, k->file, sizeof k->file);
  if (c->bad) return fail(err, errlen, m, c, "truncated kernel name");
  snprintf(c->what + strlen(c->what), sizeof c->what - strlen(c->what), " '%s'", k->name);
  if (!is_name(k->name)) return fail(err, errlen, m, c, "a kernel without a name");
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i].name, k->name) == 0) return fail(err, errlen, m, c, "the name is used twice");
  k->ir = get_text(c, 64u << 20);
  m->nkernels++;
  uint32_t flags = get_u32(c);
  k->fma = flags & MOD_KERNEL_FMA;
  k->fast_math = flags & MOD_KERNEL_FAST_MATH;
  if (!c->bad && ((flags & ~(uint32_t)(MOD_KERNEL_FMA | MOD_KERNEL_FAST_MATH)) || (k->fast_math && !k->fma)))
    return fail(err, errlen, m, c, "maths flags 0x%x are not 0 (exact), 1 (fma) or 3 (fast math)", (unsigned)flags);
  uint32_t np = get_u32(c);
  if (c->bad || np > MOD_MAX_PARAMS) return fail(err, errlen, m, c, "truncated IR or parameter list");
  k->nparams = (int)np;
  for (uint32_t i = 0; i < np; i++) {
    mod_param *q = &k->params[i];
    get_str(c, q->name, sizeof q->name);
    q->kind = (mod_param_kind)get_u8(c);
    q->dtype = (ir_type)get_u8(c);
    q->rows = (int)get_u32(c);
    q->cols = (int)get_u32(c);
    q->ndim = (int)get_u32(c);
    q->tree = (int)get_u32(c);
    if (c->bad) return fail(err, errlen, m, c, "truncated parameter %u", i);
    bool scalar_type = scalar_dtype(q->dtype);
    bool ok = is_name(q->name) && q->kind <= MOD_PARAM_TREE;
    if (ok && q->kind != MOD_PARAM_TREE) ok = scalar_type;
    if (ok && q->kind == MOD_PARAM_VECTOR)
      ok = q->rows >= 1 && q->cols >= 1 && q->rows <= IR_MAX_INDICES && q->cols <= IR_MAX_INDICES;
    if (ok && q->kind == MOD_PARAM_NDARRAY) ok = q->ndim >= 1 && q->ndim <= IR_MAX_INDICES;
    if (ok && q->kind == MOD_PARAM_TREE) ok = q->tree >= 0 && q->tree < m->ntrees;
    if (!ok) return fail(err, errlen, m, c, "parameter %u ('%s') is malformed", i, q->name);
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(k->params[j].name, q->name) == 0) return fail(err, errlen, m, c, "parameter '%s' twice", q->name);
  }
  uint32_t nna = get_u32(c);
  if (c->bad || nna > IR_MAX_NOALIAS) return fail(err, errlen, m, c, "malformed no-alias list");
  k->nnoalias = (int)nna;
  for (uint32_t i = 0; i < nna; i++) {
    k->noalias[i].a = (int)get_u32(c);
    k->noalias[i].b = (int)get_u32(c);
    k->noalias[i].line = (int)get_u32(c);
  }
  k->ntasks = (int)get_u32(c);
  if (c->bad || k->ntasks < 0 || k->ntasks > 100000) return fail(err, errlen, m, c, "malformed task count");
  return true;
}

static bool read_code(prog_module *m, cursor *c, char *err, size_t errlen) {
  if (m->code) return fail(err, errlen, m, c, "a second CPU code section");
  char format[32];
  get_str(c, format, sizeof format);
  uint64_t len = get_le(c, 8);
  if (c->bad || len > c->n - c->at) return fail(err, errlen, m, c, "truncated");
  if (strcmp(format, "elf-shared-object") != 0) return fail(err, errlen, m, c, "code of format '%s' unknown", format);
  m->code = c->p + c->at;
  m->code_len = (size_t)len;
  c->at += (size_t)len;
  static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1};   /* 64-bit, little-endian */
  if (len < 64 || memcmp(m->code, elf, sizeof elf) != 0)
    return fail(err, errlen, m, c, "the code is not a 64-bit little-endian ELF object");
  return true;
}

/* PTX of every kernel for one SM */
static bool read_cuda(prog_module *m, cursor *c, char *err, size_t errlen) {
  if (m->ncuda == MOD_MAX_SMS) return fail(err, errlen, m, c, "more than %d SMs", MOD_MAX_SMS);
  mod_cuda *x = &m->cuda[m->ncuda];
  get_str(c, x->sm, sizeof x->sm);
  uint32_t n = get_u32(c);
  if (c->bad) return fail(err, errlen, m, c, "truncated");
  /* "sm_" and 2 or 3 digits, no sign or leading zero: sscanf's %d would
  ** take "sm_4294967366" (undefined; glibc makes it 70) and "sm_+70", and
  ** the loader compares the number with the GPU's */
  size_t len = strlen(x->sm);
  bool sm_ok = (len == 5 || len == 6) && strncmp(x->sm, "sm_", 3) == 0 && x->sm[3] != '0';
  for (size_t i = 3; sm_ok && i < len; i++) sm_ok = x->sm[i] >= '0' && x->sm[i] <= '9';
  if (!sm_ok) return fail(err, errlen, m, c, "'%s' is not an SM such as sm_70", x->sm);
  for (int i = 0; i < m->ncuda; i++)
    if (strcmp(m->cuda[i].sm, x->sm) == 0) return fail(err, errlen, m, c, "a second section for %s", x->sm);
  if (n != (uint32_t)m->nkernels)
    return fail(err, errlen, m, c, "PTX for %u kernels; the module has %d (kernels come first)", n, m->nkernels);
  x->ptx = calloc(n ? n : 1, sizeof *x->ptx);
  if (!x->ptx) return fail(err, errlen, m, c, "out of memory");
  m->ncuda++;
  for (uint32_t i = 0; i < n; i++) {
    x->ptx[i] = get_text(c, 64u << 20);
    if (!x->ptx[i]) return fail(err, errlen, m, c, "kernel %u: truncated or malformed PTX", i);
  }
  return true;
}

static const char *tag_name(uint32_t tag) {
  return tag == MOD_SEC_INFO ? "INFO" : tag == MOD_SEC_TREE ? "TREE" : tag == MOD_SEC_KERNEL ? "KERNEL"
         : tag == MOD_SEC_CPU_CODE ? "CPU_CODE" : tag == MOD_SEC_CUDA ? "CUDA" : "unknown";
}

prog_module *prog_module_read(const void *data, size_t n, const char *file, char *err, size_t errlen) {
  prog_module *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, errlen, "%s: out of memory", file);
    return NULL;
  }
  m->code_fd = -1;
  snprintf(m->file, sizeof m->file, "%s", file ? file : "(module)");
  m->bytes = malloc(n ? n : 1);
  if (!m->bytes) {
    fail(err, errlen, m, NULL, "out of memory");
    goto bad;
  }
  if (n) memcpy(m->bytes, data, n);
  m->nbytes = n;
  cursor c = {.p = m->bytes, .n = n};
  if (n < 40 || memcmp(m->bytes, PROG_MODULE_MAGIC, 8) != 0) {
    fail(err, errlen, m, NULL, "not a Lattice module (no LTMODULE header)");
    goto bad;
  }
  c.at = 8;
  m->format = get_u32(&c);
  uint32_t nsec = get_u32(&c);
  uint64_t total = get_le(&c, 8);
  uint64_t reserved = get_le(&c, 8);
  if (m->format == 0 || m->format > PROG_MODULE_FORMAT) {
    fail(err, errlen, m, NULL, "module format %u; this runtime reads formats 1 to %d (save the module again with "
         "this Lattice, or update the runtime)", m->format, PROG_MODULE_FORMAT);
    goto bad;
  }
  if (reserved != 0) {
    fail(err, errlen, m, NULL, "the header's reserved field is not 0 (a newer format's file?)");
    goto bad;
  }
  if (total != n) {
    fail(err, errlen, m, NULL, "the header says %llu bytes, the file has %zu (truncated or extended)",
         (unsigned long long)total, n);
    goto bad;
  }
  uint64_t sum = 0;
  for (int i = 0; i < 8; i++) sum |= (uint64_t)m->bytes[n - 8 + (size_t)i] << (8 * i);
  if (sum != jit_hash(jit_hash_init, m->bytes, n - 8)) {
    fail(err, errlen, m, NULL, "checksum mismatch: the file is corrupt");
    goto bad;
  }
  c.n = n - 8;                     /* the trailer is not a section */
  bool info = false;
  for (uint32_t s = 0; s < nsec; s++) {
    cursor h = c;
    snprintf(h.what, sizeof h.what, "section %u", s);
    uint32_t tag = get_u32(&h), flags = get_u32(&h);
    uint64_t len = get_le(&h, 8);
    if (h.bad || len > h.n - h.at) {
      fail(err, errlen, m, &h, "its length runs past the end of the file");
      goto bad;
    }
    cursor body = {.p = h.p + h.at, .n = (size_t)len};
    snprintf(body.what, sizeof body.what, "section %u (%s)", s, tag_name(tag));
    c.at = h.at + (size_t)len;
    bool ok = true;
    if (tag != MOD_SEC_INFO && !info) {
      ok = fail(err, errlen, m, &body, "the INFO section must come first");
    } else if (tag == MOD_SEC_INFO) {
      ok = !info && read_info(m, &body, err, errlen);
      if (info) fail(err, errlen, m, &body, "a second INFO section");
      info = true;
    } else if (tag == MOD_SEC_TREE) {
      ok = m->nkernels == 0 ? read_tree(m, &body, err, errlen)
                            : fail(err, errlen, m, &body, "tree types must come before the kernels");
    } else if (tag == MOD_SEC_KERNEL) {
      /* the code sections count the kernels before them */
      ok = !m->code && !m->ncuda ? read_kernel(m, &body, err, errlen)
                                 : fail(err, errlen, m, &body, "kernels must come before the code sections");
    } else if (tag == MOD_SEC_CPU_CODE) {
      ok = read_code(m, &body, err, errlen);
    } else if (tag == MOD_SEC_CUDA) {
      ok = read_cuda(m, &body, err, errlen);
    } else if (flags & MOD_SEC_REQUIRED) {
      ok = fail(err, errlen, m, &body, "tag %u is required but unknown to this runtime (a newer format's "
                "feature): update the runtime", tag);
    }
    if (ok && body.at != body.n && (tag >= MOD_SEC_INFO && tag <= MOD_SEC_CUDA))
      ok = fail(err, errlen, m, &body, "%zu bytes left over after its content", body.n - body.at);
    if (!ok) goto bad;
  }
  if (c.at != c.n) {
    fail(err, errlen, m, NULL, "%zu bytes after the last section", c.n - c.at);
    goto bad;
  }
  if (!info) {
    fail(err, errlen, m, NULL, "no INFO section");
    goto bad;
  }
  if (!m->code && !m->ncuda && m->nkernels) {
    fail(err, errlen, m, NULL, "kernels but no code (no CPU_CODE or CUDA section)");
    goto bad;
  }
  if (m->code && strcmp(m->triple, "x86_64-unknown-linux-gnu") != 0) {
    fail(err, errlen, m, NULL, "CPU code but no x86-64 target in the INFO section");
    goto bad;
  }
  return m;
bad:
  prog_module_free_data(m);
  return NULL;
}

void prog_module_free_data(prog_module *m) {
  if (!m) return;
  for (int i = 0; m->trees && i < m->ntrees; i++) {
    free(m->trees[i].nodes);
    free(m->trees[i].fields);
  }
  for (int i = 0; m->kernels && i < m->nkernels; i++) free(m->kernels[i].ir);
  for (int i = 0; i < m->ncuda; i++) {
    for (int k = 0; m->cuda[i].ptx && k < m->nkernels; k++) free(m->cuda[i].ptx[k]);
    free(m->cuda[i].ptx);
  }
  free(m->trees);
  free(m->kernels);
  free(m->bytes);
  free(m);
}

/* ---- building the trees and checking the kernels ------------------------------------ */

static bool build_tree(prog_module *m, mod_tree *t, ir_program *ir, char *err, size_t errlen) {
  char what[300];
  snprintf(what, sizeof what, "tree type '%s'", t->name);
  cursor c = {0};
  snprintf(c.what, sizeof c.what, "%s", what);
  if (!ir_program_set_next_tree(ir, t->slot))
    return fail(err, errlen, m, &c, "its tree slot %d is taken in this runtime (another module's tree?); load "
                "the module into a runtime of its own", t->slot);
  ir_snode **made = calloc((size_t)t->nnodes, sizeof *made);
  if (!made) return fail(err, errlen, m, &c, "out of memory");
  bool ok = true;
  char why[512] = "";
  for (int i = 0; i < t->nnodes && ok; i++) {
    const mod_node *d = &t->nodes[i];
    if (!ir_program_set_next_id(ir, d->id)) {
      ok = fail(err, errlen, m, &c, "its SNode id %d is taken in this runtime (another module's tree?); load the "
                "module into a runtime of its own", d->id);
      break;
    }
    ir_snode *parent = i ? made[d->parent] : NULL;
    ir_snode *s = NULL;
    if (i == 0) {
      s = ir_snode_root(ir);
      if (s) t->root = s;
      snprintf(why, sizeof why, "no room for another tree");
    } else if (d->kind == IR_SN_place) {
      s = ir_snode_place(ir, parent, d->dtype, d->name[0] ? d->name : NULL, why, sizeof why);
    } else if (d->kind == IR_SN_dynamic) {
      s = d->naxes == 1 ? ir_snode_dynamic(ir, parent, d->axes[0], d->shape[0], d->chunk_cells, why, sizeof why) : NULL;
      if (d->naxes != 1) snprintf(why, sizeof why, "a dynamic level with %d axes", d->naxes);
    } else if (d->kind != IR_SN_root) {
      bool axes_ok = d->naxes >= 1;
      for (int a = 0; a < d->naxes; a++) axes_ok = axes_ok && d->axes[a] < IR_MAX_INDICES;
      s = axes_ok ? ir_snode_level(ir, parent, d->kind, d->naxes, d->axes, d->shape, why, sizeof why) : NULL;
      if (!axes_ok) snprintf(why, sizeof why, "axes out of range");
    } else {
      snprintf(why, sizeof why, "a second root");
    }
    if (!s) {
      ir->next_id = 0;
      ok = fail(err, errlen, m, &c, "SNode %d cannot be made: %s", i, why);
      break;
    }
    if (s->id != d->id || (i == 0 && s->tree != t->slot)) {
      ok = fail(err, errlen, m, &c, "SNode %d did not get its id %d", i, d->id);
      break;
    }
    made[i] = s;
  }
  ir->next_id = 0;
  ir->next_tree = 0;
  if (ok && !ir_snode_layout(ir, t->root, why, sizeof why)) ok = fail(err, errlen, m, &c, "layout: %s", why);
  for (int i = 0; ok && i < t->nnodes; i++) {
    const mod_node *d = &t->nodes[i];
    const ir_snode *s = made[i];
    if (s->offset != d->offset || s->cell_bytes != d->cell_bytes || s->container_bytes != d->container_bytes ||
        s->meta_offset != d->meta_offset)
      ok = fail(err, errlen, m, &c, "SNode %d is laid out differently here than where the module was saved "
                "(the runtime's version differs from the compiler's?)", d->id);
  }
  if (ok && ir->trees[t->slot].bytes != t->bytes)
    ok = fail(err, errlen, m, &c, "its memory is %lld bytes here, %lld where it was saved",
              (long long)ir->trees[t->slot].bytes, (long long)t->bytes);
  free(made);
  return ok;
}

/* Which module tree holds SNode id, or -1. */
static int tree_of(const prog_module *m, int id) {
  for (int t = 0; t < m->ntrees; t++)
    if (m->trees[t].root)
      for (int i = 0; i < m->trees[t].nnodes; i++)
        if (m->trees[t].nodes[i].id == id) return t;
  return -1;
}

typedef struct {
  const prog_module *m;
  const mod_kernel *mk;
  const char *bad;
  int snode;
} use_check;

/* Every SNode the kernel names belongs to a tree one of its parameters passes. */
static void check_use(ir_stmt *s, void *ud) {
  use_check *u = ud;
  if (u->bad || !ir_op_names_snode(s->op)) return;
  int t = tree_of(u->m, s->aux);
  bool passed = false;
  for (int i = 0; t >= 0 && i < u->mk->nparams; i++)
    passed = passed || (u->mk->params[i].kind == MOD_PARAM_TREE && u->mk->params[i].tree == t);
  if (!passed) {
    u->bad = t < 0 ? "an SNode of no tree type of the module" : "a tree type that no parameter passes";
    u->snode = s->aux;
  }
}

static bool check_kernel(prog_module *m, mod_kernel *mk, ir_program *ir, char *err, size_t errlen) {
  cursor c = {0};
  snprintf(c.what, sizeof c.what, "kernel '%s'", mk->name);
  char why[1024] = "";
  mk->k = ir_parse(mk->ir, ir, why, sizeof why);
  if (!mk->k) return fail(err, errlen, m, &c, "its IR does not parse: %s", why);
  ir_kernel *k = mk->k;
  if (!ir_verify_ex(k, IR_VERIFY_TYPES, why, sizeof why)) return fail(err, errlen, m, &c, "invalid IR: %s", why);
  if (!k->offloaded) return fail(err, errlen, m, &c, "its IR is not offloaded into tasks");
  int ntasks = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next) {
    if (!(ir_op_flags(s->op) & IR_TASK)) return fail(err, errlen, m, &c, "a statement outside the tasks");
    ntasks++;
  }
  if (ntasks != mk->ntasks) return fail(err, errlen, m, &c, "%d tasks in its IR, %d in its code", ntasks, mk->ntasks);
  int slot = 0;
  for (int i = 0; i < mk->nparams; i++) {
    mod_param *q = &mk->params[i];
    q->slot = slot;
    q->nslots = q->kind == MOD_PARAM_SCALAR ? 1 : q->kind == MOD_PARAM_VECTOR ? q->rows * q->cols
                : q->kind == MOD_PARAM_NDARRAY ? 1 + q->ndim : 0;
    for (int j = 0; j < q->nslots; j++) {
      int a = slot + j;
      ir_type want = q->kind == MOD_PARAM_NDARRAY ? (j == 0 ? IR_u64 : IR_i32) : q->dtype;
      if (a >= k->nargs || k->arg_types[a] != want)
        return fail(err, errlen, m, &c, "parameter '%s' does not match the kernel's IR arguments", q->name);
    }
    slot += q->nslots;
  }
  if (slot != k->nargs)
    return fail(err, errlen, m, &c, "its parameters take %d argument slots, its IR %d", slot, k->nargs);
  for (int i = 0; i < mk->nnoalias; i++)
    if (mk->noalias[i].a < 0 || mk->noalias[i].a >= k->nargs || mk->noalias[i].b < 0 || mk->noalias[i].b >= k->nargs)
      return fail(err, errlen, m, &c, "a no-alias pair names argument slots it does not have");
  memcpy(k->noalias, mk->noalias, sizeof k->noalias);
  k->nnoalias = mk->nnoalias;
  k->fma = mk->fma;
  k->fast_math = mk->fast_math;
  use_check u = {m, mk, NULL, -1};
  ir_walk(k->body, check_use, &u);
  if (u.bad) return fail(err, errlen, m, &c, "it names SNode S%d, of %s", u.snode, u.bad);
  return true;
}

bool prog_module_check(prog_module *m, ir_program *ir, char *err, size_t errlen) {
  for (int t = 0; t < m->ntrees; t++)
    if (!build_tree(m, &m->trees[t], ir, err, errlen)) return false;
  for (int i = 0; i < m->nkernels; i++)
    if (!check_kernel(m, &m->kernels[i], ir, err, errlen)) return false;
  return true;
}

void prog_module_unbuild(prog_module *m, ir_program *ir) {
  for (int i = 0; i < m->nkernels; i++) {
    if (m->kernels[i].k) ir_kernel_free(m->kernels[i].k);
    m->kernels[i].k = NULL;
  }
  for (int t = 0; t < m->ntrees; t++) {
    if (m->trees[t].root && ir) ir_tree_free(ir, m->trees[t].root->tree);
    m->trees[t].root = NULL;
  }
}

/* ---- CPU features ------------------------------------------------------------------- */

/* Whether this CPU has feature f (one of the names prog_module_cpu_features uses). */
static bool host_has(const char *f) {
  __builtin_cpu_init();
#define F(name) if (strcmp(f, name) == 0) return __builtin_cpu_supports(name);
  F("sse3") F("ssse3") F("sse4.1") F("sse4.2") F("popcnt") F("avx") F("avx2") F("bmi") F("bmi2") F("fma")
  F("avx512f") F("avx512bw") F("avx512cd") F("avx512dq") F("avx512vl")
#undef F
  return false;
}

void prog_module_missing_features(const prog_module *m, char *missing, size_t len) {
  missing[0] = 0;
  char list[sizeof m->features];
  snprintf(list, sizeof list, "%s", m->features);
  size_t at = 0;
  for (char *save = NULL, *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
    if (host_has(f)) continue;
    int w = snprintf(missing + at, len - at, "%s%s", at ? ", " : "", f);
    if (w < 0 || (size_t)w >= len - at) break;
    at += (size_t)w;
  }
}
