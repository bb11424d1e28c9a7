/*
** module.c -- an AOT module in a program: the file read and checked
** (module_read.c), its CPU features checked against the host, its trees
** made at the tree slots and SNode ids its code names and registered with
** the sparse runtime, its shared object loaded from memory (memfd +
** dlopen), and each kernel made a prog_kernel whose tasks are the object's
** symbols, so prog_launch runs it like a kernel the JIT compiled.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module.h"
#include "program.h"

static bool read_file(const char *path, unsigned char **data, size_t *n, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %m", path);
    return false;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {   /* opens, and its "size" is LONG_MAX */
    snprintf(err, errlen, "%s: a directory, not a module file", path);
    fclose(f);
    return false;
  }
  bool ok = fseek(f, 0, SEEK_END) == 0;
  long len = ok ? ftell(f) : -1;
  if (len < 0 || (uint64_t)len > MOD_MAX_FILE || fseek(f, 0, SEEK_SET) != 0) {
    snprintf(err, errlen, "%s: %s", path, len < 0 ? "cannot read its size" : "larger than a module can be (1 GiB)");
    fclose(f);
    return false;
  }
  *data = malloc((size_t)len + 1);
  ok = *data && fread(*data, 1, (size_t)len, f) == (size_t)len;
  fclose(f);
  if (!ok) {
    free(*data);
    *data = NULL;
    snprintf(err, errlen, "%s: cannot read it", path);
    return false;
  }
  *n = (size_t)len;
  return true;
}

prog_module *prog_module_load(prog_program *p, const char *path, char *err, size_t errlen) {
  if (!path) {
    snprintf(err, errlen, "the path is NULL");
    return NULL;
  }
  unsigned char *data = NULL;
  size_t n = 0;
  if (!read_file(path, &data, &n, err, errlen)) return NULL;
  prog_module *m = prog_module_load_bytes(p, data, n, path, err, errlen);
  free(data);
  return m;
}

/* The shared object of m's code, loaded from memory. */
static bool load_code(prog_module *m, char *err, size_t errlen) {
  int fd = memfd_create("lattice-module", MFD_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot load its code (memfd_create: %m)", m->file);
    return false;
  }
  size_t at = 0;
  while (at < m->code_len) {
    ssize_t w = write(fd, m->code + at, m->code_len - at);
    if (w <= 0) {
      snprintf(err, errlen, "%s: cannot load its code (write: %m)", m->file);
      close(fd);
      return false;
    }
    at += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  /* The fd stays open while the module is loaded (prog_module_free closes
  ** it): dlopen hands back the object already loaded under a path, so two
  ** loaded modules must never have the same /proc/self/fd/N, as they would
  ** once a closed fd's number is reused (the second ran the first's code). */
  m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (m->dl) m->code_fd = fd;
  else close(fd);
  if (!m->dl) {
    const char *why = dlerror();
    snprintf(err, errlen, "%s: its code does not load: %s", m->file, why ? why : "?");
    return false;
  }
  return true;
}

/* The SM number of "sm_86" (86), 0 when it is not one: "sm_" and 2 or 3
** digits (what the reader lets through; the device's name is ours). */
static int sm_number(const char *sm) {
  if (strncmp(sm, "sm_", 3) != 0) return 0;
  int n = 0, digits = 0;
  for (const char *c = sm + 3; *c; c++, digits++) {
    if (*c < '0' || *c > '9' || digits == 3) return 0;
    n = n * 10 + (*c - '0');
  }
  return digits >= 2 ? n : 0;
}

/* The CUDA section to load on a GPU of SM `device`: the newest SM not
** newer than the device (PTX runs on later GPUs); NULL with the message. */
static const mod_cuda *pick_ptx(const prog_module *m, const char *device, char *err, size_t errlen) {
  const mod_cuda *best = NULL;
  int have = sm_number(device);
  for (int i = 0; i < m->ncuda; i++) {
    int n = sm_number(m->cuda[i].sm);
    if (n && n <= have && (!best || n > sm_number(best->sm))) best = &m->cuda[i];
  }
  if (!best) {
    char list[200] = "";
    size_t at = 0;
    for (int i = 0; i < m->ncuda && at < sizeof list; i++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", m->cuda[i].sm);
    snprintf(err, errlen, "%s: %s; this GPU is %s (save the module with lt.aot.module{arch = {\"cpu\", \"cuda\"}, "
             "sm = {\"%s\"}})", m->file, m->ncuda ? "its PTX is for newer GPUs" : "it holds no PTX (arch = \"cpu\")",
             device, device);
    if (m->ncuda) snprintf(err + strlen(err), errlen - strlen(err), "; it has PTX for %s", list);
  }
  return best;
}

/* Kernel i of m as a prog_kernel of p, its tasks made from the section's PTX by the backend. */
static bool make_gpu_kernel(prog_module *m, int i, prog_program *p, const mod_cuda *code, char *err,
                            size_t errlen) {
  mod_kernel *mk = &m->kernels[i];
  char prefix[32], why[1024] = "";
  snprintf(prefix, sizeof prefix, "ltm%d", i);
  jit_kernel *jk = p->be->load_ptx(p->be, mk->k, code->ptx[i], prefix, why, sizeof why);
  if (!jk) {
    snprintf(err, errlen, "%s: kernel '%s': its PTX for %s does not load: %s", m->file, mk->name, code->sm, why);
    return false;
  }
  prog_kernel_adopt(&m->loaded[i], p, mk->k, jk, mk->file, false);
  mk->k = NULL;
  return true;
}

/* Kernel i of m as a prog_kernel of p, its tasks the code's symbols. */
static bool make_kernel(prog_module *m, int i, prog_program *p, char *err, size_t errlen) {
  mod_kernel *mk = &m->kernels[i];
  ir_kernel *k = mk->k;
  jit_kernel *jk = calloc(1, sizeof *jk);
  jit_task *tasks = calloc((size_t)(mk->ntasks ? mk->ntasks : 1), sizeof *tasks);
  char *name = strdup(mk->name);
  if (!jk || !tasks || !name) {
    free(jk);
    free(tasks);
    free(name);
    snprintf(err, errlen, "%s: out of memory", m->file);
    return false;
  }
  int t = 0;
  for (ir_stmt *s = k->body->first; s; s = s->next, t++) {
    char sym[64];
    snprintf(sym, sizeof sym, "ltm%d_task%d", i, t);
    void *fn = dlsym(m->dl, sym);
    if (!fn) {
      snprintf(err, errlen, "%s: kernel '%s': its code has no task %d (symbol %s)", m->file, mk->name, t, sym);
      free(jk);
      free(tasks);
      free(name);
      return false;
    }
    jit_task_describe(&tasks[t], k, s);
    tasks[t].fn = (jit_task_fn)(uintptr_t)fn;
  }
  jk->name = name;
  jk->ntasks = mk->ntasks;
  jk->tasks = tasks;
  jk->needs_runtime = true;
  jk->gtmp_bytes = k->gtmp_size;
  prog_kernel_adopt(&m->loaded[i], p, k, jk, mk->file, true);
  mk->k = NULL;                    /* the prog_kernel's now */
  return true;
}

prog_module *prog_module_load_bytes(prog_program *p, const void *data, size_t n, const char *file, char *err,
                                    size_t errlen) {
  if (!p || !p->ir) {
    snprintf(err, errlen, "the runtime's program has been reset");
    return NULL;
  }
  prog_module *m = prog_module_read(data, n, file, err, errlen);
  if (!m) return NULL;
  bool gpu = p->be->load_ptx != NULL;
  const mod_cuda *ptx = NULL;
  if (gpu && !(ptx = pick_ptx(m, p->be->device_sm ? p->be->device_sm : "?", err, errlen))) {
    prog_module_free_data(m);
    return NULL;
  }
  if (!gpu && !m->code && m->nkernels) {
    snprintf(err, errlen, "%s: it holds no CPU code (saved with arch = \"cuda\"); this runtime runs on the CPU",
             m->file);
    prog_module_free_data(m);
    return NULL;
  }
  char missing[512];
  if (!gpu) prog_module_missing_features(m, missing, sizeof missing);
  if (!gpu && missing[0]) {
    snprintf(err, errlen, "%s: its code was compiled for CPU %s and needs %s, which this CPU lacks; save the module "
             "for an older CPU (lt.aot.module{cpu = \"x86-64-v2\"})", m->file, m->cpu, missing);
    prog_module_free_data(m);
    return NULL;
  }
  m->prog = p;
  prog_retain(p);
  bool ok = prog_module_check(m, p->ir, err, errlen);
  int added = 0;
  for (; ok && added < m->ntrees; added++) {
    mod_tree *t = &m->trees[added];
    char why[512];
    if (!jit_sparse_add_tree(p->sparse, p->ir, t->root->tree, why, sizeof why)) {
      snprintf(err, errlen, "%s: tree type '%s': %s", m->file, t->name, why);
      ok = false;
      break;
    }
    p->tree_holds[t->root->tree]++;   /* the module holds its trees */
  }
  if (!ok) {
    for (int t = added; t < m->ntrees; t++)      /* not known to the sparse runtime */
      if (m->trees[t].root) ir_tree_free(p->ir, m->trees[t].root->tree);
    for (int t = added; t < m->ntrees; t++) m->trees[t].root = NULL;
    prog_module_free(m);
    return NULL;
  }
  m->loaded = calloc((size_t)(m->nkernels ? m->nkernels : 1), sizeof *m->loaded);
  ok = m->loaded != NULL;
  if (!ok) snprintf(err, errlen, "%s: out of memory", m->file);
  if (ok && m->nkernels && !gpu) ok = load_code(m, err, errlen);
  for (int i = 0; ok && i < m->nkernels; i++)
    ok = gpu ? make_gpu_kernel(m, i, p, ptx, err, errlen) : make_kernel(m, i, p, err, errlen);
  if (!ok) {
    prog_module_free(m);
    return NULL;
  }
  return m;
}

void prog_module_free(prog_module *m) {
  if (!m) return;
  prog_program *p = m->prog;
  for (int i = 0; m->loaded && i < m->nkernels; i++) prog_kernel_release(&m->loaded[i]);
  free(m->loaded);
  if (m->dl) dlclose(m->dl);
  if (m->dl && m->code_fd >= 0) close(m->code_fd);
  if (p && p->ir)
    for (int t = 0; t < m->ntrees; t++)
      if (m->trees[t].root) p->tree_holds[m->trees[t].root->tree]--;
  prog_module_unbuild(m, NULL);     /* kernels not adopted; roots forgotten */
  if (p && p->ir) prog_reclaim_trees(p);
  if (p) prog_release(p);
  prog_module_free_data(m);
}

int prog_module_find_tree(const prog_module *m, const char *name) {
  for (int i = 0; name && i < m->ntrees; i++)
    if (strcmp(m->trees[i].name, name) == 0) return i;
  return -1;
}

int prog_module_find_kernel(const prog_module *m, const char *name) {
  for (int i = 0; name && i < m->nkernels; i++)
    if (strcmp(m->kernels[i].name, name) == 0) return i;
  return -1;
}
