#!/bin/bash
# The offline kernel cache (docs/cache.md): a second run takes every kernel's
# code from the cache and computes the same; a change of anything that decides
# the code (IR, tree layout, debug, fma, fast_math) misses; truncated, corrupted and
# foreign entries are compiled again and rewritten, never used; the size limit
# evicts the least recently used entries; writers in several processes at once
# leave a cache every later run can use; lt.init{cache = false | "dir"} and
# LT_CACHE=off decide where it is, and an unusable directory is no error; on
# CUDA (the mock driver) the PTX is cached the same way.
# Usage: cache.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
LATTICE=$(cd "$(dirname "$LATTICE")" && pwd)/$(basename "$LATTICE")   # the tests below change directory
C=$tmp/cache

# sim.lua [N] [debug] [fma|fast]: two kernels over a field of N; prints the
# cache counters and a checksum of the results
cat > "$tmp/sim.lua" <<'LUA'
local lt = require "lattice"
local n, debug, fma, fast = tonumber(arg[1] or "64"), arg[2] == "debug", arg[3] == "fma", arg[3] == "fast"
lt.init { debug = debug, fma = fma or nil, fast_math = fast }
local x = lt.field(lt.f32, { n })
local fill = lt.kernel(function(s) for i in lt.ndrange(n) do x[i] = i * s + 0.5 end end, { s = lt.f32 })
local total = lt.kernel(function() local t = 0.0; for i in lt.ndrange(n) do t = t + x[i] * x[i] end; return t end)
fill(0.25)
local t = total()
local s = lt.stats()
print(("hits %d misses %d sum %.6g"):format(s.cache_hits, s.cache_misses, t))
LUA
run() { LT_CACHE=$C "$LATTICE" "$tmp/sim.lua" "$@" 2>&1; }
entries() { find "$C" -name '*.ltk' | wc -l | tr -d ' '; }

first=$(run)
check "cold: both compiled" "hits 0 misses 2" "${first% sum*}"
check "cold: two entries" "2" "$(entries)"
second=$(run)
check "warm: both from the cache, same result" "hits 2 misses 0 sum ${first##* sum }" "$second"

# a change of anything that decides the code is a miss
check "another field size misses" "hits 0 misses 2" "$(run 65 | sed 's/ sum.*//')"
check "debug misses" "hits 0 misses 2" "$(run 64 debug | sed 's/ sum.*//')"
check "fma misses" "hits 0 misses 2" "$(run 64 nodebug fma | sed 's/ sum.*//')"
check "fast_math misses" "hits 0 misses 2" "$(run 64 nodebug fast | sed 's/ sum.*//')"
check "fast_math again: hits" "hits 2 misses 0" "$(run 64 nodebug fast | sed 's/ sum.*//')"
check "the first again: hits" "hits 2 misses 0" "$(run | sed 's/ sum.*//')"

# damaged entries are compiled again, and rewritten whole
victim=$(ls -t "$C"/*.ltk | head -1)
size=$(stat -c %s "$victim")
truncate -s $((size / 2)) "$victim"
out=$(run)
check "truncated entry: recompiled, same result" "hits 1 misses 1 sum ${first##* sum }" "$out"
printf '\x55' | dd of="$victim" bs=1 seek=$((size / 3)) conv=notrunc status=none
check "corrupted byte: recompiled" "hits 1 misses 1" "$(run | sed 's/ sum.*//')"
printf 'not a cache entry' > "$victim"
check "foreign file: recompiled" "hits 1 misses 1" "$(run | sed 's/ sum.*//')"
check "rewritten entries hit" "hits 2 misses 0" "$(run | sed 's/ sum.*//')"

# a damaged payload behind a right checksum (edit.lua rewrites the entry and
# its checksum): object counts and sizes out of range, an object that is no
# ELF file, one the JIT cannot link; each a miss, the kernel compiled again,
# the same result, the entry rewritten whole
cat > "$tmp/edit.lua" <<'LUA'
-- edit.lua FILE HOW: the CPU payload (u32 ntasks, u32 needs_runtime, u32
-- nobjects, then per object u64 size and its bytes) edited, the checksum
-- (FNV-1a 64 of every byte before it) made right
local path, how = arg[1], arg[2]
local f = assert(io.open(path, "rb"))
local d = f:read("a")
f:close()
local K, P = string.unpack("<I8I8", d, 17)
local key, pay = d:sub(1, 32 + K), d:sub(33 + K, 32 + K + P)
local nt, rt, nobj = string.unpack("<I4I4I4", pay)
local size = string.unpack("<I8", pay, 13)
local obj = pay:sub(21, 20 + size)
local rest = pay:sub(21 + size)
if how == "none" then pay = string.pack("<I4I4I4", nt, rt, 0)
elseif how == "many" then pay = string.pack("<I4I4I4", nt, rt, 4000) .. pay:sub(13)
elseif how == "long" then pay = string.pack("<I4I4I4I8", nt, rt, nobj, size + 1) .. obj .. rest
elseif how == "huge" then pay = string.pack("<I4I4I4I8", nt, rt, nobj, 1 << 40) .. obj .. rest
elseif how == "tasks" then pay = string.pack("<I4", nt + 1) .. pay:sub(5)
elseif how == "notelf" then pay = pay:sub(1, 20) .. "\0ELF" .. obj:sub(5) .. rest
elseif how == "junk" then   -- an ELF header and nothing an object needs
  local junk = "\127ELF" .. string.rep("\0", 60)
  pay = string.pack("<I4I4I4I8", nt, rt, nobj, #junk) .. junk .. rest
end
local body = key:sub(1, 24) .. string.pack("<I8", #pay) .. key:sub(33) .. pay
local h = 0xcbf29ce484222325
for i = 1, #body do h = (h ~ body:byte(i)) * 0x100000001b3 end
f = assert(io.open(path, "wb"))
f:write(body, string.pack("<i8", h))
f:close()
LUA
victim=$(ls -t "$C"/*.ltk | head -1)
"$LATTICE" "$tmp/edit.lua" "$victim" same
check "payload rewritten as it was: still a hit (edit.lua's checksum is right)" "hits 2 misses 0" \
  "$(run | sed 's/ sum.*//')"
for how in none many long huge tasks notelf junk; do
  victim=$(ls -t "$C"/*.ltk | head -1)
  "$LATTICE" "$tmp/edit.lua" "$victim" "$how"
  check "payload $how: recompiled, same result" "hits 1 misses 1 sum ${first##* sum }" "$(run)"
  check "payload $how: rewritten" "hits 2 misses 0" "$(run | sed 's/ sum.*//')"
done

# eviction: a limit smaller than the entries keeps the newest
rm -rf "$C"
LT_CACHE=$C "$LATTICE" "$tmp/sim.lua" 10 > /dev/null 2>&1
one=$(du -cb "$C"/*.ltk | tail -1 | cut -f1)
sleep 1
LT_CACHE=$C LT_CACHE_MAX=$((one + one / 2)) "$LATTICE" "$tmp/sim.lua" 11 > /dev/null 2>&1
total=$(du -cb "$C"/*.ltk | tail -1 | cut -f1)
check "eviction keeps the cache under its limit" "yes" "$([ "$total" -le $((one + one / 2)) ] && echo yes || echo "no: $total")"
check "eviction keeps the newest entries" "hits 2 misses 0" \
  "$(LT_CACHE=$C LT_CACHE_MAX=$((one + one / 2)) "$LATTICE" "$tmp/sim.lua" 11 2>&1 | sed 's/ sum.*//')"

# several processes filling an empty cache at once
rm -rf "$C"
for k in 1 2 3 4; do (run 100 > "$tmp/par$k" 2>&1) & done
wait
ok=yes
for k in 1 2 3 4; do grep -q "sum" "$tmp/par$k" || ok="no: $(cat "$tmp/par$k")"; done
check "concurrent writers all run" "yes" "$ok"
check "after concurrent writers: hits" "hits 2 misses 0" "$(run 100 | sed 's/ sum.*//')"
check "no temporary files left" "0" "$(find "$C" -name '.tmp-*' | wc -l | tr -d ' ')"

# where the cache is: off, a directory of lt.init's, an unusable one
rm -rf "$C"
LT_CACHE=off "$LATTICE" "$tmp/sim.lua" > /dev/null 2>&1
check "LT_CACHE=off writes nothing" "no" "$([ -e "$C" ] && echo yes || echo no)"
cat > "$tmp/opt.lua" <<LUA
local lt = require "lattice"
local cache = arg[1]
if cache == "false" then cache = false end
lt.init { cache = cache }
local x = lt.field(lt.i32, { 8 })
lt.kernel(function() for i in lt.ndrange(8) do x[i] = i end end)()
print(lt.stats().cache_misses, x[7])
LUA
check "cache = false" "1	7" "$(cd "$tmp" && LT_CACHE=$C "$LATTICE" "$tmp/opt.lua" false 2>&1)"
check "cache = false wrote nothing" "no" "$([ -e "$C" ] || [ -e "$tmp/false" ] && echo yes || echo no)"
LT_CACHE=$C "$LATTICE" "$tmp/opt.lua" "$tmp/other" > /dev/null 2>&1
check "cache = dir" "1" "$(find "$tmp/other" -name '*.ltk' | wc -l | tr -d ' ')"
check "an unusable directory is no error" "1	7" "$(LT_CACHE=/proc/version/lattice "$LATTICE" "$tmp/opt.lua" /proc/version/x 2>&1)"
check "bad option" "yes" \
  "$("$LATTICE" -e 'require("lattice").init{cache = 1}' 2>&1 | grep -q "cache" && echo yes || echo no)"

# CUDA through the mock driver: the PTX is cached
MOCKGPU=${LT_BUILD_DIR:-/nonexistent}/lattice-mockgpu
DRIVER=${LT_BUILD_DIR:-/nonexistent}/tests/cuda/libltmockcuda.so
if [ -x "$MOCKGPU" ] && [ -f "$DRIVER" ]; then
  rm -rf "$C"
  runm() { LT_CACHE=$C LT_ARCH=cuda LT_CUDA_DRIVER=$DRIVER "$MOCKGPU" "$tmp/sim.lua" "$@" 2>&1; }
  cold=$(runm)
  check "CUDA (mock): cold" "hits 0 misses 2 sum ${first##* sum }" "$cold"
  check "CUDA (mock): warm, same result" "hits 2 misses 0 sum ${first##* sum }" "$(runm)"
  check "CUDA (mock): the key names the SM" "yes" "$(grep -qa '^cuda sm_' "$C"/*.ltk && echo yes || echo no)"
  check "CUDA (mock): debug misses" "hits 0 misses 2" "$(runm 64 debug | sed 's/ sum.*//')"
else
  echo "skip CUDA (mock): no lattice-mockgpu or mock driver in LT_BUILD_DIR"
fi

# the same kernel twice in one process (one key, two copies linked)
cat > "$tmp/twice.lua" <<'LUA'
local lt = require "lattice"
lt.init {}
local x = lt.field(lt.i32, { 8 })
local function make() return lt.kernel(function() for i in lt.ndrange(8) do x[i] = x[i] + 1 end end) end
local a, b = make(), make()
a(); b(); a()
print(x[0], x[7])
LUA
check "identical kernels, cold" "3	3" "$(LT_CACHE=$C "$LATTICE" "$tmp/twice.lua" 2>&1)"
check "identical kernels, warm" "3	3" "$(LT_CACHE=$C "$LATTICE" "$tmp/twice.lua" 2>&1)"
finish
