/* repl.c -- the interactive loop of `lattice`: read a chunk (one or more
** lines), evaluate it, print its values, survive every error.
**
** On a terminal it prompts and edits lines with libedit, keeping history in
** ~/.lattice_history; on a pipe it reads plain lines with no prompt, so a test
** can feed it a session. Each chunk is registered under a unique chunk name
** ("=in[N]", N = the session line where it starts) so the tracer can read
** the source of kernels defined at the prompt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lattice_version.h"
#include "repl.h"

#define PROMPT1 "> "
#define PROMPT2 ">> "
#define HISTORY_FILE ".lattice_history"
#define HISTORY_MAX 1000

static const char help_text[] =
  "Lattice REPL -- type Lua; expressions print their values.\n"
  "  :ir NAME   print the final IR of the kernel NAME (any Lua expression, e.g. k or ks.step)\n"
  "  :ir NAME all       ... the IR after every pass\n"
  "  :ir NAME offload   ... the IR after that pass (any pass name; trace: as traced)\n"
  "  :ir NAME grad      ... of its adjoint (k:grad); fwd: its tangent version (k:fwd)\n"
  "  :help      this text\n"
  "  :quit      leave (Ctrl-D works too)\n"
  "An unfinished statement continues on the next line (prompt '>>').\n"
  "The global `lt` is predefined as require \"lattice\".\n"
  "A chunk that starts with `local` defines globals, so `local k = lt.kernel(...)`\n"
  "stays visible on later lines; errors name the input as in[LINE].\n";

typedef struct {
  int tty;           /* stdin is a terminal: prompts, libedit, history */
  char *history;     /* path of the history file, or NULL */
  int line;          /* lines read so far */
  char *pipe_buf;    /* getline buffer for non-terminal input */
  size_t pipe_cap;
} session;

/* One line without its newline, malloc'd (caller frees); NULL at end of input. */
static char *read_line(session *s, const char *prompt) {
  char *line;
  if (s->tty) {
    line = readline(prompt);
  } else {
    ssize_t n = getline(&s->pipe_buf, &s->pipe_cap, stdin);
    if (n < 0) return NULL;
    if (n > 0 && s->pipe_buf[n - 1] == '\n') s->pipe_buf[--n] = '\0';
    if (n > 0 && s->pipe_buf[n - 1] == '\r') s->pipe_buf[--n] = '\0';
    line = strdup(s->pipe_buf);
  }
  if (line) s->line++;
  return line;
}

/* A syntax error that only says the input ended early: read more lines. */
static int incomplete(lua_State *L, int status) {
  if (status != LUA_ERRSYNTAX) return 0;
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  const char *eof = "<eof>";
  size_t elen = strlen(eof);
  return len >= elen && strcmp(msg + len - elen, eof) == 0;
}

/* Skips leading blanks; returns 1 when text starts with the keyword `local`
** followed by a blank, with *at set to its offset. */
static int starts_with_local(const char *text, size_t *at) {
  size_t i = strspn(text, " \t\r\n");
  if (strncmp(text + i, "local", 5) != 0) return 0;
  char c = text[i + 5];
  if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return 0;
  *at = i;
  return 1;
}

/* Compiles the chunk in buf, trying in order: `return BUF` (an expression
** prints its values), BUF with a leading `local` blanked (so REPL definitions
** persist), BUF itself. Leaves the function (LUA_OK) or the error message. */
static int load_chunk(lua_State *L, const char *buf, const char *name) {
  lua_pushfstring(L, "return %s;", buf);
  size_t len;
  const char *ret = lua_tolstring(L, -1, &len);
  int status = repl_load(L, ret, len, name);
  lua_remove(L, -2);
  if (status == LUA_OK) return status;
  lua_pop(L, 1);
  size_t at;
  if (starts_with_local(buf, &at)) {
    lua_pushstring(L, buf);
    char *copy = (char *)lua_tolstring(L, -1, &len);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, copy, at);
    luaL_addstring(&b, "     "); /* same width: columns in messages stay right */
    luaL_addlstring(&b, copy + at + 5, len - at - 5);
    luaL_pushresult(&b);
    const char *text = lua_tolstring(L, -1, &len);
    status = repl_load(L, text, len, name);
    lua_remove(L, -2);
    lua_remove(L, -2);
    if (status == LUA_OK) return status;
    lua_pop(L, 1);
  }
  return repl_load(L, buf, strlen(buf), name);
}

/* Prints the values on the stack above base readably: lattice.show's print
** (fields, kernels, levels by their __tostring, plain tables as {4, 5}),
** which writes through the global print; the global print when that module
** cannot be had. */
static void print_results(lua_State *L, int base) {
  int n = lua_gettop(L) - base;
  if (n <= 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_getglobal(L, "require");
  lua_pushliteral(L, "lattice.show");
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    lua_getfield(L, -1, "print");
    lua_remove(L, -2);
  } else {
    lua_pop(L, 1);
  }
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    lua_getglobal(L, "print");
  }
  lua_insert(L, base + 1);
  if (repl_docall(L, n, 0) != LUA_OK) {
    lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1));
    lua_remove(L, -2);
    repl_report(L, LUA_ERRRUN);
  }
}

/* Whether the n bytes at w are a Lua name (a view word such as all or offload). */
static int is_word(const char *w, size_t n) {
  if (n == 0 || !(w[0] == '_' || (w[0] >= 'a' && w[0] <= 'z') || (w[0] >= 'A' && w[0] <= 'Z'))) return 0;
  for (size_t i = 1; i < n; i++)
    if (!(w[i] == '_' || (w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') || (w[i] >= '0' && w[i] <= '9')))
      return 0;
  return 1;
}

/* :ir EXPR [VIEW...] -- evaluates EXPR and prints EXPR:ir{...}: the final IR;
** the words after EXPR pick another view (kernel.lua's k:ir options): `all`
** (after every pass), a pass name (after it), `grad` / `fwd` (the adjoint /
** tangent version). */
static void command_ir(lua_State *L, session *s, const char *expr) {
  expr += strspn(expr, " \t");
  if (*expr == '\0') {
    fprintf(stderr, "%s: usage: :ir NAME [all | PASS] [grad | fwd]  (NAME: a kernel, e.g. the global k in "
            "k = lt.kernel(...))\n", REPL_PROGNAME);
    return;
  }
  /* peel the view words off the end: EXPR keeps at least its first word */
  size_t len = strlen(expr);
  while (len > 0 && strchr(" \t", expr[len - 1])) len--;
  size_t expr_len = len;
  const char *words = expr + len;
  for (;;) {
    size_t w = expr_len;
    while (w > 0 && !strchr(" \t", expr[w - 1])) w--;
    if (w == 0 || !is_word(expr + w, expr_len - w)) break;
    words = expr + w;
    expr_len = w;
    while (expr_len > 0 && strchr(" \t", expr[expr_len - 1])) expr_len--;
  }
  char name[32];
  snprintf(name, sizeof name, "=in[%d]", s->line);
  /* the expression's text is passed as an argument, so quotes in it cannot
  ** break the messages */
  lua_pushfstring(L, "local name, words = ...\n"
                     "local k = %s\n"
                     "if k == nil then error(\"no kernel named '\" .. name .. \"': define it as a global first\", 0) end\n"
                     "local ok, f = pcall(function() return k.ir end)\n"
                     "if not ok or type(f) ~= 'function' then\n"
                     "  error(\"'\" .. name .. \"' is a \" .. type(k) .. ' value, not a kernel (it has no :ir())', 0)\n"
                     "end\n"
                     "local opts = {}\n"
                     "for w in words:gmatch('[%%w_]+') do\n"
                     "  if w == 'all' or w == 'grad' or w == 'fwd' then opts[w] = true\n"
                     "  elseif w ~= 'final' then\n"
                     "    if opts.pass then error(':ir: one pass at a time (' .. opts.pass .. ', ' .. w .. ')', 0) end\n"
                     "    opts.pass = w\n"
                     "  end\n"
                     "end\n"
                     "return k:ir(opts)", lua_pushlstring(L, expr, expr_len));
  lua_remove(L, -2);
  lua_pushlstring(L, expr, expr_len);
  lua_pushlstring(L, words, len - (size_t)(words - expr));
  lua_rotate(L, -3, 2);   /* code on top, its two arguments below */
  size_t clen;
  const char *code = lua_tolstring(L, -1, &clen);
  int status = repl_load(L, code, clen, name);
  lua_remove(L, -2);
  /* no traceback: the messages name the problem (and tracer errors the
  ** user's line), a stack of REPL internals would only hide them */
  if (status == LUA_OK) {
    lua_rotate(L, -3, 1);   /* the function below its arguments */
    status = lua_pcall(L, 2, 1, 0);
  } else {
    lua_remove(L, -2);
    lua_remove(L, -2);
  }
  if (status != LUA_OK) { repl_report(L, status); return; }
  const char *text = lua_tostring(L, -1);
  if (text) {
    fputs(text, stdout);
    if (*text && text[strlen(text) - 1] != '\n') fputc('\n', stdout);
  } else {
    fprintf(stderr, "%s: %.*s:ir() returned a %s, not text\n", REPL_PROGNAME, (int)expr_len, expr,
            luaL_typename(L, -1));
  }
  lua_pop(L, 1);
}

/* Handles a line starting with ':'; returns 1 when the REPL must stop. */
static int command(lua_State *L, session *s, const char *line) {
  const char *cmd = line + 1;
  size_t n = strcspn(cmd, " \t");
  if ((n == 4 && strncmp(cmd, "quit", 4) == 0) || (n == 1 && cmd[0] == 'q') ||
      (n == 4 && strncmp(cmd, "exit", 4) == 0))
    return 1;
  if ((n == 4 && strncmp(cmd, "help", 4) == 0) || (n == 1 && cmd[0] == 'h'))
    fputs(help_text, stdout);
  else if (n == 2 && strncmp(cmd, "ir", 2) == 0)
    command_ir(L, s, cmd + 2);
  else
    fprintf(stderr, "%s: unknown command ':%.*s' (type :help)\n", REPL_PROGNAME, (int)n, cmd);
  return 0;
}

static void history_open(session *s) {
  const char *home = getenv("HOME");
  using_history();
  stifle_history(HISTORY_MAX);
  if (home == NULL || *home == '\0') return;
  size_t n = strlen(home) + sizeof HISTORY_FILE + 2;
  s->history = malloc(n);
  if (s->history == NULL) return;
  snprintf(s->history, n, "%s/%s", home, HISTORY_FILE);
  if (access(s->history, F_OK) == 0) read_history(s->history);
}

static void history_close(session *s) {
  /* write_history fails quietly where HOME is not writable: history is a
  ** convenience, never a reason to fail */
  if (s->history && (access(s->history, W_OK) == 0 || access(s->history, F_OK) != 0))
    write_history(s->history);
  free(s->history);
  s->history = NULL;
}

/* The predefined `lt` is a convenience of the prompt, not of scripts. */
static void predefine_lt(lua_State *L) {
  lua_getglobal(L, "lt");
  int defined = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (defined) return;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "lattice");
  if (repl_docall(L, 1, 1) == LUA_OK) lua_setglobal(L, "lt");
  else repl_report(L, LUA_ERRRUN);
}

int repl_run(lua_State *L) {
  session s = {0};
  s.tty = isatty(STDIN_FILENO);
  if (s.tty) {
    printf("Lattice %s (%s) -- :help for help, :quit to leave\n", LT_VERSION, LUA_RELEASE);
    rl_readline_name = REPL_PROGNAME;
    history_open(&s);
  }
  predefine_lt(L);
  char *line;
  while ((line = read_line(&s, PROMPT1)) != NULL) {
    int first = s.line;
    const char *p = line + strspn(line, " \t");
    if (*p == '\0') { free(line); continue; }
    if (*p == ':') {
      if (s.tty) add_history(line);
      int stop = command(L, &s, p);
      free(line);
      fflush(stdout);
      if (stop) break;
      continue;
    }
    /* collect lines until the chunk compiles or fails for a real reason */
    lua_pushstring(L, line);
    free(line);
    char name[32];
    snprintf(name, sizeof name, "=in[%d]", first);
    int status;
    for (;;) {
      status = load_chunk(L, lua_tostring(L, -1), name);
      if (!incomplete(L, status)) break;
      char *more = read_line(&s, PROMPT2);
      if (more == NULL) break; /* end of input inside a chunk: report it */
      lua_pop(L, 1);
      lua_pushfstring(L, "%s\n%s", lua_tostring(L, -1), more);
      lua_remove(L, -2);
      free(more);
    }
    if (s.tty) add_history(lua_tostring(L, -2));
    lua_remove(L, -2); /* the chunk's text */
    int base = lua_gettop(L) - 1;
    if (status == LUA_OK) status = repl_docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK) print_results(L, base);
    else repl_report(L, status);
    lua_settop(L, base);
    fflush(stdout);
  }
  if (s.tty) {
    if (line == NULL) fputc('\n', stdout);
    history_close(&s);
  }
  free(s.pipe_buf);
  return 0;
}
