/*
** ir_api.c -- the IR builder as seen from the tracer (stdlib/lattice/tracer.lua).
**
** A builder userdata owns one ir_kernel under construction. Statements and
** blocks cross into Lua as light userdata; types as ir_type numbers; ops by
** their ops.def name. The tracer checks the language's rules (types of
** operands, conditions) before calling here, so these are thin.
*/
#include <stdlib.h>
#include <string.h>

#include "lang.h"

static lang_builder *check_builder(lua_State *L) {
  lang_builder *b = luaL_checkudata(L, 1, LANG_BUILDER);
  if (!b->k) luaL_error(L, "internal error: kernel builder already compiled");
  return b;
}

static ir_stmt *check_stmt(lua_State *L, int idx) {
  if (!lua_islightuserdata(L, idx)) luaL_error(L, "internal error: operand %d is not a statement", idx);
  return lua_touserdata(L, idx);
}

static ir_type check_type(lua_State *L, int idx) {
  lua_Integer t = luaL_checkinteger(L, idx);
  if (t < 0 || t >= IR_NUM_TYPES) luaL_error(L, "internal error: bad type %d", (int)t);
  return (ir_type)t;
}

static ir_op check_op(lua_State *L, int idx) {
  int op = ir_op_from_name(luaL_checkstring(L, idx));
  if (op < 0) luaL_error(L, "internal error: unknown op '%s'", lua_tostring(L, idx));
  return (ir_op)op;
}

static int push_stmt(lua_State *L, ir_stmt *s) {
  lua_pushlightuserdata(L, s);
  return 1;
}

/* core.builder_new(prog, name) -> builder */
static int l_builder_new(lua_State *L) {
  prog_program *p = lang_check_program(L, 1);
  const char *name = luaL_checkstring(L, 2);
  lang_builder *b = lua_newuserdatauv(L, sizeof *b, 1);
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, LANG_BUILDER);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);       /* keeps the program alive */
  b->prog = p;
  b->k = ir_kernel_new(name, p->ir);
  b->k->debug = p->debug;
  b->k->fma = p->fma;
  b->k->fast_math = p->fast_math;
  ir_builder_init(&b->b, b->k);
  return 1;
}

static int l_builder_gc(lua_State *L) {
  lang_builder *b = luaL_checkudata(L, 1, LANG_BUILDER);
  if (b->k) ir_kernel_free(b->k);
  b->k = NULL;
  return 0;
}

/* b:set_args(t1, t2, ...) */
static int m_set_args(lua_State *L) {
  lang_builder *b = check_builder(L);
  int n = lua_gettop(L) - 1;
  if (n > 16) return luaL_error(L, "a kernel takes at most 16 arguments, got %d", n);
  b->k->nargs = n;
  for (int i = 0; i < n; i++) b->k->arg_types[i] = check_type(L, i + 2);
  return 0;
}

static int m_arg(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_arg(&b->b, (int)luaL_checkinteger(L, 2)));
}

static int m_set_ret(lua_State *L) {
  lang_builder *b = check_builder(L);
  b->k->ret_type = check_type(L, 2);
  return 0;
}

static int m_set_loc(lua_State *L) {
  lang_builder *b = check_builder(L);
  const char *file = luaL_checkstring(L, 2);
  if (!b->b.loc.file || strcmp(b->b.loc.file, file) != 0) b->b.loc.file = ir_strdup(b->k, file);
  b->b.loc.line = (int)luaL_checkinteger(L, 3);
  return 0;
}

static int m_const_int(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_const_int(&b->b, check_type(L, 2), luaL_checkinteger(L, 3)));
}

static int m_const_float(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_const_float(&b->b, check_type(L, 2), luaL_checknumber(L, 3)));
}

static int m_unary(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_unary(&b->b, check_op(L, 2), check_stmt(L, 3)));
}

static int m_binary(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_binary(&b->b, check_op(L, 2), check_stmt(L, 3), check_stmt(L, 4)));
}

/* b:op(name, type, operand...) -- an op with an explicit result type */
static int m_op(lua_State *L) {
  lang_builder *b = check_builder(L);
  ir_op op = check_op(L, 2);
  ir_type t = check_type(L, 3);
  int n = lua_gettop(L) - 3;
  if (n > IR_MAX_OPS) return luaL_error(L, "internal error: too many operands");
  ir_stmt *ops[IR_MAX_OPS];
  for (int i = 0; i < n; i++) ops[i] = check_stmt(L, i + 4);
  return push_stmt(L, ir_b_op(&b->b, op, t, n, ops));
}

static int m_cast(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_cast(&b->b, check_type(L, 2), check_stmt(L, 3)));
}

static int m_select(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_select(&b->b, check_stmt(L, 2), check_stmt(L, 3), check_stmt(L, 4)));
}

static int m_alloca(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_alloca(&b->b, check_type(L, 2)));
}

/* b:set_return_value(ret, v) -- gives a bare return (made before the
** kernel's result type was known) its value v, which must be visible there */
static int m_set_return_value(lua_State *L) {
  check_builder(L);
  ir_stmt *r = check_stmt(L, 2), *v = check_stmt(L, 3);
  if (r->op != IR_return || r->nops != 0) return luaL_error(L, "internal error: not a bare return");
  r->nops = 1;
  r->ops[0] = v;
  return 0;
}

/* b:name_local(alloca, name) -- the Lua name of a local, for messages */
static int m_name_local(lua_State *L) {
  lang_builder *b = check_builder(L);
  ir_name_local(b->k, check_stmt(L, 2), luaL_checkstring(L, 3));
  return 0;
}

static int m_load(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_local_load(&b->b, check_stmt(L, 2)));
}

static int m_store(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_local_store(&b->b, check_stmt(L, 2), check_stmt(L, 3)));
}

/* b:global_ptr(snode, i...) */
static int m_global_ptr(lua_State *L) {
  lang_builder *b = check_builder(L);
  int snode = (int)luaL_checkinteger(L, 2);
  int n = lua_gettop(L) - 2;
  if (n > IR_MAX_INDICES) return luaL_error(L, "internal error: too many indices");
  ir_stmt *idx[IR_MAX_INDICES];
  for (int i = 0; i < n; i++) idx[i] = check_stmt(L, i + 3);
  return push_stmt(L, ir_b_global_ptr(&b->b, snode, n, idx));
}

static int m_global_load(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_global_load(&b->b, check_stmt(L, 2)));
}

static int m_global_store(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_global_store(&b->b, check_stmt(L, 2), check_stmt(L, 3)));
}

static int m_atomic(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_atomic(&b->b, check_op(L, 2), check_stmt(L, 3), check_stmt(L, 4)));
}

/* b:check_index(snode, axis, index) */
static int m_check_index(lua_State *L) {
  lang_builder *b = check_builder(L);
  ir_stmt *i = check_stmt(L, 4);
  ir_stmt *s = ir_b_op(&b->b, IR_check_index, IR_void, 1, &i);
  s->aux = (int)luaL_checkinteger(L, 2);
  s->imm.ival = luaL_checkinteger(L, 3);
  return push_stmt(L, s);
}

static int m_if(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_if(&b->b, check_stmt(L, 2), lua_toboolean(L, 3)));
}

static int m_while(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_while(&b->b));
}

static int m_range_for(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_range_for(&b->b, check_stmt(L, 2), check_stmt(L, 3)));
}

static int m_loop_index(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_loop_index(&b->b, check_stmt(L, 2)));
}

/* Reads the statements from first to the top of the stack into idx. */
static int read_stmts(lua_State *L, int first, ir_stmt **idx) {
  int n = lua_gettop(L) - first + 1;
  if (n > IR_MAX_INDICES) luaL_error(L, "internal error: too many indices");
  for (int i = 0; i < n; i++) idx[i] = check_stmt(L, first + i);
  return n;
}

/* b:snode_op(op, level, i...): snode_activate, snode_deactivate, snode_is_active, snode_length, snode_reserve */
static int m_snode_op(lua_State *L) {
  lang_builder *b = check_builder(L);
  const char *op = luaL_checkstring(L, 2);
  int level = (int)luaL_checkinteger(L, 3);
  ir_stmt *idx[IR_MAX_INDICES];
  int n = read_stmts(L, 4, idx);
  ir_stmt *s;
  if (strcmp(op, "activate") == 0) s = ir_b_snode_activate(&b->b, level, n, idx);
  else if (strcmp(op, "deactivate") == 0) s = ir_b_snode_deactivate(&b->b, level, n, idx);
  else if (strcmp(op, "is_active") == 0) s = ir_b_snode_is_active(&b->b, level, n, idx);
  else if (strcmp(op, "length") == 0) s = ir_b_snode_length(&b->b, level, n, idx);
  else if (strcmp(op, "reserve") == 0) s = ir_b_snode_reserve(&b->b, level, n, idx);
  else return luaL_error(L, "internal error: unknown SNode op '%s'", op);
  return push_stmt(L, s);
}

/* b:snode_append(dynamic, value, i...) -> the new element's index (i32) */
static int m_snode_append(lua_State *L) {
  lang_builder *b = check_builder(L);
  int level = (int)luaL_checkinteger(L, 2);
  ir_stmt *v = check_stmt(L, 3);
  ir_stmt *idx[IR_MAX_INDICES];
  int n = read_stmts(L, 4, idx);
  return push_stmt(L, ir_b_snode_append(&b->b, level, n, idx, v));
}

static int m_deactivate_all(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_snode_deactivate_all(&b->b, (int)luaL_checkinteger(L, 2)));
}

static int m_struct_for(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_struct_for(&b->b, (int)luaL_checkinteger(L, 2)));
}

/* b:struct_index(loop, k): virtual index k of the struct_for's current cell */
static int m_struct_index(lua_State *L) {
  lang_builder *b = check_builder(L);
  return push_stmt(L, ir_b_struct_index(&b->b, check_stmt(L, 2), (int)luaL_checkinteger(L, 3)));
}

/* b:jump("break" | "return", [value]) */
static int m_jump(lua_State *L) {
  lang_builder *b = check_builder(L);
  ir_op op = check_op(L, 2);
  ir_stmt *v = lua_isnoneornil(L, 3) ? NULL : check_stmt(L, 3);
  return push_stmt(L, ir_b_jump(&b->b, op, v));
}

static int m_block(lua_State *L) {
  lang_builder *b = check_builder(L);
  lua_pushlightuserdata(L, b->b.block);
  return 1;
}

static int m_set_block(lua_State *L) {
  lang_builder *b = check_builder(L);
  luaL_checktype(L, 2, LUA_TLIGHTUSERDATA);
  b->b.block = lua_touserdata(L, 2);
  return 0;
}

/* b:child(stmt, i) -> the stmt's block i (0 or 1) */
static int m_child(lua_State *L) {
  check_builder(L);
  ir_stmt *s = check_stmt(L, 2);
  int i = (int)luaL_checkinteger(L, 3);
  if (i < 0 || i > 1 || !s->blocks[i]) return luaL_error(L, "internal error: no block %d", i);
  lua_pushlightuserdata(L, s->blocks[i]);
  return 1;
}

/* b:last() -> the last statement of the current block, or nil */
static int m_last(lua_State *L) {
  lang_builder *b = check_builder(L);
  if (!b->b.block->last) return 0;
  return push_stmt(L, b->b.block->last);
}

/* b:move_after(stmt, mark, block): unlinks stmt and puts it after mark, or at
** the front of block when mark is nil (declarations the tracer discovers late,
** e.g. the result variable of a function with an early return). */
static int m_move_after(lua_State *L) {
  check_builder(L);
  ir_stmt *s = check_stmt(L, 2);
  ir_remove(s);
  if (!lua_isnoneornil(L, 3)) {
    ir_insert_after(check_stmt(L, 3), s);
  } else {
    luaL_checktype(L, 4, LUA_TLIGHTUSERDATA);
    ir_block *blk = lua_touserdata(L, 4);
    if (blk->first) ir_insert_before(blk->first, s);
    else ir_append(blk, s);
  }
  return 0;
}

/* b:set_aux(stmt, aux, ival) -- the immediates of a statement made by b:op
** (the builtins: check_bound's argument and axis, random's site) */
static int m_set_aux(lua_State *L) {
  check_builder(L);
  ir_stmt *s = check_stmt(L, 2);
  s->aux = (int)luaL_checkinteger(L, 3);
  s->imm.ival = luaL_optinteger(L, 4, 0);
  return 0;
}

/* b:add_string(text) -> index in the kernel's string table (print, assert) */
static int m_add_string(lua_State *L) {
  lang_builder *b = check_builder(L);
  lua_pushinteger(L, ir_kernel_add_string(b->k, luaL_checkstring(L, 2)));
  return 1;
}

/* b:set_grad([stack]) -- the kernel is made into its adjoint (the autodiff
** pass); stack: the values an adjoint stack holds (lt.init{ad_stack_size}) */
static int m_set_grad(lua_State *L) {
  lang_builder *b = check_builder(L);
  b->k->grad = true;
  lua_Integer n = luaL_optinteger(L, 2, 1024);
  b->k->ad_stack = n < 1 ? 1 : n > (1 << 24) ? (1 << 24) : (int)n;
  return 0;
}

/* b:set_fwd(mask) -- the kernel is made into its tangent version (the
** forward pass); bit i of mask: IR argument i has a tangent */
static int m_set_fwd(lua_State *L) {
  lang_builder *b = check_builder(L);
  lua_Integer mask = luaL_optinteger(L, 2, 0);
  if (mask < 0 || mask >= (1 << 16)) return luaL_error(L, "internal error: argument mask %d out of range", (int)mask);
  b->k->fwd = true;
  b->k->fwd_args = (unsigned)mask;
  return 0;
}

/* b:set_arg_name(i, name) -- names IR argument i for messages (ndarrays) */
static int m_set_arg_name(lua_State *L) {
  lang_builder *b = check_builder(L);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 0 || i >= 16) return luaL_error(L, "internal error: argument %d out of range", (int)i);
  b->k->arg_names[i] = ir_strdup(b->k, luaL_checkstring(L, 3));
  return 0;
}

static int m_type(lua_State *L) {
  check_builder(L);
  lua_pushinteger(L, check_stmt(L, 2)->type);
  return 1;
}

/* b:is_const(stmt) -> value | nil: lets the tracer fold Lua-known operands */
static int m_const_value(lua_State *L) {
  check_builder(L);
  ir_stmt *s = check_stmt(L, 2);
  if (s->op != IR_const) return 0;
  if (ir_type_is_float(s->type)) lua_pushnumber(L, s->imm.fval);
  else lua_pushinteger(L, s->imm.ival);
  return 1;
}

static int m_print(lua_State *L) {
  lang_builder *b = check_builder(L);
  char *text = ir_print(b->k);
  lua_pushstring(L, text ? text : "");
  free(text);
  return 1;
}

/* core.result_type(op, ta, tb) */
static int l_result_type(lua_State *L) {
  ir_op op = check_op(L, 1);
  ir_type a = check_type(L, 2);
  ir_type c = lua_isnoneornil(L, 3) ? IR_void : check_type(L, 3);
  lua_pushinteger(L, ir_result_type(op, a, c));
  return 1;
}

/* core.type_id(name) -> id | nil; core.type_name(id) */
static int l_type_id(lua_State *L) {
  int t = ir_type_from_name(luaL_checkstring(L, 1));
  if (t < 0) return 0;
  lua_pushinteger(L, t);
  return 1;
}

static int l_type_name(lua_State *L) {
  lua_pushstring(L, ir_type_name(check_type(L, 1)));
  return 1;
}

/* core.user_loc(fallback[, first]) -> file, line, level: the innermost frame
** of user code (not C, not a lattice/ module) with a line, from stack level
** `first` on (default 3: the caller of the Lua function that calls this, as
** its own debug.getinfo would number it) and that level; else fallback (or
** "?") and 0, and no level. The one definition of "the user's line": the
** tracer asks for every statement it emits (tracer.lua's user_loc), errors
** and field names ask too (state.lua's user_frame); walked here, a frame
** costs no table, where debug.getinfo makes one per call. */
static int l_user_loc(lua_State *L) {
  lua_Debug ar;
  /* level 0 is this function, 1 the Lua function that calls it */
  int first = (int)luaL_optinteger(L, 2, 3);
  for (int level = first < 1 ? 1 : first; level <= 200 && lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar)) break;
    if (strcmp(ar.what, "C") == 0 || strncmp(ar.source, "=lattice/", 9) == 0) continue;
    if (ar.currentline > 0) {
      lua_pushstring(L, ar.short_src);
      lua_pushinteger(L, ar.currentline);
      lua_pushinteger(L, level);
      return 3;
    }
  }
  if (lua_type(L, 1) == LUA_TSTRING) lua_pushvalue(L, 1);
  else lua_pushliteral(L, "?");
  lua_pushinteger(L, 0);
  return 2;
}

void lang_open_ir(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"set_args", m_set_args}, {"arg", m_arg}, {"set_ret", m_set_ret}, {"set_loc", m_set_loc},
    {"const_int", m_const_int}, {"const_float", m_const_float}, {"unary", m_unary},
    {"binary", m_binary}, {"op", m_op}, {"cast", m_cast}, {"select", m_select},
    {"alloca", m_alloca}, {"name_local", m_name_local}, {"set_return_value", m_set_return_value}, {"load", m_load}, {"store", m_store},
    {"global_ptr", m_global_ptr}, {"global_load", m_global_load},
    {"global_store", m_global_store}, {"atomic", m_atomic}, {"check_index", m_check_index},
    {"if_", m_if}, {"while_", m_while}, {"range_for", m_range_for},
    {"loop_index", m_loop_index}, {"jump", m_jump}, {"block", m_block},
    {"set_block", m_set_block}, {"child", m_child}, {"type", m_type},
    {"const_value", m_const_value}, {"print", m_print}, {"last", m_last},
    {"move_after", m_move_after},
    {"snode_op", m_snode_op}, {"snode_append", m_snode_append},
    {"deactivate_all", m_deactivate_all}, {"struct_for", m_struct_for},
    {"struct_index", m_struct_index},
    {"set_aux", m_set_aux}, {"add_string", m_add_string}, {"set_arg_name", m_set_arg_name}, {"set_grad", m_set_grad},
    {"set_fwd", m_set_fwd},
    {NULL, NULL}};
  if (luaL_newmetatable(L, LANG_BUILDER)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_builder_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"builder_new", l_builder_new},
    {"result_type", l_result_type},
    {"type_id", l_type_id},
    {"type_name", l_type_name},
    {"user_loc", l_user_loc},
    {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
