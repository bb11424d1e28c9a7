-- aot.lua -- lt.aot.module: saving tree types and compiled kernels into a
-- module file that a C host runs with the runtime library alone
-- (docs/aot.md). The kernels are traced and compiled here, as a call with
-- the signature would compile them; core.aot_save (src/lang/aot_api.c ->
-- src/program/module_write.c) writes the file.
local core = require "lattice.core"
local state = require "lattice.state"
local types = require "lattice.types"
local treem = require "lattice.tree"
local ndm = require "lattice.ndarray"
local matrix = require "lattice.matrix"
local kernelm = require "lattice.kernel"

local M = {}
local Module = {}
Module.__index = Module

local PARAM = { scalar = 0, vector = 1, ndarray = 2, tree = 3 }
local FIELD = { scalar = 0, vector = 1, matrix = 2 }

local function raise(fmt, ...) state.raise(fmt:format(...)) end

-- Calls a function of the C half (src/lang/aot_api.c); its error is raised
-- again at the user's line, as the checks here are.
local function core_call(f, ...)
  local ok, e = pcall(f, ...)
  if not ok then state.raise((tostring(e):gsub("^lattice/[%w_]+%.lua:%d+: ", ""))) end
end

-- lt.aot.module{arch = "cpu", cpu = "x86-64-v3"}; arch = "cuda" or
-- {"cpu", "cuda"} with sm = {"sm_70", ...} (default {"sm_70"})
function M.module(opts)
  opts = opts or {}
  if type(opts) ~= "table" then raise("lt.aot.module: give a table of options, e.g. {arch = \"cpu\"}") end
  for k in pairs(opts) do
    if k ~= "arch" and k ~= "cpu" and k ~= "sm" then
      raise("lt.aot.module: unknown option '%s' (arch, cpu, sm)", tostring(k))
    end
  end
  local arch = opts.arch or "cpu"
  local list = type(arch) == "table" and arch or { arch }
  local has = {}
  for _, a in ipairs(list) do
    if a ~= "cpu" and a ~= "cuda" then
      raise("lt.aot.module: arch must be \"cpu\", \"cuda\" or a list of both, got %s", tostring(a))
    end
    has[a] = true
  end
  if not next(has) then raise("lt.aot.module: arch = {} names no target") end
  local sms = {}
  if opts.sm ~= nil and not has.cuda then raise("lt.aot.module: sm is for arch \"cuda\"") end
  if has.cuda then
    local given = opts.sm or { "sm_70" }
    if type(given) == "string" then given = { given } end
    if type(given) ~= "table" or #given == 0 then raise("lt.aot.module: sm is a list such as {\"sm_70\", \"sm_90\"}") end
    for _, sm in ipairs(given) do
      local n = type(sm) == "string" and tonumber(sm:match("^sm_(%d+)$"))
      if not n or n < 70 then
        raise("lt.aot.module: sm %s is not a GPU target Lattice supports (sm_70 or newer, e.g. \"sm_80\")",
          tostring(sm))
      end
      sms[#sms + 1] = sm
    end
  end
  local cpu = opts.cpu
  if cpu ~= nil and not has.cpu then raise("lt.aot.module: cpu is for arch \"cpu\"") end
  if cpu ~= nil and (type(cpu) ~= "string" or not core.aot_cpu_known(cpu)) then
    raise("lt.aot.module: cpu %s is not one a module can target; use \"x86-64\", \"x86-64-v2\" (the default), "
      .. "\"x86-64-v3\" or \"x86-64-v4\"", tostring(cpu))
  end
  return setmetatable({ has_cpu = has.cpu or false, sms = sms, cpu = cpu, trees = {}, tree_of = {}, kernels = {},
    gen = state.gen }, Module)
end

local function check_name(what, name, taken)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or #name > 200 then
    raise("%s: the name must be an identifier (letters, digits, _), got %s", what, tostring(name))
  end
  if taken[name] then raise("%s: the module already has a %s named '%s'", what, taken[name], name) end
end

local function names_of(m)
  local taken = {}
  for _, t in ipairs(m.trees) do taken[t.name] = "tree type" end
  for _, k in ipairs(m.kernels) do taken[k.name] = "kernel" end
  return taken
end

local function check_live(m, what)
  if m.gen ~= state.gen then raise("%s: the module was made before lt.init reset the program", what) end
end

-- m:add_tree_type("grid", Grid)
function Module:add_tree_type(name, tt)
  local what = "add_tree_type"
  check_live(self, what)
  check_name(what, name, names_of(self))
  if not treem.is_type(tt) then raise("%s('%s', ...): the second argument must be a tree type (lt.tree{...})", what, name) end
  if tt.gen ~= state.gen then raise("%s('%s'): the tree type belongs to a program that lt.init has reset", what, name) end
  if self.tree_of[tt] then raise("%s('%s'): this tree type is already in the module", what, name) end
  local fields = {}
  local function add(fname, d)
    if d.composite then
      local c = d.composite
      if not matrix.is_ctype(c) then
        raise("%s('%s'): field '%s' is a struct; modules hold scalar, vector and matrix fields so far", what, name,
          fname)
      end
      if c.n > 8 or (c.m or 1) > 8 then
        raise("%s('%s'): field '%s' is %s; module fields have at most 8 rows and 8 columns", what, name, fname,
          c.name)
      end
      local comps = {}
      for k, comp in ipairs(d.comps) do comps[k] = comp.snode end
      fields[#fields + 1] = { name = fname, kind = c.m and FIELD.matrix or FIELD.vector, rows = c.n,
        cols = c.m or 1, comps = comps }
    else
      fields[#fields + 1] = { name = fname, kind = FIELD.scalar, rows = 1, cols = 1, comps = { d.snode } }
    end
  end
  for _, fname in ipairs(tt.names) do
    add(fname, tt.fields[fname])
    if tt.fields[fname].grad then add(fname .. ".grad", tt.fields[fname].grad) end   -- needs_grad: NAME.grad
  end
  self.trees[#self.trees + 1] = { name = name, root = tt.root, fields = fields, type = tt }
  self.tree_of[tt] = #self.trees
  return self
end

-- A parameter's description for the module file.
local function param_of(m, kname, p, t)
  if treem.is_type(t) then
    local i = m.tree_of[t]
    if not i then
      raise("add_kernel('%s'): argument '%s' is an instance of a tree type that is not in the module; add it "
        .. "first with m:add_tree_type(\"name\", T)", kname, p)
    end
    return { name = p, kind = PARAM.tree, dtype = 0, rows = 0, cols = 0, ndim = 0, tree = i - 1 }
  end
  if ndm.is_type(t) then
    return { name = p, kind = PARAM.ndarray, dtype = t.dtype.id, rows = 0, cols = 0, ndim = t.ndim, tree = 0 }
  end
  if matrix.is_ctype(t) then
    if t.n > 8 or (t.m or 1) > 8 then
      raise("add_kernel('%s'): argument '%s' is %s; module parameters have at most 8 rows and 8 columns", kname, p,
        t.name)
    end
    return { name = p, kind = PARAM.vector, dtype = t.dtype.id, rows = t.n, cols = t.m or 1, ndim = 0, tree = 0 }
  end
  if types.is_type(t) and t.name ~= "i1" then
    return { name = p, kind = PARAM.scalar, dtype = t.id, rows = 0, cols = 0, ndim = 0, tree = 0 }
  end
  raise("add_kernel('%s'): argument '%s' has type %s; a module kernel takes scalars, vectors, matrices, ndarrays "
    .. "and tree instances", kname, p, tostring(t.name or t))
end

-- m:add_kernel("step", k[, signature]): k compiled for the signature
-- (parameter name -> type; k's annotations fill the rest).
-- m:add_grad_kernel("step_grad", k[, signature]): k's adjoint (k:grad), with
-- two more parameters where k has them: result.grad (the gradient of k's
-- result, for a kernel that returns one) and args.grad (a 1-D f64 ndarray
-- the gradients of k's float arguments are added to, slot i for IR argument
-- i; docs/aot.md).
local function add(self, what, name, k, signature, grad)
  check_live(self, what)
  check_name(what, name, names_of(self))
  if getmetatable(k) ~= kernelm.Kernel then
    raise("%s('%s', ...): the second argument must be a kernel (lt.kernel(...)), got %s", what, name, type(k))
  end
  if signature ~= nil and type(signature) ~= "table" then
    raise("%s('%s', k, signature): the signature is a table of argument types, e.g. {dt = lt.f32}", what, name)
  end
  signature = signature or {}
  for p in pairs(signature) do
    local known = false
    for _, q in ipairs(k.params) do known = known or q == p end
    if not known then raise("%s('%s'): the signature names '%s', which is not an argument of the kernel", what, name,
      tostring(p)) end
  end
  local compiled, tys = k:compiled_for(signature, grad)
  local params, seen = {}, {}
  for i, p in ipairs(k.params) do
    params[i] = param_of(self, name, p, tys[i])
    if params[i].kind == PARAM.tree then
      if seen[params[i].tree] then
        raise("%s('%s'): arguments '%s' and '%s' have one tree type; a kernel takes one instance of each", what,
          name, seen[params[i].tree], p)
      end
      seen[params[i].tree] = p
    end
  end
  if grad then                     -- the adjoint's own arguments (after the primal's IR arguments)
    local nflat = 0
    for _, q in ipairs(params) do
      nflat = nflat + (q.kind == PARAM.scalar and 1 or q.kind == PARAM.vector and q.rows * q.cols
        or q.kind == PARAM.ndarray and 1 + q.ndim or 0)
    end
    for i, extra in ipairs { select(2, core.compiled_nargs(compiled, nflat)) } do
      if extra == "result.grad" then
        local rt = types.by_name[core.compiled_arg_type(compiled, nflat + i - 1)].id
        params[#params + 1] = { name = "result.grad", kind = PARAM.scalar, dtype = rt, rows = 0, cols = 0, ndim = 0,
          tree = 0 }
      elseif extra ~= "args.grad" and extra ~= "args.grad.n" then
        raise("%s('%s'): the adjoint of a kernel with float ndarray arguments takes their gradient arrays ('%s'), "
          .. "which modules do not carry yet; pass the data in tree instances", what, name, extra)
      elseif extra == "args.grad" then
        params[#params + 1] = { name = "args.grad", kind = PARAM.ndarray, dtype = types.by_name.f64.id, rows = 0,
          cols = 0, ndim = 1, tree = 0 }
      end
    end
  end
  local entry = { name = name, compiled = compiled, params = params }
  core_call(core.aot_check, state.prog, self.trees, entry)     -- fields only through tree arguments
  self.kernels[#self.kernels + 1] = entry
  return self
end

function Module:add_kernel(name, k, signature) return add(self, "add_kernel", name, k, signature, false) end
function Module:add_grad_kernel(name, k, signature) return add(self, "add_grad_kernel", name, k, signature, true) end

-- m:save("sim.ltm")
function Module:save(path)
  check_live(self, "save")
  if type(path) ~= "string" or path == "" then raise("save: give the module file's path, got %s", tostring(path)) end
  core_call(core.aot_save, state.prog, path, self.cpu, self.trees, self.kernels, self.has_cpu, self.sms)
  return path
end

Module.__tostring = function(m)
  return ("aot module (%d tree type%s, %d kernel%s)"):format(#m.trees, #m.trees == 1 and "" or "s", #m.kernels,
    #m.kernels == 1 and "" or "s")
end

return M
