#!/bin/bash
# LT_CHECK_PTX: every kernel compiled is also emitted as PTX and handed to the
# ptxas the variable names; a ptxas that refuses it makes the kernel's first
# call a Lua error naming the kernel and quoting ptxas. Stand-in ptxas
# scripts make this testable without the CUDA toolkit. Usage: ptx_check.sh LATTICE
set -u
LATTICE=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # check NAME EXPECTED-SUBSTRING ACTUAL
  case "$3" in
    *"$2"*) echo "ok   $1" ;;
    *) echo "FAIL $1: expected [$2] in [$3]"; fails=$((fails + 1)) ;;
  esac
}

cat > "$tmp/k.lua" <<'LUA'
local lt = require "lattice"
local x = lt.field(lt.f32, {8})
local fill = lt.kernel(function() for i in lt.ndrange(8) do x[i] = i * 0.5 end end)
local ok, err = pcall(fill)
print(ok and ("ok " .. x[3]) or ("error: " .. tostring(err)))
LUA
# a ptxas that accepts anything, and records the PTX it was given
cat > "$tmp/yes" <<SH
#!/bin/bash
for a in "\$@"; do case "\$a" in */lattice_ptx_*) cp "\$a" "$tmp/seen.ptx" ;; esac; done
exit 0
SH
cat > "$tmp/no" <<'SH'
#!/bin/bash
echo "ptxas fatal   : something about the PTX it was given"
exit 1
SH
chmod +x "$tmp/yes" "$tmp/no"
export TMPDIR=$tmp   # where the PTX files go (a refused one is kept there)
check "accepted" "ok 1.5" "$(LT_CHECK_PTX="$tmp/yes" "$LATTICE" "$tmp/k.lua" 2>&1)"
check "the PTX reached ptxas" ".entry" "$(cat "$tmp/seen.ptx" 2>/dev/null)"
out=$(LT_CHECK_PTX="$tmp/no" "$LATTICE" "$tmp/k.lua" 2>&1)
check "refused: names the kernel" "ptxas rejected the PTX of kernel fill" "$out"
check "refused: quotes ptxas" "something about the PTX" "$out"
check "unset: no check" "ok 1.5" "$("$LATTICE" "$tmp/k.lua" 2>&1)"
check "the refused PTX is kept" "1" "$(ls "$tmp"/lattice_ptx_* | wc -l)"
[ "$fails" -eq 0 ] || exit 1
