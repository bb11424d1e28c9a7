#!/bin/bash
# docs/gallery/make.sh [LATTICE] -- runs each example in examples/ at a small
# size (--frames) and shrinks one of its pictures to 256 pixels wide into
# docs/gallery/NAME.png (docs/gallery.md shows them). LATTICE defaults to
# build/lattice; the examples' full-size output goes to a scratch folder.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
LATTICE=${1:-$root/build/lattice}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shot() {   # shot NAME PICTURE ARGS...: run examples/NAME.lua ARGS, keep $tmp/PICTURE
  local name=$1 pic=$2
  shift 2
  echo "== $name: lattice examples/$name.lua $*"
  "$LATTICE" "$root/examples/$name.lua" --quiet --out "$tmp" "$@" > /dev/null
  "$LATTICE" "$root/docs/gallery/shrink.lua" "$tmp/$pic" "$root/docs/gallery/$name.png" 256
}
shot julia julia_1.png --frames 2
shot heat heat_04000.png --frames 2
shot sparse_life sparse_life_00500.png --frames 2
shot nbody nbody_00030.png --frames 30
shot mpm88 mpm88_00040.png --frames 40
shot mpm3d mpm3d_00020.png --frames 20
shot diff_mpm diff_mpm_after.png --frames 10
ls -l "$root"/docs/gallery/*.png
