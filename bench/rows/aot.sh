# bench/rows/aot.sh -- AOT modules: examples/aot's sparse heat module run by
# heat_host.c, linked only against liblattice_rt: load to first launch, sizes.

size_of() { stat -c %s "$1" | awk '{ printf "%.0f", $1 / 1024 }'; }

aot_measure() {
  local run
  echo "AOT module: the sparse heat host, load to first launch..." >&2
  "$LATTICE" examples/aot/sparse_heat.lua --save "$tmp/heat.ltm" > /dev/null
  cc -O2 -std=c17 examples/aot/heat_host.c -Iinclude -I"$BUILD/generated" "$BUILD/liblattice_rt.a" -lpthread -lm -ldl \
    -o "$tmp/heat_host_static"
  cc -O2 -std=c17 examples/aot/heat_host.c -Iinclude -I"$BUILD/generated" -L"$BUILD" -llattice_rt \
    -Wl,-rpath,"$BUILD" -o "$tmp/heat_host"
  for run in $(seq 20); do
    "$tmp/heat_host" "$tmp/heat.ltm" "$tmp/heat_out" 1 1 | sed -n 's/^load to first launch: \([0-9.]*\) ms/aot_ms \1/p' >> "$tmp/aot.txt"
  done
  aot_ms=$(med aot_ms "$tmp/aot.txt")
  strip -o "$tmp/heat_host_stripped" "$tmp/heat_host_static"
  aot_module_kb=$(size_of "$tmp/heat.ltm"); aot_static_kb=$(size_of "$tmp/heat_host_stripped")
  aot_host_kb=$(size_of "$tmp/heat_host"); aot_rt_kb=$(size_of "$(readlink -f "$BUILD/liblattice_rt.so")")
  local llvm
  llvm=$(ldd "$LATTICE" 2>/dev/null | awk '$1 ~ /^libLLVM/ { print $3; exit }')
  aot_llvm="libLLVM"
  [ -z "$llvm" ] || aot_llvm="$(basename "$llvm")'s $(stat -L -c %s "$llvm" | awk '{ printf "%.0f", $1 / 1048576 }') MiB"
}

aot_page() {
  echo "## AOT modules"
  echo
  echo "examples/aot: the sparse heat module (3 kernels, one tree type) run by"
  echo "heat_host.c, linked only against liblattice_rt (docs/aot.md). Time from"
  echo "\`lt_module_load\` to the end of the first launch (read and check the file, make"
  echo "the tree type, load the machine code, make a tree instance, run \`init\`),"
  echo "median of 20 runs: **$aot_ms ms**. Sizes: the module file $aot_module_kb KiB;"
  echo "the host $aot_host_kb KiB + liblattice_rt.so $aot_rt_kb KiB; statically linked and"
  echo "stripped, $aot_static_kb KiB in all (liblattice.so with the compiler and Lua: add"
  echo "$aot_llvm)."
}

aot_summary() {
  echo "AOT: load to first launch $aot_ms ms; module $aot_module_kb KiB, static host $aot_static_kb KiB"
}
