/*
** service.c -- rt_serve: one host request run where the pool is
** (service.h). Device side (freestanding); on CUDA it runs on one GPU thread
** while no kernel does, so it may walk and build lists sequentially.
**
** A request comes from the host, so it is checked before it is trusted: an
** SNode id out of range, a level never registered or a path too deep sets
** `failed` instead of touching memory.
*/
#include "service.h"

/* The registered meta of snode, or 0 (rt_runtime_meta checks the range). */
static const rt_meta *meta_of(rt_runtime *rt, int32_t snode) { return rt_runtime_meta(rt, snode); }

static int path_ok(rt_runtime *rt, const rt_request *req) {
  if (req->depth < 0 || req->depth > RT_REQ_MAX_DEPTH) return 0;
  for (int32_t l = 0; l < req->depth; l++)
    if (!meta_of(rt, req->path[l].snode)) return 0;
  return 1;
}

/* The container (or value) at the end of the path; 0 when a cell on the way
** is inactive, or (with req->failed set) could not be activated. */
static char *walk(rt_runtime *rt, rt_request *req) {
  char *node = req->root;
  for (int32_t l = 0; l < req->depth; l++) {
    const rt_req_level *lv = &req->path[l];
    const rt_meta *m = &rt->metas[lv->snode];
    if (lv->cell < 0 || lv->cell >= m->num_cells) {
      req->failed = 1;
      return 0;
    }
    char *cell = req->activate ? rt_node_activate(m, node, lv->cell)
                               : rt_node_lookup_element(m, node, lv->cell);
    if (cell == rt->sink) {
      req->failed = 1;
      return 0;
    }
    if (cell == rt->ambient) return 0;
    node = cell + lv->offset;
  }
  return node;
}

/* The ops that end at a level's container: ACTIVATE .. APPEND. */
static void on_level(rt_runtime *rt, rt_request *req) {
  req->value = req->op == RT_REQ_APPEND ? -1 : 0;
  const rt_meta *m = meta_of(rt, req->snode);
  if (!m || !path_ok(rt, req)) {
    req->failed = 1;
    return;
  }
  int32_t op = req->op, cell = req->cell;
  int dynamic = m->kind == RT_KIND_DYNAMIC;
  if ((op == RT_REQ_APPEND && !dynamic) ||
      ((op == RT_REQ_ACTIVATE || op == RT_REQ_IS_ACTIVE || (op == RT_REQ_DEACTIVATE && !dynamic)) &&
       (cell < 0 || cell >= m->num_cells))) {
    req->failed = 1;
    return;
  }
  char *node = walk(rt, req);
  if (!node) return;
  switch (op) {
  case RT_REQ_ACTIVATE: {
    char *c = rt_node_activate(m, node, cell);
    req->failed = c == rt->sink;
    req->value = !req->failed;
    break;
  }
  case RT_REQ_DEACTIVATE: rt_node_deactivate(m, node, cell); break;   /* dynamic: the whole list */
  case RT_REQ_IS_ACTIVE: req->value = rt_node_is_active(m, node, cell); break;
  case RT_REQ_LENGTH: req->value = dynamic ? rt_dynamic_length(m, node) : -1; break;
  case RT_REQ_APPEND: {
    int32_t i;
    char *c = rt_dynamic_append_cell(m, node, m->chunk_cells, 0, &i);
    if (i < 0) break;                      /* full: value stays -1 */
    req->value = i;
    req->failed = c == rt->sink;
    req->addr = req->failed ? 0 : c;
    break;
  }
  default: break;
  }
}

/* Lists of every level from the root down to req->snode (the root's list
** holds req->root), then every cell of snode's containers deactivated and,
** for levels with an allocator, their cells collected. */
static void deactivate_all(rt_runtime *rt, rt_request *req) {
  const rt_meta *m = meta_of(rt, req->snode);
  if (!m || !path_ok(rt, req)) {
    req->failed = 1;
    return;
  }
  int32_t s = req->snode;
  if (req->depth == 0) {
    rt_listgen_root(rt, s, req->root);
  } else {
    rt_listgen_root(rt, req->path[0].snode, req->root);
    for (int32_t l = 1; l <= req->depth; l++) {
      int32_t parent = req->path[l - 1].snode, child = l < req->depth ? req->path[l].snode : s;
      rt_list_clear(rt, child);
      rt_listgen(rt, parent, child, req->path[l - 1].offset, 0, rt_listgen_size(rt, parent));
    }
  }
  rt_deactivate_all(rt, s, 0, rt_listgen_size(rt, s));
  if (m->kind == RT_KIND_POINTER || m->kind == RT_KIND_DYNAMIC) rt_gc(rt, s);
}

void rt_serve(rt_runtime *rt, rt_request *req) {
  req->addr = 0;
  req->value = 0;
  req->failed = 0;
  if (req->op == RT_REQ_INIT) {
    rt = rt_runtime_init(req->pool, req->bytes, req->nsnodes, req->ambient_bytes);
    if (rt) rt->reserve = req->reserve;
    req->addr = (char *)rt;
    req->failed = !rt;
    req->error = RT_RTERR_OK;
    return;
  }
  if (!rt) {
    req->failed = 1;
    req->error = RT_RTERR_OK;
    return;
  }
  switch (req->op) {
  case RT_REQ_ADD_SNODE:
    req->value = rt_runtime_add_snode(rt, &req->meta);
    req->failed = !req->value;
    break;
  case RT_REQ_BUMP_DATA:
    if (req->align == 0 || (req->align & (req->align - 1))) {
      req->failed = 1;
      break;
    }
    req->addr = rt_runtime_bump_data(rt, req->bytes, req->align, req->snode);
    req->failed = !req->addr;
    break;
  case RT_REQ_ELEMENT:
    if (!path_ok(rt, req)) {
      req->failed = 1;
      break;
    }
    req->addr = walk(rt, req);
    break;
  case RT_REQ_ACTIVATE:
  case RT_REQ_DEACTIVATE:
  case RT_REQ_IS_ACTIVE:
  case RT_REQ_LENGTH:
  case RT_REQ_APPEND:
    on_level(rt, req);
    break;
  case RT_REQ_LIST_ROOT:
    if (meta_of(rt, req->snode)) rt_listgen_root(rt, req->snode, req->root);
    else req->failed = 1;
    break;
  case RT_REQ_DEACTIVATE_ALL:
    deactivate_all(rt, req);
    break;
  case RT_REQ_GC: {
    const rt_meta *m = meta_of(rt, req->snode);
    if (m && (m->kind == RT_KIND_POINTER || m->kind == RT_KIND_DYNAMIC)) rt_gc(rt, req->snode);
    else req->failed = 1;
    break;
  }
  case RT_REQ_DROP_SNODE:
    if (meta_of(rt, req->snode)) rt_runtime_drop_snode(rt, req->snode);
    else req->failed = 1;
    break;
  default:
    req->failed = 1;
    break;
  }
  req->error = __atomic_load_n(&rt->error, __ATOMIC_RELAXED);
}
