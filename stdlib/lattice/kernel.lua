-- kernel.lua -- kernel objects: lt.kernel(fn, argtypes), the per-signature
-- cache, tracing (source -> rewrite -> symbolic call) and launching.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local fieldm = require "lattice.field"
local T = require "lattice.tracer"
local hooks = require "lattice.hooks"
local ndm = require "lattice.ndarray"

local M = {}
local K = {}
K.__index = K
M.Kernel = K

local ensure_init           -- set by init.lua
function M.set_init(f) ensure_init = f end

-- Kernels and lt.func helpers are traced from their source: a function loaded
-- from stripped bytecode has neither its source nor its parameters' names.
local function check_source(info, what)
  if info.source == "=?" or info.linedefined < 1 then
    state.raise(what .. ": the function was loaded from stripped bytecode (string.dump(f, true)), which keeps "
      .. "neither its source nor the names of its parameters and upvalues; Lattice traces a function from its "
      .. "source, so load it from source (or dump it without strip)")
  end
end

function M.new(fn, argtypes)
  if type(fn) ~= "function" then state.raise("lt.kernel: the first argument must be a function") end
  local info = debug.getinfo(fn, "Su")
  if info.what == "C" then state.raise("lt.kernel: the kernel must be a Lua function") end
  if info.isvararg then state.raise("lt.kernel: kernels cannot take variable arguments (...)") end
  if argtypes ~= nil and type(argtypes) ~= "table" then
    state.raise("lt.kernel: the second argument must be a table of argument types, e.g. {a = lt.f32}")
  end
  check_source(info, "lt.kernel")
  local params, known = {}, {}
  for i = 1, info.nparams do
    params[i] = debug.getlocal(fn, i)
    known[params[i]] = true
  end
  if #params > 16 then state.raise("lt.kernel: a kernel takes at most 16 arguments") end
  for name, t in pairs(argtypes or {}) do
    if not known[name] then
      state.raise("lt.kernel: the kernel has no argument named '" .. tostring(name) .. "'")
    end
    local treem = require "lattice.tree"
    if not treem.is_type(t) and not ndm.is_type(t) and (not types.is_type(t) or t.name == "i1")
        and not require("lattice.cfield").is_ctype(t) then
      state.raise("lt.kernel: the type of argument '" .. name .. "' must be a scalar type such as lt.f32, "
        .. "a vector, matrix or struct type (lt.vec2), a tree type (lt.tree{...}) "
        .. "or an ndarray type (lt.ndarray_type(lt.f32, 2))")
    end
  end
  return setmetatable({
    fn = fn, params = params, argtypes = argtypes or {}, cache = {}, gen = -1,
    source = info.source, short_src = info.short_src,
    line = info.linedefined, lastline = info.lastlinedefined,
  }, K)
end

local function kernel_source(k)
  local sources = package.loaded["lattice.sources"]
  if type(sources) == "table" and sources[k.source] then return sources[k.source] end
  if k.source:sub(1, 1) == "@" then
    local path = k.source:sub(2)
    local f = io.open(path, "r")
    if f then
      local text = f:read("a")
      f:close()
      return text
    end
    error("cannot trace kernel " .. k.name .. ": cannot read its source file '" .. path .. "'", 0)
  end
  error("cannot trace kernel " .. k.name .. ": the source of chunk " .. k.short_src .. " is not available; "
    .. "define kernels in a script file or in the lattice REPL, or (a C host running code with luaL_loadbuffer) "
    .. "register the chunk's text with lt_register_source(L, chunkname, text, len), or run it with lt_run_string",
    0)
end

-- Wrappers for the standard libraries seen from a kernel: calling one with a
-- kernel value is an error that says what to use instead (math.* map to lt.*).
local LIBS = { math = true, string = true, table = true, os = true, io = true, utf8 = true, coroutine = true }
local PLAIN = { print = true, tostring = true, tonumber = true }

local function has_kv(...)
  for i = 1, select("#", ...) do if T.is_kv((select(i, ...))) then return true end end
  return false
end

local function wrap_fn(lib, name, f, lt)
  local full = lib and (lib .. "." .. name) or name
  local alt = lib == "math" and lt[name]
  return function(...)
    if has_kv(...) then
      if alt then return alt(...) end
      T.fail("function '" .. full .. "' cannot be called with kernel values" ..
        (lt[name] and ("; use lt." .. name) or
          " (kernel values have no value until the kernel runs); compute it outside the kernel"))
    end
    return f(...)
  end
end

local function unknown_name(key)
  return "unknown name '" .. tostring(key) .. "': it is nil when the kernel is traced; define it before the "
    .. "kernel is first called (or check the spelling; a `local " .. tostring(key) .. " <const>` outside the "
    .. "kernel cannot be seen by it: Lua compiles such constants away, so declare it without <const>)"
end

local function kernel_env(real, lt)
  local cache = {}
  return setmetatable({}, {
    __index = function(_, key)
      if cache[key] then return cache[key] end
      local v = real[key]
      if v == nil then
        T.fail(unknown_name(key))
      end
      if LIBS[key] and type(v) == "table" then
        local w = setmetatable({}, { __index = function(_, fname)
          local f = v[fname]
          if type(f) == "function" then return wrap_fn(key, fname, f, lt) end
          return f
        end })
        cache[key] = w
        return w
      end
      if key == "print" and v == print then   -- print in kernels: at run time (builtins.lua)
        cache[key] = require("lattice.builtins").kernel_print
        return cache[key]
      end
      if PLAIN[key] and type(v) == "function" then
        cache[key] = wrap_fn(nil, key, v, lt)
        return cache[key]
      end
      return v
    end,
    __newindex = real,
  })
end

-- Rewrites the Lua function fn (described by k: source, line, lastline, name)
-- and returns the traced version, with fn's upvalues captured now.
local function rewrite_function(k, fn)
  local lt = package.loaded["lattice.init"]
  local text = kernel_source(k)
  local names, values, n = {}, {}, 0
  for i = 1, 255 do
    local name, v = debug.getupvalue(fn, i)
    if not name then break end
    n = i
    names[i] = name
    if name == "_ENV" and type(v) == "table" then v = kernel_env(v, lt) end
    if fieldm.is_field(v) and not rawget(v, "_name") then fieldm.set_name(v, name) end
    if require("lattice.cfield").is(v) and not rawget(v, "_name") then v.name = name end
    if getmetatable(v) == M.Func and not v.named then    -- name helpers in messages by their variable
      v.named, v.name = true, "'" .. name .. "' (defined at " .. v.short_src .. ":" .. v.line .. ")"
    end
    values[i] = v
  end
  local rewrite = require "lattice.rewrite"
  local chunk_text, err = rewrite.function_chunk(text, k.line, k.lastline, names, k.source, fn)
  if not chunk_text then error(err, 0) end
  -- A function that uses no global has no _ENV: a name it does not see as a
  -- local or upvalue can only be a `local <const>` Lua compiled away.
  local env = setmetatable({ table = table }, { __index = function(_, key) T.fail(unknown_name(key)) end })
  local chunk, lerr = load(chunk_text, k.source, "t", env)
  if not chunk then error("internal error: the rewritten function " .. k.name .. " does not load: " .. lerr, 0) end
  return chunk(hooks, table.unpack(values, 1, n))
end

-- lt.func(fn): a helper whose control flow is traced like a kernel's when a
-- kernel calls it (plain Lua helpers run unchanged at trace time).
local Func = {}
Func.__index = Func
M.Func = Func

function M.func(fn)
  if type(fn) ~= "function" or debug.getinfo(fn, "S").what == "C" then
    state.raise("lt.func: expects a Lua function")
  end
  local info = debug.getinfo(fn, "S")
  check_source(info, "lt.func")
  return setmetatable({ fn = fn, source = info.source, short_src = info.short_src,
    line = info.linedefined, lastline = info.lastlinedefined,
    name = "function@" .. info.short_src .. ":" .. info.linedefined }, Func)
end

function Func:__call(...)
  local S = T.current()
  if not S then return self.fn(...) end
  S.funcs = S.funcs or {}
  local rf = S.funcs[self]
  if not rf then
    rf = rewrite_function(self, self.fn)
    S.funcs[self] = rf
  end
  -- functions are inlined: a call to one already being inlined would never end
  S.active_funcs = S.active_funcs or {}
  if S.active_funcs[self] then
    T.fail("lt.func " .. self.name .. " calls itself (recursion): lt.func calls are inlined when the kernel is "
      .. "traced, so recursion is not supported; write a loop")
  end
  -- pass by value: each kernel value arrives in a fresh variable, so the
  -- helper may assign to its parameters without touching the caller's
  local args = table.pack(...)
  for i = 1, args.n do
    local cm = T.composite(args[i])
    if cm then args[i] = cm.declare(args[i])
    elseif T.is_kv(args[i]) then args[i] = T.new_var(args[i]) end
  end
  S.active_funcs[self] = true
  local ctx = T.push_function()
  local res = table.pack(pcall(function() return T.pop_function(ctx, rf(table.unpack(args, 1, args.n))) end))
  S.active_funcs[self] = nil
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- tys[i]: the scalar type of parameter i, or {tree = tree type} for an
-- instance (traced as a proxy; not an IR argument).
local function trace(k, tys, background, grad, fwd)
  local rf = rewrite_function(k, k.fn)
  local treem = require "lattice.tree"

  local b = core.builder_new(state.prog, k.name)
  if grad then b:set_grad(state.opts.ad_stack_size) end  -- k:grad: the autodiff pass makes the adjoint
  if fwd then b:set_fwd(fwd) end                         -- k:fwd: the forward pass adds tangents (fwd: the
                                                         -- mask of the IR arguments given tangents)
  local ids = {}
  for _, t in ipairs(tys) do
    if t.leaf_types then                                   -- a vector/matrix/struct: one argument per scalar
      for _, lt_ in ipairs(t:leaf_types()) do ids[#ids + 1] = lt_.id end
    elseif t.ndarray then ndm.arg_type_ids(t.ndarray, ids)
    elseif not t.tree then ids[#ids + 1] = t.id end
  end
  if #ids > 16 then
    error(("kernel %s: its arguments take %d slots (a vector, matrix or struct one per component, an ndarray "
      .. "1 + its dimensions), at most 16"):format(k.name, #ids), 0)
  end
  b:set_args(table.unpack(ids))
  b:set_loc(k.short_src, k.line)
  local opts = state.opts
  T.begin({ b = b, debug = opts.debug, ip = opts.default_ip, fp = opts.default_fp, loops = {},
    name = k.name, file = k.short_src })
  local ok, res = pcall(function()
    local args, n = {}, 0
    for i, t in ipairs(tys) do
      if t.leaf_types then
        local leaves = {}
        for k, lt_ in ipairs(t:leaf_types()) do leaves[k] = T.sym(b:arg(n), lt_); n = n + 1 end
        args[i] = t:from_flat(leaves)
      elseif t.tree then args[i] = treem.proxy(t.tree)
      elseif t.ndarray then args[i], n = ndm.proxy(b, T, t.ndarray, n, k.params[i])
      else args[i] = T.sym(b:arg(n), t); n = n + 1 end
    end
    local ctx = T.push_function()
    local ret = T.pop_function(ctx, rf(table.unpack(args, 1, #tys)))
    T.emit_return(ret)
  end)
  T.finish()
  if not ok then error(res, 0) end
  return core.compile(b, opts.print_ir, k.short_src, background)
end

-- A failed launch (index out of range in debug mode, pool exhausted, ...)
-- is raised at the user's call; the program stays usable.
local function launched(ok, ...)
  if ok then return ... end
  core.launch_failed()   -- a C host's lt_kernel_launch says LT_ERROR_RUNTIME for this, not for trace errors
  local msg = tostring((...)):gsub("^lattice/[%w_]+%.lua:%d+: ", "")
  state.raise(msg)
end

-- Resets the cache after lt.init and names the kernel.
local function prepare(k)
  ensure_init()
  if k.gen ~= state.gen then
    k.cache, k.gen, k.last, k.last_fwd = {}, state.gen, nil, nil
  end
  if not k.name then
    k.name = fieldm.find_name(k) or ("kernel@" .. k.short_src .. ":" .. k.line)
  end
end

-- What trace takes for an argument of type t (a tree type, an ndarray type,
-- a vector/matrix/struct type or a scalar type), and its part of the
-- signature key the cache is indexed by. One function for __call and
-- K:compile, so a kernel compiled ahead is found by its first call.
local treem_   -- lattice.tree, required on first use (it requires this module)
local function signature_part(t)
  treem_ = treem_ or require "lattice.tree"
  if treem_.is_type(t) then return { tree = t }, "tree#" .. t.serial end
  if ndm.is_type(t) then return { ndarray = t }, t.key end
  if t.leaf_types and not types.is_type(t) then return t, tostring(t) end
  return t, t.name
end

-- "kernel k": in messages
local function short_name(k) return "kernel " .. (k.name or ("@" .. k.short_src .. ":" .. k.line)) end

-- The argument types from the annotations alone, and the signature key
-- __call would make for them; nil and the name of the first argument without
-- an annotation when there is one.
local function declared_signature(k)
  local tys, key = {}, {}
  for i, p in ipairs(k.params) do
    local t = k.argtypes[p]
    if t == nil then return nil, p end
    tys[i], key[i] = signature_part(t)
  end
  return tys, table.concat(key, ",")
end

-- k:compile(): traces k now, for the argument types of its annotations, and
-- makes its machine code on another thread; the first call waits for it.
-- lt.compile(k1, k2, ...) does this for several kernels, which then compile
-- at the same time.
function K:compile()
  if T.active() then T.fail("kernels cannot be compiled while a kernel is traced") end
  prepare(self)
  local tys, key = declared_signature(self)
  if not tys then
    state.raise(("%s: argument '%s' has no type annotation; compiling before the first call needs the types of "
      .. "every argument, e.g. lt.kernel(fn, {%s = lt.f32})"):format(short_name(self), key, key))
  end
  if not self.cache[key] then
    fieldm.materialize_current()
    self.cache[key] = trace(self, tys, true)
  end
  self.last = self.last or self.cache[key]     -- k:ir() shows it until a call compiles another signature
  return self
end

-- k:compiled_for(types[, grad]): the compiled kernel (its adjoint when grad) for the argument types in
-- `types` (parameter name -> type, falling back to k's annotations), traced
-- and compiled now if this signature is new; for AOT modules (aot.lua).
-- Returns it and the types in parameter order.
function K:compiled_for(given, grad)
  if T.active() then T.fail("kernels cannot be compiled while a kernel is traced") end
  prepare(self)
  local tys, key, list = {}, {}, {}
  for i, p in ipairs(self.params) do
    local t = given[p]
    if t == nil then t = self.argtypes[p] end
    if t == nil then
      state.raise(("kernel %s: argument '%s' has no type; give it in the signature, e.g. {%s = lt.f32}")
        :format(self.name, p, p))
    end
    list[i] = t
    tys[i], key[i] = signature_part(t)
  end
  key = table.concat(key, ",") .. (grad and "|grad" or "")
  if not self.cache[key] then
    fieldm.materialize_current()
    self.cache[key] = trace(self, tys, nil, grad)
  end
  self.last = self.last or self.cache[key]
  return self.cache[key], list
end

-- k(...) runs the kernel; k:grad(...) its adjoint (grad true: compiled
-- separately, cached under the signature with "|grad"; seed: the adjoint of
-- the kernel's result, when it has one).
-- The launch values, trace types, cache key and tree instances of a call
-- with these arguments (checked against the parameters).
local function arguments(self, grad, ...)
  prepare(self)
  local n = select("#", ...)
  if n ~= #self.params then
    state.raise(("kernel %s expects %d argument%s (%s), got %d"):format(self.name, #self.params,
      #self.params == 1 and "" or "s", table.concat(self.params, ", "), n))
  end
  local vals, tys, key = {}, {}, {}
  local insts, by_type = nil, nil
  local treem = require "lattice.tree"
  for i, p in ipairs(self.params) do
    local v = select(i, ...)
    local t = self.argtypes[p]
    if treem.is_type(t) then
      if not treem.is_instance(v) or v._type ~= t then
        state.raise(("kernel %s: argument '%s' must be an instance of its tree type (Grid:instantiate()), got %s")
          :format(self.name, p, treem.is_instance(v) and "an instance of another tree type" or ("a " .. type(v))))
      end
      if not v._ud then state.raise(("kernel %s: argument '%s' is a destroyed tree instance"):format(self.name, p)) end
      if t.gen ~= state.gen then state.raise(("kernel %s: the tree type of argument '%s' belongs to a program "
        .. "that lt.init has reset"):format(self.name, p)) end
      by_type = by_type or {}
      if by_type[t] then
        state.raise(("kernel %s: arguments '%s' and '%s' are both instances of the same tree type; a kernel "
          .. "takes at most one instance of each tree type (it is compiled for the type)"):format(self.name,
          by_type[t], p))
      end
      by_type[t] = p
      insts = insts or {}
      insts[#insts + 1] = v._ud
      tys[i], key[i] = signature_part(t)
      goto continue
    end
    if ndm.is_type(t) or (t == nil and ndm.is_ndarray(v)) then
      t = t or v._type
      if not ndm.is_ndarray(v) or v._type ~= t then
        state.raise(("kernel %s: argument '%s' must be an ndarray of %s with %d dimension%s, got %s"):format(
          self.name, p, t.dtype.name, t.ndim, t.ndim == 1 and "" or "s",
          ndm.is_ndarray(v) and tostring(v) or ("a " .. type(v))))
      end
      ndm.launch_values(v, vals)
      tys[i], key[i] = signature_part(t)
      goto continue
    end
    if t and t.leaf_types and not types.is_type(t) then        -- vector/matrix/struct argument
      local ok, flat = pcall(t.from_lua, t, v, ("kernel %s: argument '%s'"):format(self.name, p))
      if not ok then state.raise((tostring(flat):gsub("^[^:\n]*:%d+: ", ""))) end
      for k, lt_ in ipairs(t:leaf_types()) do
        local x = flat[k]
        if lt_.is_int then
          x = math.tointeger(x) or state.raise(("kernel %s: argument '%s': component %d is %s and needs an "
            .. "integer, got %s"):format(self.name, p, k - 1, lt_.name, tostring(flat[k])))
        end
        vals[#vals + 1] = x
      end
      tys[i], key[i] = signature_part(t)
      goto continue
    end
    if type(v) == "table" and not t then
      state.raise(("kernel %s: argument '%s' is a table: vector, matrix and struct arguments need their type, "
        .. "e.g. lt.kernel(fn, {%s = lt.vec2})"):format(self.name, p, p))
    end
    if type(v) ~= "number" then
      state.raise(("kernel %s: argument '%s' must be a number%s, got a %s"):format(self.name, p,
        t and (" (" .. t.name .. ")") or "", type(v)))
    end
    if not t then
      t = math.type(v) == "integer" and state.opts.default_ip or state.opts.default_fp
      if t.is_int and t.bits < 64 and (v < t.min or v > t.max) then
        state.raise(("kernel %s: argument '%s' = %d does not fit in %s (the type of unannotated integer "
          .. "arguments); annotate it, e.g. {%s = lt.i64}"):format(self.name, p, v, t.name, p))
      end
    end
    if t.is_int and math.type(v) == "float" then
      local iv = math.tointeger(v)
      if not iv then
        state.raise(("kernel %s: argument '%s' is %s and needs an integer, got %s"):format(self.name, p, t.name,
          tostring(v)))
      end
      v = iv
    end
    vals[#vals + 1] = v
    tys[i], key[i] = signature_part(t)
    ::continue::
  end
  if #vals > 16 then
    state.raise(("kernel %s: its arguments take %d scalar slots (each component of a vector, matrix or struct "
      .. "argument takes one); a kernel takes at most 16"):format(self.name, #vals))
  end
  key = table.concat(key, ",") .. (grad and "|grad" or "")
  return vals, tys, key, insts
end

-- The compiled kernel for a signature, traced now when it is new (its code
-- made on another thread when background).
local function compiled(self, tys, key, grad, background, fwd)
  local ck = self.cache[key]
  if not ck then
    fieldm.materialize_current()
    ck = trace(self, tys, background, grad, fwd)
    self.cache[key] = ck
  end
  return ck
end

-- A zeroed f64 array of n slots, one per program and name: where an adjoint
-- adds its arguments' gradients ("grads", 16: slot i for IR argument i) and
-- where a tangent kernel finds its arguments' tangents ("duals", 17: the
-- result's in slot 16). Zeroed without a:fill, which a tape refuses.
local scratch = {}
local function scratch_array(name, n)
  local b = scratch[name]
  if not b or b.gen ~= state.gen then
    b = { gen = state.gen, a = ndm.new(types.by_name.f64, { n }) }
    scratch[name] = b
  end
  core.ndarray_fill(b.a._ud, 0)
  return b.a
end
local function arg_grads() return scratch_array("grads", 16) end

-- The gradients in `out` by parameter name: a number for a float scalar, a
-- vector or matrix for those (their components' gradients); integer,
-- ndarray and tree parameters have none.
local function grads_by_name(self, tys, out)
  local g, slot = {}, 0
  for i, p in ipairs(self.params) do
    local t = tys[i]
    if t.leaf_types then
      local leaves, all_float = {}, true
      for k, lt_ in ipairs(t:leaf_types()) do
        leaves[k] = out[slot]
        all_float = all_float and lt_.is_float
        slot = slot + 1
      end
      if all_float and t.from_flat then g[p] = t:from_flat(leaves) end
    elseif t.tree then
    elseif t.ndarray then slot = slot + 1 + t.ndarray.ndim
    else
      if t.is_float then g[p] = out[slot] end
      slot = slot + 1
    end
  end
  return g
end

-- M.compile_grad(k, ...): k's adjoint for these arguments traced now and
-- compiled in the background (tape:backward starts all before running any)
function M.compile_grad(k, ...)
  local _, tys, key = arguments(k, true, ...)
  compiled(k, tys, key, true, true)
end

local function invoke(self, grad, seed, ...)
  if T.active() then T.fail("a kernel cannot call another kernel; call a plain Lua function instead") end
  local vals, tys, key, insts = arguments(self, grad, ...)
  local ck = compiled(self, tys, key, grad)
  self.last, self.last_key = ck, key
  if grad then                               -- a tape records kernels and their arguments (autodiff.lua)
    local seen = {}                          -- an adjoint's arrays are distinct (a read one must not be written)
    for i, q in ipairs(self.params) do
      local v = select(i, ...)
      if ndm.is_ndarray(v) then
        if seen[v._ud] then
          state.raise(("kernel %s: arguments '%s' and '%s' are the same ndarray; its gradient needs them to be "
            .. "different arrays"):format(self.name, seen[v._ud], q))
        end
        seen[v._ud] = q
      end
    end
    local out
    for _, name in ipairs { select(2, core.compiled_nargs(ck, #vals)) } do
      if name == "result.grad" then vals[#vals + 1] = seed             -- d loss / d result
      elseif name == "args.grad" then                                  -- where the arguments' gradients go
        out = arg_grads()
        vals[#vals + 1] = core.ndarray_address(out._ud, state.prog)
      elseif name == "args.grad.n" then vals[#vals + 1] = 16              -- its extent (slots 0..15)
      else                                                             -- NAME.grad: an ndarray's gradient array
        local pname = name:match("^(.-)%.grad$")
        local a
        for i, q in ipairs(self.params) do if q == pname then a = select(i, ...) end end
        local g = a and rawget(a, "_grad")
        vals[#vals + 1] = g and core.ndarray_address(g._ud, state.prog) or 0
      end
    end
    launched(pcall(core.launch, ck, insts, table.unpack(vals)))
    return out and grads_by_name(self, tys, out) or {}
  end
  local tape = state.tape
  if tape then tape:record(self, ck, vals, ...) end
  return launched(pcall(core.launch, ck, insts, table.unpack(vals)))
end

function K:__call(...) return invoke(self, false, nil, ...) end

-- k:grad(...): the adjoint of k with these arguments (docs/autodiff.md): adds
-- to the gradients of the fields k reads what the gradients of the fields it
-- writes say, and, for a kernel with a result, the result's gradient 1 (it is
-- the loss); M.grad_seeded(k, seed, ...) gives another
function K:grad(...) return invoke(self, true, 1, ...) end
function M.grad_seeded(k, seed, ...) return invoke(k, true, seed, ...) end

-- ---- forward mode (docs/autodiff.md, "Forward mode") ----------------------------------------

-- The IR argument slots of the tangents given by parameter name (tangents:
-- {a = 1.0, v = {1, 0}}): the mask of those slots and slot -> value. A
-- tangent is for a float argument, scalar, vector or matrix.
local function tangent_slots(self, tys, tangents)
  local mask, vals, slot, seen = 0, {}, 0, {}
  for i, p in ipairs(self.params) do
    local t, tv = tys[i], tangents[p]
    seen[p] = true
    local function refuse(what)
      state.raise(("k:fwd_args: kernel %s: argument '%s' is %s, which has no tangent (only float arguments, "
        .. "scalar, vector or matrix, have one)"):format(self.name, p, what))
    end
    if t.leaf_types then
      local leaves = t:leaf_types()
      if tv ~= nil then
        local ok, flat = pcall(t.from_lua, t, tv, ("k:fwd_args: kernel %s: the tangent of '%s'"):format(self.name, p))
        if not ok then state.raise((tostring(flat):gsub("^[^:\n]*:%d+: ", ""))) end
        for k, lt_ in ipairs(leaves) do
          if not lt_.is_float then refuse("a " .. tostring(t) .. " with integer components") end
          mask, vals[slot + k - 1] = mask | (1 << (slot + k - 1)), flat[k] + 0.0
        end
      end
      slot = slot + #leaves
    elseif t.tree then
      if tv ~= nil then refuse("a tree instance") end
    elseif t.ndarray then
      if tv ~= nil then refuse("an ndarray") end
      slot = slot + 1 + t.ndarray.ndim
    else
      if tv ~= nil then
        if not t.is_float then refuse("an integer (" .. t.name .. ")") end
        if type(tv) ~= "number" then
          state.raise(("k:fwd_args: kernel %s: the tangent of '%s' must be a number, got a %s"):format(self.name,
            p, type(tv)))
        end
        mask, vals[slot] = mask | (1 << slot), tv + 0.0
      end
      slot = slot + 1
    end
  end
  for name in pairs(tangents) do
    if not seen[name] then
      state.raise(("k:fwd_args: kernel %s has no argument named '%s'"):format(self.name, tostring(name)))
    end
  end
  return mask, vals
end

local function arg_duals() return scratch_array("duals", 17) end

local function invoke_fwd(self, tangents, ...)
  if T.active() then T.fail("a kernel cannot call another kernel; call a plain Lua function instead") end
  if state.tape then
    state.raise("k:fwd inside lt.tape: the tape records kernel calls for reverse mode; call the kernel itself "
      .. "(k(...)) there, and k:fwd outside the tape")
  end
  local vals, tys, key, insts = arguments(self, false, ...)
  local mask, slots = tangent_slots(self, tys, tangents)
  key = key .. "|fwd" .. (mask ~= 0 and ("(" .. mask .. ")") or "")
  local ck = compiled(self, tys, key, false, false, mask)
  self.last_fwd = ck
  local out
  for _, name in ipairs { select(2, core.compiled_nargs(ck, #vals)) } do
    if name == "args.dual" then                        -- the arguments' tangents in, the result's out
      out = arg_duals()
      for slot, v in pairs(slots) do out[slot] = v end
      vals[#vals + 1] = core.ndarray_address(out._ud, state.prog)
    end
  end
  local res = table.pack(launched(pcall(core.launch, ck, insts, table.unpack(vals))))
  if res.n == 0 then return end
  return res[1], (out and math.type(res[1]) == "float") and out[16] or 0.0
end

-- k:fwd(...): k's tangent version with these arguments: runs k (its field
-- writes included) and writes the tangents of what it writes into the duals
-- of those fields, from the duals of the fields it reads; returns k's result
-- and its tangent, when k has one. k:fwd_args(tangents, ...) gives float
-- arguments tangents too, by name: k:fwd_args({a = 1}, a, b).
function K:fwd(...) return invoke_fwd(self, {}, ...) end
function K:fwd_args(tangents, ...)
  if type(tangents) ~= "table" then
    state.raise(("k:fwd_args: the first argument is a table of argument tangents by name, e.g. {a = 1.0}, "
      .. "got a %s"):format(type(tangents)))
  end
  return invoke_fwd(self, tangents, ...)
end

-- The views of a kernel's IR, shared by k:ir{...}, lt.init{print_ir = ...}
-- and the REPL's :ir: "final" (the IR code generation gets), "all" (after
-- every pass, headed "# after PASS") or a pass name (after that pass, every
-- time it runs; "trace" is the IR as traced). M.ir_view(v) -> the view for a
-- name, or nil and a message listing the names.
function M.ir_view(v)
  if v == "final" or v == "all" then return v end
  local names = core.pass_names()
  for _, n in ipairs(names) do if v == n then return v end end
  return nil, ("unknown pass '%s' (the passes: %s; or \"all\", \"final\")"):format(tostring(v),
    table.concat(names, ", "))
end

local IR_OPTIONS = { all = true, pass = true, grad = true, fwd = true }

-- k:ir() -> the final IR of the most recently compiled signature;
-- k:ir{all = true}: the IR after every pass; k:ir{pass = "offload"}: after
-- that pass; k:ir{grad = true}: of its adjoint (k:grad with the last
-- signature); k:ir{fwd = true}: of the tangent version k:fwd last ran.
function K:ir(opts)
  if opts ~= nil and type(opts) ~= "table" then
    state.raise("k:ir: the options are a table such as {all = true}, {pass = \"offload\"} or {grad = true}, got a "
      .. type(opts))
  end
  opts = opts or {}
  for key in pairs(opts) do
    if not IR_OPTIONS[key] then
      state.raise(("k:ir: unknown option '%s' (the options: all, pass, grad, fwd)"):format(tostring(key)))
    end
  end
  local view = opts.all and "all" or "final"
  if opts.pass ~= nil then
    if opts.all then state.raise("k:ir: give all = true or pass = NAME, not both") end
    local err
    view, err = M.ir_view(opts.pass)
    if not view then state.raise("k:ir: " .. err) end
  end
  local which = self.last
  if opts.fwd then
    which = self.gen == state.gen and self.last_fwd
    if not which then
      state.raise("kernel " .. (self.name or "?") .. " has no tangent version compiled yet; call k:fwd(...) first")
    end
  end
  if opts.grad then
    which = self.last_key and self.cache[self.last_key:gsub("|grad$", "") .. "|grad"]
    if not which then
      state.raise("kernel " .. (self.name or "?") .. " has no adjoint compiled yet; call k:grad(...) first")
    end
  end
  if not which then
    state.raise("kernel " .. (self.name or "?") .. " has not been compiled yet; call it (or k:compile()) first")
  end
  local ok, text = pcall(core.compiled_ir, which, view)
  if not ok then state.raise("kernel " .. (self.name or "?") .. ": " .. tostring(text)) end
  return text
end

-- k:signatures() -> the argument signatures compiled so far ("f32,i32"), sorted.
function K:signatures()
  local list = {}
  if self.gen == state.gen then
    for key in pairs(self.cache) do list[#list + 1] = key end
  end
  table.sort(list)
  return list
end

-- "kernel fill(a: f32, n) compiled for (f32, i32)": its arguments with their
-- annotations, and the signatures compiled so far (or "not compiled yet")
K.__tostring = function(k)
  local params = {}
  for i, p in ipairs(k.params) do
    local t = k.argtypes[p]
    local key = t ~= nil and select(2, signature_part(t))
    params[i] = key and (p .. ": " .. key:gsub("^lt%.", "")) or p
  end
  local sigs = k:signatures()
  for i, s in ipairs(sigs) do
    local args, variant = s:match("^([^|]*)|?(.*)$")
    sigs[i] = "(" .. args:gsub("lt%.", ""):gsub(",", ", ") .. ")" .. (variant ~= "" and (" " .. variant) or "")
  end
  return "kernel " .. (k.name or ("<" .. k.short_src .. ":" .. k.line .. ">")) .. "(" .. table.concat(params, ", ") .. ")"
    .. (#sigs > 0 and (" compiled for " .. table.concat(sigs, ", ")) or " (not compiled yet)")
end

return M
