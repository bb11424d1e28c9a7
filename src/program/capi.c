/*
** capi.c -- the public C API (include/lattice.h) over the program layer:
** runtimes and the handles of their objects, errors as values, ndarrays,
** exported fields and kernels.
**
** Handles are values {id}: id = serial << 24 | (slot + 1), where serial
** comes from one process-wide counter, so a handle names one object for
** ever: once the object goes, its slot's serial differs (or the slot is
** empty) and the handle is LT_ERROR_INVALID_HANDLE. Runtimes live in one
** process-wide table (the only state shared between runtimes, under a
** mutex); each runtime's objects live in its own table.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_impl.h"

_Static_assert((int)LT_I8 == (int)IR_i8 && (int)LT_I16 == (int)IR_i16 && (int)LT_I32 == (int)IR_i32 && (int)LT_I64 == (int)IR_i64 && (int)LT_U8 == (int)IR_u8 &&
                 (int)LT_U16 == (int)IR_u16 && (int)LT_U32 == (int)IR_u32 && (int)LT_U64 == (int)IR_u64 && (int)LT_F32 == (int)IR_f32 &&
                 (int)LT_F64 == (int)IR_f64,
               "lt_dtype takes the values of ir_type");
_Static_assert(LT_MAX_DIMS == IR_MAX_INDICES, "LT_MAX_DIMS is the IR's index limit");

#define SLOT_BITS 24
#define MAX_SLOTS ((1u << SLOT_BITS) - 1)

struct capi_runtime {
  uint64_t serial;
  capi_instance *instances;        /* every instance block made (capi_instance_new) */
  lt_runtime_config cfg;
  prog_program *prog;
  bool adopted;                    /* the Lua state took prog */
  capi_obj *objs;
  uint32_t nobjs, cap;
  uint32_t free_from;              /* no free slot below this one (capi_new_obj) */
  char error[2048];
  pthread_t owner;                 /* while depth > 0 */
  int depth;
  void *embed;
  const capi_embed_ops *ops;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static capi_runtime **table;       /* slot -> runtime, NULL: free */
static uint32_t table_n, table_cap;
static _Atomic uint64_t next_serial = 1;
static _Thread_local char invalid_error[512];   /* lt_last_error of an invalid runtime */
/* The runtime this thread last found in use by another thread, and why: its
** lt_last_error on this thread (rt->error is the other thread's) until this
** thread gets in. */
static _Thread_local uint64_t busy_id;
static _Thread_local char busy_error[256];

static uint64_t make_id(uint64_t serial, uint32_t slot) { return serial << SLOT_BITS | (uint64_t)(slot + 1); }
static uint32_t id_slot(uint64_t id) { return (uint32_t)(id & MAX_SLOTS) - 1; }   /* ~0u for 0 */
static uint64_t id_serial(uint64_t id) { return id >> SLOT_BITS; }

const char *lt_status_name(lt_status s) {
  static const char *names[] = {"LT_OK", "LT_ERROR_INVALID_ARGUMENT", "LT_ERROR_INVALID_HANDLE",
                                "LT_ERROR_NOT_FOUND", "LT_ERROR_TYPE", "LT_ERROR_SHAPE", "LT_ERROR_BUSY",
                                "LT_ERROR_OUT_OF_MEMORY", "LT_ERROR_BACKEND", "LT_ERROR_RUNTIME",
                                "LT_ERROR_SCRIPT", "LT_ERROR_UNSUPPORTED", "LT_ERROR_MODULE"};
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "(not an lt_status)";
}

size_t lt_dtype_size(lt_dtype t) {
  return t >= LT_I8 && t <= LT_F64 ? (size_t)ir_type_bits((ir_type)t) / 8 : 0;
}

/* ---- errors -------------------------------------------------------------------- */

static lt_status vfail(char *buf, size_t len, lt_status st, const char *fn, const char *fmt, va_list ap) {
  int n = snprintf(buf, len, "%s: ", fn);
  if (n < 0 || (size_t)n >= len) n = 0;
  vsnprintf(buf + n, len - (size_t)n, fmt, ap);
  return st;
}

lt_status capi_fail(capi_runtime *rt, lt_status st, const char *fn, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(rt->error, sizeof rt->error, st, fn, fmt, ap);
  va_end(ap);
  return st;
}

static lt_status invalid(lt_status st, const char *fn, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(invalid_error, sizeof invalid_error, st, fn, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- runtimes: the table and entering one ----------------------------------------- */

capi_runtime *capi_enter(lt_runtime h, const char *fn, lt_status *st) {
  pthread_mutex_lock(&table_lock);
  uint32_t slot = id_slot(h.id);
  capi_runtime *rt = slot < table_n ? table[slot] : NULL;
  if (!rt || rt->serial != id_serial(h.id)) {
    pthread_mutex_unlock(&table_lock);
    *st = invalid(LT_ERROR_INVALID_HANDLE, fn,
                  h.id == 0 ? "the runtime handle is zero (not made by lt_runtime_create)"
                            : "the runtime handle is invalid (its runtime was destroyed, or it was never one)");
    return NULL;
  }
  pthread_t self = pthread_self();
  if (rt->depth > 0 && !pthread_equal(rt->owner, self)) {
    pthread_mutex_unlock(&table_lock);
    snprintf(busy_error, sizeof busy_error,
             "%s: the runtime is in use by another thread; a runtime is used by one thread at a time "
             "(docs/embedding.md, \"Threads\")", fn);
    busy_id = h.id;
    *st = LT_ERROR_BUSY;
    return NULL;
  }
  if (busy_id == h.id) busy_id = 0;
  rt->owner = self;
  rt->depth++;
  pthread_mutex_unlock(&table_lock);
  rt->error[0] = 0;
  *st = LT_OK;
  return rt;
}

void capi_leave(capi_runtime *rt) {
  pthread_mutex_lock(&table_lock);
  rt->depth--;
  pthread_mutex_unlock(&table_lock);
}

const char *lt_last_error(lt_runtime h) {
  pthread_mutex_lock(&table_lock);
  uint32_t slot = id_slot(h.id);
  capi_runtime *rt = slot < table_n ? table[slot] : NULL;
  bool ok = rt && rt->serial == id_serial(h.id);
  pthread_mutex_unlock(&table_lock);
  return !ok ? invalid_error : h.id == busy_id ? busy_error : rt->error;
}

void lt_runtime_config_default(lt_runtime_config *cfg) {
  if (cfg) *cfg = (lt_runtime_config){.arch = LT_ARCH_CPU};
}

prog_config capi_prog_config(const capi_runtime *rt) {
  return (prog_config){
    .arch = rt->cfg.arch == LT_ARCH_CUDA ? "cuda" : "cpu",
    .threads = rt->cfg.threads,
    .debug = rt->cfg.debug != 0,
    .pool_bytes = (int64_t)rt->cfg.device_memory,
    .pool_memory = rt->cfg.pool_memory,
  };
}

lt_status lt_runtime_create(const lt_runtime_config *cfg, lt_runtime *out) {
  const char *fn = "lt_runtime_create";
  if (!out) return invalid(LT_ERROR_INVALID_ARGUMENT, fn, "out is NULL");
  out->id = 0;
  lt_runtime_config c;
  lt_runtime_config_default(&c);
  if (cfg) c = *cfg;
  if (c.arch != LT_ARCH_CPU && c.arch != LT_ARCH_CUDA)
    return invalid(LT_ERROR_INVALID_ARGUMENT, fn, "arch is %d; use LT_ARCH_CPU or LT_ARCH_CUDA", (int)c.arch);
  if (c.threads < 0 || c.threads > 1024)
    return invalid(LT_ERROR_INVALID_ARGUMENT, fn, "threads is %d; give 1 to 1024, or 0 for one per core",
                   c.threads);
  if (c.device_memory > (uint64_t)INT64_MAX)
    return invalid(LT_ERROR_INVALID_ARGUMENT, fn, "device_memory of %llu bytes is too large",
                   (unsigned long long)c.device_memory);
  if (c.pool_memory && (c.arch != LT_ARCH_CPU || c.device_memory == 0 || (uintptr_t)c.pool_memory % 64 != 0))
    return invalid(LT_ERROR_INVALID_ARGUMENT, fn, "pool_memory needs arch LT_ARCH_CPU, its size in device_memory "
                   "and 64-byte alignment");
  capi_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return invalid(LT_ERROR_OUT_OF_MEMORY, fn, "out of memory");
  rt->cfg = c;
  prog_config pc = capi_prog_config(rt);
  prog_config_from_env(&pc);
  char err[1024] = "";
  rt->prog = prog_create(&pc, err, sizeof err);
  if (!rt->prog) {
    free(rt);
    return invalid(strstr(err, "memory pool") ? LT_ERROR_OUT_OF_MEMORY : LT_ERROR_BACKEND, fn, "%s", err);
  }
  pthread_mutex_lock(&table_lock);
  uint32_t slot = 0;
  while (slot < table_n && table[slot]) slot++;
  if (slot == table_n) {
    if (table_n == table_cap) {
      uint32_t cap = table_cap ? table_cap * 2 : 8;
      capi_runtime **t = cap < MAX_SLOTS ? realloc(table, cap * sizeof *t) : NULL;
      if (!t) {
        pthread_mutex_unlock(&table_lock);
        prog_release(rt->prog);
        free(rt);
        return invalid(LT_ERROR_OUT_OF_MEMORY, fn, "out of memory for the table of runtimes");
      }
      table = t;
      table_cap = cap;
    }
    table_n++;
  }
  rt->serial = atomic_fetch_add(&next_serial, 1);
  table[slot] = rt;
  pthread_mutex_unlock(&table_lock);
  out->id = make_id(rt->serial, slot);
  return LT_OK;
}

/* The slot is freed first: a release callback may call the runtime again from
** this thread (lattice.h allows it) and make objects, which can move rt->objs. */
void capi_drop_obj(capi_runtime *rt, capi_obj *o) {
  uint32_t slot = (uint32_t)(o - rt->objs);
  if (slot < rt->free_from) rt->free_from = slot;
  if (o->kind == OBJ_MODULE || o->kind == OBJ_TREE) {
    capi_module_drop(rt, o);
    *o = (capi_obj){0};
    return;
  }
  capi_obj gone = *o;
  *o = (capi_obj){0};
  if (gone.kind == OBJ_NDARRAY) prog_ndarray_release(gone.nd);
  if (gone.name && rt->ops && rt->ops->unref) rt->ops->unref(rt, gone.ref);
  free(gone.name);
  free(gone.label);
}

lt_status lt_runtime_destroy(lt_runtime h) {
  lt_status st;
  capi_runtime *rt = capi_enter(h, "lt_runtime_destroy", &st);
  if (!rt) return st;
  if (rt->depth > 1) {   /* from the runtime's own Lua code */
    st = capi_fail(rt, LT_ERROR_BUSY, "lt_runtime_destroy", "the runtime is running (called from its own Lua code)");
    capi_leave(rt);
    return st;
  }
  pthread_mutex_lock(&table_lock);
  table[id_slot(h.id)] = NULL;     /* from now on its handles are invalid */
  pthread_mutex_unlock(&table_lock);
  for (uint32_t i = 0; i < rt->nobjs; i++)
    if (rt->objs[i].serial && rt->objs[i].name) capi_drop_obj(rt, &rt->objs[i]);
  if (rt->ops && rt->ops->close) rt->ops->close(rt);   /* Lua's references go with its state */
  for (uint32_t i = 0; i < rt->nobjs; i++)
    if (rt->objs[i].serial) capi_drop_obj(rt, &rt->objs[i]);
  free(rt->objs);
  while (rt->instances) {
    capi_instance *next = rt->instances->next;
    free(rt->instances);
    rt->instances = next;
  }
  prog_release(rt->prog);
  free(rt);
  return LT_OK;
}

const lt_runtime_config *capi_config(const capi_runtime *rt) { return &rt->cfg; }
const char *capi_message(const capi_runtime *rt) { return rt->error; }
prog_program *capi_program(capi_runtime *rt) { return rt->prog; }
void *capi_embed(const capi_runtime *rt) { return rt->embed; }

void capi_set_embed(capi_runtime *rt, void *state, const capi_embed_ops *ops) {
  rt->embed = state;
  rt->ops = ops;
}

bool capi_adopt_program(capi_runtime *rt) {
  bool was = rt->adopted;
  rt->adopted = true;
  return was;
}

void capi_set_program(capi_runtime *rt, prog_program *p) {
  for (uint32_t i = 0; i < rt->nobjs; i++)
    if (rt->objs[i].serial && rt->objs[i].name) capi_drop_obj(rt, &rt->objs[i]);
  prog_retain(p);
  prog_release(rt->prog);
  rt->prog = p;
}

/* ---- objects ---------------------------------------------------------------------- */

/* A new object's slot (serial set), or NULL with the message. */
capi_obj *capi_new_obj(capi_runtime *rt, obj_kind kind, const char *fn, uint64_t *id) {
  uint32_t slot = rt->free_from;   /* every slot below it is taken */
  while (slot < rt->nobjs && rt->objs[slot].serial) slot++;
  rt->free_from = slot + 1;
  if (slot == rt->nobjs) {
    if (rt->nobjs == rt->cap) {
      uint32_t cap = rt->cap ? rt->cap * 2 : 16;
      capi_obj *o = cap < MAX_SLOTS ? realloc(rt->objs, cap * sizeof *o) : NULL;
      if (!o) {
        capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "out of memory for the table of objects");
        return NULL;
      }
      rt->objs = o;
      rt->cap = cap;
    }
    rt->nobjs++;
  }
  capi_obj *o = &rt->objs[slot];
  *o = (capi_obj){.serial = atomic_fetch_add(&next_serial, 1), .kind = kind};
  *id = make_id(o->serial, slot);
  return o;
}

capi_obj *capi_objects(capi_runtime *rt, uint32_t *n) {
  *n = rt->nobjs;
  return rt->objs;
}

capi_instance *capi_instance_new(capi_runtime *rt) {
  capi_instance *in = calloc(1, sizeof *in);
  if (in) {
    in->next = rt->instances;
    rt->instances = in;
  }
  return in;
}

static const char *kind_noun(obj_kind k) {
  static const char *names[] = {"nothing", "ndarray", "field", "kernel", "module", "tree"};
  return (unsigned)k < sizeof names / sizeof *names ? names[k] : "nothing";
}

static const char *kind_name(obj_kind k) {
  return k == OBJ_NDARRAY ? "an ndarray" : k == OBJ_FIELD ? "a field" : k == OBJ_KERNEL ? "a kernel"
         : k == OBJ_MODULE ? "a module" : k == OBJ_TREE ? "a tree instance" : "nothing";
}

/* The object of handle id, of kind `kind`; NULL with the message. */
capi_obj *capi_get_obj(capi_runtime *rt, uint64_t id, obj_kind kind, const char *fn) {
  uint32_t slot = id_slot(id);
  capi_obj *o = slot < rt->nobjs ? &rt->objs[slot] : NULL;
  if (!o || !o->serial || o->serial != id_serial(id)) {
    capi_fail(rt, LT_ERROR_INVALID_HANDLE, fn,
              id == 0 ? "the %s handle is zero (never made)"
                      : "the %s handle is invalid: released, destroyed, freed with its module, replaced by a later "
                        "lt.export or lt.init, or made by another runtime",
              kind_noun(kind));
    return NULL;
  }
  if (o->kind != kind) {
    capi_fail(rt, LT_ERROR_INVALID_HANDLE, fn, "the handle is %s, not %s", kind_name(o->kind), kind_name(kind));
    return NULL;
  }
  return o;
}

prog_ndarray *capi_ndarray(capi_runtime *rt, lt_ndarray a, const char *fn) {
  capi_obj *o = capi_get_obj(rt, a.id, OBJ_NDARRAY, fn);
  return o ? o->nd : NULL;
}

static capi_obj *find_export(capi_runtime *rt, const char *name) {
  for (uint32_t i = 0; i < rt->nobjs; i++)
    if (rt->objs[i].serial && rt->objs[i].name && strcmp(rt->objs[i].name, name) == 0) return &rt->objs[i];
  return NULL;
}

static lt_status export(capi_runtime *rt, const char *name, obj_kind kind, int ref, capi_obj **out) {
  const char *fn = "lt.export";
  capi_obj *old = find_export(rt, name);
  if (old) capi_drop_obj(rt, old);
  uint64_t id;
  char *copy = strdup(name);
  capi_obj *o = copy ? capi_new_obj(rt, kind, fn, &id) : NULL;
  if (!o) {
    free(copy);
    if (rt->ops && rt->ops->unref) rt->ops->unref(rt, ref);
    return capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "out of memory");
  }
  o->name = copy;
  o->ref = ref;
  *out = o;
  return LT_OK;
}

lt_status capi_export_kernel(capi_runtime *rt, const char *name, int ref) {
  capi_obj *o;
  return export(rt, name, OBJ_KERNEL, ref, &o);
}

lt_status capi_export_field(capi_runtime *rt, const char *name, int snode, char *const *root_slot, int ref) {
  capi_obj *o;
  lt_status st = export(rt, name, OBJ_FIELD, ref, &o);
  if (st != LT_OK) return st;
  o->snode = snode;
  o->root_slot = root_slot;
  return LT_OK;
}

/* ---- ndarrays ---------------------------------------------------------------------- */

static lt_status check_dims(capi_runtime *rt, const char *fn, lt_dtype dtype, int ndim, const int64_t *shape) {
  if (!lt_dtype_size(dtype))
    return capi_fail(rt, LT_ERROR_TYPE, fn, "dtype %d is not an lt_dtype (LT_I8 ... LT_F64)", (int)dtype);
  if (ndim < 1 || ndim > LT_MAX_DIMS)
    return capi_fail(rt, LT_ERROR_SHAPE, fn, "ndim is %d; an ndarray has 1 to %d dimensions", ndim, LT_MAX_DIMS);
  if (!shape) return capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "shape is NULL");
  return LT_OK;
}

static lt_status add_ndarray(capi_runtime *rt, const char *fn, prog_ndarray *a, const char *err, lt_ndarray *out) {
  if (!a) {
    lt_status st = strstr(err, "memory") && !strstr(err, "device memory (") ? LT_ERROR_OUT_OF_MEMORY
                   : strstr(err, "NULL")                                   ? LT_ERROR_INVALID_ARGUMENT
                                                                           : LT_ERROR_SHAPE;
    return capi_fail(rt, st, fn, "%s", err);
  }
  uint64_t id;
  capi_obj *o = capi_new_obj(rt, OBJ_NDARRAY, fn, &id);
  if (!o) {
    prog_ndarray_release(a);
    return LT_ERROR_OUT_OF_MEMORY;
  }
  o->nd = a;
  out->id = id;
  return LT_OK;
}

/* Enters the runtime for a new ndarray and checks what every constructor
** takes (out, dtype, ndim, shape); NULL with *st when the handle is invalid,
** else the runtime (to leave) with *st the checks' status. */
static capi_runtime *enter_new_nd(lt_runtime h, const char *fn, lt_dtype dtype, int ndim, const int64_t *shape,
                                  lt_ndarray *out, lt_status *st) {
  capi_runtime *rt = capi_enter(h, fn, st);
  if (!rt) return NULL;
  if (!out) {
    *st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "out is NULL");
  } else {
    out->id = 0;
    *st = check_dims(rt, fn, dtype, ndim, shape);
  }
  return rt;
}

lt_status lt_ndarray_create(lt_runtime h, lt_dtype dtype, int ndim, const int64_t *shape, lt_ndarray *out) {
  const char *fn = "lt_ndarray_create";
  lt_status st;
  capi_runtime *rt = enter_new_nd(h, fn, dtype, ndim, shape, out, &st);
  if (!rt) return st;
  if (st == LT_OK) {
    char err[512] = "";
    prog_ndarray *a = prog_ndarray_new(rt->prog, (ir_type)dtype, ndim, shape, err, sizeof err);
    st = add_ndarray(rt, fn, a, err, out);
  }
  capi_leave(rt);
  return st;
}

lt_status lt_ndarray_wrap(lt_runtime h, lt_dtype dtype, int ndim, const int64_t *shape, void *data, size_t bytes,
                          void (*release)(void *user, void *data), void *user, lt_ndarray *out) {
  const char *fn = "lt_ndarray_wrap";
  lt_status st;
  capi_runtime *rt = enter_new_nd(h, fn, dtype, ndim, shape, out, &st);
  if (!rt) return st;
  if (st == LT_OK && !data) st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "data is NULL");
  if (st == LT_OK) {
    char err[512] = "";
    prog_ndarray *a =
      prog_ndarray_wrap(rt->prog, (ir_type)dtype, ndim, shape, data, bytes, release, user, err, sizeof err);
    st = add_ndarray(rt, fn, a, err, out);
  }
  capi_leave(rt);
  return st;
}

/* Enters the runtime and finds ndarray a; NULL (left) with *st on failure. */
static capi_runtime *enter_nd(lt_runtime h, lt_ndarray a, const char *fn, prog_ndarray **nd, lt_status *st) {
  capi_runtime *rt = capi_enter(h, fn, st);
  if (!rt) return NULL;
  *nd = capi_ndarray(rt, a, fn);
  if (!*nd) {
    *st = LT_ERROR_INVALID_HANDLE;
    capi_leave(rt);
    return NULL;
  }
  return rt;
}

static lt_status nd_copy(lt_runtime h, lt_ndarray a, void *dst, const void *src, size_t bytes, const char *fn) {
  lt_status st;
  prog_ndarray *nd;
  capi_runtime *rt = enter_nd(h, a, fn, &nd, &st);
  if (!rt) return st;
  char err[512] = "";
  if (!(dst ? dst : src)) st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "the buffer is NULL");
  else if (dst ? !prog_ndarray_read(nd, dst, bytes, err, sizeof err)
               : !prog_ndarray_write(nd, src, bytes, err, sizeof err))
    st = capi_fail(rt, strstr(err, "bytes;") ? LT_ERROR_SHAPE : LT_ERROR_BACKEND, fn, "%s", err);
  capi_leave(rt);
  return st;
}

lt_status lt_ndarray_read(lt_runtime h, lt_ndarray a, void *dst, size_t bytes) {
  return nd_copy(h, a, dst, NULL, bytes, "lt_ndarray_read");
}

lt_status lt_ndarray_write(lt_runtime h, lt_ndarray a, const void *src, size_t bytes) {
  return nd_copy(h, a, NULL, src, bytes, "lt_ndarray_write");
}

/* What lt_ndarray_shape and lt_field_shape hand out (each pointer may be
** NULL; shape gets LT_MAX_DIMS entries, zeros past n). */
static void put_shape(ir_type t, int n, const int64_t *extents, lt_dtype *dtype, int *ndim, int64_t *shape) {
  if (dtype) *dtype = (lt_dtype)t;
  if (ndim) *ndim = n;
  if (shape)
    for (int i = 0; i < LT_MAX_DIMS; i++) shape[i] = i < n ? extents[i] : 0;
}

lt_status lt_ndarray_shape(lt_runtime h, lt_ndarray a, lt_dtype *dtype, int *ndim, int64_t *shape) {
  lt_status st;
  prog_ndarray *nd;
  capi_runtime *rt = enter_nd(h, a, "lt_ndarray_shape", &nd, &st);
  if (!rt) return st;
  put_shape(nd->dtype, nd->ndim, nd->shape, dtype, ndim, shape);
  capi_leave(rt);
  return LT_OK;
}

lt_status lt_ndarray_release(lt_runtime h, lt_ndarray a) {
  const char *fn = "lt_ndarray_release";
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  capi_obj *o = capi_get_obj(rt, a.id, OBJ_NDARRAY, fn);
  if (o) capi_drop_obj(rt, o);
  else st = LT_ERROR_INVALID_HANDLE;
  capi_leave(rt);
  return st;
}

/* ---- fields ------------------------------------------------------------------------- */

static lt_status find(lt_runtime h, const char *name, obj_kind kind, const char *fn, uint64_t *out) {
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  if (!out || !name) {
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "%s is NULL", name ? "out" : "name");
  } else {
    *out = 0;
    capi_obj *o = find_export(rt, name);
    if (!o) {
      st = capi_fail(rt, LT_ERROR_NOT_FOUND, fn, "no %s is exported as '%s'; the script exports it with "
                     "lt.export(\"%s\", value)", kind == OBJ_FIELD ? "field" : "kernel", name, name);
    } else if (o->kind != kind) {
      st = capi_fail(rt, LT_ERROR_TYPE, fn, "'%s' is %s, not %s", name, kind_name(o->kind), kind_name(kind));
    } else {
      *out = make_id(o->serial, (uint32_t)(o - rt->objs));
    }
  }
  capi_leave(rt);
  return st;
}

lt_status lt_field_find(lt_runtime h, const char *name, lt_field *out) {
  return find(h, name, OBJ_FIELD, "lt_field_find", out ? &out->id : NULL);
}

lt_status lt_kernel_find(lt_runtime h, const char *name, lt_kernel *out) {
  return find(h, name, OBJ_KERNEL, "lt_kernel_find", out ? &out->id : NULL);
}

/* The place SNode, instance root and exported name of field f (messages name
** the field as the host knows it: the SNode's own name is often '?'); NULL
** with the message. */
static const ir_snode *field_of(capi_runtime *rt, lt_field f, const char *fn, char **root, const char **name) {
  capi_obj *o = capi_get_obj(rt, f.id, OBJ_FIELD, fn);
  if (!o) return NULL;
  prog_program *p = rt->prog;
  const ir_snode *s = p->ir && o->snode >= 0 && o->snode < p->ir->nsnodes ? p->ir->snodes[o->snode] : NULL;
  if (!s || s->kind != IR_SN_place) {
    capi_fail(rt, LT_ERROR_INVALID_HANDLE, fn, "field '%s' no longer exists in the runtime's program",
              o->name ? o->name : o->label);
    return NULL;
  }
  *root = *o->root_slot;
  *name = o->name ? o->name : o->label;
  if (!*root) {
    capi_fail(rt, LT_ERROR_INVALID_HANDLE, fn, "the tree instance of field '%s' was destroyed", *name);
    return NULL;
  }
  return s;
}

static lt_status check_dtype(capi_runtime *rt, const char *fn, const ir_snode *s, const char *name,
                             lt_dtype dtype) {
  if ((int)dtype == (int)s->dtype) return LT_OK;
  return capi_fail(rt, LT_ERROR_TYPE, fn, "field '%s' holds %s; the value given is %s", name,
                   ir_type_name(s->dtype), lt_dtype_size(dtype) ? ir_type_name((ir_type)dtype) : "no lt_dtype");
}

lt_status lt_field_shape(lt_runtime h, lt_field f, lt_dtype *dtype, int *ndim, int64_t *shape) {
  const char *fn = "lt_field_shape";
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  char *root;
  const char *name;
  const ir_snode *s = field_of(rt, f, fn, &root, &name);
  if (!s) st = LT_ERROR_INVALID_HANDLE;
  else put_shape(s->dtype, s->nidx, s->total_shape, dtype, ndim, shape);
  capi_leave(rt);
  return st;
}

static lt_status field_access(lt_runtime h, lt_field f, const int64_t *begin, const int64_t *extent, int n,
                              lt_dtype dtype, void *dst, const void *src, size_t bytes, bool box, const char *fn) {
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  char *root;
  const char *name;
  const ir_snode *s = field_of(rt, f, fn, &root, &name);
  if (!s) {
    capi_leave(rt);
    return LT_ERROR_INVALID_HANDLE;
  }
  if ((st = check_dtype(rt, fn, s, name, dtype)) != LT_OK) goto done;
  if (!(dst ? dst : src) || (!begin && s->nidx > 0) || (box && !extent && s->nidx > 0)) {
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "a pointer argument is NULL");
    goto done;
  }
  if (n != s->nidx) {
    st = capi_fail(rt, LT_ERROR_SHAPE, fn, "field '%s' has %d indices, got %d", name, s->nidx, n);
    goto done;
  }
  size_t es = lt_dtype_size(dtype);
  int64_t count = 1, idx[IR_MAX_INDICES] = {0};
  char err[768] = "";
  for (int i = 0; i < n; i++) {
    int64_t e = box ? extent[i] : 1;
    if (e < 0 || begin[i] < 0 || begin[i] >= s->total_shape[i] + (box ? 1 : 0) || e > s->total_shape[i] - begin[i]) {
      char shape[160];
      prog_shape_text(s, shape, sizeof shape);
      if (box)
        st = capi_fail(rt, LT_ERROR_SHAPE, fn, "the box [%lld, %lld) on axis %d is outside field '%s' with shape %s",
                       (long long)begin[i], (long long)(begin[i] + e), i, name, shape);
      else
        st = capi_fail(rt, LT_ERROR_SHAPE, fn, "index %lld out of range for axis %d of field '%s' with shape %s",
                       (long long)begin[i], i, name, shape);
      goto done;
    }
    count *= e;
    idx[i] = begin[i];
  }
  if (box && bytes != (size_t)count * es) {
    st = capi_fail(rt, LT_ERROR_SHAPE, fn, "the buffer has %zu bytes; the box's %lld %s elements take %zu", bytes,
                   (long long)count, ir_type_name(s->dtype), (size_t)count * es);
    goto done;
  }
  int64_t ones[IR_MAX_INDICES];
  for (int i = 0; i < IR_MAX_INDICES; i++) ones[i] = 1;
  if (!prog_field_box(rt->prog, s, root, idx, box ? extent : ones, dst, src, err, sizeof err))
    st = capi_fail(rt, strstr(err, "pool") ? LT_ERROR_OUT_OF_MEMORY : LT_ERROR_BACKEND, fn, "%s", err);
done:
  capi_leave(rt);
  return st;
}

lt_status lt_field_read(lt_runtime h, lt_field f, const int64_t *index, int nindex, lt_dtype dtype, void *value) {
  return field_access(h, f, index, NULL, nindex, dtype, value, NULL, 0, false, "lt_field_read");
}

lt_status lt_field_write(lt_runtime h, lt_field f, const int64_t *index, int nindex, lt_dtype dtype,
                         const void *value) {
  return field_access(h, f, index, NULL, nindex, dtype, NULL, value, 0, false, "lt_field_write");
}

lt_status lt_field_read_box(lt_runtime h, lt_field f, const int64_t *begin, const int64_t *extent, int n,
                            lt_dtype dtype, void *dst, size_t bytes) {
  return field_access(h, f, begin, extent, n, dtype, dst, NULL, bytes, true, "lt_field_read_box");
}

lt_status lt_field_write_box(lt_runtime h, lt_field f, const int64_t *begin, const int64_t *extent, int n,
                             lt_dtype dtype, const void *src, size_t bytes) {
  return field_access(h, f, begin, extent, n, dtype, NULL, src, bytes, true, "lt_field_write_box");
}

/* ---- kernels ------------------------------------------------------------------------ */

lt_status lt_kernel_launch(lt_runtime h, lt_kernel k, const lt_value *args, int nargs, lt_value *result) {
  const char *fn = "lt_kernel_launch";
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  if (result) *result = (lt_value){0};
  capi_obj *o = capi_get_obj(rt, k.id, OBJ_KERNEL, fn);
  if (!o) st = LT_ERROR_INVALID_HANDLE;
  else if (nargs < 0 || (nargs > 0 && !args))
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "%s", nargs < 0 ? "nargs is negative" : "args is NULL");
  else if (o->mod)
    st = capi_module_launch(rt, o, args, nargs, result);   /* a module's kernel: capi_module.c */
  else {
    for (int i = 0; i < nargs && st == LT_OK; i++) {
      if (args[i].kind == LT_VALUE_NDARRAY) {
        if (!capi_ndarray(rt, args[i].as.nd, fn)) st = LT_ERROR_INVALID_HANDLE;
      } else if (args[i].kind != LT_VALUE_INT && args[i].kind != LT_VALUE_FLOAT) {
        st = capi_fail(rt, LT_ERROR_TYPE, fn, "argument %d has kind %d; a script's kernel takes lt_int, lt_float or lt_nd", i + 1,
                       (int)args[i].kind);
      }
    }
    if (st == LT_OK) st = rt->ops ? rt->ops->call(rt, o->ref, args, nargs, result) : LT_ERROR_UNSUPPORTED;
  }
  capi_leave(rt);
  return st;
}
