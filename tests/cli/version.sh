#!/bin/bash
# One version number: project(lattice VERSION x.y.z) in CMakeLists.txt is
# what `lattice -v` prints, lt.version and lt.version_num (MAJOR * 10000 +
# MINOR * 100 + PATCH). Usage: version.sh LATTICE
set -u
. "$(dirname "$0")/lib/check.sh" "$1"
src=$(cd "$(dirname "$0")/../.." && pwd)

v=$(sed -n 's/^project(lattice VERSION \([^ )]*\).*/\1/p' "$src/CMakeLists.txt")
check "project() has a version x.y.z" "yes" "$([[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && echo yes)"
check "lattice -v" "Lattice $v" "$("$LATTICE" -v | sed -n 's/^\(Lattice [^ ]*\) (Lua 5\.4.*/\1/p')"
check "lt.version" "$v" "$("$LATTICE" -e 'print(require("lattice").version)')"
IFS=. read -r major minor patch <<< "$v"
check "lt.version_num" "$((major * 10000 + minor * 100 + patch))" \
  "$("$LATTICE" -e 'local lt = require "lattice"; print(math.type(lt.version_num), lt.version_num)' | sed 's/^integer	//')"
finish
