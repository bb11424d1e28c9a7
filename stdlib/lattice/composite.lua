-- composite.lua -- the lt.* entries for vectors, matrices and structs: type
-- constructors and shortcuts, value constructors, element-wise builtins,
-- lt.grouped over ranges and lt.static_range. Installed by init.lua.
local state = require "lattice.state"
local types = require "lattice.types"
local T = require "lattice.tracer"
local mx = require "lattice.matrix"
local linalg = require "lattice.linalg"
local struct = require "lattice.struct"
local cfield = require "lattice.cfield"
local hooks = require "lattice.hooks"

local M = {}
local is_mat, fail = mx.is_mat, mx.fail

cfield.kinds = { mx.is_ctype, struct.is_stype }

local function is_composite_value(x) return T.composite(x) ~= nil end

-- Wraps the scalar builtin lt[name] so a vector/matrix argument applies it per
-- component (a scalar argument of a binary builtin is broadcast).
local function elementwise(lt, name, nargs)
  local f = lt[name]
  if nargs == 1 then
    lt[name] = function(x)
      if is_mat(x) then
        local e = {}
        for k, v in ipairs(mx.vals(x)) do e[k] = f(v) end
        local t = mx.elem_type(e[1]) or x._t
        return mx.make(x._n, x._m, t, e)
      end
      if is_composite_value(x) then fail("lt." .. name .. " needs a number or a vector, got " .. mx.describe(x)) end
      return f(x)
    end
  else
    lt[name] = function(a, b)
      if is_mat(a) or is_mat(b) then
        return mx.zip(name, f, a, b, "lt." .. name)
      end
      return f(a, b)
    end
  end
end

function M.install(lt)
  -- types
  lt.vec, lt.mat = mx.vec_type, mx.mat_type
  for n = 2, 4 do
    for prefix, t in pairs { [""] = "f32", d = "f64", i = "i32", u = "u32" } do
      lt[prefix .. "vec" .. n] = mx.ctype(n, nil, types.by_name[t])
      lt[prefix .. "mat" .. n] = mx.ctype(n, n, types.by_name[t])
    end
  end
  lt.struct = struct.new
  lt.vector, lt.matrix = mx.vector, mx.matrix
  function lt.identity(n, t) return mx.mat_type(n, n, t):identity() end
  lt.any, lt.all = mx.any, mx.all
  linalg.install(lt)

  -- element-wise builtins
  for _, name in ipairs { "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "tanh", "exp", "log", "floor", "ceil",
    "round", "trunc", "abs" } do
    elementwise(lt, name, 1)
  end
  for _, name in ipairs { "min", "max", "pow", "atan2" } do elementwise(lt, name, 2) end
  local cast = lt.cast
  lt.cast = function(x, t)
    if is_mat(x) then
      if not types.is_type(t) then fail("lt.cast: the second argument must be a scalar type such as lt.i32") end
      return mx.ctype(x._n, x._m, t)(x)
    end
    return cast(x, t)
  end
  local select_ = lt.select
  lt.select = function(c, a, b)
    if is_mat(c) or is_mat(a) or is_mat(b) then
      local ref = is_mat(a) and a or (is_mat(b) and b or c)
      local function at(x, k) return is_mat(x) and mx.vals(x)[k] or x end
      local args = table.pack(c, a, b)
      for k = 1, 3 do
        local x = args[k]
        if is_mat(x) and (x._n ~= ref._n or x._m ~= ref._m) then fail("shape mismatch in lt.select") end
      end
      local e = {}
      for k = 1, #ref._e do e[k] = select_(at(c, k), at(a, k), at(b, k)) end
      local t = mx.elem_type(e[1]) or ref._t
      return mx.make(ref._n, ref._m, t, e)
    end
    return select_(c, a, b)
  end

  -- for I in lt.grouped(x) / lt.grouped(lt.ndrange(...)): an index vector,
  -- in kernels and in Lua scope (I[0], I[1] or I.x, I.y; x[I] indexes a field)
  local sparse = require "lattice.sparse"
  local lua_call = sparse.Grouped.__call
  sparse.Grouped.__call = function(g, s, c)
    local idx = lua_call(g, s, c)
    if idx == nil then return nil end
    return M.index_vector(table.unpack(idx))
  end
  local grouped = lt.grouped
  lt.grouped = function(x)
    if getmetatable(x) == hooks.NDRange then return setmetatable({ range = x }, hooks.GroupedRange) end
    if cfield.is(x) then x = cfield.first(x) end
    return grouped(x)
  end

  -- sparse operations on a composite field act on the cells of its first component
  for _, name in ipairs { "activate", "deactivate", "is_active", "length", "deactivate_all" } do
    local f = lt[name]
    lt[name] = function(...)                     -- (the argument count kept: lt.deactivate_all())
      local x = ...
      if cfield.is(x) then return f(cfield.first(x), select(2, ...)) end
      return f(...)
    end
  end
  -- (lt.append takes composite fields itself: sparse.lua)

  -- lt.static(lt.ndrange(3, 3)) / lt.static(lt.grouped(lt.ndrange(3, 3))): the
  -- range unrolled at trace time (a Lua iterator over Lua integers / index vectors)
  local static = lt.static
  lt.static = function(a, b, step)
    local m = getmetatable(a)
    if m == hooks.NDRange or m == hooks.GroupedRange then
      local r = m == hooks.NDRange and a or a.range
      for _, d in ipairs(r.dims) do
        if math.type(d[1]) ~= "integer" or math.type(d[2]) ~= "integer" then
          fail("lt.static(lt.ndrange(...)) needs Lua integer bounds (capture them from outside the kernel)")
        end
      end
      local tuples = {}
      local fresh = setmetatable({ dims = r.dims }, hooks.NDRange)
      while true do
        local t = table.pack(fresh(nil, nil))
        if t[1] == nil then break end
        if #r.dims == 0 and m == hooks.GroupedRange then t = table.pack() end   -- one empty index vector
        tuples[#tuples + 1] = t
      end
      local pos = 0
      return function()
        pos = pos + 1
        local t = tuples[pos]
        if not t then return nil end
        if m == hooks.GroupedRange then return M.index_vector(table.unpack(t, 1, t.n)) end
        return table.unpack(t, 1, t.n)
      end
    end
    return static(a, b, step)
  end

  -- for k in lt.static_range(n) / lt.static_range(a, b[, step]): unrolled, end exclusive
  function lt.static_range(a, b, step)
    if b == nil then a, b = 0, a end
    step = step or 1
    for _, x in ipairs { a, b, step } do
      if math.type(x) ~= "integer" then
        fail("lt.static_range needs Lua integers (got " .. (T.is_kv(x) and "a kernel value" or tostring(x)) ..
          "); capture the bounds from outside the kernel")
      end
    end
    if step == 0 then fail("lt.static_range: the step must not be 0") end
    return lt.static(a, step > 0 and b - 1 or b + 1, step)
  end
end

-- The index vector of a grouped loop from its indices (kernel values or numbers).
function M.index_vector(...)
  local e = { ... }
  local t = mx.elem_type(e[1]) or types.by_name.i32
  return mx.make(#e, nil, t, e)
end
hooks.index_vector = M.index_vector

-- Lua scope: for I in lt.grouped(lt.ndrange(...))
hooks.GroupedRange.__call = function(g, _, _)
  local r = g.range
  local idx = table.pack(r(nil, nil))
  if idx[1] == nil then return nil end
  if #r.dims == 0 then return M.index_vector() end      -- lt.ndrange(): one empty index vector
  return M.index_vector(table.unpack(idx, 1, idx.n))
end

local _ = state
return M
