/* startup.c -- reference timer for bench/run.sh: runs a command REPS times
** (stdout and stderr to /dev/null) and prints "startup_ms <median>".
**   startup REPS command [args...] */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: startup REPS command [args...]\n"); return 2; }
  int reps = atoi(argv[1]);
  if (reps < 1 || reps > 10000) { fprintf(stderr, "startup: bad REPS\n"); return 2; }
  double *t = malloc(sizeof(double) * (size_t)reps);
  if (!t) return 1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  for (int r = -1; r < reps; r++) { /* r = -1: warm the page cache */
    double t0 = now_ms();
    pid_t pid;
    if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0) { perror(argv[2]); return 1; }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "startup: %s failed\n", argv[2]);
      return 1;
    }
    if (r >= 0) t[r] = now_ms() - t0;
  }
  printf("startup_ms %.3f\n", median(t, reps));
  posix_spawn_file_actions_destroy(&fa);
  free(t);
  return 0;
}
