-- lt.init checks every option: its type, range and that a number is finite,
-- with a message that names the option and the value given, at the caller's
-- line; unknown names are errors (with a guess at the one meant); a pool that
-- cannot be reserved says the size asked for and where it came from.
local lt = require "lattice"
package.path = "lib/?.lua;" .. package.path
local C = require "check"

local function bad(opts, text, what)
  C.check_error(what or text, function() lt.init(opts) end, text)
end

local nan, inf = 0 / 0, math.huge
-- device_memory_fraction: a share of the device's memory, more than 0, at most 1
for _, v in ipairs { nan, inf, -inf, 0, -0.5, 1.5 } do
  bad({ device_memory_fraction = v }, "device_memory_fraction must be between 0 and 1", "fraction " .. tostring(v))
end
bad({ device_memory_fraction = "0.5" }, 'device_memory_fraction must be between 0 and 1 (a share of the '
  .. "device's memory, more than 0), got \"0.5\"")
bad({ device_memory_fraction = 1e-300 }, "lt.init{device_memory_fraction = 1e-300} of ")
bad({ device_memory_fraction = 1e-300 }, "is less than one byte")
-- device_memory: whole bytes > 0 (2^30, a float, is a whole number)
for _, v in ipairs { 0, -1, 1.5, nan, inf, "1G", true } do
  bad({ device_memory = v }, "device_memory must be a whole number of bytes > 0", "device_memory " .. tostring(v))
end
bad({ device_memory = nan }, "got " .. tostring(nan))
bad({ device_memory = 64 << 20, device_memory_fraction = 0.5 }, "give device_memory or device_memory_fraction, not both")
-- threads, seed, print_buffer
for _, v in ipairs { -1, 1025, 1.5, 1 << 40, nan, "4" } do
  bad({ threads = v }, "threads must be an integer from 0 (one per core) to 1024", "threads " .. tostring(v))
end
bad({ seed = 1.5 }, "seed must be an integer, got 1.5")
bad({ print_buffer = -1 }, "print_buffer must be a whole number of bytes (0 = 1 MiB), got -1")
-- booleans, types, arch
for _, k in ipairs { "debug", "fma" } do bad({ [k] = 1 }, k .. " must be a boolean, got 1") end
bad({ print_ir = 1 }, "print_ir must be true, \"all\" or a pass name, got 1")
bad({ print_ir = "offlaod" }, "lt.init: print_ir: unknown pass 'offlaod' (the passes: trace, typecheck,")
bad({ default_ip = lt.f32 }, "default_ip must be an integer type such as lt.i32")
bad({ default_ip = "i32" }, "default_ip must be an integer type such as lt.i32")
bad({ default_fp = lt.i32 }, "default_fp must be lt.f32 or lt.f64")
bad({ arch = "gpu" }, "unknown arch 'gpu' (use \"cpu\", \"cuda\" or \"auto\")")
bad({ arch = 1 }, "arch must be \"cpu\", \"cuda\" or \"auto\", got 1")
bad(5, "lt.init: expects a table of options")
bad({ ad_stack_size = 0 }, "ad_stack_size must be an integer from 1 to 16777216, got 0")
-- unknown names, with the option most likely meant
bad({ device_mem = 1 }, "unknown option 'device_mem'; did you mean 'device_memory'?")
bad({ thread = 2 }, "unknown option 'thread'; did you mean 'threads'?")
bad({ Debug = true }, "unknown option 'Debug'; did you mean 'debug'?")
bad({ colour = 1 }, "unknown option 'colour' (options: ad_stack_size, arch, cache, debug, default_fp")
C.check_error("unknown option: no guess when none is near", function() lt.init { colour = 1 } end, "unknown option 'colour' (")
-- the caller's line
local line, ok, err = debug.getinfo(1, "l").currentline, pcall(lt.init, { threads = -1 })
C.check("names the caller's line: " .. tostring(err),
  tostring(err):find("init_options.lua:" .. line .. ": lt.init: ", 1, true) ~= nil, true)

-- a pool that cannot be reserved: the size asked for and where it came from
bad({ device_memory = 1 << 62 }, "cannot reserve the memory pool of 4611686018427387904 bytes "
  .. "(lt.init{device_memory = 4611686018427387904})")

-- good values work: a float that is a whole number, the limits of threads
lt.init { device_memory = 2 ^ 26, threads = 1, seed = 7.0 }
C.check("pool from a whole float", lt.stats().pool_bytes, 1 << 26)
local x = lt.field(lt.i32, 8)
lt.kernel(function() for i in x do x[i] = i * 3 end end)()
for i = 0, 7 do C.check("runs after checked options " .. i, x[i], i * 3) end
lt.init { device_memory_fraction = 0.01, threads = 0 }
C.check("init again after the errors", lt.stats().pool_bytes > 0, true)
C.finish("init_options")
print("init_options: ok")
