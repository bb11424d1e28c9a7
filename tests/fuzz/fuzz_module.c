/*
** fuzz_module.c -- libFuzzer harness of the AOT module reader
** (src/program/module_read.c, module.h, docs/aot.md): the input is a module
** file.
**
** Half of the inputs (the low bit of their last byte) get the header's file
** length (bytes 16..23) and the trailer's checksum fixed up first, so that
** mutations reach past them into the sections, the trees rebuilt in a program
** and the kernels' IR. A file the reader takes is then checked as the loader
** does (prog_module_check into a fresh ir_program), unbuilt and freed; its
** code is never loaded (module.c is not linked in). A finding -- abort() with
** a message -- is a refusal whose message does not name the file, a read
** module whose content breaks what the reader promises (code inside the file,
** PTX for every kernel, SM names, indices in range), a check that passed without every
** tree and kernel made or with parameters past the IR's arguments, SNodes
** left in the program after prog_module_unbuild, plus whatever
** AddressSanitizer or UBSan report, a crash or a hang. Refusals are the
** expected outcome of almost every input.
*/
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/kcache.h"
#include "program/module.h"

static const char *const NAME = "fuzz.ltm";

static void finding(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void finding(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz_module: FINDING: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  abort();
}

/* LT_FUZZ_VERBOSE=1: say what became of each input (why a seed or a
** replayed input is refused). */
static bool verbose(void) {
  static int v = -1;
  if (v < 0) v = getenv("LT_FUZZ_VERBOSE") && atoi(getenv("LT_FUZZ_VERBOSE")) > 0;
  return v;
}

/* A refusal names the file first, as every message of the reader must. */
static void check_message(const char *what, const char *err) {
  if (verbose()) fprintf(stderr, "fuzz_module: %s: %s\n", what, err);
  size_t k = strlen(NAME);
  if (strncmp(err, NAME, k) != 0 || err[k] != ':' || !err[k + 1])
    finding("%s refused the module with the message \"%s\", which does not name it", what, err);
}

/* What prog_module_read promises about a module it returns. */
static void check_read(const prog_module *m, const uint8_t *f, size_t n) {
  if (m->nbytes != n || memcmp(m->bytes, f, n) != 0) finding("the module's bytes are not the file's");
  if (m->code) {
    if (m->code < m->bytes || m->code_len < 64 || m->code_len > n - 8 ||
        (size_t)(m->code - m->bytes) > n - 8 - m->code_len)
      finding("the code (%zu bytes at %td) is not inside the file's %zu bytes", m->code_len, m->code - m->bytes, n);
  } else if (m->nkernels && !m->ncuda) {
    finding("%d kernels and no code", m->nkernels);
  }
  if (m->ncuda < 0 || m->ncuda > MOD_MAX_SMS) finding("%d CUDA sections", m->ncuda);
  for (int i = 0; i < m->ncuda; i++) {
    /* "sm_" and the number, as the CUDA loader compares it with the GPU's */
    const char *sm = m->cuda[i].sm;
    size_t len = strlen(sm);
    bool ok = (len == 5 || len == 6) && strncmp(sm, "sm_", 3) == 0 && sm[3] != '0';
    for (size_t k = 3; ok && k < len; k++) ok = sm[k] >= '0' && sm[k] <= '9';
    if (!ok) finding("CUDA section %d is for '%s', not an SM", i, sm);
    for (int k = 0; k < m->nkernels; k++)
      if (!m->cuda[i].ptx || !m->cuda[i].ptx[k]) finding("CUDA section %d has no PTX for kernel %d", i, k);
  }
  if (m->ntrees < 0 || m->ntrees > MOD_MAX_TREES || m->nkernels < 0 || m->nkernels > MOD_MAX_KERNELS)
    finding("%d trees, %d kernels", m->ntrees, m->nkernels);
  for (int t = 0; t < m->ntrees; t++) {
    const mod_tree *tr = &m->trees[t];
    if (tr->nnodes < 2 || tr->nnodes > IR_MAX_SNODES || tr->nodes[0].kind != IR_SN_root || tr->root)
      finding("tree %d: %d nodes, root kind %d", t, tr->nnodes, tr->nodes[0].kind);
    for (int i = 1; i < tr->nnodes; i++)
      if (tr->nodes[i].parent < 0 || tr->nodes[i].parent >= i) finding("tree %d: node %d has parent %d", t, i,
                                                                        tr->nodes[i].parent);
    for (int i = 0; i < tr->nfields; i++)
      for (int c = 0; c < tr->fields[i].ncomp; c++) {
        int node = tr->fields[i].comp[c];
        if (node < 0 || node >= tr->nnodes || tr->nodes[node].kind != IR_SN_place)
          finding("tree %d field %d: component %d is node %d", t, i, c, node);
      }
  }
  for (int i = 0; i < m->nkernels; i++) {
    const mod_kernel *k = &m->kernels[i];
    if (!k->ir || k->k || k->nparams < 0 || k->nparams > MOD_MAX_PARAMS) finding("kernel %d: IR %p, %d params", i,
                                                                                 (void *)k->ir, k->nparams);
    for (int p = 0; p < k->nparams; p++)
      if (k->params[p].kind == MOD_PARAM_TREE && (k->params[p].tree < 0 || k->params[p].tree >= m->ntrees))
        finding("kernel '%s': parameter %d passes tree %d of %d", k->name, p, k->params[p].tree, m->ntrees);
  }
}

/* What a passed prog_module_check promises. */
static void check_built(const prog_module *m, const ir_program *ir) {
  for (int t = 0; t < m->ntrees; t++) {
    const mod_tree *tr = &m->trees[t];
    if (!tr->root || tr->root->tree != tr->slot || ir->trees[tr->slot].root != tr->root)
      finding("tree '%s' was not made at its slot %d", tr->name, tr->slot);
    for (int i = 0; i < tr->nnodes; i++)
      if (!ir_program_snode(ir, tr->nodes[i].id)) finding("tree '%s': no SNode %d", tr->name, tr->nodes[i].id);
  }
  for (int i = 0; i < m->nkernels; i++) {
    const mod_kernel *k = &m->kernels[i];
    if (!k->k) finding("kernel '%s' passed without its IR", k->name);
    for (int p = 0; p < k->nparams; p++)
      if (k->params[p].slot < 0 || k->params[p].nslots < 0 || k->params[p].slot + k->params[p].nslots > k->k->nargs)
        finding("kernel '%s': parameter %d takes slots %d+%d of %d", k->name, p, k->params[p].slot,
                k->params[p].nslots, k->k->nargs);
  }
}

/* After prog_module_unbuild no SNode id or tree slot of the module's trees
** is taken. (SNodes the kernels' IR declared itself are the program's to
** free; they were made after the module's trees, at other ids and slots.) */
static void check_unbuilt(const prog_module *m, const ir_program *ir) {
  for (int t = 0; t < m->ntrees; t++) {
    const mod_tree *tr = &m->trees[t];
    if (tr->root || ir->trees[tr->slot].root) finding("tree '%s' is still in the program after unbuild", tr->name);
    for (int i = 0; i < tr->nnodes; i++)
      if (ir_program_snode(ir, tr->nodes[i].id))
        finding("tree '%s': SNode id %d is still taken after unbuild", tr->name, tr->nodes[i].id);
  }
  for (int i = 0; i < m->nkernels; i++)
    if (m->kernels[i].k) finding("kernel '%s' still has its IR after unbuild", m->kernels[i].name);
}

/* ---- a mutator that keeps the file's frame ------------------------------------------ */

/* A mutation that inserts or erases bytes inside a section breaks its length
** field, the header's and the checksum, so almost all of libFuzzer's own
** mutations end at the first length check. Three times in four this one
** mutates one section's payload -- or, in a KERNEL section, its IR text --
** and redoes the lengths around it and the checksum; the fourth time it lets
** libFuzzer mutate the whole file, so the frame's checks are fuzzed too. */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint64_t get_le(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static void put_le(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The IR text of the KERNEL payload at p (len bytes): its offset in the
** payload, its length in *n; 0 when the payload is not that well formed. */
static size_t ir_text(const uint8_t *p, size_t len, size_t *n) {
  size_t at = 0;
  for (int i = 0; i < 3; i++) {   /* name, file, IR */
    if (len - at < 4) return 0;
    size_t k = (size_t)get_le(p + at, 4);
    at += 4;
    if (k > len - at) return 0;
    if (i == 2) {
      *n = k;
      return at;
    }
    at += k;
  }
  return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed) {
  if (seed % 4 == 0 || size < 40 || max_size < size) return LLVMFuzzerMutate(data, size, max_size);
  /* the sections, as the header says; anything else is mutated as it is */
  enum { MAXSEC = 64 };
  size_t off[MAXSEC], nsec = 0, at = 32;
  uint64_t claimed = get_le(data + 12, 4);
  while (nsec < claimed && nsec < MAXSEC && size - 8 - at >= 16) {
    uint64_t len = get_le(data + at + 8, 8);
    if (len > size - 8 - at - 16) break;
    off[nsec++] = at;
    at += 16 + (size_t)len;
  }
  if (nsec == 0) return LLVMFuzzerMutate(data, size, max_size);
  size_t sec = off[(seed / 4) % nsec];
  size_t plen = (size_t)get_le(data + sec + 8, 8);
  size_t from = sec + 16, n = plen, lenat = 0;   /* the bytes to mutate; where a string's length is */
  size_t irn = 0, ir = 0;
  if (get_le(data + sec, 4) == MOD_SEC_KERNEL && (seed / 4 / MAXSEC) % 2) ir = ir_text(data + from, plen, &irn);
  if (ir) {
    lenat = from + ir - 4;
    from += ir;
    n = irn;
  }
  /* mutate [from, from + n) in place, the rest of the file moved behind it */
  size_t rest = size - (from + n);
  if (max_size - from - rest == 0) return LLVMFuzzerMutate(data, size, max_size);
  uint8_t *tail = malloc(rest ? rest : 1);
  if (!tail) return size;
  memcpy(tail, data + from + n, rest);
  size_t m = LLVMFuzzerMutate(data + from, n, max_size - from - rest);
  memcpy(data + from + m, tail, rest);
  free(tail);
  size_t total = size - n + m;
  if (lenat) put_le(data + lenat, get_le(data + lenat, 4) - n + m, 4);
  put_le(data + sec + 8, plen - n + m, 8);
  put_le(data + 16, total, 8);
  put_le(data + total - 8, jit_hash(jit_hash_init, data, total - 8), 8);
  return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  uint8_t *f = malloc(n ? n : 1);
  if (!f) return 0;
  if (n) memcpy(f, data, n);
  if (n >= 40 && (f[n - 1] & 1)) {   /* fix the length and the checksum up */
    for (int i = 0; i < 8; i++) f[16 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    uint64_t h = jit_hash(jit_hash_init, f, n - 8);
    for (int i = 0; i < 8; i++) f[n - 8 + i] = (uint8_t)(h >> (8 * i));
  }
  char err[2048] = "";
  prog_module *m = prog_module_read(f, n, NAME, err, sizeof err);
  if (!m) {
    check_message("prog_module_read", err);
    free(f);
    return 0;
  }
  check_read(m, f, n);
  char missing[512];
  prog_module_missing_features(m, missing, sizeof missing);
  ir_program *ir = ir_program_new();
  bool ok = prog_module_check(m, ir, err, sizeof err);
  if (ok) {
    check_built(m, ir);
    if (verbose()) fprintf(stderr, "fuzz_module: %d trees and %d kernels check\n", m->ntrees, m->nkernels);
  } else {
    check_message("prog_module_check", err);
  }
  prog_module_unbuild(m, ir);
  check_unbuilt(m, ir);
  ir_program_free(ir);
  prog_module_free_data(m);
  free(f);
  return 0;
}
