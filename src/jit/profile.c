/*
** profile.c -- the kernel profiler's records (profile.h). Records are made
** on a kernel's first profiled launch, found by name, and their indices
** kept on the jit_kernel (profile_slots, for the profile of profile_id), so
** a launch finds its records without a lookup.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"

struct jit_profile {
  int refs;
  uint64_t id;                  /* tells the profiles apart on a jit_kernel */
  int n, cap;
  jit_profile_record *rec;
  double *times;                /* jit_profile_marks */
  int *tasks;
  int marks_cap;
};

static uint64_t next_id = 1;   /* taken atomically: C hosts may make programs on several threads */

jit_profile *jit_profile_new(void) {
  jit_profile *pf = calloc(1, sizeof *pf);
  if (!pf) return NULL;
  pf->refs = 1;
  pf->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
  return pf;
}

void jit_profile_retain(jit_profile *pf) { pf->refs++; }

void jit_profile_release(jit_profile *pf) {
  if (!pf || --pf->refs > 0) return;
  for (int i = 0; i < pf->n; i++) free(pf->rec[i].name);
  free(pf->rec);
  free(pf->times);
  free(pf->tasks);
  free(pf);
}

static void zero(jit_profile_record *r) {
  r->calls = r->reused = 0;
  r->total_ms = r->min_ms = r->max_ms = 0;
}

void jit_profile_clear(jit_profile *pf) {
  for (int i = 0; i < pf->n; i++) zero(&pf->rec[i]);
}

int jit_profile_count(const jit_profile *pf) { return pf->n; }

const jit_profile_record *jit_profile_at(const jit_profile *pf, int i) {
  return i >= 0 && i < pf->n ? &pf->rec[i] : NULL;
}

const char *jit_profile_kind_name(ir_op kind) {
  const char *s = ir_op_name(kind);
  return strncmp(s, "task_", 5) == 0 ? s + 5 : s;
}

double jit_profile_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The record named `name` of kernel record `kernel` (-1: a kernel's), made
** when there is none; -1 when out of memory. */
static int32_t find(jit_profile *pf, const char *name, int kernel, int task, ir_op kind, int32_t snode) {
  for (int i = 0; i < pf->n; i++)
    if ((pf->rec[i].kernel < 0) == (kernel < 0) && strcmp(pf->rec[i].name, name) == 0) return i;
  if (pf->n == pf->cap) {
    int cap = pf->cap ? pf->cap * 2 : 32;
    jit_profile_record *r = realloc(pf->rec, (size_t)cap * sizeof *r);
    if (!r) return -1;
    pf->rec = r;
    pf->cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) return -1;
  jit_profile_record *r = &pf->rec[pf->n];
  *r = (jit_profile_record){.name = copy, .kernel = kernel, .task = task, .kind = kind, .snode = snode};
  return pf->n++;
}

const int32_t *jit_profile_slots(jit_profile *pf, jit_kernel *jk) {
  if (jk->profile_slots && jk->profile_id == pf->id) return jk->profile_slots;
  int32_t *slots = malloc((size_t)(jk->ntasks + 1) * sizeof *slots);
  if (!slots) return NULL;
  const char *kname = jk->name ? jk->name : "?";
  slots[0] = find(pf, kname, -1, -1, IR_task_serial, -1);
  for (int i = 0; i < jk->ntasks && slots[0] >= 0; i++) {
    const jit_task *t = &jk->tasks[i];
    char name[256];
    int n = snprintf(name, sizeof name, "%s#%d %s", kname, i, jit_profile_kind_name(t->kind));
    if (t->snode >= 0 && n > 0 && (size_t)n < sizeof name) snprintf(name + n, sizeof name - (size_t)n, " S%d", (int)t->snode);
    slots[1 + i] = find(pf, name, slots[0], i, t->kind, t->snode);
    if (slots[1 + i] < 0) slots[0] = -1;
  }
  if (slots[0] < 0) {
    free(slots);
    return NULL;
  }
  free(jk->profile_slots);
  jk->profile_slots = slots;
  jk->profile_id = pf->id;
  return slots;
}

bool jit_profile_marks(jit_profile *pf, int ntasks, double **times, int **tasks) {
  if (ntasks > pf->marks_cap) {
    double *t = realloc(pf->times, (size_t)ntasks * 2 * sizeof *t);
    if (t) pf->times = t;
    int *k = t ? realloc(pf->tasks, (size_t)ntasks * sizeof *k) : NULL;
    if (k) pf->tasks = k;
    if (!t || !k) return false;
    pf->marks_cap = ntasks;
  }
  *times = pf->times;
  *tasks = pf->tasks;
  return true;
}

void jit_profile_add(jit_profile *pf, int32_t slot, double ms) {
  jit_profile_record *r = &pf->rec[slot];
  if (ms < 0) ms = 0;
  if (r->calls == 0 || ms < r->min_ms) r->min_ms = ms;
  if (r->calls == 0 || ms > r->max_ms) r->max_ms = ms;
  r->calls++;
  r->total_ms += ms;
}

void jit_profile_reuse(jit_profile *pf, int32_t slot) { pf->rec[slot].reused++; }
