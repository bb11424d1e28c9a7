-- lattice.bytecode: compares Lua functions by their compiled code. Lua's debug
-- information names only the lines a function starts and ends on, so several
-- functions on one line (`lt.kernel(function(a) return a*2 end), lt.kernel(...)`)
-- look alike; their bytecode does not. lattice.rewrite compiles each candidate
-- source again and keeps the one whose code equals the function's.
--
--   bytecode.same_code(f, g) -> true when f and g have the same instructions,
--     constants, parameters, nested functions and upvalue count; what each
--     upvalue of f and g is bound to (a local or upvalue of the function around
--     it) is not compared: the candidates are compiled inside another function.
--
-- The layout read here is Lua 5.4's (ldump.c): a header, a byte with the main
-- function's upvalue count, then the function: source, linedefined,
-- lastlinedefined, numparams, is_vararg, maxstacksize, code, constants,
-- upvalues (instack, idx, kind: 3 bytes each), nested functions, debug info.
local M = {}

local byte = string.byte

-- A cursor over the dump s; every read past the end raises "short".
local function reader(s)
  local pos = 1
  local R = {}
  function R.byte()
    local b = byte(s, pos)
    if not b then error("short", 0) end
    pos = pos + 1
    return b
  end
  function R.size()                -- ldump.c dumpSize: 7 bits a byte, the last one has bit 7 set
    local x = 0
    repeat
      local b = R.byte()
      x = x * 128 + (b & 0x7f)
    until b >= 0x80
    return x
  end
  function R.skip(n)
    pos = pos + n
    if pos > #s + 1 then error("short", 0) end
  end
  function R.pos() return pos end
  return R
end

local function skip_string(R)
  local n = R.size()                       -- 0: NULL, else length + 1
  if n > 0 then R.skip(n - 1) end
end

-- Reads a header and the main function up to its upvalue descriptors;
-- returns the byte range [a, b) of those descriptors.
local function upvalue_range(s)
  local R = reader(s)
  R.skip(4)                                -- "\27Lua"
  if R.byte() ~= 0x54 then error("not a Lua 5.4 dump", 0) end
  R.skip(1 + 6)                            -- format, LUAC_DATA
  local isize, intsize, numsize = R.byte(), R.byte(), R.byte()
  R.skip(intsize + numsize)                -- LUAC_INT, LUAC_NUM
  R.byte()                                 -- the main function's upvalue count
  skip_string(R)                           -- source
  R.size(); R.size()                       -- linedefined, lastlinedefined
  R.skip(3)                                -- numparams, is_vararg, maxstacksize
  R.skip(R.size() * isize)                 -- code
  for _ = 1, R.size() do                   -- constants
    local tag = R.byte()                   -- type | variant << 4
    if tag == 3 then R.skip(intsize)       -- integer
    elseif tag == 19 then R.skip(numsize)  -- float
    elseif tag & 0x0f == 4 then skip_string(R) end   -- short or long string
  end
  local n = R.size()
  local a = R.pos()
  R.skip(3 * n)
  return a, R.pos()
end

function M.same_code(f, g)
  local ok, same = pcall(function()
    local df, dg = string.dump(f, true), string.dump(g, true)
    local fa, fb = upvalue_range(df)
    local ga, gb = upvalue_range(dg)
    return fa == ga and fb == gb and df:sub(1, fa - 1) == dg:sub(1, ga - 1) and df:sub(fb) == dg:sub(gb)
  end)
  return ok and same
end

return M
