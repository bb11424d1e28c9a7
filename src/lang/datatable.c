/*
** datatable.c -- nested Lua tables as the elements of a field or an ndarray
** (x:from_table(t), lt.ndarray(dtype, shape, t), a:from_table(t)): one walk
** with one set of rules, so every entry point accepts the same tables.
**
** The rules (docs/language.md, "Lua-scope access"): the table has one level
** per index; each level is a plain table read raw (metatables are not
** consulted, so no user code runs during the walk) that counts from 1, or
** from 0 when it has a [0] entry, and holds exactly the extent's entries:
** a missing one, or any other key (a longer row, a string key), is an error.
** The walk is as deep as the shape, so a table that contains itself cannot
** send it round in circles. Each element is handed to a visitor; every
** message names the entry in the table's own numbering, "t[3][4]".
*/
#include <stdio.h>
#include <string.h>

#include "lang.h"

/* Pushes "t[i][j]" for the first `depth` levels of w's current position. */
static void push_path(lua_State *L, const lang_walk *w, int depth) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addchar(&b, 't');
  for (int i = 0; i < depth; i++) {
    char part[32];
    snprintf(part, sizeof part, "[%lld]", (long long)(w->idx[i] + w->base[i]));
    luaL_addstring(&b, part);
  }
  luaL_pushresult(&b);
}

static void shape_text(const lang_walk *w, char *buf, size_t len) {
  size_t n = (size_t)snprintf(buf, len, "(");
  for (int i = 0; i < w->ndim && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)w->shape[i]);
  if (n < len) snprintf(buf + n, len - n, ")");
}

bool lang_walk_fail(lua_State *L, const lang_walk *w, int depth, const char *what) {
  char shape[200];
  shape_text(w, shape, sizeof shape);
  push_path(L, w, depth);
  lua_pushfstring(L, "%s %s (the %s has shape %s)", lua_tostring(L, -1), what, w->owner, shape);
  lua_remove(L, -2);
  return false;
}

/* Pushes a short text for the value at idx in messages, without calling its
** metamethods: numbers and (the start of) strings as written, else the type. */
void lang_push_value_text(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) lua_pushfstring(L, "%I", lua_tointeger(L, idx));
    else {
      char buf[40];
      snprintf(buf, sizeof buf, "%.17g", lua_tonumber(L, idx));
      lua_pushstring(L, buf);
    }
    break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    if (n <= 24 && strlen(s) == n) lua_pushfstring(L, "the string \"%s\"", s);
    else lua_pushliteral(L, "a string");
    break;
  }
  default: lua_pushfstring(L, "a %s", luaL_typename(L, idx)); break;
  }
}

/* An entry of the level table on top whose key is not base..base+n-1: the
** key and value are pushed above it; reports it and returns false. */
static bool extra_entry(lua_State *L, lang_walk *w, int axis) {
  lua_pop(L, 1);   /* the value */
  if (lua_type(L, -1) == LUA_TNUMBER) {
    lang_push_value_text(L, -1);
    lua_pushfstring(L, "has an entry [%s] outside the extent %I, counting from %d", lua_tostring(L, -1),
                    (lua_Integer)w->shape[axis], w->base[axis]);
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    size_t n;
    const char *k = lua_tolstring(L, -1, &n);
    if (n <= 24 && strlen(k) == n) lua_pushfstring(L, "has an entry with the key \"%s\", which is not an index", k);
    else lua_pushliteral(L, "has an entry with a string key, which is not an index");
  } else {
    lua_pushfstring(L, "has an entry with a %s key, which is not an index", luaL_typename(L, -1));
  }
  return lang_walk_fail(L, w, axis, lua_tostring(L, -1));
}

/* The table at the top of the stack from level `axis` on (left on the stack). */
static bool walk(lua_State *L, lang_walk *w, int axis) {
  if (axis == w->ndim) {
    if (!w->visit(L, w)) return false;
    w->flat++;
    return true;
  }
  if (lua_type(L, -1) != LUA_TTABLE) {
    lang_push_value_text(L, -1);
    lua_pushfstring(L, "is %s, not a table", lua_tostring(L, -1));
    return lang_walk_fail(L, w, axis, lua_tostring(L, -1));
  }
  int base = lua_rawgeti(L, -1, 0) != LUA_TNIL ? 0 : 1;
  lua_pop(L, 1);
  w->base[axis] = base;
  int64_t n = w->shape[axis];
  for (int64_t i = 0; i < n; i++) {
    w->idx[axis] = i;
    if (lua_rawgeti(L, -1, (lua_Integer)(i + base)) == LUA_TNIL) return lang_walk_fail(L, w, axis + 1, "is missing");
    if (!walk(L, w, axis + 1)) return false;
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {   /* every entry must be one of those just read */
    lua_Integer k = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : -1;
    if (!lua_isinteger(L, -2) || k < base || k - base >= n) return extra_entry(L, w, axis);
    lua_pop(L, 1);
  }
  return true;
}

bool lang_walk_table(lua_State *L, int t, lang_walk *w) {
  luaL_checkstack(L, 2 * w->ndim + 12, "nested tables");
  memset(w->idx, 0, sizeof w->idx);
  memset(w->base, 0, sizeof w->base);
  w->flat = 0;
  lua_pushvalue(L, t);
  if (!walk(L, w, 0)) return false;
  lua_pop(L, 1);
  return true;
}

bool lang_walk_number(lua_State *L, const lang_walk *w, ir_type t, char *bytes) {
  if (lua_type(L, -1) != LUA_TNUMBER) {
    lang_push_value_text(L, -1);
    lua_pushfstring(L, "is %s, not a number", lua_tostring(L, -1));
    return lang_walk_fail(L, w, w->ndim, lua_tostring(L, -1));
  }
  if (!ir_type_is_float(t) && !lua_isinteger(L, -1)) {
    int ok;
    lua_tointegerx(L, -1, &ok);   /* an integral float is the integer */
    if (!ok) {
      lang_push_value_text(L, -1);
      lua_pushfstring(L, "is %s, not an integer; the %s holds %s", lua_tostring(L, -1), w->owner, ir_type_name(t));
      return lang_walk_fail(L, w, w->ndim, lua_tostring(L, -1));
    }
  }
  if (bytes) lang_encode_number(L, t, -1, bytes);
  return true;
}

/* lang_table_encode's visitor: checks the element and encodes it in place. */
typedef struct {
  ir_type type;
  char *buf;
  size_t es;
} encode_walk;

static bool encode_visit(lua_State *L, lang_walk *w) {
  encode_walk *e = w->ctx;
  return lang_walk_number(L, w, e->type, e->buf + (size_t)w->flat * e->es);
}

char *lang_table_encode(lua_State *L, int t, int ndim, const int64_t *shape, ir_type type, const char *owner) {
  t = lua_absindex(L, t);
  size_t n = 1, es = (size_t)(ir_type_bits(type) + 7) / 8;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  encode_walk e = {.type = type, .es = es, .buf = lua_newuserdatauv(L, n * es > 0 ? n * es : 1, 0)};
  lang_walk w = {.ndim = ndim, .shape = shape, .owner = owner, .visit = encode_visit, .ctx = &e};
  if (!lang_walk_table(L, t, &w)) return NULL;
  return e.buf;
}

/* ---- a composite field's elements ---------------------------------------------------
** core.table_elements(t, {n1, ...}, ncomp, rows, cols, int) -> comps, others
** | nil, message: walks t over the shape; comps is a list of ncomp lists, the
** components of each element, row-major; others lists {p, element, ...} for
** the elements left to the Lua side, in order (cfield.lua converts them with
** the rules of a single write; every element when ncomp is 0). An element is
** taken here only in the plain form a single write takes as it is: a vector
** (cols 0) a table of `rows` numbers, a matrix `rows` tables of `cols`
** numbers (no metatables; integral numbers when int). */
typedef struct {
  int comps, others;               /* stack slots */
  int ncomp, rows, cols;
  bool is_int;
} split_walk;

/* The number at the top as a component (an integral one when int), popped;
** false (nothing popped) when it is not one. */
static bool component(lua_State *L, const split_walk *sw) {
  if (lua_type(L, -1) != LUA_TNUMBER) return false;
  if (sw->is_int && !lua_isinteger(L, -1)) {
    int ok;
    lua_Integer i = lua_tointegerx(L, -1, &ok);
    if (!ok) return false;
    lua_pop(L, 1);
    lua_pushinteger(L, i);
  }
  return true;
}

/* Whether the value at idx is a table without a metatable of raw length n. */
static bool plain_table(lua_State *L, int idx, lua_Unsigned n) {
  if (lua_type(L, idx) != LUA_TTABLE) return false;
  if (lua_getmetatable(L, idx)) {
    lua_pop(L, 1);
    return false;
  }
  return lua_rawlen(L, idx) == n;
}

/* The plain table at the top (a vector or a matrix row) of n numbers into
** the component lists from component k on; false when it is not one. */
static bool plain_row(lua_State *L, const split_walk *sw, lua_Integer p, int n, int k) {
  if (!plain_table(L, -1, (lua_Unsigned)n)) return false;
  for (int j = 1; j <= n; j++) {
    lua_rawgeti(L, -1, j);
    if (!component(L, sw)) {
      lua_pop(L, 1);
      return false;
    }
    lua_rawgeti(L, sw->comps, k + j);
    lua_insert(L, -2);
    lua_rawseti(L, -2, p);
    lua_pop(L, 1);
  }
  return true;
}

static bool split_visit(lua_State *L, lang_walk *w) {
  split_walk *sw = w->ctx;
  lua_Integer p = (lua_Integer)w->flat + 1;
  bool plain = sw->ncomp > 0;
  if (plain && sw->cols == 0) plain = plain_row(L, sw, p, sw->rows, 0);
  else if (plain) {
    plain = plain_table(L, -1, (lua_Unsigned)sw->rows);
    for (int i = 0; plain && i < sw->rows; i++) {
      lua_rawgeti(L, -1, i + 1);
      plain = plain_row(L, sw, p, sw->cols, i * sw->cols);
      lua_pop(L, 1);
    }
  }
  if (!plain) {   /* (components stored for it so far are overwritten) */
    lua_Integer n = (lua_Integer)lua_rawlen(L, sw->others);
    lua_pushinteger(L, p);
    lua_rawseti(L, sw->others, n + 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, sw->others, n + 2);
  }
  return true;
}

int lang_table_elements(lua_State *L) {
  luaL_checktype(L, 2, LUA_TTABLE);
  split_walk sw = {.ncomp = (int)luaL_checkinteger(L, 3), .rows = (int)luaL_checkinteger(L, 4),
                   .cols = (int)luaL_checkinteger(L, 5), .is_int = lua_toboolean(L, 6)};
  lua_settop(L, 2);
  int64_t shape[IR_MAX_INDICES];
  int ndim = (int)lua_rawlen(L, 2);
  if (ndim > IR_MAX_INDICES || sw.ncomp < 0 || (sw.ncomp > 0 && sw.rows * (sw.cols ? sw.cols : 1) != sw.ncomp))
    return luaL_error(L, "internal error: table_elements of %d dimensions, %d components", ndim, sw.ncomp);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    lua_rawgeti(L, 2, i + 1);
    shape[i] = lua_tointeger(L, -1);
    n *= shape[i];
    lua_pop(L, 1);
  }
  luaL_checkstack(L, 16, "table_elements");
  lua_createtable(L, sw.ncomp, 0);
  sw.comps = lua_gettop(L);
  for (int k = 1; k <= sw.ncomp; k++) {
    lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
    lua_rawseti(L, sw.comps, k);
  }
  lua_newtable(L);
  sw.others = lua_gettop(L);
  lang_walk w = {.ndim = ndim, .shape = shape, .owner = "field", .visit = split_visit, .ctx = &sw};
  if (!lang_walk_table(L, 1, &w)) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return 2;
}
