-- init.lua -- the `lt` table: lt.init, types, fields and lt.root, kernels,
-- loop helpers and builtins. The C side lives in "lattice.core" (src/lang).
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local fieldm = require "lattice.field"
local T = require "lattice.tracer"
local hooks = require "lattice.hooks"
local kernelm = require "lattice.kernel"
local sparse = require "lattice.sparse"
local treem = require "lattice.tree"

local lt = {}
fieldm.set_tracer(T)

-- ---- lt.init -----------------------------------------------------------------------

-- A value as a message shows it: numbers as Lua prints them, strings quoted.
local function shown(v)
  if type(v) == "number" then return tostring(v) end
  if type(v) == "string" then return ("%q"):format(v) end
  return "a " .. type(v)
end

-- v as a Lua integer when it is a whole number (2^30 is one), else nil.
local function whole(v)
  return type(v) == "number" and math.tointeger(v) or nil
end

local MAX_THREADS = 1024          -- the thread pool's most (src/runtime/host/threadpool.c)

-- Each option's check: returns the value lt.init uses, or a phrase saying
-- what the option must be (the message names the option and the value given).
local OPTIONS = {
  arch = function(v)
    if v == "cpu" or v == "cuda" or v == "auto" then return v end
    if type(v) == "string" then
      return nil, nil, "unknown arch '" .. v .. "' (use \"cpu\", \"cuda\" or \"auto\")"
    end
    return nil, "\"cpu\", \"cuda\" or \"auto\""
  end,
  debug = function(v) if type(v) == "boolean" then return v end return nil, "a boolean" end,
  print_ir = function(v)          -- true: the final IR; "all" or a pass name (kernel.lua's views)
    if type(v) == "boolean" then return v end
    if type(v) ~= "string" then return nil, "true, \"all\" or a pass name" end
    local view, err = kernelm.ir_view(v)
    return view, nil, view == nil and "print_ir: " .. err or nil
  end,
  fma = function(v) if type(v) == "boolean" then return v end return nil, "a boolean" end,
  profile = function(v) if type(v) == "boolean" then return v end return nil, "a boolean" end,
  fast_math = function(v) if type(v) == "boolean" then return v end return nil, "a boolean" end,
  ad_stack_size = function(v)
    local n = whole(v)
    if n and n >= 1 and n <= (1 << 24) then return n end
    return nil, "an integer from 1 to 16777216"
  end,
  threads = function(v)
    local n = whole(v)
    if n and n >= 0 and n <= MAX_THREADS then return n end
    return nil, "an integer from 0 (one per core) to " .. MAX_THREADS
  end,
  default_ip = function(v)
    if types.is_type(v) and v.is_int and v.name ~= "i1" then return v end
    return nil, "an integer type such as lt.i32"
  end,
  default_fp = function(v)
    if types.is_type(v) and v.is_float then return v end
    return nil, "lt.f32 or lt.f64"
  end,
  device_memory = function(v)
    local n = whole(v)
    if n and n > 0 then return n end
    return nil, "a whole number of bytes > 0 (e.g. 256 << 20)"
  end,
  device_memory_fraction = function(v)
    if type(v) == "number" and v > 0 and v <= 1 then return v end   -- false for NaN
    return nil, "between 0 and 1 (a share of the device's memory, more than 0)"
  end,
  seed = function(v)
    local n = whole(v)
    if n then return n end
    return nil, "an integer"
  end,
  print_buffer = function(v)
    local n = whole(v)
    if n and n >= 0 then return n end
    return nil, "a whole number of bytes (0 = 1 MiB)"
  end,
  cache = function(v)
    if v == false or (type(v) == "string" and v ~= "") then return v end
    return nil, "false (no kernel cache) or a directory"
  end,
}

-- The option a misspelt or shortened name most likely meant (at most two edits away), or nil.
local function did_you_mean(name)
  local best, best_d = nil, 3
  for cand in pairs(OPTIONS) do
    local a, b = name:lower(), cand
    local prev = {}
    for j = 0, #b do prev[j] = j end
    for i = 1, #a do
      local cur = { [0] = i }
      for j = 1, #b do
        local cost = a:byte(i) == b:byte(j) and 0 or 1
        cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev = cur
    end
    local d = prev[#b]
    if #a >= 3 and cand:sub(1, #a) == a then d = 1 end   -- a shortened name
    if d < best_d or (d == best_d and best and cand < best) then best, best_d = cand, d end
  end
  return best
end

-- The options given, checked: each value as lt.init uses it, keyed by name.
local function check_options(opts)
  if type(opts) ~= "table" then state.raise("lt.init: expects a table of options, e.g. lt.init{arch = \"cpu\"}") end
  local out = {}
  for k, v in pairs(opts) do
    local check = OPTIONS[k]
    if not check then
      local names = {}
      for n in pairs(OPTIONS) do names[#names + 1] = n end
      table.sort(names)
      local guess = type(k) == "string" and did_you_mean(k)
      state.raise("lt.init: unknown option '" .. tostring(k) .. "'" .. (guess and ("; did you mean '" .. guess ..
        "'?") or "") .. " (options: " .. table.concat(names, ", ") .. ")")
    end
    local val, want, why = check(v)
    if val == nil then
      state.raise("lt.init: " .. (why or (k .. " must be " .. want .. ", got " .. shown(v))))
    end
    out[k] = val
  end
  if out.device_memory and out.device_memory_fraction then
    state.raise("lt.init: give device_memory or device_memory_fraction, not both")
  end
  if out.fast_math and out.fma == false then
    state.raise("lt.init: fast_math = true implies fma = true (docs/arithmetic.md); leave fma out")
  end
  return out
end

-- In a runtime made by the C API (lattice_lua.h), lt_runtime_config sets the arch, threads,
-- pool and debug mode: lt.init may repeat them, not change them (LT_ARCH does not apply).
local function check_host(opts, host)
  local function differs(name, given, theirs, shown)
    if given ~= nil and given ~= theirs then
      state.raise(("lt.init: %s = %s, but this runtime was created by lt_runtime_create with %s; a script "
        .. "running in a C host may repeat the runtime's settings, not change them"):format(name, tostring(given),
        shown))
    end
  end
  differs("arch", opts.arch, host.arch, "arch " .. host.arch)
  differs("threads", opts.threads, host.threads, "threads = " .. host.threads)
  differs("device_memory", opts.device_memory, host.device_memory, "device_memory = " .. host.device_memory)
  if opts.device_memory_fraction then differs("device_memory_fraction", opts.device_memory_fraction, false,
    "device_memory = " .. host.device_memory) end
  differs("debug", opts.debug, host.debug, "debug = " .. tostring(host.debug))
  opts.arch, opts.debug = host.arch, host.debug   -- kernels are traced with the runtime's debug mode
end

function lt.init(opts)
  opts = check_options(opts or {})
  local host = core.host_config()
  if host then check_host(opts, host) end
  -- LT_ARCH picks the arch of scripts that name none: the test suite runs the same files
  -- once per arch with it, and a script it sends to a missing GPU is skipped (exit 77)
  local env = core.env()   -- the environment, read in one place (src/program/env.c)
  local env_arch = not opts.arch and not host and env.arch or nil
  local arch = opts.arch or env_arch or "cpu"
  if arch ~= "cpu" and arch ~= "cuda" and arch ~= "auto" then
    state.raise("lt.init: unknown arch '" .. arch .. "' in LT_ARCH (use \"cpu\", \"cuda\" or \"auto\")")
  end
  if arch == "cuda" or arch == "auto" then
    -- the driver is loaded at run time: a machine without a GPU still runs the CPU backend
    local gpu, why = core.cuda_probe()
    if not gpu and arch == "cuda" then
      if env_arch then
        io.stderr:write("skipped: LT_ARCH=cuda, but CUDA is not available: ", why, "\n")
        os.exit(77)
      end
      state.raise("lt.init: arch \"cuda\" is not available: " .. why .. "; use arch = \"cpu\" (or \"auto\")")
    end
    if not gpu then arch = "cpu" end
  end
  -- LT_MEMORY_LIMIT=bytes: the host memory the CPU pool may take, instead of the RAM + swap
  -- found (tests use it to check the memory errors without filling the machine)
  local limit = env.memory_limit
  if limit then
    local n = math.tointeger(tonumber(limit))
    if not n or n <= 0 then
      state.raise("lt.init: LT_MEMORY_LIMIT must be a whole number of bytes > 0, got '" .. limit .. "'")
    end
    limit = n
  else
    limit = 0
  end
  local ip, fp = opts.default_ip or types.by_name.i32, opts.default_fp or types.by_name.f32
  local threads, pool, fraction = opts.threads or 0, opts.device_memory or 0, opts.device_memory_fraction or 0
  local seed, pbuf = opts.seed or 0, opts.print_buffer or 0   -- the default seed is 0
  if state.prog then core.program_free(state.prog) end
  state.prog = nil
  state.snode_cache = nil
  local prog, err = core.program_new(arch == "auto" and "cuda" or arch, threads, opts.debug == true, pool,
    opts.fma == true, fraction, limit, opts.cache, opts.fast_math == true)
  if not prog and arch == "auto" then   -- a GPU the backend cannot use: the CPU
    arch = "cpu"
    prog, err = core.program_new(arch, threads, opts.debug == true, pool, opts.fma == true, fraction, limit,
      opts.cache, opts.fast_math == true)
  end
  if not prog then state.raise("lt.init: " .. err) end
  if arch == "auto" then arch = "cuda" end
  local ok, berr = core.builtins_setup(prog, seed, pbuf)
  if not ok then state.raise("lt.init: " .. berr) end
  state.prog = prog
  state.gen = state.gen + 1
  state.opts = { arch = arch, debug = opts.debug == true, print_ir = opts.print_ir == true and "final" or opts.print_ir or nil,
    threads = core.program_threads(prog), default_ip = ip, default_fp = fp, ad_stack_size = opts.ad_stack_size or 1024 }
  state.root, state.root_tok = nil, nil
  state.trees = {}
  state.instances = nil          -- live tree instances (tree.lua), for lt.deactivate_all()
  require("lattice.profiler").init(opts.profile)   -- lt.profiler (profiler.lua)
end

local function ensure_init()
  if not state.prog then lt.init {} end
end
kernelm.set_init(ensure_init)

-- ---- types --------------------------------------------------------------------------

for name, t in pairs(types.by_name) do
  if name ~= "i1" then lt[name] = t end
end

function lt.cast(x, t)
  if not types.is_type(t) then state.raise("lt.cast: the second argument must be a type such as lt.i32") end
  if T.is_kv(x) then return T.cast(x, t) end
  if type(x) ~= "number" then
    if T.active() then T.fail("lt.cast needs a number, got a " .. type(x)) end
    state.raise("lt.cast: expects a number, got a " .. type(x))
  end
  if T.active() then return T.typed_const(x, t) end     -- in a kernel: a value of type t
  return types.convert(x, t)
end
types.Type.__call = function(t, x) return lt.cast(x, t) end

-- ---- axes: lt.i, lt.ij, lt.ji, lt.ijk, ... (every ordering of distinct letters) ----------

do
  local letters = { "i", "j", "k", "l" }
  local function gen(prefix, axes, used)
    if #axes > 0 then lt[prefix] = { table.unpack(axes) } end
    for a = 1, 4 do
      if not used[a] then
        used[a] = true
        axes[#axes + 1] = a - 1
        gen(prefix .. letters[a], axes, used)
        axes[#axes] = nil
        used[a] = false
      end
    end
  end
  gen("", {}, {})
end

-- ---- fields ------------------------------------------------------------------------------

function lt.field(dtype, shape, name)
  return fieldm.new(ensure_init, dtype, shape, name)
end

setmetatable(lt, {
  __index = function(_, k)
    if k == "root" then
      ensure_init()
      return fieldm.root_builder()
    end
  end,
})

-- ---- sparse SNodes, tree types ------------------------------------------------------------

for _, kind in ipairs { "dense", "bitmasked", "pointer", "dynamic" } do
  lt[kind] = function(axes, shape, opts) return treem.layout(kind, axes, shape, opts) end
end
function lt.tree(desc) return treem.new(ensure_init, desc) end

lt.activate, lt.deactivate, lt.is_active = sparse.activate, sparse.deactivate, sparse.is_active
lt.append, lt.length, lt.grouped = sparse.append, sparse.length, sparse.grouped
-- lt.no_activate(x, ...): in a kernel, writes to x activate no cells (tracer.lua)
function lt.no_activate(...) return T.no_activate(...) end
-- lt.deactivate_all(): every tree; lt.deactivate_all(x): x's level (an explicit
-- nil, such as a misspelt variable, is an error rather than every tree)
function lt.deactivate_all(...)
  if select("#", ...) > 0 and (...) == nil then
    state.raise("lt.deactivate_all: the argument is nil (pass a field, an SNode or a tree instance, "
      .. "or nothing for every tree)")
  end
  return sparse.deactivate_all(...)
end
function lt.stats() ensure_init(); return sparse.stats() end
function lt.print_stats() ensure_init(); return sparse.print_stats() end

-- lt.profiler: calls and times per kernel and per task (profiler.lua, docs/profiler.md)
do
  local pm = require "lattice.profiler"
  lt.profiler = { enable = pm.enable, disable = pm.disable, enabled = pm.enabled, clear = pm.clear, get = pm.get,
    report = pm.report, print = pm.print }
end

-- ---- kernels -------------------------------------------------------------------------------

function lt.kernel(fn, argtypes) return kernelm.new(fn, argtypes) end
function lt.func(fn) return kernelm.func(fn) end

-- lt.export(name, value): a kernel or a scalar field under a name that a C host finds with
-- lt_kernel_find / lt_field_find (docs/embedding.md); outside a C API runtime it does nothing
-- else, so the same script runs both ways.
function lt.export(name, value)
  if type(name) ~= "string" or name == "" then
    state.raise("lt.export: the first argument must be a name (a non-empty string), got " .. type(name))
  end
  if getmetatable(value) == getmetatable(lt.kernel(function() end)) then
    if not value.name then value.name = name end       -- messages name it as the host does
    core.export_kernel(name, value)
  elseif fieldm.is_field(value) then
    ensure_init()
    fieldm.ready(value)
    core.export_field(state.prog, name, value, value._snode, fieldm.inst_ud(value))
  else
    state.raise("lt.export: '" .. name .. "' must be a kernel or a scalar field (export a vector field's "
      .. "components one by one), got " .. (type(value) == "table" and "a table" or ("a " .. type(value))))
  end
end

-- for i, j in lt.ndrange(n, m) / lt.ndrange({a, b}, {c, d}): one parallel loop
-- over the product inside kernels; a plain iterator in Lua scope.
function lt.ndrange(...)
  local ndm = require "lattice.ndarray"
  if select("#", ...) == 1 and ndm.is_shape((...)) then return lt.ndrange(table.unpack((...))) end  -- a.shape
  local dims = {}
  for k = 1, select("#", ...) do
    local d = select(k, ...)
    if type(d) == "table" and not T.is_kv(d) then
      if #d ~= 2 then state.raise("lt.ndrange: a range is a number or a pair {begin, end}") end
      dims[k] = { d[1], d[2] }
    else
      dims[k] = { 0, d }
    end
  end
  if #dims > 8 then state.raise("lt.ndrange: expects at most 8 ranges") end   -- none: one empty tuple
  local r = setmetatable({ dims = dims }, hooks.NDRange)
  return r
end
hooks.NDRange.__call = function(r, _, _)
  -- Lua scope: iterate the index tuples row-major
  if not r.cur then
    r.cur = {}
    if #r.dims == 0 then return true end      -- lt.ndrange(): once (a for loop stops at nil)
    for k, d in ipairs(r.dims) do
      if d[2] <= d[1] then return nil end
      r.cur[k] = d[1]
    end
    return table.unpack(r.cur)
  end
  for k = #r.dims, 1, -1 do
    r.cur[k] = r.cur[k] + 1
    if r.cur[k] < r.dims[k][2] then return table.unpack(r.cur) end
    r.cur[k] = r.dims[k][1]
  end
  return nil
end

-- for i in lt.static(a, b[, step]): unrolled at trace time (bounds inclusive, as Lua's for)
function lt.static(a, b, step)
  if math.type(a) ~= "integer" or math.type(b) ~= "integer" or (step ~= nil and math.type(step) ~= "integer") then
    if T.active() then T.fail("lt.static needs Lua integers (capture the bounds from outside the kernel)") end
    state.raise("lt.static: expects Lua integers")
  end
  return setmetatable({ a = a, b = b, step = step or 1 }, hooks.Static)
end
hooks.Static.__call = function(s, _, i)
  i = (i == nil) and s.a or (i + s.step)
  if (s.step > 0 and i > s.b) or (s.step < 0 and i < s.b) then return nil end
  return i
end

-- for i in lt.serial(a, b[, step]): a numeric for (bounds inclusive, Lua
-- integers or kernel values; step a Lua integer) that stays serial at the
-- kernel's top level, where a plain numeric for runs in parallel.
function lt.serial(a, b, step)
  if step ~= nil and math.type(step) ~= "integer" then
    if T.active() then T.fail("lt.serial: the step must be a Lua integer constant") end
    state.raise("lt.serial: the step must be a Lua integer")
  end
  if not T.active() and (math.type(a) ~= "integer" or math.type(b) ~= "integer") then
    state.raise("lt.serial: outside a kernel the bounds must be Lua integers")
  end
  return setmetatable({ a = a, b = b, step = step or 1 }, hooks.Serial)
end
hooks.Serial.__call = hooks.Static.__call

-- ---- builtins ------------------------------------------------------------------------------

local function round_away(x)
  if x >= 0 then return math.floor(x + 0.5) + 0.0 end
  return math.ceil(x - 0.5) + 0.0
end

-- tanh of a Lua number (Lua 5.4's math has none): e / (e + 2) with e = expm1(2|x|),
-- expm1 by Kahan's correction of exp(y) - 1 (a few ulp, also near 0); +-1 past |x| = 22,
-- where the double rounds to it (and exp would overflow further on).
local function tanh(x)
  local a = math.abs(x)
  if a ~= a or a == 0 then return x * 1.0 end       -- NaN, +-0
  if a > 22 then return x < 0 and -1.0 or 1.0 end
  local y = 2.0 * a
  local u = math.exp(y)
  local e = u == 1 and y or (u - 1) * y / math.log(u)
  local r = e / (e + 2)
  return x < 0 and -r or r
end

local lua_unary = {
  sqrt = math.sqrt, sin = math.sin, cos = math.cos, tan = math.tan, asin = math.asin, acos = math.acos,
  atan = function(x) return math.atan(x) end, tanh = tanh, exp = math.exp, log = function(x) return math.log(x) end,
  floor = function(x) return math.floor(x) + 0.0 end, ceil = function(x) return math.ceil(x) + 0.0 end,
  round = round_away, trunc = function(x) return (x >= 0 and math.floor(x) or math.ceil(x)) + 0.0 end,
  abs = math.abs,
}
for name, f in pairs(lua_unary) do
  lt[name] = function(x)
    if T.is_kv(x) then return T.unary_builtin(name, x) end
    if type(x) ~= "number" then
      if T.active() then T.fail("lt." .. name .. " needs a number, got a " .. type(x)) end
      state.raise("lt." .. name .. ": expects a number, got a " .. type(x))
    end
    return f(x)
  end
end

local lua_binary = {
  min = function(a, b) if a ~= a then return b elseif b ~= b then return a end return math.min(a, b) end,
  max = function(a, b) if a ~= a then return b elseif b ~= b then return a end return math.max(a, b) end,
  pow = function(a, b) return (a + 0.0) ^ b end,
  atan2 = function(y, x) return math.atan(y, x) end,
}
for name, f in pairs(lua_binary) do
  lt[name] = function(a, b)
    if T.is_kv(a) or T.is_kv(b) then return T.binary_builtin(name, a, b) end
    if type(a) ~= "number" or type(b) ~= "number" then
      if T.active() then T.fail("lt." .. name .. " needs numbers") end
      state.raise("lt." .. name .. ": expects two numbers")
    end
    return f(a, b)
  end
end

function lt.select(c, a, b)
  if T.is_kv(c) then return T.select(c, a, b) end
  if type(c) ~= "boolean" then
    if T.active() then T.fail("lt.select: the condition must be a comparison") end
    state.raise("lt.select: the condition must be a boolean")
  end
  if c then return a end
  return b
end

for _, op in ipairs { "add", "sub", "min", "max", "mul", "and", "or", "xor" } do
  lt["atomic_" .. op] = function(target, v)
    local old = T.atomic(op, target, v)          -- not a tail call: T.atomic finds the user's code 3 levels up
    return old
  end
end

-- vectors, matrices, structs, lt.static_range (composite.lua)
require("lattice.composite").install(lt)

-- ---- external arrays, random numbers, print, assert (ndarray.lua, builtins.lua) ------------

do
  local ndm = require "lattice.ndarray"
  function lt.ndarray(dtype, shape, values) return ndm.new(dtype, shape, values) end
  function lt.ndarray_from(dtype, values) return ndm.from(dtype, values) end
  function lt.ndarray_type(dtype, ndim) return ndm.type(dtype, ndim) end
  lt.is_ndarray = ndm.is_ndarray
  local bm = require "lattice.builtins"
  function lt.random(dtype) ensure_init(); return bm.random(dtype) end
  lt.assert = bm.assert
end

-- lt.compile(k1, k2, ...): every kernel traced now, their machine code made
-- on other threads all at once (kernel.lua, K:compile); returns when all are
-- ready. Once it has taken longer than lt.compile_notice(seconds) says
-- (default 1; math.huge: never), one line on stderr says what it is at:
-- rewritten in place on a terminal and ended with the total time, printed
-- once otherwise.
local compile_notice_s = 1
function lt.compile_notice(seconds)
  if type(seconds) ~= "number" or not (seconds >= 0) then
    state.raise(("lt.compile_notice: expected a number of seconds (0 or more), got %s"):format(tostring(seconds)))
  end
  compile_notice_s = seconds
end
function lt.compile(...)
  local kernel = require "lattice.kernel"
  local n, names = select("#", ...), {}
  for i = 1, n do
    local k = select(i, ...)
    if getmetatable(k) ~= kernel.Kernel then
      state.raise(("lt.compile: argument %d is not a kernel (lt.kernel(...)), got %s"):format(i, type(k)))
    end
  end
  local t0, tty, shown = core.now(), core.isatty(2), false
  local function notice(what, i)
    local dt = core.now() - t0
    if dt < compile_notice_s or (shown and not tty) then return end
    io.stderr:write(("%slattice: lt.compile: %s (%d of %d kernels%s) after %.1f s%s"):format(tty and "\r" or "",
      what, i, n, #names == n and ": " .. table.concat(names, ", ") or "", dt, tty and "\27[K" or "\n"))
    shown = true
  end
  for i = 1, n do
    notice("tracing", i)
    local k = select(i, ...)
    k:compile()
    names[i] = k.name
  end
  for i = 1, n do                  -- waits for each in turn; the others go on being made meanwhile
    local k = select(i, ...)
    notice("machine code of " .. names[i], i)
    for _, ck in pairs(k.cache) do core.compiled_wait(ck) end
  end
  if shown and tty then
    io.stderr:write(("\rlattice: lt.compile: %d kernels ready in %.1f s (%s)\27[K\n")
      :format(n, core.now() - t0, table.concat(names, ", ")))
  end
end

-- gradients: lt.tape, lt.clear_grads (autodiff.lua, docs/autodiff.md)
function lt.tape(fn) ensure_init(); return require("lattice.autodiff").tape(fn) end
function lt.clear_grads(...) return require("lattice.autodiff").clear_grads(...) end

-- lt.aot.module{...}: AOT modules (aot.lua, docs/aot.md)
lt.aot = { module = function(opts) ensure_init(); return require("lattice.aot").module(opts) end }

-- project()'s version in CMakeLists.txt: "MAJOR.MINOR.PATCH", and as one
-- number MAJOR * 10000 + MINOR * 100 + PATCH (like `lattice -v` and LT_VERSION)
lt.version = core.version
lt.version_num = core.version_num
return lt
