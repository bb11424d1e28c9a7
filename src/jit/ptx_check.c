/*
** ptx_check.c -- jit_ptxas_check: emit a kernel's PTX and assemble it with
** the CUDA toolkit's ptxas, so that every kernel the CPU runs is also known
** to compile for NVIDIA GPUs on machines that have the toolkit but no GPU.
** The test suite runs the language tests and examples a second time with
** LT_CHECK_PTX=<ptxas> (tests/tests.cmake); src/lang/kernel.c calls this for
** every kernel it compiles then (the setting: src/program/env.c).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit.h"
#include "llvm/llvm_codegen.h"

/* PTX for sm_70 assembles for every later GPU; CUDA 13's ptxas dropped sm_70
** itself, so then assemble for its oldest target, sm_75. */
static const char *assemble_arch(const char *ptxas) {
  static char arch[8];
  if (!arch[0]) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_70 --version >/dev/null 2>&1", ptxas);
    strcpy(arch, system(cmd) == 0 ? "sm_70" : "sm_75");
  }
  return arch;
}

/* Runs cmd, keeping the tail of its output in out; returns its exit status. */
static int run_capture(const char *cmd, char *out, size_t len) {
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  size_t n = 0;
  char line[512];
  out[0] = 0;
  while (fgets(line, sizeof line, f)) {
    size_t l = strlen(line);
    if (n + l >= len) n = 0;   /* keep the last lines that fit */
    memcpy(out + n, line, l + 1);
    n += l;
  }
  return pclose(f);
}

bool jit_ptxas_text(const char *ptx, const char *sm, const char *what, const char *ptxas, const jit_options *o,
                    char *err, size_t errlen) {
  if (strchr(ptxas, '\'') || !sm || strlen(sm) > 10 || strspn(sm, "sm_0123456789a") != strlen(sm)) {
    snprintf(err, errlen, "the ptxas path '%s' contains a quote, or '%s' is no SM", ptxas, sm ? sm : "");
    return false;
  }
  char path[512];
  const char *dir = o ? o->tmpdir : NULL;
  snprintf(path, sizeof path, "%s/lattice_ptx_XXXXXX", dir && *dir && !strchr(dir, '\'') ? dir : "/tmp");
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    snprintf(err, errlen, "cannot write a temporary file for ptxas");
    if (fd >= 0) close(fd);
    return false;
  }
  bool wrote = fputs(ptx, f) >= 0;
  wrote &= fclose(f) == 0;
  /* sm_70 PTX is assembled as the oldest target this ptxas has */
  const char *arch = strcmp(sm, "sm_70") == 0 ? assemble_arch(ptxas) : sm;
  char cmd[1400], out[600];
  snprintf(cmd, sizeof cmd, "'%s' -arch=%s -c '%s' -o /dev/null 2>&1", ptxas, arch, path);
  int rc = wrote ? run_capture(cmd, out, sizeof out) : -1;
  if (rc != 0) {
    /* the file stays for inspection */
    snprintf(err, errlen, "ptxas rejected the PTX of %s for %s (kept in %s): %s", what, arch, path,
             wrote ? out : "could not write it");
    return false;
  }
  unlink(path);
  return true;
}

bool jit_ptxas_check(ir_kernel *k, const char *ptxas, const jit_options *o, char *err, size_t errlen) {
  /* with libdevice, as the CUDA backend compiles */
  char *libdevice = jit_find_libdevice(o);
  cg_module info;
  char *ptx = cg_ptx_kernel(k, "sm_70", libdevice != NULL, libdevice, NULL, &info, err, errlen);
  free(libdevice);
  if (!ptx) return false;
  cg_module_free(&info);
  char what[300];
  snprintf(what, sizeof what, "kernel %s", k->name);
  bool ok = jit_ptxas_text(ptx, "sm_70", what, ptxas, o, err, errlen);
  free(ptx);
  return ok;
}
