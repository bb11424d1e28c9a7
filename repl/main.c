/* main.c -- the `lattice` executable: runs a script, code from the command
** line, stdin, or the interactive REPL (repl.c), in a Lua 5.4 state that has
** the standard libraries and `require "lattice"` built in.
**
**   lattice [options] [script [args...]]
**
** The command line follows lua5.4's, so scripts see the same `arg` table:
** arg[0] is the script, arg[1..] its arguments, and the interpreter and its
** options sit at negative indices. Nothing here initialises LLVM or the
** backend: that happens when the first kernel runs, so `lattice -e ""` stays
** a few milliseconds. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lang/image.h"
#include "lattice_lua.h"
#include "repl.h"

static const char usage_text[] =
  "usage: " REPL_PROGNAME " [options] [script [args]]\n"
  "Available options are:\n"
  "  -e code   run the Lua code 'code'\n"
  "  -l name   require library 'name' into global 'name'\n"
  "  -i        enter the interactive REPL after running script / -e\n"
  "  -v        print version information\n"
  "  --profile time every kernel and task (lt.profiler); the table goes to stderr at exit\n"
  "  -h        print this help\n"
  "  --        stop handling options\n"
  "  -         run stdin as a script and stop handling options\n"
  "With no script and no -e, starts the REPL (type :help there).\n";

/* LT_VERSION (lattice_version.h) is project()'s version in CMakeLists.txt,
** as lt.version is. */
static void print_version(void) {
  printf("Lattice %s (%s, LLVM 19)\n", LT_VERSION, LUA_RELEASE);
  fflush(stdout);
}

/* ---- protected calls with a traceback and Ctrl-C ---- */

static lua_State *running_state = NULL;

/* Hook installed by the SIGINT handler: raises the error from inside Lua,
** where longjmp is safe. */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_sigint(int sig) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  signal(sig, SIG_DFL); /* a second Ctrl-C kills the process */
  if (running_state) lua_sethook(running_state, stop_hook, flag, 1);
}

/* Message handler: adds a traceback; a non-string error object with a
** __tostring metamethod is converted first, like lua5.4 does. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  repl_traceback(L, msg, 1);   /* the user's frames (traceback.c) */
  return 1;
}

int repl_docall(lua_State *L, int nargs, int nres) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  running_state = L;
  signal(SIGINT, on_sigint);
  int status = lua_pcall(L, nargs, nres, base);
  signal(SIGINT, SIG_DFL);
  running_state = NULL;
  lua_remove(L, base);
  return status;
}

int repl_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    fprintf(stderr, "%s: %s\n", REPL_PROGNAME, msg);
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

/* ---- chunks: every one is registered for the tracer before it loads ---- */

int repl_load(lua_State *L, const char *text, size_t len, const char *chunkname) {
  lt_register_source(L, chunkname, text, len);
  return luaL_loadbufferx(L, text, len, chunkname, "t");
}

/* Reads a whole file (or stdin when path is NULL) into a Lua string on the
** stack; on failure pushes a message and returns an error status. */
static int read_file(lua_State *L, const char *path) {
  FILE *f = path ? fopen(path, "rb") : stdin;
  if (f == NULL) {
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(errno));
    return LUA_ERRFILE;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t n;
  do {
    char *p = luaL_prepbuffer(&b);
    n = fread(p, 1, LUAL_BUFFERSIZE, f);
    luaL_addsize(&b, n);
  } while (n == LUAL_BUFFERSIZE);
  int err = ferror(f);
  if (path) fclose(f);
  luaL_pushresult(&b);
  if (err) {
    lua_pop(L, 1);
    lua_pushfstring(L, "cannot read %s", path ? path : "stdin");
    return LUA_ERRFILE;
  }
  return LUA_OK;
}

/* Loads a script file (stdin when path is NULL) as lua5.4 does: a UTF-8
** byte-order mark is skipped, then a first line starting with '#' (kept as
** an empty line so line numbers stay right). The tracer sees the same text. */
static int load_script(lua_State *L, const char *path) {
  int status = read_file(L, path);
  if (status != LUA_OK) return status;
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  const char *body = text;
  size_t blen = len;
  if (blen >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) {
    body += 3;
    blen -= 3;
  }
  if (blen > 0 && body[0] == '#') {
    const char *nl = memchr(body, '\n', blen);
    const char *rest = nl ? nl : body + blen;
    blen -= (size_t)(rest - body);
    body = rest;
  }
  const char *chunkname = path ? lua_pushfstring(L, "@%s", path) : lua_pushliteral(L, "=stdin");
  status = repl_load(L, body, blen, chunkname);
  lua_remove(L, -2); /* chunkname */
  lua_remove(L, -2); /* text */
  return status;
}

/* ---- the command line ---- */

typedef struct {
  int script;    /* index in argv of the script, or 0 */
  int stdin_run; /* "-" given: run stdin as a script */
  int interactive, version, help, has_e;
  int profile;   /* --profile */
} cmdline;

/* Scans options like lua5.4; returns 0, or -1 with a message printed. */
static int parse_args(int argc, char **argv, cmdline *c) {
  memset(c, 0, sizeof *c);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') { c->script = i; return 0; }
    if (strcmp(a, "-") == 0) { c->stdin_run = 1; c->script = i; return 0; }
    if (strcmp(a, "--") == 0) { if (i + 1 < argc) c->script = i + 1; return 0; }
    if (strcmp(a, "-i") == 0) c->interactive = 1;
    else if (strcmp(a, "-v") == 0) c->version = 1;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) c->help = 1;
    else if (strcmp(a, "--profile") == 0) c->profile = 1;
    else if (strcmp(a, "-e") == 0 || strcmp(a, "-l") == 0) {
      if (a[1] == 'e') c->has_e = 1;
      if (i + 1 >= argc) {
        fprintf(stderr, "%s: '%s' needs an argument\n%s", REPL_PROGNAME, a, usage_text);
        return -1;
      }
      i++;
    } else if ((a[1] == 'e' || a[1] == 'l') && a[2] != '\0') {
      if (a[1] == 'e') c->has_e = 1; /* -eCODE, -lNAME */
    } else {
      fprintf(stderr, "%s: unrecognized option '%s'\n%s", REPL_PROGNAME, a, usage_text);
      return -1;
    }
  }
  return 0;
}

/* arg table exactly like lua5.4: script at 0, interpreter and options below;
** with no script, the interpreter is at 0 and its options above. */
static void create_arg_table(lua_State *L, int argc, char **argv, int script) {
  lua_createtable(L, argc - script, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/* Runs -e and -l options in order. */
static int run_options(lua_State *L, int argc, char **argv, int last) {
  int ncmd = 0;
  for (int i = 1; i < last; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || (a[1] != 'e' && a[1] != 'l')) continue;
    const char *val = a[2] ? a + 2 : argv[++i];
    int status;
    if (a[1] == 'e') {
      char name[48];
      if (ncmd++ == 0) snprintf(name, sizeof name, "=(command line)");
      else snprintf(name, sizeof name, "=(command line %d)", ncmd);
      status = repl_load(L, val, strlen(val), name);
      if (status == LUA_OK) status = repl_docall(L, 0, 0);
    } else {
      lua_getglobal(L, "require");
      lua_pushstring(L, val);
      status = repl_docall(L, 1, 1);
      if (status == LUA_OK) lua_setglobal(L, val);
    }
    if (repl_report(L, status) != LUA_OK) return status;
  }
  return LUA_OK;
}

static int run_script(lua_State *L, int argc, char **argv, const cmdline *c) {
  const char *path = c->stdin_run ? NULL : argv[c->script];
  int status = load_script(L, path);
  if (status == LUA_OK) {
    int n = argc - c->script - 1;
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = c->script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    status = repl_docall(L, n, 0);
  }
  return repl_report(L, status);
}

/* --profile: runs lt.profiler.<call> (docs/profiler.md), reporting an error. */
static int profiler(lua_State *L, const char *call) {
  char code[96];
  snprintf(code, sizeof code, "require('lattice').profiler.%s", call);
  int status = luaL_loadbufferx(L, code, strlen(code), "=(--profile)", "t");
  if (status == LUA_OK) status = repl_docall(L, 0, 0);
  return repl_report(L, status);
}

/* The options, the script and the REPL, in lua5.4's order; false when one failed. */
static bool run_all(lua_State *L, int argc, char **argv, const cmdline *c) {
  if (c->version) print_version();
  int last = c->script ? c->script : argc;
  if (run_options(L, argc, argv, last) != LUA_OK) return false;
  if (c->script && run_script(L, argc, argv, c) != LUA_OK) return false;
  if (c->interactive || (!c->script && !c->has_e && !c->version)) {
    if (repl_run(L) != 0) return false;
  }
  return true;
}

/* Everything that can raise a Lua error runs inside this protected function,
** so even a memory error while opening the libraries is reported cleanly. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  cmdline c;
  if (parse_args(argc, argv, &c) != 0) return 0;
  luaL_checkversion(L);
  luaL_openlibs(L);
  /* luaopen_lattice registers "lattice.image" through a weak reference,
  ** which alone does not pull image.o out of the static library: naming it
  ** here does. */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_lattice_image);
  lua_setfield(L, -2, "lattice.image");
  lua_pop(L, 1);
  repl_open_clock(L);
  /* `require "lattice"` needs no search path: the module is linked in. */
  luaL_requiref(L, "lattice", luaopen_lattice, 0);
  lua_pop(L, 1);
  create_arg_table(L, argc, argv, c.script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);

  if (c.help) { fputs(usage_text, stdout); lua_pushboolean(L, 1); return 1; }
  if (c.profile && profiler(L, "enable()") != LUA_OK) return 0;
  bool ok = run_all(L, argc, argv, &c);
  /* also after an error: where the time went until then (not after os.exit) */
  if (c.profile && profiler(L, "print(io.stderr)") != LUA_OK) return 0;
  if (!ok) return 0;
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "%s: cannot create state: not enough memory\n", REPL_PROGNAME);
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP); /* no collections while the libraries open */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int ok = lua_toboolean(L, -1);
  repl_report(L, status);
  fflush(stdout);
  lua_close(L);
  return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
