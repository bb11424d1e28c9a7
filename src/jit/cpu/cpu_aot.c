/*
** cpu_aot.c -- machine code for AOT modules (docs/aot.md): every kernel of a
** module compiled for a named x86-64 level (x86-64, -v2, -v3, -v4: the
** oldest CPU the module must run on, not the host), as position-independent
** objects linked into one shared object by the system's C compiler driver
** (`cc -shared`), whose bytes the module file carries. The runtime library
** loads it with dlopen; the kernels' tasks are the symbols ltm<K>_task<N>.
*/
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "cpu.h"

extern char **environ;

#define AOT_TRIPLE "x86_64-unknown-linux-gnu"

static bool write_all(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static void *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *p = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long len = ftell(f);
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)len)) != NULL) {
      if (fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
      } else {
        *n = (size_t)len;
      }
    }
  }
  fclose(f);
  return p;
}

/* Runs argv (a C compiler driver), its output into log; its exit status, or
** -1 when it could not start. */
static int run(char *const *argv, const char *log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* One kernel's object file at path. */
static bool kernel_object(ir_kernel *k, int index, const char *cpu, const char *path, char *err, size_t errlen) {
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(AOT_TRIPLE, &target, &msg)) {
    snprintf(err, errlen, "no x86-64 target in this LLVM: %s", msg);
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, AOT_TRIPLE, cpu, "", LLVMCodeGenLevelDefault,
                                                    LLVMRelocPIC, LLVMCodeModelSmall);
  if (!tm) {
    snprintf(err, errlen, "cannot make a target machine for CPU '%s'", cpu);
    return false;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  char prefix[32];
  snprintf(prefix, sizeof prefix, "ltm%d", index);
  cg_module m;
  bool ok = cpu_build(k, prefix, AOT_TRIPLE, true, ctx, tm, NULL, &m, err, errlen);
  if (ok) {
    LLVMMemoryBufferRef obj = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m.mod, LLVMObjectFile, &msg, &obj)) {
      snprintf(err, errlen, "machine code generation for kernel '%s' failed: %s", k->name, msg);
      LLVMDisposeMessage(msg);
      ok = false;
    } else {
      ok = write_all(path, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
      if (!ok) snprintf(err, errlen, "cannot write %s", path);
      LLVMDisposeMemoryBuffer(obj);
    }
    LLVMDisposeModule(m.mod);
    cg_module_free(&m);
  }
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return ok;
}

bool jit_cpu_module(ir_kernel *const *ks, int n, const char *cpu, const jit_options *o, void **so, size_t *len,
                    char *err, size_t errlen) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  cpu_llvm_options();
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/lattice-aot-XXXXXX", o && o->tmpdir && *o->tmpdir ? o->tmpdir : "/tmp");
  if (!mkdtemp(dir)) {
    snprintf(err, errlen, "cannot make a temporary folder %s: %m", dir);
    return false;
  }
  char **argv = calloc((size_t)n + 8, sizeof *argv);
  char (*objs)[1100] = calloc((size_t)n, sizeof *objs);
  char out[1100], log[1100];
  snprintf(out, sizeof out, "%s/module.so", dir);
  snprintf(log, sizeof log, "%s/link.log", dir);
  bool ok = argv && objs;
  if (!ok) snprintf(err, errlen, "out of memory");
  for (int i = 0; ok && i < n; i++) {
    snprintf(objs[i], sizeof objs[i], "%s/k%d.o", dir, i);
    ok = kernel_object(ks[i], i, cpu, objs[i], err, errlen);
  }
  if (ok) {
    int a = 0;
    argv[a++] = "cc";
    argv[a++] = "-shared";
    argv[a++] = "-Wl,-z,noexecstack";
    argv[a++] = "-o";
    argv[a++] = out;
    for (int i = 0; i < n; i++) argv[a++] = objs[i];
    argv[a++] = "-lm";
    argv[a] = NULL;
    int rc = run(argv, log);
    if (rc != 0) {
      size_t ln = 0;
      char *why = rc > 0 ? read_all(log, &ln) : NULL;
      snprintf(err, errlen, "linking the module's machine code into a shared object failed: %s%.*s",
               rc < 0 ? "cannot run 'cc' (a C compiler driver on PATH links modules; Debian: apt-get install gcc)"
                      : "cc said: ",
               why ? (int)(ln > 600 ? 600 : ln) : 0, why ? why : "");
      free(why);
      ok = false;
    }
  }
  if (ok) {
    *so = read_all(out, len);
    ok = *so != NULL;
    if (!ok) snprintf(err, errlen, "cannot read the linked module %s", out);
  }
  for (int i = 0; objs && i < n; i++) remove(objs[i]);
  remove(out);
  remove(log);
  rmdir(dir);
  free(argv);
  free(objs);
  return ok;
}
