-- k:ir(): the IR after every pass, headed by the pass names; the final IR of
-- a small kernel is compared with a golden file (LT_BLESS=1 rewrites it).
local lt = require "lattice"
lt.init {}
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local failures = 0
local function check(what, ok, detail)
  if not ok then
    failures = failures + 1
    print("FAIL " .. what .. (detail and (": " .. detail) or ""))
  end
end

local x = lt.field(lt.f32, 64, "x")
local y = lt.field(lt.f32, 64, "y")
local saxpy = lt.kernel(function(a)
  for i = 0, 63 do
    y[i] = a * x[i] + y[i]
  end
end, { a = lt.f32 })
for i = 0, 63 do x[i] = i; y[i] = 1 end
saxpy(2.0)
check("saxpy ran", y[10] == 21.0, tostring(y[10]))

local text = saxpy:ir()
-- the sections, in order
local sections = {}
for name, body in text:gmatch("# after (%w+)\n(.-)\n\n") do sections[#sections + 1] = { name = name, body = body } end
local order = {}
for _, s in ipairs(sections) do order[#order + 1] = s.name end
local joined = table.concat(order, " ")
check("trace first", order[1] == "trace", joined)
for _, pass in ipairs { "typecheck", "constfold", "cse", "dce", "offload" } do
  check("has pass " .. pass, joined:find(pass, 1, true) ~= nil, joined)
end
local after_offload
for _, s in ipairs(sections) do if s.name == "offload" then after_offload = s.body end end
check("offloaded range_for", after_offload and after_offload:find("task_range_for", 1, true) ~= nil, after_offload)
check("traced range_for", sections[1].body:find("range_for", 1, true) ~= nil, sections[1].body)

-- golden snapshot of the final IR
local final = sections[#sections].body .. "\n"
C.golden("saxpy_final.txt", final)

-- print_ir = true prints the same text while compiling (checked in a child
-- process when the build directory is known, as under ctest)
local build = os.getenv("LT_BUILD_DIR")
if build then
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write([[
local lt = require "lattice"
lt.init { print_ir = true }
local v = lt.field(lt.i32, 8)
local k = lt.kernel(function() for i = 0, 7 do v[i] = i end end)
k()
print("value", v[7])
]])
  f:close()
  -- the interpreter running this test (lua5.4's arg: its lowest index), e.g. lattice-mockgpu
  local lowest = -1
  while arg and arg[lowest - 1] do lowest = lowest - 1 end
  local exe = arg and arg[lowest] or build .. "/lattice"
  local p = assert(io.popen(exe .. " " .. script .. " 2>&1"))
  local out = p:read("a")
  p:close()
  os.remove(script)
  check("print_ir prints the pass headers", out:find("# after offload", 1, true) ~= nil, out)
  check("print_ir prints the offloaded loop", out:find("task_range_for", 1, true) ~= nil, out)
  check("print_ir kernel still runs", out:find("value\t7") ~= nil, out)
end

-- a kernel that has not run yet has no IR
local fresh = lt.kernel(function() end)
check("ir before compile errors", not pcall(fresh.ir, fresh))

if failures > 0 then error(failures .. " IR output checks failed") end
C.finish("ir_output")
print("ir_output: ok")
