-- check.lua -- the assertions shared by tests/lang scripts: each failed check
-- prints a FAIL line and the script goes on, so one run reports every
-- failure; finish(label) then raises an error if any check failed.
--   package.path = "lib/?.lua;" .. package.path
--   local T = require "check"
local T = { failures = 0 }

-- Records a failure described by msg.
function T.fail(msg)
  T.failures = T.failures + 1
  print("FAIL " .. msg)
end

-- Runs fn with io.write and io.stderr captured; returns stdout lines, stderr text.
function T.capture(fn)
  local out, err = {}, {}
  local real_write, real_stderr = io.write, io.stderr
  io.write = function(...) for _, s in ipairs { ... } do out[#out + 1] = s end end
  io.stderr = { write = function(_, ...) for _, s in ipairs { ... } do err[#err + 1] = s end end }
  local ok, e = pcall(fn)
  io.write, io.stderr = real_write, real_stderr
  if not ok then error(e, 0) end
  local lines = {}
  for line in table.concat(out):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  return lines, table.concat(err)
end

function T.check(what, got, want)
  if got ~= want then T.fail(("%s: got %s, want %s"):format(what, tostring(got), tostring(want))) end
end

-- fn must raise an error whose message contains text.
function T.check_error(what, fn, text)
  local ok, err = pcall(fn)
  if ok or not tostring(err):find(text, 1, true) then
    T.fail(("%s: expected an error containing %q, got %s"):format(what, text, tostring(err)))
  end
end

-- text must equal tests/lang/golden/NAME; with LT_BLESS=1 it is written there
-- instead (review the diff before committing it).
function T.golden(name, text)
  local dir = debug.getinfo(1, "S").source:match("^@(.*/)lib/") or "./"
  local path = dir .. "golden/" .. name
  if os.getenv("LT_BLESS") == "1" then
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    print("blessed " .. path)
    return
  end
  local f = io.open(path, "r")
  if not f then return T.fail("golden file " .. path .. " is missing (run with LT_BLESS=1 to create it)") end
  local want = f:read("a")
  f:close()
  if want ~= text then T.fail(path .. " differs\n--- got\n" .. text .. "--- want\n" .. want) end
end

function T.finish(label)
  if T.failures > 0 then error(("%d %s checks failed"):format(T.failures, label), 2) end
end

return T
