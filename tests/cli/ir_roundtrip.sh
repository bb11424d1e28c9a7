#!/bin/bash
# The printed IR parses back: k:ir() of a script with several SNode trees
# (lt.root trees whose ids interleave with a tree type's and fill the ids of
# a tree that was freed, every level kind,
# branches, a dynamic with its own chunk size) starts with the declarations
# of the trees the kernel names; with them, every part (the IR after each
# pass) goes through `lattice-opt --verify --fields` and prints back as the
# same kernel, and that output prints back identically (print -> parse ->
# print). Also the plain lattice-opt case of issue 11: a kernel that names a
# level of its program's second tree. Usage: ir_roundtrip.sh LATTICE
set -u
LATTICE=$1
OPT=$(dirname "$LATTICE")/lattice-opt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

cat > "$tmp/trees.lua" <<'LUA'
local lt = require "lattice"
local opt, dir = ...
lt.init {}
local keep1 = lt.field(lt.f32, 4, "keep1")          -- S0..S2 (a write materialises it)
keep1[0] = 1
do local drop = lt.field(lt.f32, 4); drop[0] = 1 end  -- S3..S5, freed below: later trees reuse them
local keep2 = lt.field(lt.f32, 4, "keep2")          -- S6..S8
keep2[0] = 2
collectgarbage()
collectgarbage()
local a = lt.field(lt.f32, 16, "a")                 -- an lt.root tree in S3..S5 and after S8
local Grid = lt.tree {                              -- a tree type: ids after a's
  fields = { rho = lt.f32, mass = lt.i32 },
  lt.pointer(lt.ij, 8) { lt.dense(lt.ij, 4) { "rho" }, lt.bitmasked(lt.ij, 4) { "mass" } },
}
local x, y, l = lt.field(lt.f32), lt.field(lt.i32), lt.field(lt.i32)
local blk = lt.root:pointer(lt.ij, 4)               -- the lt.root tree again: ids after Grid's
blk:dense(lt.ij, 4):place(x)
blk:bitmasked(lt.ij, 4):place(y)
lt.root:dense(lt.i, 4):dynamic(lt.j, 64, { chunk = 16 }):place(l)
local g = Grid:instantiate()
local k = lt.kernel(function(gg, v)
  for i, j in x do
    y[i][j] = y[i][j] + 1
    gg.rho[i][j] = v + a[i % 16] + keep1[i % 4] + keep2[j % 4]
  end
  for i in lt.ndrange(4) do
    lt.append(l, i, i)
    gg.mass[i][i] = lt.length(l, i)
  end
  lt.deactivate(blk, 1, 1)
end, { gg = Grid, v = lt.f32 })
x[1][2] = 3
k(g, 1.5)
local b = lt.field(lt.f64, { 4, 4 }, "b")           -- a second lt.root tree (the first is in use)
local only = lt.kernel(function(gg)                 -- names levels of the tree type only
  for i, j in gg.mass do b[i % 4][j % 4] = gg.mass[i][j] end
end, { gg = Grid })
only(g)

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end
local function run(file, out)
  local ok = os.execute(string.format("%q --verify --fields %q > %q 2>&1", opt, file, out))
  return ok, read(out)
end
local failures, parts = 0, 0
for name, kern in pairs { k = k, only = only } do
  local text = kern:ir { all = true }
  local decl = text:match("^# fields\n(.-)\n# after ")
  if not decl then
    print("FAIL " .. name .. ": k:ir() does not start with the field declarations:\n" .. text)
    failures = failures + 1
  else
    for pass, body in text:gmatch("# after (%w+)\n(.-\n)\n") do
      parts = parts + 1
      local base = string.format("%s/%s_%d", dir, name, parts)
      local f = assert(io.open(base .. ".ir", "w"))
      f:write(decl, body)
      f:close()
      local ok1, out1 = run(base .. ".ir", base .. ".out1")
      local ok2, out2 = run(base .. ".out1", base .. ".out2")
      -- the kernel prints back as it was; the declarations print back identically
      if not (ok1 and ok2 and out1:sub(-#body) == body and out1 == out2) then
        print(string.format("FAIL %s after %s:\n-- input\n%s%s-- lattice-opt\n%s-- again\n%s", name, pass,
          decl, body, out1, out2))
        failures = failures + 1
      end
    end
  end
end
print(string.format("%d parts round-tripped, %d failed", parts, failures))
os.exit(failures == 0 and parts >= 20 and 0 or 1)
LUA
if "$LATTICE" "$tmp/trees.lua" "$OPT" "$tmp"; then echo "ok   k:ir() of a script with several trees"; else
  echo "FAIL k:ir() of a script with several trees"; fails=$((fails + 1)); fi

# a kernel naming a level (S4) and a field of the program's second tree only
cat > "$tmp/two.ir" <<'IR'
field a <f32> dense [i:4]
field b <i32> pointer [i:8] dense [i:4]
kernel k() {
  <i32> $0 = const 1
  $1 = snode_activate S4pointer [$0]
  <i32*> $2 = global_ptr b [$0]
}
IR
"$OPT" --fields "$tmp/two.ir" > "$tmp/two1" 2>&1 && "$OPT" --fields "$tmp/two1" > "$tmp/two2" 2>&1
if [ $? -eq 0 ] && cmp -s "$tmp/two1" "$tmp/two2" && grep -q 'snode_activate S4pointer' "$tmp/two2"; then
  echo "ok   a level of the second tree"
else
  echo "FAIL a level of the second tree:"; cat "$tmp/two1" "$tmp/two2"; fails=$((fails + 1))
fi

[ "$fails" -eq 0 ]
