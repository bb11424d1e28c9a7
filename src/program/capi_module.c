/*
** capi_module.c -- the C API of AOT modules (include/lattice.h, docs/aot.md):
** loading and freeing modules, tree instances of their tree types and the
** fields of those, and launching a module's kernels with their arguments
** checked against the saved signature (count, kind, dtype, shape, tree
** type), each mismatch an error naming the parameter.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_impl.h"
#include "module.h"

static lt_status load(lt_runtime h, const char *path, const void *data, size_t bytes, const char *name,
                      lt_module *out, const char *fn) {
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  if (!out || (!path && !data)) {
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "%s is NULL", !out ? "out" : path ? "data" : "the path");
    capi_leave(rt);
    return st;
  }
  out->id = 0;
  char err[1536] = "";
  prog_program *p = capi_program(rt);
  prog_module *m = path ? prog_module_load(p, path, err, sizeof err)
                        : prog_module_load_bytes(p, data, bytes, name ? name : "(memory)", err, sizeof err);
  if (!m) {
    st = capi_fail(rt, strstr(err, "out of memory") ? LT_ERROR_OUT_OF_MEMORY
                       : strstr(err, "cannot open") ? LT_ERROR_NOT_FOUND : LT_ERROR_MODULE, fn, "%s", err);
  } else {
    uint64_t id;
    capi_obj *o = capi_new_obj(rt, OBJ_MODULE, fn, &id);
    if (!o) {
      prog_module_free(m);
      st = LT_ERROR_OUT_OF_MEMORY;
    } else {
      o->mod = m;
      o->module = id;
      out->id = id;
    }
  }
  capi_leave(rt);
  return st;
}

lt_status lt_module_load(lt_runtime h, const char *path, lt_module *out) {
  return load(h, path, NULL, 0, NULL, out, "lt_module_load");
}

lt_status lt_module_load_memory(lt_runtime h, const void *data, size_t bytes, const char *name, lt_module *out) {
  return load(h, NULL, data, bytes, name, out, "lt_module_load_memory");
}

/* The instance's field objects: invalid once it goes, so their slots go too. */
static void drop_fields(capi_runtime *rt, capi_instance *in) {
  if (in->nfields == 0) return;    /* nothing to look for: destroying many trees stays linear */
  in->nfields = 0;
  uint32_t n;
  capi_obj *objs = capi_objects(rt, &n);
  for (uint32_t i = 0; i < n; i++)
    if (objs[i].serial && objs[i].kind == OBJ_FIELD && objs[i].root_slot == &in->root) capi_drop_obj(rt, &objs[i]);
}

static void destroy_instance(capi_runtime *rt, capi_instance *in) {
  if (!in || !in->root) return;
  if (in->host) prog_instance_release(capi_program(rt), in->tree, in->root);
  else prog_instance_free(capi_program(rt), in->tree, in->root);
  in->root = NULL;
  drop_fields(rt, in);
}

void capi_module_drop(capi_runtime *rt, capi_obj *o) {
  if (o->kind == OBJ_TREE) {
    destroy_instance(rt, o->inst);
    return;
  }
  /* a module: its instances, then its kernels' handles, then the module */
  uint32_t n;
  capi_obj *objs = capi_objects(rt, &n);
  for (uint32_t i = 0; i < n; i++) {
    capi_obj *q = &objs[i];
    if (!q->serial || q == o || q->module != o->module) continue;
    capi_drop_obj(rt, q);          /* a tree: its instance goes (its fields' handles with it) */
  }
  prog_module_free(o->mod);
}

/* Enters the runtime and finds module handle m; NULL (left) with *st. */
static capi_runtime *enter_module(lt_runtime h, lt_module m, const char *fn, capi_obj **o, lt_status *st) {
  capi_runtime *rt = capi_enter(h, fn, st);
  if (!rt) return NULL;
  *o = capi_get_obj(rt, m.id, OBJ_MODULE, fn);
  if (!*o) {
    *st = LT_ERROR_INVALID_HANDLE;
    capi_leave(rt);
    return NULL;
  }
  return rt;
}

lt_status lt_module_free(lt_runtime h, lt_module m) {
  lt_status st;
  capi_obj *o;
  capi_runtime *rt = enter_module(h, m, "lt_module_free", &o, &st);
  if (!rt) return st;
  capi_drop_obj(rt, o);
  capi_leave(rt);
  return LT_OK;
}

static int find_tree(capi_runtime *rt, capi_obj *o, const char *name, const char *fn, lt_status *st) {
  int t = name ? prog_module_find_tree(o->mod, name) : -1;
  if (!name) *st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "the tree type's name is NULL");
  else if (t < 0) *st = capi_fail(rt, LT_ERROR_NOT_FOUND, fn, "module %s has no tree type '%s'", o->mod->file, name);
  return t;
}

lt_status lt_module_tree_type(lt_runtime h, lt_module m, const char *name, uint64_t *bytes) {
  const char *fn = "lt_module_tree_type";
  lt_status st;
  capi_obj *o;
  capi_runtime *rt = enter_module(h, m, fn, &o, &st);
  if (!rt) return st;
  int t = find_tree(rt, o, name, fn, &st);
  if (t >= 0 && bytes) *bytes = (uint64_t)o->mod->trees[t].bytes;
  capi_leave(rt);
  return st;
}

static lt_status tree_create(lt_runtime h, lt_module m, const char *type, void *memory, size_t size, lt_tree *out,
                             const char *fn) {
  lt_status st;
  capi_obj *o;
  capi_runtime *rt = enter_module(h, m, fn, &o, &st);
  if (!rt) return st;
  if (!out) {
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "out is NULL");
    capi_leave(rt);
    return st;
  }
  out->id = 0;
  int t = find_tree(rt, o, type, fn, &st);
  prog_program *p = capi_program(rt);
  if (t >= 0 && memory) {
    int64_t need = o->mod->trees[t].bytes;
    if (!p->be->host_memory)
      st = capi_fail(rt, LT_ERROR_UNSUPPORTED, fn, "tree instances in the host's memory need a CPU runtime");
    else if ((uintptr_t)memory % 64 != 0)
      st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "the block for tree type '%s' is not 64-byte aligned", type);
    else if (size < (size_t)need)
      st = capi_fail(rt, LT_ERROR_SHAPE, fn, "tree type '%s' needs a block of %lld bytes, got %zu", type,
                     (long long)need, size);
    if (st != LT_OK) t = -1;
  }
  if (t >= 0) {
    uint64_t module = o->module;     /* o moves when an object is added */
    int slot = o->mod->trees[t].root->tree;
    char err[768] = "";
    capi_instance *in = capi_instance_new(rt);
    char *root = !in ? NULL : memory ? memory : prog_instance_new(p, slot, err, sizeof err);
    if (in && memory) prog_instance_adopt(p, slot, root);
    uint64_t id;
    capi_obj *q = root ? capi_new_obj(rt, OBJ_TREE, fn, &id) : NULL;
    if (!in) {
      st = capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "out of memory");
    } else if (!root) {
      st = capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "tree type '%s': %s", type, err);
    } else if (!q) {
      if (memory) prog_instance_release(p, slot, root);
      else prog_instance_free(p, slot, root);
      st = LT_ERROR_OUT_OF_MEMORY;
    } else {
      in->root = root;
      in->tree = slot;
      in->module = module;
      in->host = memory != NULL;
      q->inst = in;
      q->module = module;
      q->index = t;
      out->id = id;
    }
  }
  capi_leave(rt);
  return st;
}

lt_status lt_tree_create(lt_runtime h, lt_module m, const char *type, lt_tree *out) {
  return tree_create(h, m, type, NULL, 0, out, "lt_tree_create");
}

lt_status lt_tree_create_in(lt_runtime h, lt_module m, const char *type, void *memory, size_t size, lt_tree *out) {
  if (!memory) {
    lt_status st;
    capi_runtime *rt = capi_enter(h, "lt_tree_create_in", &st);
    if (!rt) return st;
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, "lt_tree_create_in", "memory is NULL");
    capi_leave(rt);
    return st;
  }
  return tree_create(h, m, type, memory, size, out, "lt_tree_create_in");
}

lt_status lt_tree_destroy(lt_runtime h, lt_tree t) {
  const char *fn = "lt_tree_destroy";
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  capi_obj *o = capi_get_obj(rt, t.id, OBJ_TREE, fn);
  if (o) capi_drop_obj(rt, o);
  else st = LT_ERROR_INVALID_HANDLE;
  capi_leave(rt);
  return st;
}

/* The module object of handle id (a tree's or kernel's module). */
static capi_obj *module_of(capi_runtime *rt, uint64_t id, const char *fn) {
  return capi_get_obj(rt, id, OBJ_MODULE, fn);
}

lt_status lt_tree_field(lt_runtime h, lt_tree t, const char *name, lt_field *out) {
  const char *fn = "lt_tree_field";
  lt_status st;
  capi_runtime *rt = capi_enter(h, fn, &st);
  if (!rt) return st;
  capi_obj *o = capi_get_obj(rt, t.id, OBJ_TREE, fn);
  capi_obj *mo = o ? module_of(rt, o->module, fn) : NULL;
  if (!o || !mo) {
    capi_leave(rt);
    return LT_ERROR_INVALID_HANDLE;
  }
  if (!name || !out) {
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "%s is NULL", name ? "out" : "name");
    capi_leave(rt);
    return st;
  }
  out->id = 0;
  const mod_tree *tt = &mo->mod->trees[o->index];
  capi_instance *in = o->inst;
  int snode = -1;
  for (int i = 0; i < tt->nnodes && snode < 0; i++)
    if (tt->nodes[i].kind == IR_SN_place && strcmp(tt->nodes[i].name, name) == 0) snode = tt->nodes[i].id;
  if (snode < 0) {
    const mod_field *f = NULL;
    for (int i = 0; i < tt->nfields && !f; i++)
      if (strcmp(tt->fields[i].name, name) == 0) f = &tt->fields[i];
    if (f)
      st = capi_fail(rt, LT_ERROR_TYPE, fn, "field '%s' of tree type '%s' is a %s of %d components: name one, "
                     "e.g. '%s'", name, tt->name, f->kind == MOD_FIELD_VECTOR ? "vector" : "matrix", f->ncomp,
                     tt->nodes[f->comp[0]].name);
    else
      st = capi_fail(rt, LT_ERROR_NOT_FOUND, fn, "tree type '%s' has no field '%s'", tt->name, name);
    capi_leave(rt);
    return st;
  }
  char *label = strdup(name);
  uint64_t id;
  capi_obj *q = label ? capi_new_obj(rt, OBJ_FIELD, fn, &id) : NULL;
  if (!q) {
    free(label);
    st = capi_fail(rt, LT_ERROR_OUT_OF_MEMORY, fn, "out of memory");
  } else {
    q->snode = snode;
    q->root_slot = &in->root;
    q->label = label;
    in->nfields++;
    out->id = id;
  }
  capi_leave(rt);
  return st;
}

lt_status lt_module_kernel(lt_runtime h, lt_module m, const char *name, lt_kernel *out) {
  const char *fn = "lt_module_kernel";
  lt_status st;
  capi_obj *o;
  capi_runtime *rt = enter_module(h, m, fn, &o, &st);
  if (!rt) return st;
  if (!name || !out) {
    st = capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "%s is NULL", name ? "out" : "name");
    capi_leave(rt);
    return st;
  }
  out->id = 0;
  prog_module *mod = o->mod;
  uint64_t module = o->module;
  int k = prog_module_find_kernel(mod, name);
  uint64_t id;
  capi_obj *q = NULL;
  if (k < 0) st = capi_fail(rt, LT_ERROR_NOT_FOUND, fn, "module %s has no kernel '%s'", mod->file, name);
  else if (!(q = capi_new_obj(rt, OBJ_KERNEL, fn, &id))) st = LT_ERROR_OUT_OF_MEMORY;
  else {
    q->mod = mod;
    q->module = module;
    q->index = k;
    out->id = id;
  }
  capi_leave(rt);
  return st;
}

/* ---- launching a module's kernel -------------------------------------------------------- */

static const char *value_kind_name(lt_value_kind k) {
  static const char *names[] = {"no value", "an integer", "a float", "an ndarray", "a tree instance", "a vector"};
  return (unsigned)k < sizeof names / sizeof *names ? names[k] : "not an lt_value_kind";
}

/* One number for a scalar slot of type t; false when an integer slot gets a
** fractional float. */
static bool encode(ir_type t, lt_value_kind kind, int64_t i, double f, uint64_t *slot) {
  if (ir_type_is_float(t)) {
    *slot = prog_encode_float(t, kind == LT_VALUE_INT ? (double)i : f);
    return true;
  }
  if (kind == LT_VALUE_FLOAT) {
    if (!(f >= -9.3e18 && f <= 9.3e18) || (double)(int64_t)f != f) return false;
    i = (int64_t)f;
  }
  *slot = prog_encode_int(t, i);
  return true;
}

/* Parameter q's slots and root from argument v; LT_OK or the failure. */
static lt_status bind(capi_runtime *rt, const prog_module *m, const mod_kernel *mk, const mod_param *q,
                      const lt_value *v, uint64_t *slots, char **roots, const char *fn) {
  prog_program *p = capi_program(rt);
  const char *kn = mk->name;
  switch (q->kind) {
  case MOD_PARAM_SCALAR:
    if (v->kind != LT_VALUE_INT && v->kind != LT_VALUE_FLOAT) break;
    if (!encode(q->dtype, v->kind, v->as.i, v->as.f, &slots[q->slot]))
      return capi_fail(rt, LT_ERROR_TYPE, fn, "kernel %s: argument '%s' is %s and needs an integer, got %g", kn,
                       q->name, ir_type_name(q->dtype), v->as.f);
    return LT_OK;
  case MOD_PARAM_VECTOR:
    if (v->kind != LT_VALUE_VECTOR) break;
    if (!v->as.vec.v)                /* a NULL pointer: lattice.h's INVALID_ARGUMENT, not a shape */
      return capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "kernel %s: argument '%s': the vector's numbers are NULL",
                       kn, q->name);
    if (v->as.vec.n != q->rows * q->cols)
      return capi_fail(rt, LT_ERROR_SHAPE, fn, "kernel %s: argument '%s' takes %d numbers (%dx%d %s), got %d", kn,
                       q->name, q->rows * q->cols, q->rows, q->cols, ir_type_name(q->dtype), v->as.vec.n);
    for (int c = 0; c < q->nslots; c++)
      if (!encode(q->dtype, LT_VALUE_FLOAT, 0, v->as.vec.v[c], &slots[q->slot + c]))
        return capi_fail(rt, LT_ERROR_TYPE, fn, "kernel %s: argument '%s': component %d is %s and needs an integer, "
                         "got %g", kn, q->name, c, ir_type_name(q->dtype), v->as.vec.v[c]);
    return LT_OK;
  case MOD_PARAM_NDARRAY: {
    if (v->kind != LT_VALUE_NDARRAY) break;
    prog_ndarray *a = capi_ndarray(rt, v->as.nd, fn);
    if (!a) return LT_ERROR_INVALID_HANDLE;
    if (a->dtype != q->dtype || a->ndim != q->ndim)
      return capi_fail(rt, LT_ERROR_TYPE, fn, "kernel %s: argument '%s' must be an ndarray of %s with %d "
                       "dimension%s, got one of %s with %d", kn, q->name, ir_type_name(q->dtype), q->ndim,
                       q->ndim == 1 ? "" : "s", ir_type_name(a->dtype), a->ndim);
    char err[512] = "";
    char *addr = prog_ndarray_address(a, p, err, sizeof err);
    if (!addr) return capi_fail(rt, LT_ERROR_BACKEND, fn, "kernel %s: argument '%s': %s", kn, q->name, err);
    slots[q->slot] = (uint64_t)(uintptr_t)addr;
    for (int d = 0; d < q->ndim; d++) slots[q->slot + 1 + d] = prog_encode_int(IR_i32, a->shape[d]);
    return LT_OK;
  }
  case MOD_PARAM_TREE: {
    if (v->kind != LT_VALUE_TREE) break;
    capi_obj *o = capi_get_obj(rt, v->as.tree.id, OBJ_TREE, fn);
    if (!o) return LT_ERROR_INVALID_HANDLE;
    const mod_tree *want = &m->trees[q->tree];
    capi_obj *mo = capi_get_obj(rt, o->module, OBJ_MODULE, fn);
    if (!mo || mo->mod != m || o->index != q->tree)
      return capi_fail(rt, LT_ERROR_TYPE, fn, "kernel %s: argument '%s' must be an instance of tree type '%s', "
                       "got one of '%s'%s", kn, q->name, want->name,
                       mo ? mo->mod->trees[o->index].name : "?", mo && mo->mod != m ? " of another module" : "");
    roots[o->inst->tree] = o->inst->root;
    return LT_OK;
  }
  }
  static const char *want[] = {"a number (lt_int or lt_float)", "a vector (lt_vec)", "an ndarray (lt_nd)",
                               "a tree instance (lt_tree_value)"};
  return capi_fail(rt, LT_ERROR_TYPE, fn, "kernel %s: argument '%s' must be %s, got %s", kn, q->name,
                   want[q->kind], value_kind_name(v->kind));
}

lt_status capi_module_launch(capi_runtime *rt, capi_obj *ko, const lt_value *args, int nargs, lt_value *result) {
  const char *fn = "lt_kernel_launch";
  prog_module *m = ko->mod;
  const mod_kernel *mk = &m->kernels[ko->index];
  prog_kernel *c = &m->loaded[ko->index];
  if (nargs != mk->nparams) {
    char names[512] = "";
    size_t at = 0;
    for (int i = 0; i < mk->nparams && at < sizeof names; i++) {
      int w = snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", mk->params[i].name);
      if (w < 0) break;
      at += (size_t)w;
    }
    return capi_fail(rt, LT_ERROR_INVALID_ARGUMENT, fn, "kernel %s takes %d argument%s (%s), got %d", mk->name,
                     mk->nparams, mk->nparams == 1 ? "" : "s", names, nargs);
  }
  uint64_t slots[RT_MAX_ARGS] = {0};
  char *roots[IR_MAX_TREES];
  memcpy(roots, capi_program(rt)->mem, sizeof roots);
  bool seen_tree[MOD_MAX_TREES] = {false};
  for (int i = 0; i < nargs; i++) {
    lt_status st = bind(rt, m, mk, &mk->params[i], &args[i], slots, roots, fn);
    if (st != LT_OK) return st;
    if (mk->params[i].kind == MOD_PARAM_TREE) {
      if (seen_tree[mk->params[i].tree])   /* the saver refuses it; a hostile module could say so */
        return capi_fail(rt, LT_ERROR_TYPE, fn, "kernel %s: two parameters of one tree type", mk->name);
      seen_tree[mk->params[i].tree] = true;
    }
  }
  char err[1536] = "";
  uint64_t ret = 0;
  if (!prog_launch(c, roots, slots, c->k ? c->k->nargs : 0, &ret, NULL, NULL, err, sizeof err))
    return capi_fail(rt, strstr(err, "arguments '") ? LT_ERROR_INVALID_ARGUMENT : LT_ERROR_RUNTIME, fn, "%s", err);
  if (result && c->k && c->k->ret_type != IR_void) {
    if (ir_type_is_float(c->k->ret_type)) *result = lt_float(prog_decode_float(c->k->ret_type, ret));
    else *result = lt_int(prog_decode_int(c->k->ret_type, ret));
  }
  return LT_OK;
}
