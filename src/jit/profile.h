/*
** profile.h -- the kernel profiler (lt.profiler, docs/profiler.md): how many
** times each kernel and each of its offloaded tasks ran, and how long they
** took (total, min, max), and how often a list task was skipped because its
** list was still valid (list reuse).
**
** A jit_profile is a table of records, one per kernel name and one per task
** of it ("p2g#1 range_for", "sfor#1 listgen S3"). jit_launch_profiled
** (launch.c) fills it: the kernel's record with the host's wall-clock time
** of the whole launch, each task's with the time of that task alone, read
** from the host's monotonic clock around the task on a synchronous backend
** (the CPU) and from the backend's marks (CUDA: events recorded around each
** task, read once the launch has synchronised) on the others. Two kernels
** of one name (a kernel compiled for two argument signatures) share their
** records.
**
** No LLVM and no Lua here: the runtime library (AOT hosts) has it too.
** Launches into one profile must not run at the same time (a program's
** launches do not).
*/
#ifndef LATTICE_JIT_PROFILE_H
#define LATTICE_JIT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "jit.h"

typedef struct {
  char *name;                   /* "p2g", "p2g#1 range_for", "sfor#2 listgen S3" */
  int kernel;                   /* a task's kernel record; -1: this is a kernel */
  int task;                     /* the task's index in its kernel; -1 for a kernel */
  ir_op kind;                   /* a task's op (IR_task_*) */
  int32_t snode;                /* a sparse task's level; -1 */
  int64_t calls;                /* launches (kernel) or runs (task) timed */
  int64_t reused;               /* list tasks: skipped because the list was still valid */
  double total_ms, min_ms, max_ms;
} jit_profile_record;

typedef struct jit_profile jit_profile;

/* A new, empty profile with one reference; NULL when out of memory. */
jit_profile *jit_profile_new(void);
void jit_profile_retain(jit_profile *pf);
/* Drops a reference (NULL: nothing); the last one frees it. */
void jit_profile_release(jit_profile *pf);
/* Forgets every count and time (the records' names stay for later launches). */
void jit_profile_clear(jit_profile *pf);

/* The records in the order they were made (a kernel before its tasks);
** those with no call and no reuse since the last clear are there too. */
int jit_profile_count(const jit_profile *pf);
const jit_profile_record *jit_profile_at(const jit_profile *pf, int i);

/* The task's kind as the IR prints it: "range_for", "listgen", ... */
const char *jit_profile_kind_name(ir_op kind);

/* ---- for jit_launch_profiled (launch.c) ---- */

/* The host's monotonic clock in milliseconds. */
double jit_profile_now_ms(void);
/* jk's records in pf, made on its first launch: [0] the kernel's, [1 + i]
** task i's; NULL when out of memory (the launch is then not profiled). */
const int32_t *jit_profile_slots(jit_profile *pf, jit_kernel *jk);
/* Room for the marks of a launch of up to ntasks timed tasks: two host
** times and one task index per task; false when out of memory. */
bool jit_profile_marks(jit_profile *pf, int ntasks, double **times, int **tasks);
/* One call of record `slot` that took ms; one reuse of a list task's record. */
void jit_profile_add(jit_profile *pf, int32_t slot, double ms);
void jit_profile_reuse(jit_profile *pf, int32_t slot);

#endif
