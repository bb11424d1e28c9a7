-- k:ir{all = true}: the IR after every pass, headed by the pass names; k:ir()
-- the final IR alone, compared with a golden file (LT_BLESS=1 rewrites it);
-- k:ir{pass = NAME} after one pass; lt.init{print_ir = ...} the same views.
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

local text = saxpy:ir { all = true }
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

-- k:ir() is the declarations and the last section, exactly as in the whole text
local default = saxpy:ir()
local decl = text:match("^(# fields\n.-\n)# after ")
check("k:ir() starts with the fields", decl ~= nil and default:sub(1, #decl) == decl, default)
check("k:ir() is the final IR only", default == decl .. "# after " .. sections[#sections].name .. "\n"
  .. sections[#sections].body .. "\n\n", default)
check("k:ir{} is k:ir()", saxpy:ir {} == default)
-- one pass: its section(s) only
local off = saxpy:ir { pass = "offload" }
check("pass = offload", off == decl .. "# after offload\n" .. after_offload .. "\n\n", off)
local traced = saxpy:ir { pass = "trace" }
check("pass = trace", traced == decl .. "# after trace\n" .. sections[1].body .. "\n\n", traced)
local _, m2r = saxpy:ir({ pass = "mem2reg" }):gsub("# after mem2reg\n", "")
local _, m2r_all = text:gsub("# after mem2reg\n", "")
check("pass = mem2reg: every time it ran", m2r == m2r_all and m2r >= 2, m2r .. " of " .. m2r_all)
-- wrong views are errors that list the names
C.check_error("unknown pass", function() saxpy:ir { pass = "ofload" } end,
  "k:ir: unknown pass 'ofload' (the passes: trace, typecheck, constfold, cse, dce, offload,")
C.check_error("a pass that did not run", function() saxpy:ir { pass = "autodiff" } end,
  "kernel saxpy: pass 'autodiff' did not run for this kernel (its passes: trace, typecheck,")
C.check_error("all and pass", function() saxpy:ir { all = true, pass = "cse" } end, "not both")
C.check_error("unknown option", function() saxpy:ir { final = true } end,
  "k:ir: unknown option 'final' (the options: all, pass, grad, fwd)")
C.check_error("not a table", function() saxpy:ir "offload" end, "k:ir: the options are a table")
C.check_error("no adjoint", function() saxpy:ir { grad = true } end,
  "kernel saxpy has no adjoint compiled yet; call k:grad(...) first")

-- print_ir prints the same views while compiling (checked in a child process
-- when the build directory is known, as under ctest)
local build = os.getenv("LT_BUILD_DIR")
local function child(print_ir)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(([[
local lt = require "lattice"
lt.init { print_ir = %s }
local v = lt.field(lt.i32, 8)
local k = lt.kernel(function() for i = 0, 7 do v[i] = i end end)
k()
print("value", v[7])
]]):format(print_ir))
  f:close()
  -- the interpreter running this test (lua5.4's arg: its lowest index), e.g. lattice-mockgpu
  local lowest = -1
  while arg and arg[lowest - 1] do lowest = lowest - 1 end
  local exe = arg and arg[lowest] or build .. "/lattice"
  local p = assert(io.popen("LT_CACHE=off " .. exe .. " " .. script .. " 2>&1"))
  local out = p:read("a")
  p:close()
  os.remove(script)
  local _, n = out:gsub("# after ", "")
  return out, n
end
if build then
  local out, n = child("true")
  check("print_ir = true: one section, the final IR", n == 1 and out:find("# after dce\n", 1, true) ~= nil, out)
  check("print_ir = true: the offloaded loop", out:find("task_range_for", 1, true) ~= nil, out)
  check("print_ir = true: the declarations", out:find("# fields\n", 1, true) ~= nil, out)
  check("print_ir kernel still runs", out:find("value\t7") ~= nil, out)
  out, n = child('"all"')
  check("print_ir = \"all\": every pass", n > 10 and out:find("# after trace\n", 1, true) ~= nil
    and out:find("# after offload\n", 1, true) ~= nil, out)
  out, n = child('"offload"')
  check("print_ir = \"offload\": that pass", n == 1 and out:find("# after offload\n", 1, true) ~= nil, out)
  check("print_ir = \"offload\": kernel runs", out:find("value\t7") ~= nil, out)
end

-- a kernel that has not run yet has no IR
local fresh = lt.kernel(function() end)
check("ir before compile errors", not pcall(fresh.ir, fresh))

if failures > 0 then error(failures .. " IR output checks failed") end
C.finish("ir_output")
print("ir_output: ok")
