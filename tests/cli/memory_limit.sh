#!/bin/bash
# The CPU pool against the machine's memory: a pool larger than RAM + swap
# is allowed (address space, touched only as used) with one warning; a tree
# whose dense part would not fit in the memory left is a Lua error at the
# user's line when it materialises, before anything touches it. The memory is
# LT_MEMORY_LIMIT here (64 MiB), so nothing fills the machine. Also: a pool
# that cannot be reserved says its size and where that came from.
# Usage: memory_limit.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
has() {  # has NAME TEXT FILE
  if grep -qF -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: no [$2] in:"; cat "$3"; fails=$((fails + 1)); fi
}
MiB=$((1 << 20))

cat > "$tmp/dense.lua" <<'LUA'
local lt = require "lattice"
lt.init { device_memory = 64 << 30 }    -- 64 GiB of address space: a warning
lt.init { device_memory = 64 << 30 }    -- the warning is not repeated
local small = lt.field(lt.f32, 4 << 20)                    -- 16 MiB: fits
lt.kernel(function() for i in small do small[i] = i % 7 end end)()
local sum, want = 0, 0
for i = 0, (4 << 20) - 1, 4099 do sum = sum + small[i]; want = want + i % 7 end
print("small", sum == want)
local big = lt.field(lt.f32, 32 << 20)                     -- 128 MiB: does not fit
local ok, err = pcall(function() return big[0] end)
print("big", ok, err)
-- a huge sparse tree: memory only for the active cells
local s = lt.field(lt.f32)
lt.root:pointer(lt.i, 1 << 20):dense(lt.i, 1 << 10):place(s)   -- 4 GiB if all were active
lt.kernel(function() for i in lt.ndrange(200) do s[i * 100003] = i end end)()
local n = 0
for i = 0, 199 do if s[i * 100003] == i then n = n + 1 end end
print("sparse", n)
-- a tree type: its instances are checked when made
local Grid = lt.tree { fields = { rho = lt.f64 }, lt.dense(lt.ij, 4096) { "rho" } }   -- 128 MiB
local ok2, err2 = pcall(Grid.instantiate, Grid)
print("instance", ok2, err2)
local Small = lt.tree { fields = { rho = lt.f64 }, lt.dense(lt.ij, 256) { "rho" } }
local g = Small:instantiate()
g.rho[3][4] = 2.5
print("small instance", g.rho[3][4])
LUA
LT_MEMORY_LIMIT=$((64 * MiB)) "$LATTICE" "$tmp/dense.lua" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "exit status" "0" "$rc"
has "a dense field that fits works" "small	true" "$tmp/out"
has "the error at the user's line" "big	false	$tmp/dense.lua:10: cannot lay out the SNode tree: not enough memory: the tree" "$tmp/out"
has "names the field" "(fields big)" "$tmp/out"
has "the bytes" "takes 134217728 bytes (128.00 MiB)" "$tmp/out"
has "the memory found and the setting" "this machine has 64.00 MiB (LT_MEMORY_LIMIT)" "$tmp/out"
has "what to do" "put their data under a pointer or dynamic level" "$tmp/out"
has "a large sparse tree works" "sparse	200" "$tmp/out"
has "a tree type's instance" "instance	false	$tmp/dense.lua:21: instantiate: not enough memory: the tree" "$tmp/out"
has "names its fields" "(fields rho)" "$tmp/out"
has "a smaller instance works" "small instance	2.5" "$tmp/out"
check "one warning" "1" "$(grep -c 'warning' "$tmp/err")"
has "the warning: pool size and setting" "the memory pool of 68719476736 bytes (64.00 GiB; lt.init{device_memory = 68719476736}) is larger than the 64.00 MiB of memory found (LT_MEMORY_LIMIT)" "$tmp/err"

# a pool within the memory: no warning
printf 'local lt = require "lattice"\nlt.init { device_memory = 32 << 20 }\nprint(lt.stats().pool_bytes)\n' > "$tmp/fits.lua"
check "no warning when the pool fits" "$((32 * MiB))" "$(LT_MEMORY_LIMIT=$((64 * MiB)) "$LATTICE" "$tmp/fits.lua" 2>&1)"
# a bad LT_MEMORY_LIMIT
LT_MEMORY_LIMIT=64M "$LATTICE" "$tmp/fits.lua" > "$tmp/out" 2>&1
has "a bad LT_MEMORY_LIMIT" "LT_MEMORY_LIMIT must be a whole number of bytes > 0, got '64M'" "$tmp/out"

# the default pool cannot be reserved (address space limited): its size and where it came from
printf 'local lt = require "lattice"\nlt.init {}\n' > "$tmp/default.lua"
(ulimit -v 3000000; "$LATTICE" "$tmp/default.lua") > "$tmp/out" 2>&1
if grep -q Sanitizer "$tmp/out"; then   # the sanitizers' shadow memory needs more address space
  echo "skip default pool refused (sanitizer build)"
else
  has "default pool refused: size and origin" "cannot reserve the memory pool of 4294967296 bytes (the default size; set lt.init{device_memory = ...} to change it)" "$tmp/out"
fi

finish
