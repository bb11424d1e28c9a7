-- show.lua -- values as the `lattice` REPL echoes them (repl/repl.c): a value
-- with a __tostring metamethod (fields, ndarrays, kernels, levels, tree types,
-- vectors, ...) as tostring gives it, so print() in scripts shows the same;
-- a plain table as a constructor, {4, 5} or {x = 1, y = {2, 3}}, to a small
-- depth and length, then "...", with strings in it quoted; other values as
-- tostring gives them.
local M = {}

local MAX_DEPTH = 3       -- tables nested deeper show as {...}
local MAX_ITEMS = 12      -- entries shown per table, then ...

local function is_name(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

-- keys in a stable order: integers first (ascending), then the rest by text
local function key_order(a, b)
  local ia, ib = math.type(a) == "integer", math.type(b) == "integer"
  if ia ~= ib then return ia end
  if ia then return a < b end
  return tostring(a) < tostring(b)
end

local function text(v, depth, seen)
  local t = type(v)
  if t == "string" then return (("%q"):format(v):gsub("\\\n", "\\n")) end
  if t == "function" then return "function" end
  if t ~= "table" then return tostring(v) end
  if getmetatable(v) ~= nil then return tostring(v) end   -- an object: its own text (__tostring)
  if seen[v] then return "{...}" end                  -- a table that holds itself
  if depth > MAX_DEPTH then return "{...}" end
  seen[v] = true
  local parts, n = {}, #v
  for i = 1, math.min(n, MAX_ITEMS) do parts[i] = text(rawget(v, i), depth + 1, seen) end
  local keys = {}
  for k in next, v do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, key_order)
  for _, k in ipairs(keys) do
    if #parts >= MAX_ITEMS then break end
    local key = is_name(k) and k or ("[" .. text(k, MAX_DEPTH + 1, seen) .. "]")
    parts[#parts + 1] = key .. " = " .. text(rawget(v, k), depth + 1, seen)
  end
  seen[v] = nil
  if n + #keys > #parts then parts[#parts + 1] = "..." end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- show.value(v) -> the text the REPL echoes for v (a string itself, as print)
function M.value(v)
  if type(v) == "string" then return v end
  return (text(v, 1, {}))
end

-- show.print(...): the REPL's echo of an input's values, through the global
-- print (tab-separated on one line, as print does)
function M.print(...)
  local n = select("#", ...)
  local out = {}
  for i = 1, n do out[i] = M.value((select(i, ...))) end
  print(table.unpack(out, 1, n))
end

return M
