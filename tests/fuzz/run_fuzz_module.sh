#!/bin/bash
# run_fuzz_module.sh FUZZ_MODULE LATTICE WORKDIR -- the ctest entry fuzz/module
# (docs/fuzzing.md):
#   1. seeds: real modules that LATTICE saves with lt.aot.module (a dense
#      tree; pointer over dense with a vec2 field; a dynamic level; kernels
#      with scalar, vector, ndarray and tree parameters), and copies with the
#      machine code cut to a 64-byte ELF header, with CUDA sections of
#      stand-in PTX, or both -- the reader only checks the code's header, and
#      mutations of 20 KB of linker output reach nothing else, so the small
#      copies are where the fuzzing pays; no CUDA toolchain is needed;
#   2. every input in tests/fuzz/regressions/module/ runs once;
#   3. a deterministic run: -seed=1, LT_FUZZ_RUNS inputs (default 40000,
#      about 35 s on two cores), with the IR's tokens (tests/fuzz/ir.dict)
#      for the kernels' IR text.
# Fails on any finding; libFuzzer then names the input it saved in WORKDIR.
set -u
FUZZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
LATTICE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
WORK=$3
RUNS=${LT_FUZZ_RUNS:-40000}
SRC=$(cd "$(dirname "$0")/../.." && pwd)

rm -rf "$WORK"
mkdir -p "$WORK/seeds" "$WORK/corpus"
cat > "$WORK/seed.lua" <<'LUA'
local lt = require "lattice"
local dir = arg[1]
lt.init {}

-- The module at path again as path with .NAME.ltm for .ltm: its CPU code a
-- bare 64-byte ELF header (cpu true) or none, and a CUDA section of stand-in
-- PTX for each SM of sms (the reader does not look inside the PTX); the
-- header's length and the checksum redone.
local function variant(path, name, cpu, sms)
  local f = assert(io.open(path, "rb"))
  local b = f:read("a")
  f:close()
  local nsec = string.unpack("<I4", b, 13)
  local out, at, nk = { b:sub(1, 32) }, 33, 0
  local function section(tag, flags, body) out[#out + 1] = string.pack("<I4I4I8", tag, flags, #body) .. body end
  for _ = 1, nsec do
    local tag, flags, len = string.unpack("<I4I4I8", b, at)
    local body = b:sub(at + 16, at + 15 + len)
    at = at + 16 + len
    if tag == 3 then nk = nk + 1 end
    if tag == 4 then   -- CPU_CODE: the format string, then u64 length and the object
      if cpu then
        local elf = "\127ELF\2\1\1" .. string.rep("\0", 57)
        section(tag, flags, body:sub(1, 4 + string.unpack("<I4", body)) .. string.pack("<I8", #elf) .. elf)
      end
    else
      section(tag, flags, body)
    end
  end
  for _, sm in ipairs(sms or {}) do   -- CUDA: the SM, the kernel count, each kernel's PTX
    local t = { string.pack("<s4I4", sm, nk) }
    for k = 1, nk do t[#t + 1] = string.pack("<s4", ".version 7.0\n.target " .. sm .. "\n// kernel " .. k .. "\n") end
    section(5, 1, table.concat(t))
  end
  local s = table.concat(out)
  s = s:sub(1, 12) .. string.pack("<I4I8", #out - 1, #s + 8) .. s:sub(25)
  local h = 0xcbf29ce484222325   -- jit_hash: FNV-1a 64 (Lua integers wrap like uint64_t)
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  f = assert(io.open((path:gsub("%.ltm$", "." .. name .. ".ltm")), "wb"))
  f:write(s, string.pack("<i8", h))
  f:close()
end

local function save(m, name, ...)
  m:save(dir .. "/" .. name .. ".ltm")
  variant(dir .. "/" .. name .. ".ltm", ...)
end

-- a dense tree; kernels with scalar and ndarray parameters
local D = lt.tree { fields = { a = lt.f32, n = lt.i32 }, lt.dense(lt.i, 16) { "a", "n" } }
local fill = lt.kernel(function(t, s) for i in lt.ndrange(16) do t.a[i] = s * i; t.n[i] = i end end,
  { t = D, s = lt.f32 })
local gather = lt.kernel(function(t, v) for i in lt.ndrange(16) do v[i] = t.a[i] end end,
  { t = D, v = lt.ndarray_type(lt.f32, 1) })
local m = lt.aot.module { arch = "cpu" }
m:add_tree_type("dense", D)
m:add_kernel("fill", fill)
m:add_kernel("gather", gather)
save(m, "dense", "small", true)

-- pointer over dense with a vec2 field; a vector parameter; a reduction
local P = lt.tree { fields = { u = lt.f32, w = lt.vec2 }, lt.pointer(lt.ij, 4) { lt.dense(lt.ij, 4) { "u", "w" } } }
local set = lt.kernel(function(g, d)
  for i, j in lt.ndrange(16, 16) do if i == j then g.u[i][j] = 1.0; g.w[i][j] = d end end
end, { g = P, d = lt.vec2 })
local sum = lt.kernel(function(g)
  local s = 0.0
  for i, j in g.u do s = s + g.u[i][j] + g.w[i][j][1] end
  return s
end, { g = P })
m = lt.aot.module { arch = "cpu" }
m:add_tree_type("grid", P)
m:add_kernel("set", set)
m:add_kernel("sum", sum)
save(m, "pointer", "small", true)
variant(dir .. "/pointer.ltm", "cuda", false, { "sm_70" })

-- a dynamic level under a dense one, beside the dense tree: two tree types
local L = lt.tree { fields = { x = lt.i64 }, lt.dense(lt.i, 4) { lt.dynamic(lt.j, 32, { chunk = 8 }) { "x" } } }
local push = lt.kernel(function(l, k) for i in lt.ndrange(4) do lt.append(l.x, i, k * i) end end,
  { l = L, k = lt.i64 })
m = lt.aot.module { arch = "cpu" }
m:add_tree_type("lists", L)
m:add_tree_type("dense", D)
m:add_kernel("push", push)
m:add_kernel("fill", fill)
save(m, "dynamic", "small", true, { "sm_70", "sm_80" })
LUA
# run from WORK: the kernels' IR names their source file, so the seeds are
# the same bytes whichever the build folder
(cd "$WORK" && "$LATTICE" seed.lua seeds) || { echo "could not write the seed modules"; exit 1; }
seeds=("$WORK"/seeds/*.ltm)
[ "${#seeds[@]}" -eq 7 ] || { echo "expected 7 seed modules, got ${#seeds[@]}"; exit 1; }
# every seed must pass the reader and the check, or the fuzzing starts from refusals
for s in "${seeds[@]}"; do
  if ! LT_FUZZ_VERBOSE=1 "$FUZZ" "$s" 2>&1 | grep -q "kernels check$"; then
    LT_FUZZ_VERBOSE=1 "$FUZZ" "$s" 2>&1 | grep '^fuzz_module'
    echo "FAIL: the seed $(basename "$s") does not pass the reader (above)"
    exit 1
  fi
done
echo "== ${#seeds[@]} seed modules: $(cd "$WORK/seeds" && wc -c *.ltm | head -n -1 | awk '{printf "%s (%s) ", $2, $1}')"

dirs=("$WORK/corpus" "$WORK/seeds")
regressions=("$SRC"/tests/fuzz/regressions/module/*)
if [ -e "${regressions[0]}" ]; then
  echo "== ${#regressions[@]} regression inputs"
  if ! "$FUZZ" -artifact_prefix="$WORK/" "${regressions[@]}" > "$WORK/regressions.log" 2>&1; then
    grep -v '^Running:\|^Executed' "$WORK/regressions.log" | tail -60
    echo "FAIL: a regression input fails again (above)"
    exit 1
  fi
  dirs+=("$SRC/tests/fuzz/regressions/module")
fi

echo "== fuzzing: -seed=1 -runs=$RUNS"
"$FUZZ" -seed=1 -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -max_len=32768 -print_final_stats=1 \
  -dict="$SRC/tests/fuzz/ir.dict" -artifact_prefix="$WORK/" "${dirs[@]}" > "$WORK/fuzz.log" 2>&1
rc=$?
grep -E '^(INFO: (Loaded|seed)|#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$WORK/fuzz.log"
if [ "$rc" -ne 0 ]; then
  tail -60 "$WORK/fuzz.log"
  echo "FAIL: a finding (the input is saved in $WORK; copy it to tests/fuzz/regressions/module/ with the fix)"
  exit 1
fi
echo "no finding"
